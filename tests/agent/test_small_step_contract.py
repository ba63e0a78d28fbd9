"""One small-step contract: a headless model reads the very text `expand_node` gives an MCP client, with only
the answer format after it, and a reply to a small step may be numbered edits or a whole module."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from adaexplore import tools
from adaexplore.agent import Explorer
from adaexplore.agent._extract import read_step_reply
from adaexplore.agent._messages import Message, Reply, Usage
from adaexplore.agent._writers import ModelWriter
from adaexplore.config import SearchConfig, Settings
from adaexplore.executor import Status
from adaexplore.store import open_store
from tests.agent.fake_openai import FakeOpenAI, Say
from tests.agent.scripted import KEY, Scripted, adaexplore, cli_env, current_kernel, fenced, write_config
from tests.conftest import EXAMPLES
from tests.fakes import FakeEvaluator

pytestmark = pytest.mark.anyio

TASK = EXAMPLES / "tasks" / "row_softmax.py"
CORRECT = (EXAMPLES / "kernels" / "row_softmax" / "correct.py").read_text()
_NODE = re.compile(r"## The current kernel \(node (\d+)\)")


class _RecordingClient:
    """The model endpoint's place (the network edge): every request kept, each answered by `answer`."""

    def __init__(self, svc_box: list[tools.Services], run_box: list[str]) -> None:
        self.svc_box, self.run_box = svc_box, run_box
        self.small: list[tuple[str, str]] = []  # (the message a small step sent, what expand_node says for it)
        self.large: list[str] = []

    async def complete(self, messages: list[Message], *, purpose: str) -> Reply:
        text = messages[0]["content"]
        if purpose == "tune":
            node_id = int(_NODE.search(text).group(1))  # type: ignore[union-attr]
            mcp = tools.step_instructions(
                self.svc_box[0], tools.ExpandNodeRequest(run_id=self.run_box[0], node_id=node_id, action="small")
            )
            self.small.append((text, mcp))
            answer = f"```python\n{current_kernel({'messages': messages})}\n# small step {len(self.small)}\n```\n"
        elif purpose == "large_step":
            self.large.append(text)
            answer = fenced(CORRECT)
        else:
            answer = "1. Use fewer warps."  # the reviewer: its suggestions follow the small step's text
        return Reply(answer, "stop", Usage(10, 10, 0.0), 0.0, 1, "recorder")

    async def aclose(self) -> None:
        return None


async def test_a_headless_small_step_reads_the_text_expand_node_gives_an_mcp_client(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, search=SearchConfig(p_large=0.0, final_reevaluation=0, total_steps=4))
    store = open_store(settings.database_url)
    svc = tools.Services(settings, store, FakeEvaluator(lambda code, n: (Status.ok, 1.0 + n / 10)))
    task = tools.create_task(svc, tools.CreateTaskRequest(path=str(TASK)))
    run = tools.start_run(svc, tools.StartRunRequest(task_id=task.task_id, seed=3, model="recorder"))
    client = _RecordingClient([svc], [run.run_id])
    writer = ModelWriter(client=client, svc=svc, label="recorder")  # type: ignore[arg-type]
    summary = await Explorer(svc, writer, memory_updates=False).run(run.run_id)
    store.close()

    assert summary.steps_done == 4 and client.small and client.large, "the search took no small step"
    for sent, mcp in client.small:
        assert sent.startswith(mcp.rstrip()), "the headless small step is not expand_node's text"
        rest = sent[len(mcp.rstrip()) :]
        # after it, only the headless answer format (and, where they exist, the error, notes, suggestions)
        assert "## How to answer" in rest and "<old_str_1>" in rest and "fenced ```python block" in rest
        assert "## A reviewer's suggestions\n1. Use fewer warps." in rest
        # the MCP text itself carries no answer-format rule meant for a headless model
        assert "<old_str_" not in mcp and "Answer with" not in mcp and "fenced" not in mcp
        assert "tf32x3" in mcp and "2e-05" in mcp  # strict mode's normwise float32 tolerance
    for sent in client.large:
        assert sent.rstrip().endswith("Answer with the complete module in one fenced ```python block.")


