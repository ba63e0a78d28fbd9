"""The tools on a real store (an SQLite file, and a PostgreSQL database), with scripted verdicts (the search is
under test here, not kernels)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from adaexplore.config import SearchConfig
from adaexplore.domain import Kind
from adaexplore.errors import ConflictError, NotFoundError, RequestError, TaskError
from adaexplore.executor import Status
from adaexplore.search import Tree
from adaexplore.store import open_store
from adaexplore.tools import (
    BestKernelRequest,
    CompileAndProfileRequest,
    CreateTaskRequest,
    ExpandNodeRequest,
    FinishRunRequest,
    GetNodeRequest,
    GetRunRequest,
    SelectUctRequest,
    Services,
    StartRunRequest,
    best_kernel,
    compile_and_profile,
    create_task,
    expand_node,
    finish_run,
    get_node,
    get_run,
    select_uct,
    start_run,
)
from tests.conftest import Databases
from tests.fakes import FakeEvaluator, by_hash

TASK_FILE = Path(__file__).parents[1] / "executor" / "data" / "scale_relu_task.py"

pytestmark = pytest.mark.anyio


@pytest.fixture
def svc(databases: Databases, tmp_path: Path) -> Services:
    settings = databases.settings(tmp_path)
    return Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))


def rows(svc: Services, table: str) -> int:
    return svc.store._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


async def step(svc: Services, run_id: str, code: str | None = None) -> int:
    """One AdaExplore step as a client takes it; returns the new node's id."""
    chosen = select_uct(svc, SelectUctRequest(run_id=run_id))
    context = expand_node(svc, ExpandNodeRequest(run_id=run_id, node_id=chosen.node_id, action=chosen.action))
    result = await compile_and_profile(
        svc,
        CompileAndProfileRequest(
            code=code or f"# step {chosen.steps_done} from node {chosen.node_id}\n", expansion_id=context.expansion_id
        ),
    )
    assert result.node_id is not None
    return result.node_id


def test_a_task_is_created_once_from_text_or_file(svc: Services) -> None:
    by_text = create_task(svc, CreateTaskRequest(source=TASK_FILE.read_text(), name="scale_relu"))
    by_file = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    assert by_text.task_id == by_file.task_id
    assert by_text.init_params == ["scale"] and by_text.small_sizes
    assert rows(svc, "tasks") == 1


@pytest.mark.parametrize(
    ("request_", "error", "fragment"),
    [
        (CreateTaskRequest(), RequestError, "give the task one way"),
        (CreateTaskRequest(source="x", path="y"), RequestError, "give the task one way"),
        (CreateTaskRequest(source="x", flashinfer_definition="d.json"), RequestError, "give the task one way"),
        (CreateTaskRequest(source="x", flashinfer_workloads=["w"]), RequestError, "goes with flashinfer_definition"),
        (CreateTaskRequest(path="/no/such/task.py"), RequestError, "does not exist"),
        (CreateTaskRequest(source="import torch\n"), TaskError, "is missing a class Model"),
    ],
)
def test_a_bad_task_request_says_what_to_fix_and_writes_nothing(svc: Services, request_, error, fragment) -> None:
    with pytest.raises(error, match=fragment):
        create_task(svc, request_)
    assert rows(svc, "tasks") == 0


async def test_one_step_grows_the_root_with_a_large_step(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=7, total_steps=5))
    chosen = select_uct(svc, SelectUctRequest(run_id=run.run_id))
    assert (chosen.node_id, chosen.action, chosen.reason) == (run.root_node_id, "large", "root")
    context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=chosen.node_id, action="large"))
    assert context.pool == [] and context.current is None
    assert "class Model(nn.Module)" in context.instructions
    assert "No correct kernel exists in this run yet" in context.instructions
    result = await compile_and_profile(
        svc, CompileAndProfileRequest(code="fast kernel", expansion_id=context.expansion_id)
    )
    assert result.node_id is not None and result.reward is not None
    node = get_node(svc, GetNodeRequest(node_id=result.node_id))
    assert node.parent_id == run.root_node_id and node.kind == "large" and node.segment == node.node_id
    assert node.visits == 1 and node.evaluation is not None and node.code == "fast kernel"
    state = get_run(svc, GetRunRequest(run_id=run.run_id))
    assert state.steps_done == 1 and state.nodes == 2


