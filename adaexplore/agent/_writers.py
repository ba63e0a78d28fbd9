"""Who writes the kernels in headless mode: a model behind the client, or the offline replay generator.

Both answer the same four requests (a module for a large step, a review and a changed kernel for a small
step, a rule for a failure) with a `Reply`, so the loop treats them alike. A step's request is the text
`expand_node` gives an MCP client; only the model writer adds, after it, how a headless model writes its
answer. Every call is recorded in the store with its
tokens and cost, under the run and task of the step that made it.
"""

from __future__ import annotations

import contextvars
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from adaexplore import tools
from adaexplore.agent._messages import Message, Reply, Usage
from adaexplore.memory import RuleCandidate
from adaexplore.prompts import (
    DistillContext,
    JudgeRuleContext,
    KernelContext,
    RetryContext,
    ReviewContext,
    render_answer_format,
    render_distill_rule,
    render_judge_rule,
    render_retry,
    render_review,
    render_step_extras,
)
from adaexplore.store import ModelCall

if TYPE_CHECKING:  # the client, and the OpenAI SDK under it, load only when a model is used
    from adaexplore.agent._client import ModelClient

__all__ = [
    "CURRENT_STEP",
    "Feedback",
    "LargeRequest",
    "ModelWriter",
    "ReplayWriter",
    "SmallRequest",
    "StepScope",
    "Writer",
    "kernels_folder",
    "kernels_in",
    "replay_kernels",
]


@dataclass(frozen=True)
class StepScope:
    """The run and task a model call is made for (for the accounting)."""

    run_id: str | None
    task_id: str | None


# Set by the loop around each task's work; the writer reads it to file each call under its run and task.
CURRENT_STEP: contextvars.ContextVar[StepScope] = contextvars.ContextVar(
    "CURRENT_STEP",
    default=StepScope(None, None),  # noqa: B039 - frozen, so it cannot be changed in place
)


@dataclass(frozen=True)
class Feedback:
    """A reply that could not be used, and what was wrong with it, for the next attempt."""

    reply: str
    problem: str
    truncated: bool = False


@dataclass(frozen=True)
class LargeRequest:
    task_id: str
    task_name: str
    node_id: int
    instructions: str  # from expand_node: the skill memory, the task and the pool, as an MCP client gets them
    memory: str  # the skill memory's prompt block (already at the head of `instructions`)
    seed: str  # a stable string for deterministic choices (replay)


@dataclass(frozen=True)
class SmallRequest:
    task_id: str
    task_name: str
    instructions: str  # from expand_node: the skill memory and the small step, as an MCP client gets them
    task_source: str
    memory: str
    current: KernelContext
    history: list[KernelContext]
    error: str  # the current kernel's error text, when it failed
    notes: str  # what the last step on this kernel got wrong (edits that did not apply)
    seed: str


class Writer(Protocol):
    label: str  # recorded as the run's model
    is_model: bool

    async def write_module(self, request: LargeRequest, feedback: list[Feedback]) -> Reply: ...

    async def review(self, request: SmallRequest) -> Reply: ...

    async def write_edits(self, request: SmallRequest, guidance: str, feedback: list[Feedback]) -> Reply:
        """The small step's answer: numbered edits to the current kernel, or the complete module."""
        ...

    async def distill(self, context: DistillContext) -> Reply: ...

    async def same_rule(self, text: str, candidates: list[RuleCandidate]) -> int | None: ...


def _conversation(first: str, feedback: list[Feedback], expect: Literal["module", "edits"]) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": first}]
    for item in feedback:
        messages.append({"role": "assistant", "content": item.reply})
        retry = RetryContext(problem=item.problem, expect=expect, truncated=item.truncated)
        messages.append({"role": "user", "content": render_retry(retry)})
    return messages


def _with_format(instructions: str, expect: Literal["module", "edits"]) -> str:
    """A step's instructions, then how a headless model is to write its answer (an MCP client's answer is
    its compile_and_profile call, so the instructions themselves say nothing of the format)."""
    return f"{instructions.rstrip()}\n\n## How to answer\n{render_answer_format(expect)}\n"


def _filed(svc: tools.Services, reply: Reply, purpose: str) -> Reply:
    """`reply`, after filing its usage under the current step's run and task."""
    scope = CURRENT_STEP.get()
    tools.record_model_call(
        svc,
        ModelCall(
            run_id=scope.run_id,
            task_id=scope.task_id,
            purpose=purpose,
            model=reply.model,
            input_tokens=reply.usage.input_tokens,
            output_tokens=reply.usage.output_tokens,
            cost_usd=reply.usage.cost_usd,
            seconds=reply.seconds,
            attempts=reply.attempts,
            finish_reason=reply.finish_reason,
        ),
    )
    return reply


