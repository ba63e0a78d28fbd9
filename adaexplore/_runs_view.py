"""Runs as text: the list of runs and one run's tree."""

from __future__ import annotations

from adaexplore.store import NodeRecord, SqliteStore

__all__ = ["render_run_tree", "render_runs"]


def _speedup(value: float | None) -> str:
    return f"{value:.3f}x" if value is not None else "-"


def render_runs(store: SqliteStore) -> str:
    runs = store.runs()
    if not runs:
        return "no runs yet (start one with `adaexplore explore TASK`, or an MCP client's start_run)"
    names = {t.id: t.name for t in store.tasks()}
    lines = [f"{'run':<14}{'task':<22}{'status':<10}{'steps':>7}  {'best':>9}  {'model':<16}created"]
    for run in runs:
        best = store.node(run.final_node_id or run.best_node_id) if (run.final_node_id or run.best_node_id) else None
        lines.append(
            f"{run.id:<14}{names.get(run.task_id, run.task_id)[:21]:<22}{run.status:<10}{run.steps:>7}  "
            f"{_speedup(best.speedup if best else None):>9}  {run.model[:15]:<16}{run.created_at[:19]}"
        )
    return "\n".join(lines)


def render_run_tree(store: SqliteStore, run_id: str) -> str:
    """The tree, one node a line, indented by depth; `*` marks the path to the best node."""
    run = store.run(run_id)
    nodes = store.nodes(run.id)
    by_id = {n.id: n for n in nodes}
    children: dict[int, list[NodeRecord]] = {}
    for n in nodes:
        if n.parent_id is not None:
            children.setdefault(n.parent_id, []).append(n)
    best = run.final_node_id or run.best_node_id
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
        f"run {run.id} on task {task.name} ({run.status}, {run.steps} steps, seed {run.seed}, model {run.model})",
        f"best: {'node ' + str(best) if best else 'none yet'}"
        f"{' (chosen on fresh re-measurements)' if run.final_node_id else ''}",
        f"  {'node':<{width}}{'step':>5}  {'status':<15}{'speedup':>9}{'visits':>8}{'value':>8}",
    ]
    for (node, _), label in zip(ordered, labels, strict=True):
        mark = "*" if node.id in on_path else " "
        value = node.total_reward / node.visits if node.visits else 0.0
        lines.append(
            f"{mark} {label:<{width}}{node.seq:>5}  {(node.status or '-'):<15}{_speedup(node.speedup):>9}"
            f"{node.visits:>8}{value:>8.3f}"
        )
    if run.status == "stopped":
        lines.append(
            f"stopped: {run.stop_reason}; the next step continues it (`adaexplore explore --resume {run.id}`, "
            "or select_uct from an MCP client)"
        )
    return "\n".join(lines)
