"""Admission by bytes on a GPU (host/_gpu_memory.py) and the estimate it is fed (pipeline/stages/footprint.py):
evaluations that would not fit on the device side by side wait for each other, in the order they came; one of
unknown size or larger than the device holds it alone; the references the judge keeps unused count, and are
dropped when a reservation needs their room."""

from __future__ import annotations

import anyio
import pytest

from adaexplore.config import ExecutorConfig
from adaexplore.domain import Mode
from adaexplore.executor.host._gpu_memory import CONTEXT_BYTES, GpuMemory
from adaexplore.executor.pipeline.stages.footprint import estimate
from adaexplore.executor.wire._protocol import JobSpec
from adaexplore.roofline import ForwardWork, OpWork, TaskWork

GIB = 1 << 30
H200 = 140 * GIB

pytestmark = pytest.mark.anyio


def book(total: int = 100 * GIB, resident: int = 0) -> GpuMemory:
    memory = GpuMemory(resident=resident)
    memory.learn(total=total)
    return memory


async def hold(memory: GpuMemory, need: int | None, log: list[str], name: str, seconds: float) -> None:
    async with memory.reserve(need) as grant:
        log.append(f"+{name}{'!' if grant.alone else ''}")
        await anyio.sleep(seconds)
        log.append(f"-{name}")


def test_the_capacity_is_the_device_less_a_margin_and_the_contexts_that_stay() -> None:
    memory = book(H200, resident=5)
    assert memory.capacity == H200 - int(H200 * 0.05) - 5 * CONTEXT_BYTES
    assert book(8 * GIB).capacity == 6 * GIB  # the margin is at least 2 GiB
    assert GpuMemory().capacity == 0  # the device not yet known: every request holds it alone


async def test_reservations_that_fit_run_together_and_the_next_waits_for_room() -> None:
    memory, log = book(), []
    capacity = memory.capacity
    async with anyio.create_task_group() as group:
        group.start_soon(hold, memory, capacity // 2, log, "a", 0.2)
        group.start_soon(hold, memory, capacity // 2, log, "b", 0.2)
        await anyio.sleep(0.05)
        group.start_soon(hold, memory, capacity // 4, log, "c", 0.0)
    assert log[:2] == ["+a", "+b"]  # side by side
    assert log.index("+c") > min(log.index("-a"), log.index("-b"))  # after room was made
    assert memory.reserved == 0 and memory.waiting == 0


async def test_requests_are_granted_in_the_order_they_came() -> None:
    # a large request first in line is not overtaken by a small one that would fit now
    memory, log = book(), []
    capacity = memory.capacity
    async with anyio.create_task_group() as group:
        group.start_soon(hold, memory, capacity // 2, log, "a", 0.2)
        await anyio.sleep(0.02)
        group.start_soon(hold, memory, capacity, log, "big", 0.0)
        await anyio.sleep(0.02)
        group.start_soon(hold, memory, capacity // 4, log, "small", 0.0)
    assert log == ["+a", "-a", "+big", "-big", "+small", "-small"]


@pytest.mark.parametrize("need", [None, 500 * GIB], ids=["unknown", "larger-than-the-device"])
async def test_a_request_of_unknown_size_or_too_large_waits_for_an_empty_device_and_holds_it_alone(need) -> None:
    memory, log = book(), []
    async with anyio.create_task_group() as group:
        group.start_soon(hold, memory, GIB, log, "a", 0.2)
        await anyio.sleep(0.02)
        group.start_soon(hold, memory, need, log, "alone", 0.2)
        await anyio.sleep(0.02)
        group.start_soon(hold, memory, GIB, log, "b", 0.0)
    assert log == ["+a", "-a", "+alone!", "-alone", "+b", "-b"]


async def test_references_the_judge_keeps_unused_count_and_are_dropped_when_their_room_is_needed() -> None:
    memory, asked = book(), []

    async def evict() -> None:
        asked.append("evict")
        memory.learn(idle=0)

    memory.evict_idle = evict
    capacity = memory.capacity
    memory.learn(idle=capacity // 2)
    async with memory.reserve(capacity // 4) as grant:  # fits beside them: they stay
        assert not grant.alone and asked == []
        assert not memory.fits(capacity // 2)
    async with memory.reserve(capacity - GIB):  # does not: the judge is asked to drop them, once
        assert asked == ["evict"] and memory.idle == 0


async def test_a_request_cancelled_while_it_waits_leaves_the_line() -> None:
    memory = book()
    async with memory.reserve(memory.capacity):
        with anyio.move_on_after(0.05):
            async with memory.reserve(GIB):
                pytest.fail("granted beside a request that holds the whole device")
        assert memory.waiting == 0
    async with memory.reserve(GIB) as grant:
        assert grant.nbytes == GIB


# ---- the estimate ------------------------------------------------------------------------------------------


def work(inputs: int, outputs: int, params: int = 0, step: int = 0, dtype: str = "float32") -> TaskWork:
    op = OpWork(op="aten.convolution", category="conv", bytes_written=step or outputs, dtype=dtype)
    return TaskWork(forward=ForwardWork(steps=[op]), input_bytes=inputs, parameter_bytes=params, output_bytes=outputs)


def job(mode: Mode = Mode.strict) -> JobSpec:
    return JobSpec(job_id="j", task_path="t.py", exchange_dir=".", sizes="full", mode=mode, trials=5)


def test_two_strict_evaluations_of_a_large_convolution_do_not_fit_on_an_h200_but_small_gemms_do() -> None:
    config = ExecutorConfig()
    # an H200 host's book: the judge, 4 spare workers and the workers of 4 evaluations hold a CUDA context each
    capacity = book(H200, resident=9).capacity
    # KernelBench Level 2 problem 4: 1 GiB of inputs a seed, 2 GiB of outputs
    conv = estimate(work(inputs=GIB, outputs=2 * GIB), job(), config)
    assert capacity / 2 < conv.total < capacity  # alone it fits, two do not
    assert conv.judge > conv.worker  # the judge holds every trial's inputs and float64 outputs
    # Level 2 problem 9: 32 MiB of inputs and outputs, 256 MiB of weights
    gemm = estimate(work(inputs=32 << 20, outputs=32 << 20, params=256 << 20), job(), config)
    assert 3 * gemm.total + conv.total < capacity  # three of them beside the convolution
    # Level 1 problem 47: 8 GiB of inputs a seed: too large to share the device with anything
    assert estimate(work(inputs=8 * GIB, outputs=2 << 20), job(), config).total > capacity


def test_the_float64_reference_and_the_kept_outputs_grow_the_estimate() -> None:
    config = ExecutorConfig()
    strict = estimate(work(inputs=GIB, outputs=GIB), job(Mode.strict), config)
    native = estimate(work(inputs=GIB, outputs=GIB), job(Mode.kernelbench), config)
    assert strict.judge > native.judge  # float64 copies of the outputs and the models
    half = estimate(work(inputs=GIB, outputs=GIB, dtype="bfloat16"), job(Mode.strict), config)
    assert half.judge > strict.judge  # a float64 copy of a bfloat16 tensor is four times its size
    fewer = estimate(work(inputs=GIB, outputs=GIB), job(), ExecutorConfig(recheck_bytes=1 << 20))
    assert fewer.worker < strict.worker  # the rechecks keep samples, not whole outputs
