"""Every GPU of a host, on a fake multi-device backend: the evaluator's real stages, one judge and one worker pool
per device, talking to scripted in-process workers (tests/executor/scripted.py) on a machine that shows several
"GPUs". An evaluation goes to the device with the fewest under way, names it, and divides by a reference timed
on that same device. Above the evaluator, MCP calls at once and an explore of runs in parallel spread the same way."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from adaexplore.agent import Explorer, ReplayWriter, run_all
from adaexplore.config import SearchConfig
from adaexplore.domain import Evaluation, Mode, Status
from adaexplore.errors import ConfigError
from adaexplore.executor import Evaluator, load_task
from adaexplore.executor.host._pool import JudgeClient
from adaexplore.executor.host._spawn import SpawnRequest
from adaexplore.executor.wire._protocol import JobSpec, Load, ReferenceTimed, Timed
from adaexplore.store import open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    CompileAndProfileResult,
    CreateTaskRequest,
    Services,
    StartRunRequest,
    compile_and_profile,
    create_task,
    start_run,
)
from tests.conftest import fast_settings
from tests.executor.scripted import Pause, ScriptedSpawner, _stats, fake_environment, no_sandbox

DATA = Path(__file__).parent / "data"
TASK = load_task(DATA / "scale_relu_task.py")
KERNEL = (DATA / "scale_relu_kernel.py").read_text()

pytestmark = pytest.mark.anyio


def evaluator(tmp_path: Path, spawner: ScriptedSpawner, shown: int, **executor: object) -> Evaluator:
    """An evaluator on a machine that shows `shown` fake GPUs; `executor` sets its settings (e.g. `gpus`)."""
    settings = fast_settings(
        tmp_path,
        warm_workers=0,
        trial_timeout_s=5.0,
        load_timeout_s=5.0,
        device_lock_dir=tmp_path / "locks",
        **executor,
    )
    return Evaluator(settings, spawner=spawner, environment=fake_environment(shown), sandbox=no_sandbox(), cpus={0, 1})


async def test_evaluations_go_to_the_least_loaded_gpu_and_each_verdict_names_its_gpu(tmp_path: Path) -> None:
    # the first candidate's kernel runs for a while; the three after it come and go while it runs
    slow = {"time": [Pause(1.5), Timed(stats=_stats(1.0), method="cuda_events", host_bound_calls=0)]}
    spawner = ScriptedSpawner(candidates=[slow])
    results: list[Evaluation] = []
    async with evaluator(tmp_path, spawner, shown=2) as ev:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:

                async def long_one() -> None:
                    results.append(await ev.evaluate(TASK, KERNEL))

                group.start_soon(long_one)
                while not any(w.role == "candidate" and w.received for w in spawner.started):
                    await anyio.sleep(0.01)
                busy = next(w.device for w in spawner.started if w.role == "candidate")
                assert ev.load()[f"cuda:{busy}"] == 1
                later = [await ev.evaluate(TASK, KERNEL) for _ in range(3)]
    (first,) = results
    assert first.status is Status.ok and all(r.status is Status.ok for r in later)
    assert first.provenance.device == busy and f"on GPU {busy}" in first.message
    # round robin would have sent one of them to the busy GPU
    assert {r.provenance.device for r in later} == {1 - busy}
    assert ev.load() == {"cuda:0": 0, "cuda:1": 0}


async def test_a_speedup_is_against_the_reference_timed_on_its_own_gpu(tmp_path: Path) -> None:
    # GPU 1 is slower at the reference than GPU 0; the candidate takes 1 ms on either
    spawner = ScriptedSpawner(device_judges={1: {"time_reference": [ReferenceTimed(stats=_stats(4.0))]}})
    async with evaluator(tmp_path, spawner, shown=2) as ev, anyio.create_task_group() as group:
        results: list[Evaluation] = []

        async def one() -> None:
            results.append(await ev.evaluate(TASK, KERNEL))

        with anyio.fail_after(30):
            for _ in range(4):  # at once: the least-loaded choice spreads them over both GPUs
                group.start_soon(one)
    by_device = {r.provenance.device: r.timing.speedup for r in results if r.timing is not None}
    assert set(by_device) == {0, 1}
    assert by_device[0] == pytest.approx(2.0) and by_device[1] == pytest.approx(4.0)
    # each GPU's judge timed its own reference; neither was taken from the other's cache
    judges = [w for w in spawner.started if w.role == "judge"]
    assert sorted(w.device for w in judges) == [0, 1]
    assert all(any(m.kind == "time_reference" for m in w.received) for w in judges)  # type: ignore[attr-defined]


async def test_gpus_chosen_in_the_settings_are_the_only_ones_used(tmp_path: Path) -> None:
    spawner = ScriptedSpawner()
    async with evaluator(tmp_path, spawner, shown=3) as ev:
        await ev.wait_warm(10)
    assert sorted({w.device for w in spawner.started}) == [0, 1, 2]
    spawner = ScriptedSpawner()
    async with evaluator(tmp_path / "chosen", spawner, shown=3, gpus=[0, 2]) as ev:
        with anyio.fail_after(30):
            results = [await ev.evaluate(TASK, KERNEL) for _ in range(4)]
    assert {r.provenance.device for r in results} == {0, 2}
    assert {w.device for w in spawner.started} == {0, 2}


async def test_a_gpu_the_machine_does_not_show_is_refused_with_what_it_shows(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"names GPU 3, but this machine shows GPUs 0-1"):
        async with evaluator(tmp_path, ScriptedSpawner(), shown=2, gpus=[0, 3]):
            pass


# ---- above the evaluator: the MCP tools and the headless explore on one evaluator ------------------------------
def _services(tmp_path: Path, ev: Evaluator) -> Services:
    return Services(settings=ev.settings, store=open_store(f"sqlite:///{tmp_path / 'adaexplore.db'}"), evaluator=ev)


def _check_spread(svc: Services, node_ids: list[int]) -> None:
    """Each node's verdict names its GPU, and its speedup is against that GPU's reference (2 ms on GPU 0, 4 ms
    on GPU 1; every candidate takes 1 ms); both GPUs took some."""
    devices = []
    for node_id in node_ids:
        node = svc.store.node(node_id)
        assert node.evaluation_id is not None
        verdict = Evaluation.model_validate_json(svc.store.evaluation(node.evaluation_id).result)
        device = verdict.provenance.device
        assert device in (0, 1) and f"on GPU {device}" in verdict.message, verdict.message
        assert verdict.timing is not None and verdict.timing.reference.median_ms == {0: 2.0, 1: 4.0}[device]
        assert node.speedup == pytest.approx({0: 2.0, 1: 4.0}[device])
        devices.append(device)
    assert set(devices) == {0, 1}, devices


@contextlib.asynccontextmanager
async def _both_busy(ev: Evaluator) -> AsyncIterator[list[bool]]:
    """Watches the evaluator's load while the caller works: the list holds True once both GPUs had an
    evaluation under way at the same moment (evaluations sent one after another never do)."""
    seen = [False]
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            while not seen[0]:
                load = ev.load()
                seen[0] = load.get("cuda:0", 0) >= 1 and load.get("cuda:1", 0) >= 1
                await anyio.sleep(0.005)

        group.start_soon(watch)
        yield seen
        group.cancel_scope.cancel()


def _slow_start_spawner() -> ScriptedSpawner:
    # GPU 1 is slower at the reference; each candidate takes a moment to start, so evaluations sent together overlap
    return ScriptedSpawner(device_judges={1: {"time_reference": [ReferenceTimed(stats=_stats(4.0))]}}, ready_delay=0.2)


async def test_compile_and_profile_calls_at_once_spread_over_the_gpus_each_against_its_own_reference(
    tmp_path: Path,
) -> None:
    spawner = _slow_start_spawner()
    async with evaluator(tmp_path, spawner, shown=2) as ev:
        svc = _services(tmp_path, ev)
        task = create_task(svc, CreateTaskRequest(path=str(DATA / "scale_relu_task.py")))
        run = start_run(svc, StartRunRequest(task_id=task.task_id, total_steps=8, seed=1))
        results: list[CompileAndProfileResult] = []

        async def step(i: int) -> None:  # as MCP clients call it: a large step from the root, each its own kernel
            request = CompileAndProfileRequest(
                run_id=run.run_id, parent_id=run.root_node_id, action="large", code=f"{KERNEL}\n# variant {i}\n"
            )
            results.append(await compile_and_profile(svc, request))

        with anyio.fail_after(30):
            async with _both_busy(ev) as both, anyio.create_task_group() as group:
                for i in range(4):
                    group.start_soon(step, i)
        assert both[0], "the calls were never under way on both GPUs at once"
        assert all(r.status == "ok" and r.node_id is not None for r in results), results
        for r in results:  # what the caller is told is what was stored
            assert r.evaluation is not None and r.speedup == svc.store.node(r.node_id).speedup  # type: ignore[arg-type]
        _check_spread(svc, [r.node_id for r in results if r.node_id is not None])
        assert svc.store.run(run.run_id).steps == 4
        svc.store.close()


async def test_an_explore_of_two_runs_in_parallel_spreads_them_over_the_gpus(tmp_path: Path) -> None:
    """`explore --parallel 2` on two tasks: the Explorer's runs share the evaluator, and their steps go to both GPUs."""
    spawner = _slow_start_spawner()
    async with evaluator(tmp_path, spawner, shown=2) as ev:
        settings = ev.settings.model_copy(update={"search": SearchConfig(reuse_identical=False, final_reevaluation=0)})
        svc = dataclasses.replace(_services(tmp_path, ev), settings=settings)
        run_ids, kernels = [], {}
        for name in ("first", "second"):
            source = DATA / "scale_relu_task.py"
            (tmp_path / f"{name}.py").write_text(source.read_text())
            task = create_task(svc, CreateTaskRequest(path=str(tmp_path / f"{name}.py")))
            kernels[task.task_id] = {f"v{i}": f"{KERNEL}\n# {name} {i}\n" for i in range(3)}
            run_ids.append(start_run(svc, StartRunRequest(task_id=task.task_id, total_steps=3, seed=2)).run_id)
        explorer = Explorer(
            svc, ReplayWriter(kernels=kernels, svc=svc), out_dir=tmp_path / "runs", memory_updates=False
        )
        with anyio.fail_after(60):
            async with _both_busy(ev) as both:
                summaries = await run_all(explorer, run_ids, parallel=2)
        assert both[0], "the two runs' steps were never under way on both GPUs at once"
        assert [s.status for s in summaries] == ["finished", "finished"], summaries
        nodes = [n.id for run_id in run_ids for n in svc.store.nodes(run_id) if n.parent_id is not None]
        assert len(nodes) == 6
        _check_spread(svc, nodes)
        svc.store.close()