async def test_a_small_step_sees_the_kernel_and_its_segment_history(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    head = await step(svc, run.run_id, code="head kernel")
    first = await compile_and_profile(
        svc, CompileAndProfileRequest(code="edit one", run_id=run.run_id, parent_id=head, action="small")
    )
    assert first.node_id is not None
    context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=first.node_id, action="small"))
    assert context.current is not None and context.current.code == "edit one"
    assert [k.node_id for k in context.working_memory] == [head]  # the current kernel comes once, as current
    assert "edit one" in context.instructions


async def test_large_step_pool_holds_the_best_correct_kernel_of_each_segment_on_the_path(svc: Services) -> None:
    speeds = {"a": (Status.ok, 1.5), "a2": (Status.ok, 3.0), "b": (Status.ok, 2.0), "bad": (Status.mismatch, None)}
    svc.evaluator = FakeEvaluator(lambda code, _: speeds[code])
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))

    async def add(code: str, parent: int, action: str) -> int:
        result = await compile_and_profile(
            svc, CompileAndProfileRequest(code=code, run_id=run.run_id, parent_id=parent, action=action)
        )
        assert result.node_id is not None
        return result.node_id

    a = await add("a", run.root_node_id, "large")
    a2 = await add("a2", a, "small")
    b = await add("b", a2, "large")
    bad = await add("bad", b, "small")
    context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=bad, action="large"))
    assert [k.node_id for k in context.pool] == [a2, b]  # segment a's best is a2, segment b's is b
    assert "bad" not in [k.code for k in context.pool]


@pytest.mark.parametrize("preset", ["default", "paper"])
async def test_identical_code_reuses_its_evaluation_unless_the_paper_preset(svc: Services, preset: str) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1, preset=preset))
    head = await step(svc, run.run_id, code="same kernel")
    calls = svc.evaluator.calls
    again = await compile_and_profile(
        svc,
        CompileAndProfileRequest(
            code="same  kernel".replace("  ", " "), run_id=run.run_id, parent_id=head, action="small"
        ),
    )
    assert again.reused_evaluation is (preset == "default")
    assert svc.evaluator.calls == calls + (preset == "paper")


async def test_an_infrastructure_failure_adds_no_node(svc: Services) -> None:
    svc.evaluator = FakeEvaluator(lambda code, _: (Status.infra_error, None))
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    result = await compile_and_profile(
        svc, CompileAndProfileRequest(code="k", run_id=run.run_id, parent_id=run.root_node_id, action="large")
    )
    assert result.node_id is None and "not added to the tree" in result.message
    assert rows(svc, "nodes") == 1 and rows(svc, "evaluations") == 0


async def test_evaluating_against_a_task_alone_stores_no_node(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    result = await compile_and_profile(svc, CompileAndProfileRequest(code="k", task_id=task.task_id))
    assert result.node_id is None and result.evaluation.status is not None
    assert rows(svc, "nodes") == 0


async def test_bad_requests_are_refused_and_write_nothing(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    other = start_run(svc, StartRunRequest(task_id=task.task_id, seed=2))
    head = await step(svc, run.run_id)
    before = {t: rows(svc, t) for t in ("nodes", "evaluations", "expansions", "runs")}
    cases = [
        (lambda: select_uct(svc, SelectUctRequest(run_id="run-nope")), NotFoundError, "no run has id"),
        (
            lambda: expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=99999, action="large")),
            NotFoundError,
            "no node has id 99999",
        ),
        (
            lambda: expand_node(svc, ExpandNodeRequest(run_id=other.run_id, node_id=head, action="small")),
            RequestError,
            f"belongs to run {run.run_id}",
        ),
        (
            lambda: expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=run.root_node_id, action="small")),
            RequestError,
            "the root has no kernel to edit",
        ),
        (lambda: start_run(svc, StartRunRequest(task_id="nope")), NotFoundError, "no task has id"),
        (lambda: best_kernel(svc, BestKernelRequest(run_id=other.run_id)), RequestError, "no correct kernel yet"),
    ]
    for call, error, fragment in cases:
        with pytest.raises(error, match=fragment):
            call()
    async_cases = [
        (CompileAndProfileRequest(code="k", expansion_id=12345), NotFoundError, "no expansion has id"),
        (
            CompileAndProfileRequest(code="k", run_id=other.run_id, parent_id=head, action="small"),
            RequestError,
            "belongs to run",
        ),
        (CompileAndProfileRequest(code="k", run_id=run.run_id), RequestError, "give parent_id and action"),
        (
            CompileAndProfileRequest(code="k", run_id=run.run_id, parent_id=run.root_node_id, action="small"),
            RequestError,
            "the root has no kernel to edit",
        ),
        (CompileAndProfileRequest(code="k"), RequestError, "say what to evaluate against"),
        (CompileAndProfileRequest(code="k", expansion_id=1, run_id=run.run_id), RequestError, "not both"),
    ]
    spent = svc.evaluator.calls
    for request, error, fragment in async_cases:
        with pytest.raises(error, match=fragment):
            await compile_and_profile(svc, request)
    assert svc.evaluator.calls == spent  # each was refused before any evaluation
    assert {t: rows(svc, t) for t in before} == before


