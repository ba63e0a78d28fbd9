"""What a newcomer reads: the profile verdict one clause a line, listings that say what they leave out ("and 3
more"), a path cut at its start, a TASK KERNEL given the other way round named with the call meant, and the
task and kernel of docs/tasks-and-kernels.md usable as they are shown. In process, no workers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from adaexplore.bench._table import render_bench_list
from adaexplore.cli import main
from adaexplore.domain import Estimate, EstimatePart, Status
from adaexplore.executor import load_task, render_evaluation
from adaexplore.listing import first_of, shorten
from adaexplore.store import BenchRecord
from tests.conftest import EXAMPLES, ROOT
from tests.fakes import make_evaluation

MESSAGE = (
    "correct in 5/5 trials in the interpreter at small sizes; compiles for sm_90 at the small sizes (n=8) and the "
    "task's full ones; static cost _a at full sizes: 32 registers, no spills, 0 B shared; _b at full sizes: 40 "
    "registers, 8 B spilled, 0 B shared; no GPU timed it here; estimated 0.2 ms on an H200, not measured (3.13x "
    "eager's estimated 0.628 ms): _a 0.1 ms (memory: 268 MB); _b 0.05 ms (memory: 10 MB); _c 0.01 ms (memory: "
    "1 MB); and 5 more; warning: the first; the second"
)


def test_the_verdict_is_one_clause_a_line_and_the_estimate_says_what_it_leaves_out() -> None:
    task = load_task(EXAMPLES / "tasks" / "elementwise_chain.py")
    parts = [EstimatePart(step=f"_k{i}", ms=0.1 / (i + 1), limit="memory", detail="1 MB") for i in range(8)]
    estimate = Estimate(gpu="H200", ms=0.3, reference_ms=0.6, speedup=2.0, summary="", parts=parts)
    ev = make_evaluation(task, "x = 1", Status.ok, None).model_copy(update={"message": MESSAGE, "estimate": estimate})
    text = render_evaluation(ev)
    start = text.index("verdict")
    verdict = text[start : text.index("\nmode")].splitlines()
    assert [line[12:] for line in verdict] == [
        "correct in 5/5 trials in the interpreter at small sizes",
        "compiles for sm_90 at the small sizes (n=8) and the task's full ones",
        "static cost:",
        "  _a at full sizes: 32 registers, no spills, 0 B shared",
        "  _b at full sizes: 40 registers, 8 B spilled, 0 B shared",
        "no GPU timed it here",
        "estimated 0.2 ms on an H200, not measured (3.13x eager's estimated 0.628 ms):",
        "  _a 0.1 ms (memory: 268 MB)",
        "  _b 0.05 ms (memory: 10 MB)",
        "  _c 0.01 ms (memory: 1 MB)",
        "  and 5 more",
        "warning:",
        "  the first",
        "  the second",
    ]
    assert max(len(line) for line in verdict) < 120
    speed = [line.strip() for line in text[text.index("\nspeed") :].splitlines()[1:9]]
    assert speed[-2].startswith("_k5 ") and speed[-1] == "and 2 more, 0.02679 ms together"


def test_listings_and_cut_names_say_so() -> None:
    assert first_of(["a", "b", "c", "d", "e"], 3) == "a, b, c, and 2 more"
    assert first_of(["a", "b"], 3) == "a, b"
    assert shorten("abcdefghij", 5) == "abcd…"
    path = "/home/someone/checkouts/KernelBench/KernelBench/level2_with_a_long_name"
    record = BenchRecord(
        id="bench-1", suite=path, suite_hash="h", mode="strict", backend="auto", source="search", options="{}",
        status="finished", stop_reason=None, provenance="{}", created_at="2026-01-01T00:00:00",
        updated_at="2026-01-01T00:00:00",
    )  # fmt: skip
    row = render_bench_list([record], {"bench-1": []}).splitlines()[1]
    shown = row.split()[1]
    assert shown.startswith("…") and path.endswith(shown[1:]) and len(shown) == 40


def test_a_task_and_kernel_given_the_other_way_round_get_the_call_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = EXAMPLES / "tasks" / "elementwise_chain.py"
    kernel = EXAMPLES / "kernels" / "elementwise_chain" / "correct.py"
    with pytest.raises(SystemExit) as done:
        main(["profile", str(kernel), str(task), "--home", str(tmp_path)])
    err = capsys.readouterr().err
    assert done.value.code == 2 and f"did you mean `adaexplore profile {task} {kernel}`?" in err
    assert not (tmp_path / "adaexplore.db").exists()  # refused before anything ran


def test_the_task_and_kernel_of_the_page_are_usable_as_shown(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "tasks-and-kernels.md").read_text()
    task_code, kernel_code = re.findall(r"```py\n(.*?)```", page, re.S)
    (tmp_path / "my_task.py").write_text(task_code)
    task = load_task(tmp_path / "my_task.py")
    assert task.small_sizes == {"batch_size": 8, "dim": 100}
    defined = {node.name for node in ast.parse(kernel_code).body if isinstance(node, ast.ClassDef)}
    assert defined == {"ModelNew"} and "@triton.jit" in kernel_code


def test_the_glossary_names_every_label_column_status_and_flag_the_output_prints() -> None:
    glossary = (ROOT / "docs" / "glossary.md").read_text()
    source = ROOT / "adaexplore"
    labels = set(re.findall(r'row\(\s*"([a-z]+)"', (source / "executor/pipeline/_render.py").read_text()))
    columns = set(re.findall(r'\("([^"]+)", "(?:left|right)"\)', (source / "bench/_table.py").read_text()))
    assert {"verdict", "speed", "audit", "phases"} <= labels and {"of SOL", "triton share"} <= columns
    missing = sorted(word for word in labels | columns | {"sizes"} if f"**{word}**" not in glossary)
    flags = set()
    for module in source.rglob("*.py"):
        text = module.read_text()
        flags |= set(re.findall(r'\bcode="([a-z0-9_]+)"', text)) | set(re.findall(r'_add\(\s*\w+,\s*"([a-z_]+)"', text))
    assert {"faster_than_light", "degenerate_task", "reference_imprecise", "banned_api"} <= flags
    missing += sorted(word for word in flags | {s.value for s in Status} if f"`{word}`" not in glossary)
    assert not missing, f"docs/glossary.md does not explain {missing}"
