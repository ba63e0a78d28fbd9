"""What a step's writer needs beside the kernels, each in one line: the steps already taken from the kernel to
edit, why the node a large step grows from failed, and what the evaluator found about the task itself."""

from __future__ import annotations

import difflib

from adaexplore.domain import DRAWS_IN_FORWARD, Kind
from adaexplore.executor import Evaluation
from adaexplore.store import NodeRecord, RunRecord
from adaexplore.tools._service import Services

__all__ = ["child_lines", "failure_line", "task_facts", "what_changed"]

# the most of a changed line, or of a failure's reason, that a one-line summary shows
_LINE = 60
_REASON = 200
# the audit flags that are about the task, not the kernel
_TASK_FLAGS = (
    "ill_posed_task",
    "reference_imprecise",
    "reference_own_dtype",
    "degenerate_task",
    "degenerate_sizes",
    DRAWS_IN_FORWARD,
)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def what_changed(before: str, after: str) -> str:
    """A child's change from its parent in one line: how many lines it added and removed, and the first lines it
    added (`+3/-2 lines: BLOCK_N = 256 · num_warps=8`)."""
    added, removed = [], 0
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added.append(line[1:].strip())
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    if not added and not removed:
        return "no change to the code"
    shown = [line for line in added if line and not line.startswith("#")][:2]
    text = f"+{len(added)}/-{removed} lines"
    if shown:
        text += ": " + " · ".join(f"`{_cut(line, _LINE)}`" for line in shown)
    return text


def _reason(result: str | None) -> str:
    """A node's status and the first part of its verdict, in one line."""
    if result is None:
        return "not evaluated"
    evaluation = Evaluation.model_validate_json(result)
    status = evaluation.status.value
    if status == "ok":
        if evaluation.speedup is not None:
            return f"ok, {evaluation.speedup:.3f}x"
        estimated = evaluation.estimated_speedup
        return f"ok, {estimated:.3f}x est." if estimated is not None else "ok"
    return f"{status}: {_cut(evaluation.message, _REASON)}"


def child_lines(svc: Services, node: NodeRecord) -> list[str]:
    """One line for each child the node already has, oldest first: the step, its verdict and what it changed."""
    lines = []
    for child in svc.store.view(node.run_id).children(node.id):
        record, result = svc.store.node_and_result(child.id)
        if record.kind is Kind.small:
            change = what_changed(node.code, record.code)
        else:
            change = f"a new kernel of {len(record.code.splitlines())} lines"
        lines.append(f"node {record.id} ({record.kind.value} step, {_reason(result)}): {change}")
    return lines


def failure_line(svc: Services, node: NodeRecord) -> str:
    """Where a step grows from a node that failed, what failed and why, in one line; "" otherwise."""
    if node.kind is Kind.root or node.status in (None, "ok"):
        return ""
    result = svc.store.node_result(node.id, node.run_id)  # the node itself is at hand: its result alone
    return f"Node {node.id} ({node.kind.value} step) failed: {_reason(result)}. Do not repeat its mistake."


def task_facts(svc: Services, run: RunRecord) -> list[str]:
    """What the evaluator found about the task itself (from the run's latest evaluation that checked outputs),
    with what that means for the check; [] where it found nothing or nothing was checked yet."""
    node_id = svc.store.latest_checked_node(run.id)
    if node_id is None:
        return []
    result = svc.store.node_result(node_id, run.id)
    if result is None:  # a node without an evaluation: only the root, which is never checked
        return []
    evaluation = Evaluation.model_validate_json(result)
    facts = []
    for flag in evaluation.audit.flags:
        if flag.code not in _TASK_FLAGS or flag.message in facts:
            continue
        facts.append(flag.message)
    if any("all-zero output" in f or "does not depend on the inputs" in f for f in facts):
        facts.append(
            "The outputs are still compared with the reference on every trial within the tolerance above, so a "
            "kernel must compute the model's function; but on this task a wrong kernel can pass, and only speed "
            "ranks the correct ones."
        )
    return facts