def test_a_whole_module_in_reply_to_a_small_step_is_evaluated_and_edits_still_work(tmp_path: Path) -> None:
    """The CLI with a scripted model on the OpenAI wire protocol and real evaluations: the first small step is
    answered with a whole module, the next ones with numbered edits; both become evaluated nodes."""
    marks = iter(range(1, 100))

    def tuner(body: dict) -> Say:
        old = current_kernel(body)
        mark = next(marks)
        new = old.replace("x = x.contiguous()", f"x = x.contiguous()  # step {mark}", 1)
        assert new != old
        if mark == 1:
            return Say(f"The whole module, changed:\n```python\n{new}\n```\n")
        return Say(f"<old_str_1>\n{old}\n</old_str_1>\n<new_str_1>\n{new}\n</new_str_1>")

    script = Scripted(
        queues={},
        defaults={
            "large": Say(fenced(CORRECT)),
            "review": Say("1. Keep it."),
            "tune": tuner,
            "distill": Say("no guidance"),
            "judge": Say('{"same_as": null}'),
        },
    )
    home = tmp_path / "home"
    config = write_config(tmp_path / "settings.toml", reviewer=False)
    config.write_text(config.read_text() + "[search]\np_large = 0.0\nfinal_reevaluation = 0\n")
    with FakeOpenAI(responder=script, api_key=KEY) as fake:
        done = adaexplore(
            "--config", str(config), "explore", str(TASK), "--steps", "4", "--seed", "3",
            "--model", "fake-model", "--base-url", fake.base_url, "--backend", "interpret",
            env=cli_env(home),
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert "unusable" not in done.stderr, done.stderr[-3000:]
    kinds = [k for k, _ in script.seen]
    assert kinds.count("tune") >= 2, kinds
    store = open_store(f"sqlite:///{home / 'adaexplore.db'}")
    try:
        (run,) = store.runs()
        by_mark = {
            int(m.group(1)): n for n in store.nodes(run.id) if (m := re.search(r"# step (\d+)$", n.code or "", re.M))
        }
    finally:
        store.close()
    # step 1 came as a whole module, step 2 as numbered edits: each is a node with its own verdict
    assert {1, 2} <= set(by_mark), sorted(by_mark)
    assert by_mark[1].status == "ok" and by_mark[2].status == "ok"
    assert by_mark[1].kind == "small" and by_mark[2].kind == "small"


KERNEL = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"


def test_a_small_step_reply_is_read_as_edits_or_as_a_whole_module() -> None:
    edited = read_step_reply(
        KERNEL, "<old_str_1>\n        return x * 2\n</old_str_1>\n<new_str_1>\n        return x + x\n</new_str_1>"
    )
    assert (edited.code, edited.form, edited.problem) == (KERNEL.replace("x * 2", "x + x"), "edits", None)
    module = KERNEL.replace("x * 2", "x * 3")
    whole = read_step_reply(KERNEL, f"Rewritten:\n```python\n{module}```\n")
    assert (whole.code, whole.form) == (module, "module")
    # edits that all miss, beside a whole module: the module is the answer
    both = read_step_reply(
        KERNEL, f"<old_str_1>\nnot there\n</old_str_1>\n<new_str_1>\nx\n</new_str_1>\n```python\n{module}```"
    )
    assert (both.code, both.form) == (module, "module")
    missed = read_step_reply(KERNEL, "<old_str_1>\nnot there\n</old_str_1>\n<new_str_1>\nx\n</new_str_1>")
    assert (
        missed.code is None
        and missed.problem
        == "no edit applied: edit 1: the old text was not found in the kernel (it begins `not there`)"
    )
    neither = read_step_reply(KERNEL, "I would use fewer warps.")
    assert neither.code is None and "neither a fenced ```python module nor numbered" in (neither.problem or "")
    broken = read_step_reply(KERNEL, "```python\nclass ModelNew(:\n```", truncated=False)
    assert broken.code is None and (broken.problem or "").startswith("the code does not parse")
    cut = read_step_reply(KERNEL, "```python\nimport torch\nclass ModelNew(torch.nn.Module):\n", truncated=True)
    assert cut.code is None and "cut off at the token limit" in (cut.problem or "")