async def test_small_steps_stop_at_the_limit(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    head = await step(svc, run.run_id)
    for code in ("x1", "x2"):
        await compile_and_profile(
            svc, CompileAndProfileRequest(code=code, run_id=run.run_id, parent_id=head, action="small")
        )
    with pytest.raises(RequestError, match="small_step_limit is 2"):
        expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=head, action="small"))
    nodes = rows(svc, "nodes")
    with pytest.raises(RequestError, match="has 2 small-step children"):
        await compile_and_profile(
            svc, CompileAndProfileRequest(code="x3", run_id=run.run_id, parent_id=head, action="small")
        )
    assert rows(svc, "nodes") == nodes


async def test_two_clients_expanding_one_node_cannot_push_it_past_its_small_steps(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    head = await step(svc, run.run_id)
    await compile_and_profile(
        svc, CompileAndProfileRequest(code="x1", run_id=run.run_id, parent_id=head, action="small")
    )
    # one small step left: two clients are both handed it before either submits
    first, second = (expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=head, action="small")) for _ in "ab")
    done = await compile_and_profile(svc, CompileAndProfileRequest(code="x2", expansion_id=first.expansion_id))
    assert done.node_id is not None
    nodes, calls = rows(svc, "nodes"), svc.evaluator.calls
    with pytest.raises(RequestError, match="call select_uct again"):
        await compile_and_profile(svc, CompileAndProfileRequest(code="x3", expansion_id=second.expansion_id))
    assert rows(svc, "nodes") == nodes and svc.evaluator.calls == calls  # nothing written, nothing evaluated


class GatedEvaluator(FakeEvaluator):
    """Holds every evaluation until `gate` is set, so that several steps are under way at once."""

    def __init__(self) -> None:
        super().__init__(by_hash)
        self.gate = anyio.Event()
        self.waiting = 0

    async def evaluate(self, task, code, options=None, *, progress=None):  # type: ignore[no-untyped-def, override]
        self.waiting += 1
        await self.gate.wait()
        return await super().evaluate(task, code, options, progress=progress)


async def test_steps_under_way_count_against_the_run_and_the_node_so_concurrent_calls_cannot_overshoot(
    databases: Databases, tmp_path: Path
) -> None:
    # No expand bonus and no random large steps: selection descends to the newest leaf and takes a small step.
    settings = databases.settings(tmp_path, search=SearchConfig(expand_exploration_ratio=0, p_large=0))
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1, total_steps=4))
    head = await step(svc, run.run_id)
    gated = svc.evaluator = GatedEvaluator()

    async def small(code: str) -> None:
        await compile_and_profile(
            svc, CompileAndProfileRequest(code=code, run_id=run.run_id, parent_id=head, action="small")
        )

    # Without the counting, the refused calls below would wait on the gate: fail instead of hanging.
    with anyio.fail_after(30):
        await _overshoot_attempts(svc, run.run_id, head, gated, small)
    state = get_run(svc, GetRunRequest(run_id=run.run_id))
    assert state.steps_done == 4 and rows(svc, "nodes") == 5
    assert get_node(svc, GetNodeRequest(node_id=head, include_code=False)).children == 3
    assert svc.store.claims(run.run_id) == []  # every step under way released its claim
    finished = await finish_run(svc, FinishRunRequest(run_id=run.run_id))
    assert finished.final_node_id is not None


