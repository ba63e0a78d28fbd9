"""Build the failure corpus the signature tests read: real failure texts from the evaluator.

    python tests/memory/make_corpus.py        # rewrites tests/memory/data/failure_corpus.json

Sources: the broken example kernels, the reward-hack candidates, and the same deliberate mistakes put
into kernels of two different tasks (so a mistake can be shown to give one signature across tasks).
"""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from adaexplore.config import ExecutorConfig, Settings  # noqa: E402
from adaexplore.executor import Evaluator, load_task  # noqa: E402

OUT = Path(__file__).parent / "data" / "failure_corpus.json"
HOSTS = {
    "scale_relu": (ROOT / "tests/executor/data/scale_relu_task.py", ROOT / "tests/executor/data/scale_relu_kernel.py"),
    "elementwise_chain": (
        ROOT / "examples/tasks/elementwise_chain.py",
        ROOT / "examples/kernels/elementwise_chain/correct.py",
    ),
}
# (mistake, lines put at the top of the first kernel's body; {v} varies the names between the two tasks)
MISTAKES = {
    "break": "for {v}_i in range(2):\n    break",
    "continue": "for {v}_i in range(2):\n    continue",
    "lambda": "{v}_f = lambda t: t",
    "arange_not_power_of_two": "{v}_r = tl.arange(0, 100)",
    "loop_carried_type_change": "{v}_acc = 0\nfor {v}_i in range(2):\n    {v}_acc += tl.zeros([16], tl.float32)",
    "python_math_on_tensor": "{v}_m = math.exp(tl.program_id(0) * 1.0)",
    "undefined_after_branch": "if tl.program_id(0) > 0:\n    {v}_only = 1\n{v}_use = {v}_only + 1",
    "dot_small_k": "{v}_a = tl.zeros([16, 8], tl.float16)\n{v}_d = tl.dot({v}_a, tl.trans({v}_a))",
}


def first_body_line(lines: list[str]) -> int:
    """The index of the first line of the first @triton.jit function's body."""
    start = next(i for i, line in enumerate(lines) if line.strip() == "@triton.jit")
    return next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith(":")) + 1


def with_mistake(code: str, mistake: str, variant: str) -> str:
    lines = code.splitlines()
    at = first_body_line(lines)
    body = [f"    {line}" for line in MISTAKES[mistake].format(v=variant).splitlines()]
    text = "\n".join(lines[:at] + body + lines[at:]) + "\n"
    return text if "import math" in text else "import math\n" + text


async def main() -> None:
    settings = Settings(home=Path("/tmp/adaexplore-corpus"), executor=ExecutorConfig(trial_timeout_s=8))
    cases: list[tuple[str, str, Path, str]] = []
    for kernel in sorted((ROOT / "examples/kernels").glob("*/*.py")):
        if kernel.stem != "correct":
            cases.append(
                (
                    f"example/{kernel.parent.name}/{kernel.stem}",
                    kernel.parent.name,
                    ROOT / "examples/tasks" / f"{kernel.parent.name}.py",
                    kernel.read_text(),
                )
            )
    scale_task = ROOT / "tests/executor/data/scale_relu_task.py"
    matmul_task = ROOT / "tests/adversarial/tasks/matmul_task.py"
    for candidate in sorted((ROOT / "tests/adversarial/candidates").glob("h*.py")):
        task = matmul_task if candidate.stem.startswith("h15") else scale_task
        cases.append((f"adversarial/{candidate.stem}", task.stem, task, candidate.read_text()))
    for mistake in MISTAKES:
        for host, (task, kernel) in HOSTS.items():
            variant = "a" if host == "scale_relu" else "zz"
            cases.append((f"mistake/{mistake}/{host}", host, task, with_mistake(kernel.read_text(), mistake, variant)))
    corpus = []
    async with Evaluator(settings) as evaluator:
        for name, task_name, task_path, code in cases:
            result = await evaluator.evaluate(load_task(task_path), code)
            if result.status.value == "ok":
                print(f"{name:55s} passes without timing; left out")
                continue
            corpus.append(
                {"case": name, "task": task_name, "code": code, "evaluation": json.loads(result.model_dump_json())}
            )
            print(f"{name:55s} {result.status.value:14s} {result.message[:80]}")
    OUT.write_text(scrub(json.dumps(corpus, indent=1)))


def scrub(text: str) -> str:
    """Paths of the machine the corpus was made on, replaced by what they stand for."""
    for path, name in (
        (sysconfig.get_paths()["purelib"], "<site-packages>"),
        (str(ROOT), "<repo>"),
        (str(Path.home()), "<home>"),
    ):
        text = text.replace(path, name)
    return text


if __name__ == "__main__":
    anyio.run(main)
