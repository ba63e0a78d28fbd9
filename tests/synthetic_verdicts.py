"""Kernels a GPU timed, made up: what each launches and its measured time as a GPU whose efficiencies are known
factors of the package's would give it, for the tests of `adaexplore calibrate`; and those verdicts written into a
store as a GPU machine's search leaves them."""

from __future__ import annotations

import hashlib
import math
import random

from adaexplore.domain import Kind
from adaexplore.executor import Backend, Evaluation, Mode, Provenance, Stats, Status, Timing
from adaexplore.roofline import (
    CALIBRATION,
    ForwardWork,
    LaunchConfig,
    LaunchWork,
    OpWork,
    TaskWork,
    TimedKernel,
    estimate_forward,
    gpu_spec,
    scaled,
)
from adaexplore.store import NewEvaluation, Store

H200 = gpu_spec("H200")
TRUE = {"tensor_cores": 1.45, "cuda_cores": 0.6, "memory": 0.8, "library_compute": 1.25, "library_memory": 0.7}


def _launch(name: str, *, dots: float = 0.0, simt: float = 0.0, moved: float = 0.0) -> LaunchWork:
    config = LaunchConfig(
        config="BLOCK=128",
        programs=132 * 8,
        num_warps=8,
        num_stages=4,
        registers=128,
        dot_flops={"bf16": dots} if dots else {},
        dot_tile=(128, 128, 64) if dots else None,
        simt=simt,
        bytes_read=moved,
        bytes_written=moved / 4,
        requested_bytes=moved,
    )
    return LaunchWork(kernel=name, configs=[config])


def _measured(work: ForwardWork, rng: random.Random, noise: float) -> float:
    truth = scaled(CALIBRATION, TRUE)
    return estimate_forward(work, H200, calibration=truth).ms * math.exp(rng.gauss(0, noise))


def reference(problem: str, noise: float = 0.03) -> tuple[ForwardWork, float]:
    """A problem's reference, a library matmul and a memory-bound operator in proportions of its own, and its
    measured time (the same for every kernel of the problem)."""
    rng = random.Random(problem)
    work = ForwardWork(
        steps=[
            OpWork(op="aten.mm", category="matmul", flops=4e11 * 10 ** rng.uniform(-1, 1)),
            OpWork(op="aten.relu", category="memory", bytes_read=2e9 * 10 ** rng.uniform(-1, 1), bytes_written=1e9),
        ]
    )
    return work, _measured(work, rng, noise)


def synthetic_kernel(rng: random.Random, problem: str, noise: float = 0.03) -> TimedKernel:
    """A kernel of one to three launches (tensor-core, element-wise, memory-bound) of `problem`, its time as the
    GPU of `TRUE`'s factors would measure it."""
    steps: list[LaunchWork | OpWork] = []
    kinds = rng.sample(["dots", "simt", "moved"], rng.randint(1, 3))
    for i, kind in enumerate(kinds):
        scale = 10 ** rng.uniform(-0.5, 1.0)
        amount = {"dots": 2e12 * scale, "simt": 4e9 * scale, "moved": 5e9 * scale}[kind]
        steps.append(_launch(f"k{i}", **{kind: amount}))
    kernel = ForwardWork(steps=steps)
    theirs, theirs_ms = reference(problem, noise)
    return TimedKernel(problem, kernel, theirs, _measured(kernel, rng, noise), theirs_ms)


def corpus(n: int, problems: int = 6, seed: int = 1) -> list[TimedKernel]:
    """`n` kernels over `problems` problems (p0, p1, ...)."""
    rng = random.Random(seed)
    return [synthetic_kernel(rng, f"p{i % problems}") for i in range(n)]


def _stats(ms: float) -> Stats:
    return Stats(n=50, median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, max_ms=ms, p10_ms=ms, p90_ms=ms)


def store_verdicts(store: Store, kernels: list[TimedKernel], device: str = "NVIDIA H200") -> None:
    """Each kernel as a GPU-timed node of a run on its problem's task, its forward kept beside the verdict."""
    runs: dict[str, tuple[str, int]] = {}
    for i, k in enumerate(kernels):
        if k.problem not in runs:
            work = TaskWork(forward=k.reference, input_bytes=1e6, parameter_bytes=0.0, output_bytes=1e6)
            store.put_task(k.problem, k.problem, f"# task {k.problem}", "test", work.model_dump_json())
            run = store.create_run(k.problem, config="{}", mode="strict", backend="cuda", model="test", seed=0)
            runs[k.problem] = (run.id, run.root_id)
        run_id, root = runs[k.problem]
        digest = hashlib.sha256(k.kernel.model_dump_json().encode()).hexdigest()[:16]  # one per kernel
        timing = Timing(
            method="strict",
            statistic="median",
            candidate=_stats(k.kernel_ms),
            reference=_stats(k.reference_ms),
            speedup=k.reference_ms / k.kernel_ms,
        )
        provenance = Provenance(
            adaexplore="test", python="3", gpu=device, device=0, environment="gpu-env", task_hash=k.problem,
            code_hash=digest, sizes="full", finished_at="2026-12-07T00:00:00+00:00",
        )  # fmt: skip
        evaluation = Evaluation(
            status=Status.ok, message="timed", mode=Mode.strict, backends=[Backend.cuda], timed=True, timing=timing,
            provenance=provenance,
        )  # fmt: skip
        stored = NewEvaluation(
            code_hash=digest, environment="gpu-env", mode="strict", status="ok", speedup=timing.speedup,
            result=evaluation.model_dump_json(), work=k.kernel.model_dump_json(),
        )  # fmt: skip
        store.add_child(
            run_id, root, Kind.large, code=f"# kernel {i}", code_hash=digest, context_ids=[], task_id=k.problem,
            evaluation=stored, reward=1.0,
        )  # fmt: skip
