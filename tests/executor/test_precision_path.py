"""Which kernels the check at the full reduction length takes, and how its verdict names their precision path: from
the full-size record's dot FLOPs by precision against the task's matrix products (no worker runs here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.domain import Mode, Status
from adaexplore.executor import load_task
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.pipeline.stages.precision import _judged
from adaexplore.executor.pipeline.stages.precision_path import needed, precision_path
from adaexplore.roofline import ForwardWork, LaunchConfig, LaunchWork, OpWork, TaskWork

TASK = load_task(Path(__file__).parent / "data" / "gemm_leaky_task.py")
GEMM = 2.0 * 1024 * 8192 * 8192  # the task's x @ W^T at full size


def _run(dot_flops: dict[str, float], mode: Mode = Mode.strict) -> Run:
    run = Run(TASK, "", mode, None)
    config = LaunchConfig(config="BM=64, BN=64", programs=2048, num_warps=4, num_stages=3, dot_flops=dot_flops)
    other = LaunchConfig(config="BM=128, BN=128", programs=512, num_warps=8, num_stages=3, dot_flops=dot_flops)
    run.candidate_work = ForwardWork(
        steps=[
            LaunchWork(kernel="_split", configs=[LaunchConfig(config="", programs=8, num_warps=4, num_stages=3)]),
            LaunchWork(kernel="_gemm", configs=[config, other], autotuned=True),
        ]
    )
    matmul = OpWork(op="aten.addmm", category="matmul", flops=GEMM)
    run.task_work = TaskWork(forward=ForwardWork(steps=[matmul]), input_bytes=1, parameter_bytes=1, output_bytes=1)
    run.reduction_sizes, run.reduction_names = (
        {"batch_size": 16, "in_features": 8192, "out_features": 17},
        ["in_features"],
    )
    return run


@pytest.mark.parametrize(
    ("flops", "path"),
    [
        (
            {"bf16": 3 * GEMM},
            "three bf16 products per multiply-add of the task (its fp32 operands split into bf16 parts)",
        ),
        (
            {"fp16": 2 * GEMM},
            "two fp16 products per multiply-add of the task (its fp32 operands split into fp16 parts)",
        ),
        (
            {"tf32": 3 * GEMM},
            "three tf32 products per multiply-add of the task (its fp32 operands split into tf32 parts)",
        ),
        ({"tf32x3": GEMM}, 'Triton\'s input_precision="tf32x3" (three tf32 products, the small ones summed apart)'),
        ({"tf32": 1.1 * GEMM}, "one tf32 product per multiply-add of the task"),
    ],
)
def test_a_dot_on_rounded_or_split_operands_is_checked_and_its_path_named(flops: dict, path: str) -> None:
    run = _run(flops)
    assert needed(run)
    assert precision_path(run) == path


def test_fp32_products_and_tolerances_that_admit_tf32_need_no_check() -> None:
    assert not needed(_run({"ieee": GEMM}))
    assert not needed(_run({"bf16": 3 * GEMM}, Mode.paper))  # the paper's protocol admits a single tf32 product
    no_reduction = _run({"bf16": 3 * GEMM})
    no_reduction.reduction_sizes = None  # the small sizes left the reduction as it was
    assert not needed(no_reduction)


def test_a_check_that_runs_out_of_time_says_so_and_blames_no_hang() -> None:
    run, probe = _run({"bf16": 3 * GEMM}), _run({"bf16": 3 * GEMM})
    probe.trial_timeout_s = 240.0
    ran_out = Verdict(Status.timeout, "trial 1 of 1 did not finish within 240 s of wall time, and was killed")
    _judged(run, probe, ran_out, "in_features=8192", precision_path(run))  # not raised: not held against it
    flag = next(f for f in run.audit.flags if f.code == "precision_unchecked")
    assert flag.severity == "warn"
    assert "were not checked at the task's full reduction length (in_features=8192)" in flag.message
    assert "three bf16 products" in flag.message and "240 s" in flag.message
    assert "not a sign that the kernel hangs" in flag.message and "never ends" not in flag.message