async def _overshoot_attempts(
    svc: Services, run_id: str, head: int, gated: GatedEvaluator, small: Callable[[str], Awaitable[None]]
) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(small, "a")
        group.start_soon(small, "b")
        while gated.waiting < 2:
            await anyio.sleep(0.01)
        # Nothing has landed, but the two small steps under way fill the head's small_step_limit ...
        assert get_node(svc, GetNodeRequest(node_id=head, include_code=False)).children == 0
        with pytest.raises(ConflictError, match="0 small-step children and 2 more being evaluated"):
            await small("c")
        with pytest.raises(ConflictError, match="2 more being evaluated"):
            expand_node(svc, ExpandNodeRequest(run_id=run_id, node_id=head, action="small"))
        chosen = select_uct(svc, SelectUctRequest(run_id=run_id))
        assert (chosen.node_id, chosen.action) == (head, "large")
        assert "counting steps being evaluated" in chosen.reason
        # ... and the run's last step is the only one left: one more goes, a fifth is refused.
        group.start_soon(
            compile_and_profile,
            svc,
            CompileAndProfileRequest(code="d", run_id=run_id, parent_id=head, action="large"),
        )
        while gated.waiting < 3:
            await anyio.sleep(0.01)
        for refused in (
            lambda: select_uct(svc, SelectUctRequest(run_id=run_id)),
            lambda: expand_node(svc, ExpandNodeRequest(run_id=run_id, node_id=head, action="large")),
        ):
            with pytest.raises(ConflictError, match="the other 3 are being evaluated now"):
                refused()
        with pytest.raises(ConflictError, match="3 step\\(s\\) being evaluated now"):
            await finish_run(svc, FinishRunRequest(run_id=run_id))
        assert gated.calls == 0 and rows(svc, "nodes") == 2  # nothing refused was evaluated or written
        gated.gate.set()


async def test_a_whole_run_matches_the_in_memory_tree_and_finishes_on_fresh_measurements(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=11, total_steps=30))
    mirror = Tree()
    ids = {run.root_node_id: mirror.root}
    for _ in range(30):
        chosen = select_uct(svc, SelectUctRequest(run_id=run.run_id))
        context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=chosen.node_id, action=chosen.action))
        code = f"kernel {context.expansion_id}"
        result = await compile_and_profile(svc, CompileAndProfileRequest(code=code, expansion_id=context.expansion_id))
        added = mirror.add(ids[chosen.node_id], Kind(chosen.action), result.status, result.speedup, result.reward)
        ids[result.node_id] = added.id
    for node_id, mirror_id in ids.items():
        stored, expected = get_node(svc, GetNodeRequest(node_id=node_id, include_code=False)), mirror.node(mirror_id)
        assert (stored.visits, stored.children) == (expected.visits, expected.children)
        assert stored.max_reward == pytest.approx(expected.max_reward)
        assert stored.mean_reward == pytest.approx(expected.mean_reward)
    state = get_run(svc, GetRunRequest(run_id=run.run_id))
    best = mirror.best()
    assert best is not None and state.best_speedup == pytest.approx(best.speedup)
    # Re-measurement: a different verdict for the old best makes another candidate win.
    speeds = {}

    def remeasure(code: str, call: int) -> tuple[Status, float | None]:
        speeds[code] = 1.0 + (hash(code) % 7) / 10
        return Status.ok, speeds[code]

    svc.evaluator = FakeEvaluator(remeasure)
    finished = await finish_run(svc, FinishRunRequest(run_id=run.run_id))
    assert len(finished.candidates) == SearchConfig().final_reevaluation
    assert svc.evaluator.fresh_seeds == [True] * len(finished.candidates)  # new seeds whatever the run's mode
    winner = max(finished.candidates, key=lambda c: (c.speedup, -c.node_id))
    assert finished.final_node_id == winner.node_id
    final = best_kernel(svc, BestKernelRequest(run_id=run.run_id))
    assert final.verified and final.node_id == winner.node_id and final.speedup == winner.speedup
    assert get_run(svc, GetRunRequest(run_id=run.run_id)).status == "finished"


