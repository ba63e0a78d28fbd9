"""A run's brief: what every step of a run shares (the task, its precision, what ranks kernels and the task's
speed of light, the rules a module keeps, and the skill memory's rules), given to an MCP client once, with
start_run, and again only when it changes. The step answers cite its version instead of repeating it; headless
steps, whose model keeps no conversation, carry it whole."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from adaexplore.executor import Task, task_from_source
from adaexplore.prompts import PrecisionContext, RunBriefContext, render_run_brief, render_with_memory
from adaexplore.store import RunRecord, TaskRecord
from adaexplore.tools._precision import precision_context
from adaexplore.tools._service import Services
from adaexplore.tools._speed import ranking_sentence
from adaexplore.tools.memory._memory import GetSkillMemoryRequest, get_skill_memory

__all__ = ["RunBrief", "compose_brief", "degenerate_line", "run_brief", "run_brief_text"]


@dataclass(frozen=True)
class RunBrief:
    memory: str  # the skill memory's prompt block ("" where no rule is injected)
    shared: str  # the task, its precision and the rules, as every step of the run would repeat them
    version: str  # the hash of both: the same text has the same version

    @property
    def text(self) -> str:
        """The brief as a client is given it, headed by its version."""
        return f"# The run brief (version {self.version})\n\n{render_with_memory(self.memory, self.shared)}"

    def citation(self, run_id: str) -> str:
        """The sentence that stands for the brief in a step whose client already holds it."""
        return (
            f"The task, tolerance, rules and skill memory: run brief {self.version} (start_run; run://{run_id}/brief)."
        )


def run_brief(svc: Services, run: RunRecord) -> RunBrief:
    """The run's brief as it stands: the skill memory may change while the run goes on.

    Raises:
        NotFoundError: the run's task is unknown.
    """
    task = svc.store.task(run.task_id)
    parsed = task_from_source(task.source, name=task.name)
    precision = precision_context(run.mode, parsed.allowed_precision, parsed.tolerance)
    return compose_brief(svc, parsed, precision, ranking_sentence(svc, run, parsed, task), degenerate_line(task))


def degenerate_line(record: TaskRecord) -> str:
    """The one line that says the task is degenerate, "" where it is not (or was not checked)."""
    degeneracy = record.degeneracy
    return degeneracy.line() if degeneracy is not None else ""


def compose_brief(svc: Services, task: Task, precision: PrecisionContext, speed: str, degenerate: str = "") -> RunBrief:
    """The brief of a run on `task`, from what a step has already worked out (its precision and speed
    paragraphs, and whether the task is degenerate), with the skill memory as it stands."""
    shared = render_run_brief(
        RunBriefContext(task_source=task.model_view, precision=precision, speed=speed, degenerate=degenerate)
    )
    memory = get_skill_memory(svc, GetSkillMemoryRequest()).prompt or ""
    version = hashlib.sha256(f"{memory}\n\x00\n{shared}".encode()).hexdigest()[:8]
    return RunBrief(memory=memory, shared=shared, version=version)


def run_brief_text(svc: Services, run_id: str) -> str:
    """The run's brief as start_run gives it, for a client that lost it.

    Raises:
        NotFoundError: the run id is unknown.
    """
    return run_brief(svc, svc.store.run(run_id)).text
