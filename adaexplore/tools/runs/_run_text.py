"""Runs as text: the list of runs and one run's tree."""

from __future__ import annotations

import json

from adaexplore.listing import shorten
from adaexplore.store import NodeRecord
from adaexplore.tools._best import RunBest, run_best, speedup_text
from adaexplore.tools._service import Services

__all__ = ["render_run_tree", "render_runs"]


def _speedup(value: float | None, estimated: float | None = None) -> str:
    """A node's speedup: measured, or estimated and marked as such (`1.60x est`), or `-`."""
    if value is not None:
        return f"{value:.3f}x"
    return f"{estimated:.2f}x est" if estimated is not None else "-"


def _best(best: RunBest | None) -> str:
    """A run's best kernel: its speedup, its estimated one where nothing timed it (marked `est.`), `untimed` where
    it has neither, `-` for none."""
    return "-" if best is None else speedup_text(best.speedup, best.estimated_speedup)


def _about(best: RunBest | None) -> str:
    """Which node is the best, and where its number comes from."""
    if best is None:
        return "-"
    ties = f", tied with {len(best.tied)} more ({best.tie_rule})" if best.tied else ""
    return f"node {best.node_id}, {best.measured}{ties}"


def render_runs(svc: Services) -> str:
    """Every run, one a line, with its best kernel as `runs show`, best_kernel and the report name it."""
    store = svc.store
    runs = store.runs()
    if not runs:
        return "no runs yet (start one with `adaexplore explore TASK`, or from an MCP client)"
    names = {t.id: t.name for t in store.tasks()}
    lines = [f"{'run':<14}{'task':<22}{'status':<10}{'steps':>9}  {'best':>12}  {'model':<16}{'created':<21}best node"]
    for run in runs:
        best = run_best(store, run)
        total = json.loads(run.config).get("total_steps")
        steps = f"{run.steps}/{total}" if total else str(run.steps)
        lines.append(
            f"{run.id:<14}{shorten(names.get(run.task_id, run.task_id), 21):<22}{run.status:<10}{steps:>9}  "
            f"{_best(best):>12}  {shorten(run.model, 15):<16}{run.created_at[:19]:<21}{_about(best)}"
        )
    return "\n".join(lines)


def render_run_tree(svc: Services, run_id: str) -> str:
    """The tree, one node a line, indented by depth; `*` marks the path to the best node.

    Raises:
        NotFoundError: the run id is unknown.
    """
    store = svc.store
    run = store.run(run_id)
    nodes = store.nodes(run.id)
    by_id = {n.id: n for n in nodes}
    children: dict[int, list[NodeRecord]] = {}
    for n in nodes:
        if n.parent_id is not None:
            children.setdefault(n.parent_id, []).append(n)
    chosen = run_best(store, run)
    best = chosen.node_id if chosen else None
    on_path: set[int] = set()
    current = best
    while current is not None:
        on_path.add(current)
        current = by_id[current].parent_id
    task = store.task(run.task_id)
    ordered: list[tuple[NodeRecord, int]] = []
    stack = [(by_id[run.root_id], 0)]
    while stack:
        node, depth = stack.pop()
        ordered.append((node, depth))
        stack.extend((c, depth + 1) for c in reversed(children.get(node.id, [])))
    labels = [f"{'  ' * depth}#{node.id} {node.kind.value}" for node, depth in ordered]
    width = max(len(label) for label in labels) + 2
    lines = [
        f"run {run.id} on task {task.name} ({run.status}, {run.steps} step{'' if run.steps == 1 else 's'}, seed "
        f"{run.seed}, model {run.model})",
        f"best: {chosen.sentence}" if chosen else "best: none yet",
        f"  {'node':<{width}}{'step':>5}  {'status':<15}{'speedup':>11}{'visits':>8}{'value':>8}",
    ]
    for (node, _), label in zip(ordered, labels, strict=True):
        mark = "*" if node.id in on_path else " "
        value = node.total_reward / node.visits if node.visits else 0.0
        lines.append(
            f"{mark} {label:<{width}}{node.seq:>5}  {(node.status or '-'):<15}"
            f"{_speedup(node.speedup, node.estimated_speedup):>11}"
            f"{node.visits:>8}{value:>8.3f}"
        )
    if run.status == "stopped":
        command = f"adaexplore explore --resume {run.id}" + ("" if run.model == "replay" else f" --model {run.model}")
        endpoint = ", with the --base-url it used"
        if run.model == "replay":
            endpoint = f", replay serving the kernels of {run.kernels}" if run.kernels else ""
        lines.append(
            f"stopped: {run.stop_reason}; `{command}` continues it{endpoint} (so does an MCP client's next step)"
        )
    return "\n".join(lines)
