"""benchmarks/gpu_validation.py: the trust set first, calls that go on where the last one stopped, one summary."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_validation.py"

SUITE = {
    "test_a.py": "def test_passes():\n    pass\n\n\ndef test_fails():\n    assert 1 == 2\n",
    "test_b.py": "def test_passes():\n    pass\n",
    "test_trust.py": "import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2])\ndef test_holds(n):\n    pass\n",
}


def _call(tmp_path: Path, *extra: str) -> str:
    command = [sys.executable, str(SCRIPT), "--root", str(tmp_path), "--tests", "tests", "--trust"]
    command += ["tests/test_trust.py", "--state", str(tmp_path / "state"), "--out", str(tmp_path / "out")]
    command += ["--workers", "0", "--files-per-batch", "2", *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return (tmp_path / "out" / "validation-summary.md").read_text()


def test_a_run_in_two_calls_goes_on_where_it_stopped_and_sums_up_in_one_file(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    for name, text in SUITE.items():
        (tmp_path / "tests" / name).write_text(text)
    # a call that ends after its first batch: the trust set ran first, with the first file of the rest
    summary = _call(tmp_path, "--max-batches", "1")
    assert "- trust: 2 tests: 2 passed" in summary, summary
    assert "- rest: 3 tests: 1 failed, 1 not run yet, 1 passed" in summary, summary
    assert "tests/test_a.py::test_fails: FAILED" in summary, summary
    assert "1 tests not run yet: call again" in summary, summary
    # the next call runs only what is left, and the summary holds both
    summary = _call(tmp_path)
    assert "- rest: 3 tests: 1 failed, 2 passed" in summary, summary
    assert summary.count("results in") == 2 and "complete" in summary, summary
    assert "1 results in" in summary.split("## Calls")[1].splitlines()[2], summary


def test_results_are_read_from_logs_with_and_without_xdist_and_from_a_run_cut_short() -> None:
    spec = importlib.util.spec_from_file_location("gpu_validation", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    log = (
        "tests/x.py::test_a PASSED                                [ 33%]\n"
        "tests/x.py::test_b[1-a b] FAILED                          [ 66%]\n"
        "[gw1] [ 50%] SKIPPED tests/y.py::test_c\n"
        "[gw0] [100%] ERROR tests/y.py::test_d[2]\n"
        "FAILED tests/x.py::test_b[1-a b] - AssertionError: assert 1 == 2\n"
        "tests/z.py::test_hangs \n"  # started, then the time ran out: no result
        "KeyboardInterrupt\n"
    )
    assert module.parse(log) == {
        "tests/x.py::test_a": "PASSED",
        "tests/x.py::test_b[1-a b]": "FAILED",
        "tests/y.py::test_c": "SKIPPED",
        "tests/y.py::test_d[2]": "ERROR",
    }