async def test_a_stopped_run_says_why_until_its_next_step(svc: Services) -> None:
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1))
    await step(svc, run.run_id)
    svc.store.stop_run(run.run_id, "the token budget is spent")
    stopped = get_run(svc, GetRunRequest(run_id=run.run_id))
    assert (stopped.status, stopped.stop_reason, stopped.steps_done) == ("stopped", "the token budget is spent", 1)
    await step(svc, run.run_id)  # anyone's next step opens it again
    resumed = get_run(svc, GetRunRequest(run_id=run.run_id))
    assert (resumed.status, resumed.stop_reason, resumed.steps_done) == ("running", None, 2)
    await finish_run(svc, FinishRunRequest(run_id=run.run_id))
    svc.store.stop_run(run.run_id, "too late")  # a finished run stays finished
    assert get_run(svc, GetRunRequest(run_id=run.run_id)).status == "finished"


async def test_a_spent_or_finished_run_takes_no_more_steps_and_finishing_twice_measures_nothing(svc: Services) -> None:
    from adaexplore.errors import ConflictError

    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=4, total_steps=2))
    first = await step(svc, run.run_id, code="first kernel")
    context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=first, action="large"))
    await step(svc, run.run_id)
    calls = svc.evaluator.calls
    for attempt in (
        lambda: select_uct(svc, SelectUctRequest(run_id=run.run_id)),
        lambda: expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=first, action="large")),
    ):
        with pytest.raises(ConflictError, match="has taken all 2 of its steps; call finish_run"):
            attempt()
    for request in (
        CompileAndProfileRequest(code="late", expansion_id=context.expansion_id),
        CompileAndProfileRequest(code="late", run_id=run.run_id, parent_id=first, action="large"),
    ):
        with pytest.raises(ConflictError, match="has taken all 2"):
            await compile_and_profile(svc, request)
    assert svc.evaluator.calls == calls  # nothing was evaluated
    finished = await finish_run(svc, FinishRunRequest(run_id=run.run_id))
    calls = svc.evaluator.calls
    again = await finish_run(svc, FinishRunRequest(run_id=run.run_id))
    assert svc.evaluator.calls == calls
    assert (again.final_node_id, again.candidates) == (finished.final_node_id, finished.candidates)
    assert again.message.startswith("already finished")
    with pytest.raises(ConflictError, match="is finished; best_kernel gives its result"):
        select_uct(svc, SelectUctRequest(run_id=run.run_id))
    assert get_run(svc, GetRunRequest(run_id=run.run_id)).steps_done == 2


async def test_finishing_a_run_without_a_correct_kernel_says_so(svc: Services) -> None:
    svc.evaluator = FakeEvaluator(lambda code, _: (Status.mismatch, None))
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=4))
    await step(svc, run.run_id)
    finished = await finish_run(svc, FinishRunRequest(run_id=run.run_id))
    assert (finished.final_node_id, finished.message) == (None, "finished, with no correct kernel")


async def test_a_step_of_a_run_is_judged_by_the_runs_own_protocol(svc: Services) -> None:
    # A backend that only compiles would let a wrong kernel into the tree as correct, and win the run.
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=2))
    chosen = select_uct(svc, SelectUctRequest(run_id=run.run_id))
    context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=chosen.node_id, action=chosen.action))
    for asked in ({"backend": "compile"}, {"mode": "kernelbench"}):
        with pytest.raises(RequestError, match=f"evaluates every kernel with {next(iter(asked))} "):
            await compile_and_profile(
                svc, CompileAndProfileRequest(code="k", expansion_id=context.expansion_id, **asked)
            )
    assert get_run(svc, GetRunRequest(run_id=run.run_id)).steps_done == 0
    # outside a run, any protocol may be tried
    alone = await compile_and_profile(svc, CompileAndProfileRequest(code="k", task_id=task.task_id, backend="compile"))
    assert alone.node_id is None


