"""Every measured time and every estimate is held against the task's speed of light: a kernel under it gets a
`faster_than_light` warning that says what is probably blind, and its speedup is credited at most eager's time over
the speed of light. The verdict's speed stage runs here on the records it reads (no worker, no GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.config import ExecutorConfig
from adaexplore.domain import Backend, Evaluation, Mode, Stats, Status, Timing
from adaexplore.executor import load_task
from adaexplore.executor.host._environment import Environment
from adaexplore.executor.pipeline.stages import result, speed
from adaexplore.executor.pipeline.stages.context import Run
from adaexplore.roofline import ForwardWork, LaunchConfig, LaunchWork, OpWork, TaskWork

TASK = load_task(Path(__file__).parent / "data" / "long_linear_task.py")
GEMM = 2 * 1024 * 8192 * 8192  # KernelBench Level 2 problem 12's Linear
SOL_MS = GEMM * 3 / 989.4e12 * 1e3  # bf16x3 on an H200: compute-bound
EAGER_MS = 2.74


def work() -> TaskWork:
    addmm = OpWork(op="aten.addmm", category="matmul", flops=GEMM, bytes_read=302e6, bytes_written=33.5e6)
    return TaskWork(
        forward=ForwardWork(steps=[addmm]), input_bytes=33.5e6, parameter_bytes=268.5e6, output_bytes=33.5e6
    )


def environment(*gpus: str) -> Environment:
    return Environment(python="3.12", torch="2", triton="3", numpy="2", cuda=None, driver=None, gpus=list(gpus))


def stats(ms: float) -> Stats:
    return Stats(n=50, median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, max_ms=ms, p10_ms=ms, p90_ms=ms)


def timed(candidate_ms: float) -> Run:
    ctx = Run(TASK, "code", Mode.strict, None)
    ctx.task_work = work()
    ctx.backends = [Backend.cuda]
    ctx.device = 0
    ctx.timing = Timing(
        method="events",
        statistic="median",
        candidate=stats(candidate_ms),
        reference=stats(EAGER_MS),
        speedup=EAGER_MS / candidate_ms,
    )
    return ctx


def flags(ctx: Run) -> list[str]:
    return [f.code for f in ctx.audit.flags if f.code == "faster_than_light"]


def evaluation(ctx: Run, env: Environment, status: Status = Status.ok) -> Evaluation:
    config = ExecutorConfig()
    return result.build(ctx, status, result.ok_message(ctx), None, config=config, environment=env, sandbox=None)


def test_a_measured_time_under_the_speed_of_light_is_flagged_and_credited_at_the_floor() -> None:
    env = environment("NVIDIA H200")
    ctx = timed(0.3)
    result.settle_speed(ctx, Status.ok, ExecutorConfig(), env)
    sol = ctx.speed_of_light
    assert sol is not None and sol.fp32_matmuls == "bf16x3" and sol.ms == pytest.approx(SOL_MS)
    assert sol.fraction is not None and sol.fraction == pytest.approx(SOL_MS / 0.3) and sol.fraction > 1
    [flag] = [f for f in ctx.audit.flags if f.code == "faster_than_light"]
    assert flag.severity == "warn"
    assert "measured 0.3 ms" in flag.message and "the correctness check was probably blind" in flag.message
    ceiling = EAGER_MS / SOL_MS
    assert f"at most {ceiling:.3g}x" in flag.message
    verdict = evaluation(ctx, env)
    # the fraction is shown above 1, but never without the warning beside it
    assert verdict.sol_fraction is not None and verdict.sol_fraction > 1 and flag.message in verdict.message
    assert verdict.speedup == pytest.approx(EAGER_MS / 0.3)
    assert verdict.speedup_ceiling == pytest.approx(ceiling)
    assert verdict.credited_speedup == pytest.approx(ceiling)


def test_an_honest_time_is_not_flagged_and_keeps_its_speedup() -> None:
    env = environment("NVIDIA H200")
    ctx = timed(1.288)  # the H200's time of the shared corpus's fastest Level 2 problem 12 kernel
    result.settle_speed(ctx, Status.ok, ExecutorConfig(), env)
    assert not flags(ctx) and ctx.speed_of_light is not None
    assert ctx.speed_of_light.fraction == pytest.approx(SOL_MS / 1.288)
    verdict = evaluation(ctx, env)
    assert verdict.credited_speedup == pytest.approx(EAGER_MS / 1.288) == verdict.speedup


def test_a_speed_of_light_for_another_gpu_says_nothing_of_the_times_measured() -> None:
    env = environment("NVIDIA H200")
    ctx = timed(0.3)
    result.settle_speed(ctx, Status.ok, ExecutorConfig(target_gpu="B200"), env)
    assert ctx.speed_of_light is not None and ctx.speed_of_light.gpu == "B200"
    assert ctx.speed_of_light.fraction is None and not flags(ctx)
    verdict = evaluation(ctx, env)
    assert verdict.speedup_ceiling is None and verdict.credited_speedup == verdict.speedup


def test_an_estimate_under_the_speed_of_light_is_flagged_as_probably_blind() -> None:
    env = environment()  # no GPU: the estimate stands in for a time
    ctx = Run(TASK, "code", Mode.strict, None)
    ctx.task_work = work()
    ctx.backends = [Backend.compile, Backend.interpret]
    ctx.trial_kernels = ["gemm"]
    # a GEMM whose recorded dots are a third of the task's: one bf16 product where fp32 accuracy needs three
    launch = LaunchConfig(
        config="BLOCK_M=128, BLOCK_N=128, BLOCK_K=64",
        programs=512,
        num_warps=8,
        num_stages=3,
        dot_flops={"bf16": float(GEMM)},
        dot_tile=(128, 128, 64),
        bytes_read=302e6,
        bytes_written=33.5e6,
    )
    ctx.candidate_work = ForwardWork(steps=[LaunchWork(kernel="gemm", configs=[launch])])
    result.settle_speed(ctx, Status.ok, ExecutorConfig(), env)
    estimate = ctx.estimate
    assert estimate is not None and estimate.ms < SOL_MS and estimate.sol_fraction is not None
    [flag] = [f for f in ctx.audit.flags if f.code == "faster_than_light"]
    assert f"estimated {estimate.ms:.3g} ms" in flag.message and "the estimate is probably blind" in flag.message
    verdict = evaluation(ctx, env)
    assert flag.message in verdict.message
    ceiling = estimate.reference_ms / SOL_MS
    assert verdict.speedup_ceiling == pytest.approx(ceiling)
    assert verdict.credited_estimated_speedup == pytest.approx(ceiling) and ceiling < estimate.speedup
    # the same kernel with all three products is slower than light, and not flagged
    honest = launch.model_copy(update={"dot_flops": {"bf16": 3.0 * GEMM}})
    ctx = Run(TASK, "code", Mode.strict, None)
    ctx.task_work, ctx.trial_kernels = work(), ["gemm"]
    ctx.candidate_work = ForwardWork(steps=[LaunchWork(kernel="gemm", configs=[honest])])
    result.settle_speed(ctx, Status.ok, ExecutorConfig(), env)
    assert ctx.estimate is not None and ctx.estimate.ms > SOL_MS and not flags(ctx)


def test_create_tasks_sentence_names_the_path_it_assumed() -> None:
    strict = speed.sol_for(TASK, Mode.strict, work(), speed.target_gpu(ExecutorConfig(), environment(), None))
    assert strict is not None
    said = speed.describe_sol(strict)
    assert said.startswith(f"On an H200 this task cannot run faster than {SOL_MS:.3g} ms")
    assert "taken at best as three bf16 (or fp16) products of operands split into high and low parts (bf16x3)" in said
    paper = speed.sol_for(TASK, Mode.paper, work(), speed.target_gpu(ExecutorConfig(), environment(), None))
    assert paper is not None and paper.fp32_matmuls == "fp16" and paper.ms == pytest.approx(SOL_MS / 3)
    assert "one fp16 product (fp16): TF32's precision at twice its rate" in speed.describe_sol(paper)
    # the precision stage's question, in Triton's words: strict needs a split, paper does not
    assert speed.fp32_path(TASK, Mode.strict) == "tf32x3" and speed.fp32_path(TASK, Mode.paper) == "tf32"


def test_a_tiny_kernel_under_one_launchs_cost_is_noted_not_flagged() -> None:
    env = environment("NVIDIA H200")
    ctx = timed(0.0024)
    relu = OpWork(op="aten.relu", category="memory", bytes_read=4096, bytes_written=4096)
    ctx.task_work = TaskWork(forward=ForwardWork(steps=[relu]), input_bytes=4096, parameter_bytes=0, output_bytes=4096)
    result.settle_speed(ctx, Status.ok, ExecutorConfig(), env)
    sol = ctx.speed_of_light
    assert sol is not None and sol.bound == "launch" and sol.fraction is not None and sol.fraction > 1
    assert not flags(ctx)  # one launch's 2.5 us is a figure measured back to back, not a physical bound
    [note] = [f for f in ctx.audit.flags if f.code == "under_soft_bound"]
    verdict = evaluation(ctx, env)
    assert note.severity == "info" and note.message in verdict.message  # said beside the fraction over 100 %
    assert verdict.credited_speedup == pytest.approx(EAGER_MS / 0.0024)  # 8 KB fit in the cache: no hard floor


def test_a_memory_bound_time_is_held_to_the_traffic_its_cache_cannot_keep() -> None:
    env = environment("NVIDIA H200")
    relu = OpWork(op="aten.relu", category="memory", bytes_read=40e6, bytes_written=40e6)
    work = TaskWork(forward=ForwardWork(steps=[relu]), input_bytes=40e6, parameter_bytes=0, output_bytes=40e6)
    memory_ms = 80e6 / 4.8e12 * 1e3
    hard_ms = (80e6 - (60 << 20)) / 4.8e12 * 1e3  # the H200's 60 MiB of L2 may keep part of it from the HBM
    for measured, code in ((memory_ms * 0.8, "under_soft_bound"), (hard_ms * 0.9, "faster_than_light")):
        ctx = timed(measured)
        ctx.task_work = work
        result.settle_speed(ctx, Status.ok, ExecutorConfig(), env)
        sol = ctx.speed_of_light
        assert sol is not None and sol.bound == "memory" and sol.ms == pytest.approx(memory_ms)
        assert sol.floor_ms == pytest.approx(hard_ms)
        assert [f.code for f in ctx.audit.flags] == [code]
