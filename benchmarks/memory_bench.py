"""Latency of the skill memory with 10^4 stored rules: `record_failure` (no model judge; each call a new
signature, so rules are matched by text) and the rendering of `get_skill_memory` after each of them; then
`get_skill_memory` again with no rule changed in between, as the search loop asks at every step.

    python benchmarks/memory_bench.py               # 10000 rules, 300 calls each
    python benchmarks/memory_bench.py --rules 1000
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adaexplore.config import Settings  # noqa: E402
from adaexplore.memory import tokens  # noqa: E402
from adaexplore.store import NewRule, open_store  # noqa: E402
from adaexplore.tools import (  # noqa: E402
    CreateTaskRequest,
    GetSkillMemoryRequest,
    RecordFailureRequest,
    Services,
    create_task,
    get_skill_memory,
    record_failure,
    running_triton,
)

TRITON_WORDS = (
    "load store mask offsets block pointer dot accumulator float32 bfloat16 constexpr arange program grid stride "
    "reduction softmax layernorm shared memory warps stages autotune libdevice tanh exp sum max broadcast shape "
    "dtype cast loop range index contiguous transpose tile atomic barrier scalar tensor launch compile power break "
    "continue lambda global helper branch"
).split()
# Rule texts draw words with Zipf-like frequencies, as prose does: a few words are everywhere, most are rare.
WORDS = TRITON_WORDS + [f"term{i}" for i in range(2000)]
WEIGHTS = [1.0 / (rank + 1) for rank in range(len(WORDS))]


def sentence(rng: random.Random) -> str:
    words: set[str] = set()
    while len(words) < 9:
        words.add(rng.choices(WORDS, weights=WEIGHTS)[0])
    return "You cannot " + " ".join(sorted(words, key=lambda _: rng.random()))


def fill(svc: Services, count: int, rng: random.Random) -> None:
    triton = running_triton()
    rules = []
    for index in range(count):
        text = sentence(rng) + f" (case {index})."
        rules.append(
            NewRule(
                text=text,
                tokens=tokens(text),
                triton_min=triton,
                triton_max=triton,
                backends=("compile",),
                occurrences=rng.randint(1, 20),
                task_ids=tuple(f"t{rng.randint(0, 50)}" for _ in range(rng.randint(1, 4))),
                signatures=((f"sig{index:08d}", f"compile_error|X|tl.dot|case {index}"),),
            )
        )
    svc.store.add_rules(rules)


async def measure(svc: Services, task_id: str, calls: int, rng: random.Random) -> tuple[list[float], list[float]]:
    record, render = [], []
    for _ in range(calls):
        text = sentence(rng) + "."
        # A new kind of failure every call (words, not numbers, so the signature differs), so every call goes
        # through the similarity tier and about half of them make a new rule.
        kind = " ".join(rng.sample(TRITON_WORDS, 3))
        request = RecordFailureRequest(
            task_id=task_id,
            status="compile_error",
            error_type="CompilationError",
            error_text=f"at 1:2:\nx\n ^\nValueError: {kind} went wrong",
            code="x = 1",
            rule=text,
        )
        start = time.perf_counter()
        await record_failure(svc, request)
        record.append((time.perf_counter() - start) * 1e3)
        start = time.perf_counter()
        get_skill_memory(svc, GetSkillMemoryRequest())
        render.append((time.perf_counter() - start) * 1e3)
    return sorted(record), sorted(render)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rules", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    settings = Settings(home=Path(tempfile.mkdtemp(prefix="adaexplore-memory-bench-")))
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=None)  # type: ignore[arg-type]
    svc.store.meta_set("starter_memory", "0")
    rng = random.Random(0)
    fill(svc, args.rules, rng)
    task = create_task(svc, CreateTaskRequest(path=str(ROOT / "tests/executor/data/scale_relu_task.py")))
    record, render = await measure(svc, task.task_id, args.calls, rng)
    repeat = []  # what the search loop sees between failures: the rules have not changed since the last call
    for _ in range(args.calls):
        start = time.perf_counter()
        get_skill_memory(svc, GetSkillMemoryRequest())
        repeat.append((time.perf_counter() - start) * 1e3)
    repeat.sort()

    def p(values: list[float], q: float) -> float:
        return values[int(q * (len(values) - 1))]

    print(f"{'operation':<32}{'rules':>8}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    rows = (
        ("record_failure (no judge)", record),
        ("get_skill_memory (prompt)", render),
        ("get_skill_memory (unchanged)", repeat),
    )
    for name, values in rows:
        print(
            f"{name:<32}{svc.store.rule_count():>8}{statistics.median(values):>9.2f}{p(values, 0.99):>9.2f}"
            f"{values[-1]:>9.2f}"
        )


if __name__ == "__main__":
    anyio.run(main)