async def test_a_best_kernel_that_fails_its_re_evaluation_is_not_called_verified(svc: Services) -> None:
    svc.evaluator = FakeEvaluator(lambda code, call: (Status.ok if call == 1 else Status.mismatch, 1.5))
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=3))
    node_id = await step(svc, run.run_id)
    finished = await finish_run(svc, FinishRunRequest(run_id=run.run_id))
    assert [c.status for c in finished.candidates] == ["mismatch"] and "unconfirmed" in finished.message
    final = best_kernel(svc, BestKernelRequest(run_id=run.run_id))
    assert final.node_id == node_id and not final.verified
    assert "NOT confirmed" in final.message and "mismatch" in final.message
    # and with no re-evaluation at all (the paper preset), nothing is called re-measured either
    paper = start_run(svc, StartRunRequest(task_id=task.task_id, seed=3, preset="paper"))
    svc.evaluator = FakeEvaluator(lambda code, call: (Status.ok, 1.5))
    await step(svc, paper.run_id, code="another kernel")
    await finish_run(svc, FinishRunRequest(run_id=paper.run_id))
    unchecked = best_kernel(svc, BestKernelRequest(run_id=paper.run_id))
    assert not unchecked.verified and "not evaluated again" in unchecked.message


async def test_the_same_code_sent_again_for_an_expansion_gets_the_step_that_landed(svc: Services) -> None:
    # a client that retries after a timeout must not add a second node, nor spend a second evaluation
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=6, total_steps=1))
    chosen = select_uct(svc, SelectUctRequest(run_id=run.run_id))
    context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=chosen.node_id, action=chosen.action))
    first = await compile_and_profile(svc, CompileAndProfileRequest(code="k1", expansion_id=context.expansion_id))
    calls = svc.evaluator.calls
    # the run has taken its one step, yet the retry is answered (not refused) with that step's result
    again = await compile_and_profile(svc, CompileAndProfileRequest(code="k1", expansion_id=context.expansion_id))
    assert (again.node_id, again.status, again.reward) == (first.node_id, first.status, first.reward)
    assert f"the result of node {first.node_id}, no new step" in again.message
    assert svc.evaluator.calls == calls and get_run(svc, GetRunRequest(run_id=run.run_id)).steps_done == 1
    # other code for the same expansion is a new step, refused here since the run has no step left
    with pytest.raises(ConflictError, match="has taken all 1 of its steps"):
        await compile_and_profile(svc, CompileAndProfileRequest(code="k2", expansion_id=context.expansion_id))


async def test_the_same_code_sent_while_its_first_call_is_evaluated_is_refused_not_doubled(svc: Services) -> None:
    gate = anyio.Event()

    class Slow(FakeEvaluator):
        async def evaluate(self, task, code, options=None, *, progress=None):  # type: ignore[no-untyped-def]
            await gate.wait()
            return await super().evaluate(task, code, options, progress=progress)

    svc.evaluator = Slow(lambda code, _: (Status.ok, 1.2))
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=7))
    context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=run.root_node_id, action="large"))
    request = CompileAndProfileRequest(code="k", expansion_id=context.expansion_id)
    async with anyio.create_task_group() as group:
        group.start_soon(compile_and_profile, svc, request)
        await anyio.sleep(0.05)
        with pytest.raises(ConflictError, match="is being evaluated now by an earlier call"):
            await compile_and_profile(svc, request)
        gate.set()
    assert get_run(svc, GetRunRequest(run_id=run.run_id)).steps_done == 1 and not svc.store.claims(run.run_id)


async def test_the_same_code_for_a_new_expansion_is_a_new_step(svc: Services) -> None:
    # only a repeat for the same expansion is a retry: a new expansion of the same node, with the same context
    # and a kernel that reads the same, is another step (a client, or replay, may write one kernel twice)
    task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=8))
    made = []
    for _ in range(2):
        context = expand_node(svc, ExpandNodeRequest(run_id=run.run_id, node_id=run.root_node_id, action="large"))
        result = await compile_and_profile(svc, CompileAndProfileRequest(code="k", expansion_id=context.expansion_id))
        made.append(result.node_id)
    assert made[0] != made[1] and get_run(svc, GetRunRequest(run_id=run.run_id)).steps_done == 2
