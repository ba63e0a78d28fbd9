"""One best, said honestly: untimed kernels tie and are not re-measured, and best_kernel, `runs list`, `runs show`
and the report page name the same node with the same number and its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore import tools
from adaexplore.bench._report_data import run_page_data
from adaexplore.config import Settings
from adaexplore.domain import Audit, Estimate, Evaluation, KernelCost
from adaexplore.executor import Status, Task
from adaexplore.search import reward
from adaexplore.store import open_store
from adaexplore.tools import (
    BestKernelRequest,
    CompileAndProfileRequest,
    CreateTaskRequest,
    ExpandNodeRequest,
    FinishRunRequest,
    GetRunRequest,
    SelectUctRequest,
    Services,
    StartRunRequest,
    best_kernel,
    compile_and_profile,
    create_task,
    expand_node,
    finish_run,
    get_run,
    select_uct,
    start_run,
)
from adaexplore.tools._best import static_cost_key
from tests.fakes import FakeEvaluator

TASK_FILE = Path(__file__).parents[1] / "executor" / "data" / "scale_relu_task.py"

pytestmark = pytest.mark.anyio


def untimed(code: str, _: int) -> tuple[Status, float | None]:
    """Correct and untimed, as on a machine without a GPU; "wrong" kernels mismatch."""
    return (Status.mismatch, None) if "wrong" in code else (Status.ok, None)


@pytest.fixture
def svc(tmp_path: Path) -> Services:
    settings = Settings(home=tmp_path)
    return Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(untimed))


async def grow(svc: Services, run_id: str, codes: list[str]) -> tuple[list[int], list[str], list[str]]:
    """Take one step per code; the new node ids, select_uct's reasons and compile_and_profile's messages."""
    ids, reasons, messages = [], [], []
    for code in codes:
        chosen = select_uct(svc, SelectUctRequest(run_id=run_id))
        reasons.append(chosen.reason)
        context = expand_node(svc, ExpandNodeRequest(run_id=run_id, node_id=chosen.node_id, action=chosen.action))
        result = await compile_and_profile(svc, CompileAndProfileRequest(code=code, expansion_id=context.expansion_id))
        assert result.node_id is not None
        ids.append(result.node_id)
        messages.append(result.message)
    return ids, reasons, messages


def the_views_agree(svc: Services, run_id: str, node_id: int, shown: str, measured: str | None) -> None:
    """best_kernel, `runs list`, `runs show` and the report page name `node_id` with the number `shown`."""
    best = best_kernel(svc, BestKernelRequest(run_id=run_id))
    assert best.node_id == node_id and best.measured == (measured or "untimed")
    (row,) = [line for line in tools.render_runs(svc).splitlines() if line.startswith(run_id)]
    assert f"  {shown}  " in row and f"node {node_id}, {measured or 'untimed'}" in row, row
    tree = tools.render_run_tree(svc, run_id).splitlines()
    assert tree[1].startswith(f"best: node {node_id}, {shown}" if measured else f"best: node {node_id}, untimed")
    star = [line for line in tree if line.startswith("*") and f"#{node_id} " in line]
    assert star, tree  # the path marked in the tree ends at the same node
    page = run_page_data(svc, run_id)["run"]
    assert (page["best_node_id"], page["best_speedup"], page["best_measured"]) == (
        node_id,
        best.speedup,
        measured or "untimed",
    )
    assert page["best_path"][-1] == node_id and page["confirmed"] == best.verified


async def test_an_untimed_run_says_its_correct_kernels_tie_and_finishes_without_re_measuring(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=5, total_steps=6))
    # two large steps from the root, so that its two children have the same visits and the same reward
    first = [
        await compile_and_profile(
            svc, CompileAndProfileRequest(code=code, run_id=run.run_id, parent_id=run.root_node_id, action="large")
        )
        for code in ("k1", "k2")
    ]
    codes = ["wrong k3", "k4", "k5", "k6"]
    ids, reasons, messages = await grow(svc, run.run_id, codes)
    ids = [r.node_id for r in first] + ids
    codes = ["k1", "k2", *codes]
    messages = [r.message for r in first] + messages
    correct = [i for i, code in zip(ids, codes, strict=True) if "wrong" not in code]
    # every correct result says its reward is the untimed one, shared by all
    for code, message in zip(codes, messages, strict=True):
        assert ("untimed:" in message and "0.509" in message) == ("wrong" not in code), message
    # select_uct says when it chose among children of equal score, and why that one
    tied = [r for r in reasons if "tie on UCT score" in r]
    assert tied and all("is the first found" in r and "untimed" in r for r in tied), reasons

    before = best_kernel(svc, BestKernelRequest(run_id=run.run_id))
    assert before.node_id == correct[0] and before.speedup is None and before.measured == "untimed"
    assert before.tied_node_ids == correct[1:] and not before.verified
    assert f"no GPU timed the {len(correct)} correct kernels, so they tie" in before.message
    assert "first found" in before.message

    calls = svc.evaluator.calls
    finished = await finish_run(svc, FinishRunRequest(run_id=run.run_id))
    assert svc.evaluator.calls == calls  # nothing re-measured: there is no number to measure
    assert finished.candidates == [] and finished.final_node_id == correct[0]
    assert "nothing was re-measured" in finished.message and "no GPU" in finished.message
    assert "won" not in finished.message

    after = best_kernel(svc, BestKernelRequest(run_id=run.run_id))
    assert (after.node_id, after.speedup, after.verified) == (correct[0], None, False)
    the_views_agree(svc, run.run_id, correct[0], "untimed", None)
    (row,) = [line for line in tools.render_runs(svc).splitlines() if line.startswith(run.run_id)]
    # no evaluation of the fake evaluator carries a static cost, so nothing tells them apart but their order
    assert f"tied with {len(correct) - 1} more (the first found (none has a static cost" in row


async def test_a_re_measured_best_is_the_one_number_every_view_shows(svc: Services) -> None:
    # as on the H200: the search measured 2.044x for the winner, its fresh re-measurement 2.25x
    search = {"a": 1.2, "b": 2.044, "c": 1.9, "wrong d": None}
    again = {"a": 1.1, "b": 2.25, "c": 1.8}
    phase = {"finishing": False}

    def script(code: str, _: int) -> tuple[Status, float | None]:
        if "wrong" in code:
            return Status.mismatch, None
        return Status.ok, (again if phase["finishing"] else search)[code]

    svc.evaluator = FakeEvaluator(script)
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=2, total_steps=4))
    ids, _, messages = await grow(svc, run.run_id, list(search))
    assert not any("untimed" in m for m in messages)
    winner = ids[1]
    during = best_kernel(svc, BestKernelRequest(run_id=run.run_id))
    assert (during.node_id, during.speedup, during.measured) == (winner, 2.044, "search-time")
    the_views_agree(svc, run.run_id, winner, "2.044x", "search-time")

    phase["finishing"] = True
    finished = await finish_run(svc, FinishRunRequest(run_id=run.run_id))
    assert finished.final_node_id == winner and len(finished.candidates) == 3
    final = best_kernel(svc, BestKernelRequest(run_id=run.run_id))
    assert (final.node_id, final.speedup, final.measured, final.verified) == (winner, 2.25, "re-measured", True)
    the_views_agree(svc, run.run_id, winner, "2.250x", "re-measured")
    assert "2.044x" not in tools.render_runs(svc)  # the search-time number is not shown as the best beside it


# (spilled bytes, registers, shared memory) of each kernel's one config at full size
COSTS = {"k1": (40, 96, 16_384), "k2": (0, 255, 98_304), "k3": (0, 128, 98_304), "k4": (0, 128, 65_536)}


class CostedEvaluator(FakeEvaluator):
    """Untimed correct verdicts that carry a static cost at full size, as the compile backend records it."""

    def __init__(self) -> None:
        super().__init__(untimed)

    async def evaluate(self, task: Task, code: str, options: object = None, *, progress: object = None) -> Evaluation:  # type: ignore[override]
        evaluation = await super().evaluate(task, code, options, progress=progress)  # type: ignore[arg-type]
        spills, registers, shared = COSTS[code.split()[-1]]
        cost = KernelCost(
            kernel="k", sizes="full", config="BLOCK=128", registers=registers, spill_stores=spills,
            shared_memory=shared,
        )  # fmt: skip
        return evaluation.model_copy(update={"audit": Audit(static_cost=[cost])})


async def test_untimed_correct_kernels_that_tie_go_to_the_lowest_static_cost(svc: Services) -> None:
    svc.evaluator = CostedEvaluator()
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=5, total_steps=8))
    codes = ["k1", "k2", "k3", "k4", "again k4"]  # the last costs what k4 does, and is found later
    results = [
        await compile_and_profile(
            svc, CompileAndProfileRequest(code=code, run_id=run.run_id, parent_id=run.root_node_id, action="large")
        )
        for code in codes
    ]
    ids = [r.node_id for r in results]
    # each answer names the one best as it stands then: k1 first, then k2 (cheaper than k1), k3, k4, and k4 again
    # where its equal copy lands (compile_and_profile's best_node_id is best_kernel's)
    assert [r.best_node_id for r in results] == [ids[0], ids[1], ids[2], ids[3], ids[3]]
    assert [r.is_new_best for r in results] == [True, True, True, True, False]
    rule = "static cost (fewest spilled bytes, then registers, then shared memory)"
    assert all(f"among them the lowest {rule} goes first" in r.message for r in results), results[0].message
    # k1 spills, k2 uses more registers, k3 more shared memory; k4 and its copy cost the same: k4 came first
    best = best_kernel(svc, BestKernelRequest(run_id=run.run_id))
    assert best.node_id == ids[3] and best.tied_node_ids == [ids[0], ids[1], ids[2], ids[4]]
    assert f"node {ids[3]} is the first found of those with the lowest {rule}" in best.message, best.message
    (row,) = [line for line in tools.render_runs(svc).splitlines() if line.startswith(run.run_id)]
    assert f"node {ids[3]}, untimed, tied with 4 more (the first found of those with the lowest {rule})" in row
    # the root's children tie on UCT score: select_uct descends to the cheapest, and says why
    chosen = select_uct(svc, SelectUctRequest(run_id=run.run_id))
    assert chosen.trail[0].best_child_id == ids[3], chosen.trail
    assert f"node {ids[3]} is the first found of those with the lowest {rule}" in chosen.reason, chosen.reason
    the_views_agree(svc, run.run_id, ids[3], "untimed", None)


def test_the_static_cost_sums_kernels_at_their_largest_size_and_cheapest_config() -> None:
    def cost(kernel: str, sizes: str, registers: int, spills: int = 0, shared: int = 0, **more: object) -> dict:
        return KernelCost(
            kernel=kernel, sizes=sizes, config=f"c{registers}", registers=registers, spill_stores=spills,
            shared_memory=shared, **more,
        ).model_dump()  # type: ignore[arg-type]  # fmt: skip

    static_cost = [
        cost("a", "full", 200, spills=8, shared=4096),
        cost("a", "full", 128, shared=8192),  # the cheapest config of a: no spills
        cost("a", "full", 32, skipped="out of shared memory"),  # skipped: not a config it can run
        cost("a", "small", 16),  # a compiled at full size: its small-size costs do not count
        cost("b", "small", 40, spills=4, shared=1024),  # b only at small sizes
    ]
    assert static_cost_key({"audit": {"static_cost": static_cost}}) == (4.0, 168.0, 9216.0)
    assert static_cost_key({"audit": {"static_cost": []}}) is None
    assert static_cost_key({}) is None


ESTIMATES = {"e1": 1.3, "e2": 2.6, "e3": 1.9}


class EstimatingEvaluator(FakeEvaluator):
    """Untimed correct verdicts with an estimate each, as a machine without a GPU gives them."""

    def __init__(self) -> None:
        super().__init__(untimed)

    async def evaluate(self, task: Task, code: str, options: object = None, *, progress: object = None) -> Evaluation:  # type: ignore[override]
        evaluation = await super().evaluate(task, code, options, progress=progress)  # type: ignore[arg-type]
        speedup = ESTIMATES.get(code.split()[-1])
        if evaluation.status is not Status.ok or speedup is None:
            return evaluation
        summary = f"estimated {1 / speedup:.3g} ms on an H200, not measured ({speedup:.2f}x eager's estimated 1 ms)"
        estimate = Estimate(gpu="H200", ms=1 / speedup, reference_ms=1.0, speedup=speedup, summary=summary)
        return evaluation.model_copy(update={"estimate": estimate, "message": f"{evaluation.message}; {summary}"})


async def test_an_untimed_run_is_ranked_by_its_estimates_and_every_view_says_so(svc: Services) -> None:
    svc.evaluator = EstimatingEvaluator()
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=3, total_steps=5))
    results = [
        await compile_and_profile(
            svc, CompileAndProfileRequest(code=code, run_id=run.run_id, parent_id=run.root_node_id, action="large")
        )
        for code in ("e1", "e2", "wrong e4", "e3")
    ]
    first, fastest, wrong, _ = results
    assert fastest.estimated_speedup == 2.6 and fastest.speedup is None and wrong.estimated_speedup is None
    # the reward is the estimate's, said as an estimate: the kernels no longer tie at 0.509
    assert fastest.reward == reward("ok", 2.6) > first.reward == reward("ok", 1.3)
    assert "comes from its estimated speedup, 2.60x on an H200, not a measurement" in fastest.message
    assert "tie" not in fastest.message
    assert fastest.is_new_best and not results[3].is_new_best

    best = best_kernel(svc, BestKernelRequest(run_id=run.run_id))
    assert (best.node_id, best.speedup, best.measured) == (fastest.node_id, None, "estimated")
    assert best.estimated_speedup == 2.6 and best.tied_node_ids == []
    assert f"node {fastest.node_id}, 2.600x (estimated, not measured): the fastest by its estimated speedup" in (
        best.message
    )
    state = get_run(svc, GetRunRequest(run_id=run.run_id))  # the same one best, with its rule
    assert (state.best_node_id, state.best_speedup, state.best_estimated_speedup) == (fastest.node_id, None, 2.6)
    assert state.best_why == best.message
    (row,) = [line for line in tools.render_runs(svc).splitlines() if line.startswith(run.run_id)]
    assert "2.600x est." in row and f"node {fastest.node_id}, estimated" in row
    tree = tools.render_run_tree(svc, run.run_id).splitlines()
    assert tree[1].startswith(f"best: node {fastest.node_id}, 2.600x (estimated, not measured)")
    assert any(f"#{fastest.node_id} " in line and "2.60x est" in line for line in tree)
    page = run_page_data(svc, run.run_id)["run"]
    assert (page["best_node_id"], page["best_speedup"], page["best_estimated_speedup"], page["best_measured"]) == (
        fastest.node_id,
        None,
        2.6,
        "estimated",
    )
    # nothing was timed, so finishing re-measures nothing and the estimated best stands
    calls = svc.evaluator.calls
    finished = await finish_run(svc, FinishRunRequest(run_id=run.run_id))
    assert svc.evaluator.calls == calls and finished.final_node_id == fastest.node_id