@dataclass
class ModelWriter:
    """Prompts rendered from prompts/, sent through the model client; usage filed in the store."""

    client: ModelClient
    svc: tools.Services  # where model calls are filed
    label: str
    is_model: bool = True

    async def _call(self, messages: list[Message], purpose: str) -> Reply:
        return _filed(self.svc, await self.client.complete(messages, purpose=purpose), purpose)

    async def write_module(self, request: LargeRequest, feedback: list[Feedback]) -> Reply:
        # expand_node put the skill memory at its head
        first = _with_format(request.instructions, "module")
        return await self._call(_conversation(first, feedback, "module"), "large_step")

    async def review(self, request: SmallRequest) -> Reply:
        prompt = render_review(
            ReviewContext(
                task_source=request.task_source, memory=request.memory, current=request.current, error=request.error
            )
        )
        return await self._call([{"role": "user", "content": prompt}], "review")

    async def write_edits(self, request: SmallRequest, guidance: str, feedback: list[Feedback]) -> Reply:
        extras = render_step_extras(error=request.error, notes=request.notes, guidance=guidance)
        first = _with_format(request.instructions.rstrip("\n") + "\n" + extras, "edits")
        return await self._call(_conversation(first, feedback, "edits"), "tune")

    async def distill(self, context: DistillContext) -> Reply:
        return await self._call([{"role": "user", "content": render_distill_rule(context)}], "distill")

    async def same_rule(self, text: str, candidates: list[RuleCandidate]) -> int | None:
        """The third tier of rule merging (memory.RuleJudge): the model says which candidate, if any, `text`
        repeats. A reply that is not the asked-for JSON counts as 'none'."""
        prompt = render_judge_rule(JudgeRuleContext(rule=text, candidates=[c.text for c in candidates]))
        reply = await self._call([{"role": "user", "content": prompt}], "judge")
        match = re.search(r"\{.*?\}", reply.text, re.S)
        if match is None:
            return None
        try:
            chosen = json.loads(match.group(0)).get("same_as")
        except (json.JSONDecodeError, AttributeError):
            return None
        if isinstance(chosen, int) and not isinstance(chosen, bool) and 1 <= chosen <= len(candidates):
            return candidates[chosen - 1].rule_id
        return None


# ---- replay ----------------------------------------------------------------------------------------------
# Sample kernels of the examples the replay generator does not serve: a hang spends the whole budget of a step
# (a folder of one's own, `explore --kernels DIR`, is served whole).
_SKIPPED_SAMPLES = {"hang"}


def kernels_folder(folder: Path, task_name: str) -> Path:
    """Where `explore --kernels DIR` finds a task's kernels: `DIR/<task name>/` where that folder is (as
    examples/kernels/ holds them), else DIR itself."""
    own = folder / task_name
    return own if own.is_dir() else folder


def kernels_in(folder: Path) -> dict[str, str]:
    """Every kernel module (`*.py`) of a folder of one's own, by file stem."""
    return {p.stem: p.read_text() for p in sorted(folder.glob("*.py")) if p.is_file()}


def replay_kernels(task_path: Path) -> dict[str, str]:
    """The sample kernels beside an example task: `<tasks>/../kernels/<task name>/*.py`, by file stem; for a
    FlashInfer-Bench definition (`<root>/definitions/<family>/<name>.json`), `<root>/kernels/<name>/` or else
    `<root>/kernels/<family>/`."""
    path = task_path.resolve()
    folder = path.parent.parent / "kernels" / path.stem
    if path.suffix == ".json" and not folder.is_dir():
        folder = path.parent.parent.parent / "kernels" / path.stem
        if not folder.is_dir():
            folder = path.parent.parent.parent / "kernels" / path.parent.name
    if not folder.is_dir():
        return {}
    return {p.stem: p.read_text() for p in sorted(folder.glob("*.py")) if p.stem not in _SKIPPED_SAMPLES}


def _fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```\n"


@dataclass
class ReplayWriter:
    """The offline generator: NOT a language model. It answers each request with one of the kernels of a folder:
    the sample kernels that ship beside the example tasks (examples/kernels/<task>/), or a folder of one's own
    (`explore --kernels DIR`), chosen by a seeded draw, so a search runs end to end with real evaluations and no
    network. A small step's edit replaces the whole kernel."""

    kernels: dict[str, dict[str, str]]  # task id -> sample name -> code
    svc: tools.Services  # where (zero-cost) calls are filed
    folders: dict[str, Path] = field(default_factory=dict)  # task id -> the folder its kernels came from
    label: str = "replay"
    is_model: bool = False
    served: dict[str, int] = field(default_factory=dict)

    def _reply(self, text: str, purpose: str) -> Reply:
        usage = Usage(0, 0, 0.0)
        reply = Reply(text=text, finish_reason="stop", usage=usage, seconds=0.0, attempts=1, model=self.label)
        return _filed(self.svc, reply, purpose)

    def _draw(self, task_id: str, seed: str, avoid: str | None = None) -> tuple[str, str]:
        samples = {k: v for k, v in self.kernels[task_id].items() if v != avoid} or self.kernels[task_id]
        names = sorted(samples)
        # The correct sample half of the time, a broken one otherwise, so the tree sees both.
        rng = random.Random(seed)
        if "correct" in samples and rng.random() < 0.5:
            name = "correct"
        else:
            name = rng.choice(names)
        self.served[name] = self.served.get(name, 0) + 1
        return name, samples[name]

    async def write_module(self, request: LargeRequest, feedback: list[Feedback]) -> Reply:
        name, code = self._draw(request.task_id, f"{request.seed}:large:{len(feedback)}")
        return self._reply(f"(replay: sample kernel `{name}`)\n\n{_fenced(code)}", "large_step")

    async def review(self, request: SmallRequest) -> Reply:
        return self._reply("(replay: no review; this generator is not a language model)", "review")

    async def write_edits(self, request: SmallRequest, guidance: str, feedback: list[Feedback]) -> Reply:
        old = request.current.code
        name, code = self._draw(request.task_id, f"{request.seed}:small:{len(feedback)}", avoid=old)
        return self._reply(
            f"(replay: sample kernel `{name}`)\n<old_str_1>\n{old}\n</old_str_1>\n<new_str_1>\n{code}\n</new_str_1>\n",
            "tune",
        )

    async def distill(self, context: DistillContext) -> Reply:
        # No model, no rule: the failure still counts toward a rule that already covers its signature.
        return self._reply("no guidance", "distill")

    async def same_rule(self, text: str, candidates: list[RuleCandidate]) -> int | None:
        return None
