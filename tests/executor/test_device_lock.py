"""The GPU lock: one measurement per GPU at a time, within a process and across the processes of a machine,
with real processes holding real file locks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from adaexplore.errors import ConfigError
from adaexplore.executor.host._device_lock import DeviceLock, physical_gpu
from tests.conftest import EXAMPLES, ON_GPU, ROOT

pytestmark = pytest.mark.anyio

HOLDER = """
import sys, time, anyio
from pathlib import Path
from adaexplore.executor.host._device_lock import DeviceLock

async def main():
    lock = DeviceLock(Path(sys.argv[1]))
    await lock.acquire()
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    lock.release()

anyio.run(main)
"""


def start_holder(path: Path, seconds: float) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(seconds)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


async def test_another_process_holding_the_gpu_makes_this_one_wait(tmp_path: Path) -> None:
    path = tmp_path / "cuda-0.lock"
    holder = start_holder(path, 1.5)
    try:
        lock = DeviceLock(path)
        assert lock.holder() == str(holder.pid)
        start = time.monotonic()
        async with lock:
            waited = time.monotonic() - start
            assert holder.poll() is not None or waited > 1.0  # it had let go by then
            assert lock.holder() == str(os.getpid())
        assert waited > 0.8, waited
    finally:
        holder.wait(timeout=30)


async def test_a_killed_holder_frees_the_gpu(tmp_path: Path) -> None:
    path = tmp_path / "cuda-0.lock"
    holder = start_holder(path, 60)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    with anyio.fail_after(5):
        async with DeviceLock(path):
            pass


async def test_evaluations_of_one_process_take_turns(tmp_path: Path) -> None:
    lock = DeviceLock(tmp_path / "cuda-0.lock")
    inside = 0
    most = 0

    async def use() -> None:
        nonlocal inside, most
        async with lock:
            inside += 1
            most = max(most, inside)
            await anyio.sleep(0.05)
            inside -= 1

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(use)
    assert most == 1


async def test_a_wait_cancelled_leaves_the_lock_usable(tmp_path: Path) -> None:
    path = tmp_path / "cuda-0.lock"
    holder = start_holder(path, 1.0)
    lock = DeviceLock(path)
    with anyio.move_on_after(0.2) as scope:
        await lock.acquire()
    assert scope.cancelled_caught
    holder.wait(timeout=30)
    with anyio.fail_after(5):
        async with lock:
            pass


async def test_a_lock_directory_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    lock = DeviceLock(blocker / "cuda-0.lock")
    with pytest.raises(ConfigError, match="device_lock_dir"):
        await lock.acquire()
    with anyio.fail_after(5):  # the failed attempt let go of the in-process lock
        with pytest.raises(ConfigError):
            await lock.acquire()


def test_gpus_are_named_as_every_process_sees_them() -> None:
    assert physical_gpu(0, {}) == "0"
    assert physical_gpu(1, {"CUDA_VISIBLE_DEVICES": "3,5"}) == "5"
    assert physical_gpu(0, {"CUDA_VISIBLE_DEVICES": "GPU-8a1b,GPU-77c2"}) == "GPU-8a1b"


EVALUATE_AFTER_BARRIER = """
import json, sys, time, anyio
from pathlib import Path
from adaexplore.config import ExecutorConfig, Settings
from adaexplore.executor import Evaluator, load_task

async def main():
    home, barrier, task, kernel, locks = (Path(a) for a in sys.argv[1:6])
    settings = Settings(home=home, executor=ExecutorConfig(device_lock_dir=locks, warm_workers=1))
    async with Evaluator(settings) as evaluator:
        task = load_task(task)
        code = kernel.read_text()
        await evaluator.evaluate(task, code, backend="cuda")  # warm: compile cache, reference timing
        (barrier / f"ready-{home.name}").write_text("")
        while len(list(barrier.glob("ready-*"))) < 2:
            time.sleep(0.01)
        result = await evaluator.evaluate(task, code, backend="cuda")
        print(json.dumps({"status": result.status.value, "phases": result.phases}))

anyio.run(main)
"""


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU: the lock guards measurements on it")
def test_two_processes_never_measure_on_one_gpu_at_once(tmp_path: Path) -> None:
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    task = EXAMPLES / "tasks" / "gemm_epilogue.py"
    kernel = EXAMPLES / "kernels" / "gemm_epilogue" / "correct.py"
    script = textwrap.dedent(EVALUATE_AFTER_BARRIER)
    locks = tmp_path / "locks"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, *map(str, (tmp_path / f"home-{i}", barrier, task, kernel, locks))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for i in range(2)
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=500)
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["status"] == "ok" for r in results), results
    # Both reached the GPU together; one of them waited for the other's trials and timing.
    print("phases of the two evaluations:", json.dumps([r["phases"] for r in results]))  # shown with -s
    waits = sorted(r["phases"].get("wait_device", 0.0) for r in results)
    measured = min(r["phases"].get("timing", 0.0) for r in results)
    assert waits[-1] > 0.5 * measured > 0, results