async def test_evaluations_one_after_another_take_the_gpus_in_turn_with_task_checks_between(tmp_path: Path) -> None:
    spawner = ScriptedSpawner()
    async with evaluator(tmp_path, spawner, shown=2) as ev:
        with anyio.fail_after(30):
            devices = []
            for _ in range(4):
                await ev.check_task(TASK)  # a task's check, as create_task makes before each run, takes no turn
                devices.append((await ev.evaluate(TASK, KERNEL)).provenance.device)
    assert devices in ([0, 1, 0, 1], [1, 0, 1, 0]), devices


async def test_releasing_a_job_of_a_judge_that_has_ended_starts_no_judge(tmp_path: Path) -> None:
    spawner = ScriptedSpawner()
    request = SpawnRequest(role="judge", backend="cuda", device=0, env={}, exchange=tmp_path / "judge")
    judge = JudgeClient(lambda: spawner.spawn(request), ready_timeout=5)
    await judge.start()
    await judge.request(Load(job=_job("a job", tmp_path)), timeout=5)
    await judge.release("a job")  # a judge that runs and holds it is asked
    await judge.release("never loaded")  # one it never held: nothing to ask
    (started,) = spawner.of("judge")
    assert [getattr(m, "kind", "") for m in started.received] == ["load", "release"]
    await judge.request(Load(job=_job("another job", tmp_path)), timeout=5)
    await judge.aclose()
    await judge.release("another job")  # its judge ended (an evaluator closing, say): nothing to drop
    assert len(spawner.of("judge")) == 1


def _job(job_id: str, where: Path) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        task_path=str(where / "task.py"),
        exchange_dir=str(where),
        sizes="full",
        mode=Mode.strict,
        trials=5,
    )
