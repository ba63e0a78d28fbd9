"""The headless loop's own overhead per step: the wall time of a step minus the time spent waiting for the
model and minus the time spent in the evaluator. What is left is the loop itself: select_uct, expand_node,
the skill memory, prompt rendering, code extraction and edits, the store writes of compile_and_profile
(node, evaluation, back-propagation), record_failure, and the bookkeeping of model calls.

Three scenarios, each a real Explorer over a real store and the real evaluator:
  replay   the offline generator on the row_softmax example, a fresh run;
  http     the model client against a scripted OpenAI-compatible server on 127.0.0.1 (sample kernels,
           reviews, numbered edits, distillations), a fresh run;
  big      the offline generator continuing a run that already has --big-tree nodes (scale_relu).

    python benchmarks/agent_bench.py
    python benchmarks/agent_bench.py --steps 40 --big-tree 10000 --scenarios replay http big
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from search_bench import KERNEL, grow  # noqa: E402

from adaexplore import tools  # noqa: E402
from adaexplore.agent import Explorer, ModelClient, ModelWriter, ReplayWriter, StepRecord, replay_kernels  # noqa: E402
from adaexplore.config import ModelConfig, Settings  # noqa: E402
from tests.agent.fake_openai import FakeOpenAI, Say  # noqa: E402

TASK = ROOT / "examples" / "tasks" / "row_softmax.py"
SAMPLES = replay_kernels(TASK)
# What the scripted model writes for large steps, in turn: mostly the correct sample, sometimes a broken one.
EDIT_TAGS = itertools.count()
LARGE_ANSWERS = itertools.cycle(["correct", "compile_error", "correct", "wrong_result", "correct", "out_of_bounds"])


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


def scripted(body: dict[str, Any]) -> Say:
    """A model that answers each purpose with a sample kernel, a review, an edit or a rule."""
    prompt = body["messages"][0]["content"]
    if prompt.startswith("A Triton kernel failed"):
        return Say("You cannot use a lambda inside a Triton kernel; write the expression inline.")
    if prompt.startswith("A skill memory holds"):
        return Say('{"same_as": null}')
    if prompt.startswith("You review a Triton kernel"):
        return Say("1. Use fewer warps for short rows.\n2. Keep the row in registers.")
    if "Answer with numbered edits" in prompt:
        # a real change of the code (not a comment), so that the child is evaluated afresh
        tag = next(EDIT_TAGS)
        return Say(
            "<old_str_1>\n        x = x.contiguous()\n</old_str_1>\n<new_str_1>\n        x = x.contiguous()\n"
            f"        _variant = {tag}\n</new_str_1>"
        )
    name = next(LARGE_ANSWERS)
    return Say(fenced(SAMPLES[name]), prompt_tokens=len(prompt) // 4, completion_tokens=600)


async def scenario(name: str, settings: Settings, steps: int, big_tree: int) -> list[StepRecord]:
    async with tools.open_services(settings) as svc:
        if name == "big":
            run_id = grow(svc, big_tree, seed=1, total_steps=big_tree - 1 + steps)
            writer = ReplayWriter(kernels={"bench": {"correct": KERNEL, "variant": KERNEL + "\n# variant\n"}}, svc=svc)
            return (await Explorer(svc, writer, memory_updates=True).run(run_id)).records
        task = tools.create_task(svc, tools.CreateTaskRequest(path=str(TASK)))
        run = tools.start_run(svc, tools.StartRunRequest(task_id=task.task_id, seed=7, total_steps=steps, model=name))
        if name == "replay":
            writer: Any = ReplayWriter(kernels={task.task_id: SAMPLES}, svc=svc)
            return (await Explorer(svc, writer, memory_updates=True).run(run.run_id)).records
        with FakeOpenAI(responder=scripted, api_key="sk-bench") as fake:
            client = ModelClient(ModelConfig(name="fake-model", base_url=fake.base_url), api_key="sk-bench")
            try:
                writer = ModelWriter(client=client, svc=svc, label="fake-model")
                svc = tools.Services(svc.settings, svc.store, svc.evaluator, judge=writer)
                return (await Explorer(svc, writer, memory_updates=True).run(run.run_id)).records
            finally:
                await client.aclose()


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30, help="steps per scenario (default 30)")
    parser.add_argument("--big-tree", type=int, default=10_000, help="nodes of the grown run (default 10000)")
    parser.add_argument("--scenarios", nargs="+", default=["replay", "http", "big"], choices=["replay", "http", "big"])
    args = parser.parse_args()
    rows = []
    for name in args.scenarios:
        home = Path(tempfile.mkdtemp(prefix=f"adaexplore-agent-bench-{name}-"))
        print(f"{name}: {args.steps} steps…", file=sys.stderr, flush=True)
        started = time.perf_counter()
        records = await scenario(name, Settings(home=home), args.steps, args.big_tree)
        wall = time.perf_counter() - started
        overhead = [r.overhead_s for r in records]
        statuses: dict[str, int] = {}
        for r in records:
            statuses[r.status or "no code"] = statuses.get(r.status or "no code", 0) + 1
        rows.append(
            (
                name,
                len(records),
                ms(overhead, 0.5),
                ms(overhead, 0.95),
                1000 * max(overhead),
                1000 * statistics.median(r.model_s for r in records),
                1000 * statistics.median(r.eval_s for r in records),
                wall,
                ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
            )
        )
        print(
            f"{name}: {len(records)} steps in {wall:.1f} s; overhead p50 {ms(overhead, 0.5):.1f} ms, "
            f"max {1000 * max(overhead):.1f} ms",
            file=sys.stderr,
            flush=True,
        )
    head = ("scenario", "steps", "overhead p50", "p95", "max", "model p50", "eval p50", "wall", "verdicts")
    print("{:<8} {:>5} {:>12} {:>8} {:>8} {:>10} {:>9} {:>7}  {}".format(*head))
    for name, n, p50, p95, top, model, ev, wall, verdicts in rows:
        cells = (f"{p50:.1f} ms", f"{p95:.1f} ms", f"{top:.1f} ms", f"{model:.1f} ms", f"{ev:.0f} ms", f"{wall:.1f}s")
        print("{:<8} {:>5} {:>12} {:>8} {:>8} {:>10} {:>9} {:>7}  {}".format(name, n, *cells, verdicts))


if __name__ == "__main__":
    anyio.run(main)
