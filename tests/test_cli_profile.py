"""`adaexplore profile` as the other commands are: small sizes on the CPU backends (derived as a search derives
them, or the task's full ones with --full-size, and the verdict says which), a progress line every few seconds
off a terminal, and SIGTERM or Ctrl-C stopping it within 2 s with exit code 4 and a message. Real subprocesses."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ON_GPU

DATA = Path(__file__).parent / "executor" / "data"
LEVEL2 = Path(__file__).resolve().parents[2] / "shared" / "data" / "kernelbench" / "level2"
PROBLEM_40 = LEVEL2 / "40_Matmul_Scaling_ResidualAdd.py"

pytestmark = pytest.mark.skipif(ON_GPU, reason="the CPU backends' sizes and timings; on a GPU cuda runs at full size")


def profile(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ADAEXPLORE_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "adaexplore", "profile", *args], capture_output=True, text=True, env=env, timeout=120
    )


def row(stdout: str, label: str) -> str:
    (line,) = [line for line in stdout.splitlines() if line.startswith(label + " ")]
    return line[len(label) :].strip()


@pytest.mark.skipif(not PROBLEM_40.is_file(), reason="the KernelBench problems (shared/data/kernelbench) are absent")
def test_a_level2_problem_is_checked_at_small_sizes_derived_as_a_search_derives_them(tmp_path: Path) -> None:
    began = time.monotonic()
    done = profile(str(PROBLEM_40), str(DATA / "matmul_scaling_residual_kernel.py"), home=tmp_path)
    took = time.monotonic() - began
    assert done.returncode == 0, done.stdout + done.stderr
    assert "correct in 5/5 trials in the interpreter at small sizes" in row(done.stdout, "verdict")
    assert row(done.stdout, "mode").endswith("(small sizes)")
    sizes = row(done.stdout, "sizes")
    assert sizes.startswith("SMALL_SIZES derived") and "batch_size=2" in sizes and "--full-size" in sizes
    assert "deriving small sizes for the CPU checks" in done.stderr  # said while it happens, off a terminal
    assert took < 60, f"{took:.0f} s"  # 284 s when the interpreter ran the problem at its full sizes


def test_full_size_checks_at_the_tasks_own_sizes_and_the_verdict_says_so(tmp_path: Path) -> None:
    written = tmp_path / "result.json"
    done = profile(
        str(DATA / "scale_relu_task.py"),  # SMALL_SIZES rows=3, cols=77; its own 64 x 1000
        str(DATA / "scale_relu_kernel.py"),
        "--full-size",
        "--json",
        str(written),
        home=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    verdict = row(done.stdout, "verdict")
    assert "correct in 5/5 trials in the interpreter at the task's full sizes" in verdict
    assert "small sizes" not in verdict
    assert row(done.stdout, "mode").endswith("(full sizes)")
    assert row(done.stdout, "sizes") == "--full-size: CPU checks run at the task's full sizes"
    assert json.loads(written.read_text())["provenance"]["sizes"] == "full"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_a_long_profile_within_2_s_with_exit_code_4_and_a_message(
    tmp_path: Path, signum: signal.Signals
) -> None:
    err = tmp_path / "stderr.txt"
    env = dict(os.environ, ADAEXPLORE_HOME=str(tmp_path))
    task, kernel = EXAMPLES / "tasks/elementwise_chain.py", EXAMPLES / "kernels/elementwise_chain/hang.py"
    with err.open("w") as stderr:  # a file: no terminal, as in a log or CI
        began = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "adaexplore", "profile", str(task), str(kernel)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=env,
        )
        try:
            # a first progress line within a few seconds, and another a few seconds after it
            seen: list[float] = []
            while len(seen) < 2 and time.monotonic() - began < 15 and process.poll() is None:
                lines = [line for line in err.read_text().splitlines() if line.startswith("[")]
                if len(lines) > len(seen):
                    seen += [time.monotonic() - began] * (len(lines) - len(seen))
                time.sleep(0.1)
            assert len(seen) >= 2, err.read_text()
            assert seen[0] < 8, f"the first progress line came after {seen[0]:.1f} s"
            assert seen[1] - seen[0] < 7, f"the second came {seen[1] - seen[0]:.1f} s after the first"
            assert process.poll() is None, "the hanging kernel's profile ended by itself"
            sent = time.monotonic()
            process.send_signal(signum)
            out, _ = process.communicate(timeout=10)
            stopped_in = time.monotonic() - sent
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    text = err.read_text()
    assert process.returncode == 4, text
    assert stopped_in < 2, f"stopped {stopped_in:.1f} s after {signum.name}"
    assert f"adaexplore profile: {signum.name}: stopped before the verdict" in text
    assert "Traceback" not in text and out == ""
