"""`adaexplore adapt` end to end: three synthesized tasks, a scripted model on 127.0.0.1 that writes a correct
kernel for whatever task it is shown (and a broken one first), and real evaluations on this machine."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from adaexplore.store import open_store
from tests.agent.fake_openai import FakeOpenAI, Say
from tests.agent.scripted import KEY, adaexplore, cli_env, current_kernel, fenced, purpose, write_config

RULE = "You cannot make tl.static_assert fail on a block size; drop the assertion."

# Appended to a task's own source, this makes a candidate that is correct for that task: the task's `Model`
# does the arithmetic and a Triton kernel of the candidate's own copies the result out.
COPY_TAIL = """

import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
{extra}    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(Model):
    def forward(self, *args):
        result = super().forward(*args).contiguous()
        out = torch.empty_like(result)
        n = result.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](result, out, n, BLOCK=1024)
        return out
"""
STATIC_ASSERT = '    tl.static_assert(BLOCK < 0, "BLOCK must be negative")\n'


def task_source(body: dict[str, Any]) -> str:
    prompt = body["messages"][0]["content"]
    match = re.search(r"## The task\n.*?```python\n(.*?)\n```", prompt, re.S)
    assert match, prompt[:2000]
    return match.group(1)


def test_adapt_end_to_end_on_three_synthetic_tasks(tmp_path: Path) -> None:
    first_try: set[str] = set()
    kinds: list[str] = []

    def responder(body: dict[str, Any]) -> Say:
        kind = purpose(body)
        kinds.append(kind)
        if kind == "distill":
            prompt = body["messages"][0]["content"]
            return Say(RULE if "static_assert" in prompt else "no guidance")
        if kind == "judge":
            return Say('{"same_as": null}')
        if kind == "review":
            return Say("1. Launch fewer programs.")
        if kind == "tune":  # fixes the assertion when it is there, else halves the block
            old, new = (STATIC_ASSERT, "") if STATIC_ASSERT in current_kernel(body) else ("BLOCK=1024)", "BLOCK=512)")
            return Say(f"<old_str_1>\n{old}</old_str_1>\n<new_str_1>\n{new}</new_str_1>")
        source = task_source(body)
        broken = source not in first_try  # each task's first kernel trips a compile-time assertion
        first_try.add(source)
        return Say(fenced(source + COPY_TAIL.format(extra=STATIC_ASSERT if broken else "")))

    home = tmp_path / "home"
    config = write_config(tmp_path / "settings.toml")
    with FakeOpenAI(responder=responder, api_key=KEY) as fake:
        done = adaexplore(
            "--config", str(config), "adapt", "--tasks", "3", "--steps", "3", "--seed", "1", "--parallel", "2",
            "--model", "fake-model", "--base-url", fake.base_url,
            env=cli_env(home), timeout=900,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    out = done.stdout
    assert "3 tasks kept" in out
    assert len(first_try) == 3 and "distill" in kinds

    sources = sorted((home / "synthetic").glob("syn_*.py"))
    assert len(sources) == 3
    store = open_store(f"sqlite:///{home / 'adaexplore.db'}")
    try:
        runs = store.runs()
        assert len(runs) == 3 and {store.task(r.task_id).name for r in runs} == {p.stem for p in sources}
        for run in runs:
            assert run.status == "finished" and run.steps == 3 and run.model == "fake-model"
            statuses = [n.status for n in store.nodes(run.id)[1:]]
            assert statuses[0] == "compile_error" and "ok" in statuses, statuses
            best = store.node(run.final_node_id or run.best_node_id)
            assert best.status == "ok" and "_copy_kernel" in best.code
        # The one mistake, made once in each task, became one distilled rule counted across all three.
        (rule,) = [r for r in store.rules() if r.text == RULE]
        assert rule.source == "distilled" and rule.occurrences == 3 and rule.tasks == 3
        assert store.usage().calls == len(kinds)
    finally:
        store.close()
    # The report names what the memory gained, with its counts, and says the rule is now injected.
    line = next(x for x in out.splitlines() if RULE in x)
    assert re.search(rf"rule {rule.id}\s+new\s+seen 3 times in 3 task\(s\), injected", line), line
