"""One best: the best node of a run and its number, as every view shows it (the explore summary, `runs list`,
`runs show`, the best_kernel tool and the report page all call `run_best`).

The number is the re-measured speedup where finish_run re-measured the winner in fresh processes, else the
speedup measured during the search, else, where nothing was timed, the estimated speedup on the target GPU
(labelled as an estimate wherever it is shown), else none (untimed). `measured` says which. Among correct kernels
of the same speed the lowest static cost of the sm_90 compile wins (`tie_break_key`), and `tie_rule` says whether
it or the first found decided.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from adaexplore.search import NodeStats, SearchBest, TieBreak, best_correct
from adaexplore.store import RunRecord, Store

__all__ = ["TIE_RULE", "Measured", "RunBest", "run_best", "speedup_text", "static_cost_key", "tie_break_key"]

Measured = Literal["re-measured", "search-time", "estimated", "untimed"]

# The tie-break among correct kernels of the same speed, as messages name it.
TIE_RULE = "static cost (fewest spilled bytes, then registers, then shared memory)"


def static_cost_key(evaluation: dict[str, Any]) -> tuple[float, float, float] | None:
    """A kernel's static cost from its evaluation (as stored, JSON), lower is cheaper: the bytes it spills to
    local memory (stores and loads), its registers per thread and its shared memory in bytes, each summed over
    the module's kernels, every kernel taken at the largest sizes it was compiled at (full, else small) and at
    its cheapest config that compiled (in that order of the three). None where the evaluation holds no static
    cost (it was not compiled for sm_90)."""
    costs = [c for c in (evaluation.get("audit") or {}).get("static_cost") or [] if c.get("skipped") is None]
    if not costs:
        return None
    spills = registers = shared = 0.0
    for kernel in sorted({c["kernel"] for c in costs}):
        own = [c for c in costs if c["kernel"] == kernel]
        sizes = "full" if any(c["sizes"] == "full" for c in own) else "small"
        cheapest = min(
            (
                float(c.get("spill_stores", 0) + c.get("spill_loads", 0)),
                float(c["registers"]) if c.get("registers") is not None else float("inf"),
                float(c.get("shared_memory") or 0),
            )
            for c in own
            if c["sizes"] == sizes
        )
        spills, registers, shared = spills + cheapest[0], registers + cheapest[1], shared + cheapest[2]
    return spills, registers, shared


def tie_break_key(store: Store, run: RunRecord) -> tuple[TieBreak, str]:
    """What breaks ties between correct kernels of the same speed (all of them, where nothing was timed) in
    select_uct, best_kernel, `runs` and the report alike, with its name for messages: the lower static cost
    (`static_cost_key`), read from a node's evaluation when a tie needs it; a node without one ranks after those
    with one, and equal costs go to the first found."""
    cache: dict[int, tuple[float, float, float] | None] = {}

    def key(node: NodeStats) -> tuple[float, float, float] | None:
        if node.id not in cache:
            result = store.node_result(node.id, run.id)
            cache[node.id] = static_cost_key(json.loads(result)) if result is not None else None
        return cache[node.id]

    return key, TIE_RULE


def speedup_text(speedup: float | None, estimated: float | None = None) -> str:
    """A best speedup as every view writes it: three decimals; an estimate marked as one (`1.600x est.`); or
    `untimed`."""
    if speedup is not None:
        return f"{speedup:.3f}x"
    return f"{estimated:.3f}x est." if estimated is not None else "untimed"


@dataclass(frozen=True)
class RunBest:
    node_id: int
    speedup: float | None  # the number to show: re-measured where there is one, else the search's
    measured: Measured
    search_speedup: float | None  # the number measured during the search
    verified: bool  # it passed again in fresh processes with fresh seeds when the run was finished
    tied: tuple[int, ...]  # correct nodes of the same search-time speed, not chosen
    why: str  # why this node, in words
    tie_rule: str = "the first found"  # how a tie among `tied` was broken
    # where nothing timed it: its estimated speedup on the target GPU (`measured` is "estimated")
    estimated_speedup: float | None = None

    @property
    def text(self) -> str:
        """For example `2.250x (re-measured)`, `1.800x (search-time)`, `1.600x (estimated, not measured)` or
        `untimed`."""
        if self.speedup is None:
            if self.estimated_speedup is not None:
                return f"{self.estimated_speedup:.3f}x (estimated, not measured)"
            return "untimed"
        return f"{speedup_text(self.speedup)} ({self.measured})"

    @property
    def sentence(self) -> str:
        """The node, its number and why, for a message: `node 4, 2.250x (re-measured): it won …`."""
        if self.speedup is None and self.estimated_speedup is None and self.why.startswith("untimed"):
            return f"node {self.node_id}, {self.why}"
        return f"node {self.node_id}, {self.text}: {self.why}"


def run_best(store: Store, run: RunRecord) -> RunBest | None:
    """The best node of a run and its number; None while it has no correct kernel."""
    tie_break, name = tie_break_key(store, run)
    found = best_correct(store.view(run).correct_nodes(), tie_break, name)
    if found is None:
        return None
    final = {c["node_id"]: c for c in json.loads(run.final_result or "[]")}
    node_id = run.final_node_id if run.final_node_id is not None else found.node.id
    search_speedup = store.node(node_id).speedup if node_id != found.node.id else found.node.speedup
    again = final.get(node_id)
    if again is not None and again.get("status") == "ok":
        speedup = again.get("speedup")
        if speedup is None:  # an untimed re-check (earlier versions re-ran untimed kernels): it only passed
            why = f"{found.why}; it passed again in a fresh process at the end of the run, untimed"
        else:
            why = f"it won the re-measurement of {len(final)} candidate(s) in fresh processes at the end of the run"
        return RunBest(
            node_id=node_id,
            speedup=speedup,
            measured="re-measured" if speedup is not None else "untimed",
            search_speedup=search_speedup,
            verified=True,
            tied=found.tied if speedup is None and node_id == found.node.id else (),
            why=why,
            tie_rule=found.tie_rule,
        )
    why = _search_why(found, node_id, run, final)
    estimated = store.node(node_id).estimated_speedup if search_speedup is None else None
    return RunBest(
        node_id=node_id,
        speedup=search_speedup,
        measured="search-time" if search_speedup is not None else ("estimated" if estimated is not None else "untimed"),
        search_speedup=search_speedup,
        verified=False,
        tied=found.tied if node_id == found.node.id else (),
        why=why,
        tie_rule=found.tie_rule,
        estimated_speedup=estimated,
    )


def _search_why(found: SearchBest, node_id: int, run: RunRecord, final: dict[int, dict]) -> str:
    if node_id != found.node.id:
        return "chosen when the run was finished"
    if node_id in final:
        return (
            f"{found.why}; NOT confirmed: measured again in a fresh process at the end of the run it came back "
            f"{final[node_id].get('status')}"
        )
    if run.status == "finished" and found.timed:
        return f"{found.why} (not evaluated again: the run re-measures no candidates)"
    return found.why
