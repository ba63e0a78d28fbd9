"""Every GPU of a host, on a fake multi-device backend: the evaluator's real stages, one judge and one worker pool
per device, talking to scripted in-process workers (tests/executor/scripted.py) on a machine that shows several
"GPUs". An evaluation goes to the device with the fewest under way, names it, and divides by a reference timed
on that same device."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from adaexplore.domain import Evaluation, Status
from adaexplore.errors import ConfigError
from adaexplore.executor import Evaluator, load_task
from adaexplore.executor._protocol import ReferenceTimed, Timed
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
