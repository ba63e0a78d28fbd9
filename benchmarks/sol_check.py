"""The speed of light adaexplore computes for three KernelBench tasks in strict mode, against a roofline worked out
by hand.

    python benchmarks/sol_check.py [--target H200] [--kernelbench DIR]
    python benchmarks/sol_check.py --scan 2            # every Level 2 problem with matrix products, old and new

The three: Level 2 problem 12 (a GEMM with an epilogue: compute-bound), Level 1 problem 19 (ReLU: memory-bound)
and Level 2 problem 17 (a 3x3 convolution with an instance norm: compute-bound). The by-hand figures count the
FLOPs of the GEMM or the convolution (2 per multiply-add) at a third of the bf16 tensor-core rate (strict mode
holds fp32 outputs to fp32 accuracy, which three bf16 products of operands split into high and low parts reach,
at twice the rate of three tf32 products: `adaexplore/roofline/_sol.py`), and the bytes of the inputs, weights and
outputs once each at the HBM's rate; the bound is the larger. The rule before it (three tf32 products) is shown
beside. `--scan LEVEL` lists, for every problem of a level whose reference multiplies matrices, the speed of light
in strict mode now and under the rule before it, the path and the bound. `--kernelbench` is the folder of
KernelBench's levels (default: the shared data beside the checkout). The reference's record is made as the judge
makes it (on shape-only tensors, in this process: run it on tasks you trust).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from adaexplore.domain import Mode
from adaexplore.executor import load_task
from adaexplore.executor.pipeline.stages.speed import describe_sol, sol_for
from adaexplore.executor.worker.cost._full_size import reference_work
from adaexplore.roofline import PATHS, GpuSpec, OpWork, gpu_spec

KERNELBENCH = Path(__file__).resolve().parents[2] / "shared" / "data" / "kernelbench"


def by_hand(problem: str, product_tflops: float, hbm_gbps: float) -> tuple[float, str]:
    """(ms, bound) worked out from the problem's sizes, three products per product at `product_tflops`."""
    fp32 = 4
    if problem == "12":  # x (1024, 8192) @ W^T (8192, 8192) + b, then a scale and a LeakyReLU
        m, k, n = 1024, 8192, 8192
        flops = 2 * m * k * n
        moved = (m * k + n * k + n + m * n) * fp32
    elif problem == "19":  # relu of x (4096, 393216)
        flops, moved = 0, 2 * 4096 * 393216 * fp32
    else:  # "17": conv2d 64 -> 128 channels, 3x3, on (128, 64, 128, 128), no padding; then instance norm, divide
        n, cin, cout, h, w, kk = 128, 64, 128, 128, 128, 3
        ho, wo = h - kk + 1, w - kk + 1
        flops = 2 * n * cout * ho * wo * cin * kk * kk
        moved = (n * cin * h * w + cout * cin * kk * kk + cout + n * cout * ho * wo) * fp32
    compute = flops * 3 / (product_tflops * 1e12)
    memory = moved / (hbm_gbps * 1e9)
    return max(compute, memory) * 1e3, "compute" if compute > memory else "memory"


def scan(folder: Path, gpu: GpuSpec) -> None:
    """The speed of light of every problem in `folder` whose reference has matrix-multiply FLOPs: now, and with
    every fp32 product at a third of the TF32 rate as before."""
    print(f"{'problem':48s} {'GFLOP':>8} {'before ms':>10} {'now ms':>8} {'now/before':>10}  bound, path")
    ratios = []
    for path in sorted(folder.glob("*.py"), key=lambda p: int(p.name.split("_")[0])):
        work, note = reference_work(str(path), None)
        if work is None:
            print(f"{path.name:48s} no record: {note}")
            continue
        sol = sol_for(load_task(path), Mode.strict, work, gpu)
        if sol is None or not sol.flops:
            continue
        compute = 0.0
        for op in work.forward.steps:
            if isinstance(op, OpWork) and op.flops:
                taken = PATHS["tf32x3"] if op.dtype == "float32" else PATHS[sol.matmul_paths[op.dtype]]
                compute += op.flops / ((taken.tflops(gpu) or gpu.fp16_tflops) * 1e9)
        before = max(sol.memory_ms, compute, gpu.launch_us * 1e-3)
        ratios.append(sol.ms / before)
        paths = ",".join(sorted(set(sol.matmul_paths.values())))
        print(
            f"{path.name[:48]:48s} {sol.flops / 1e9:8.1f} {before:10.4f} {sol.ms:8.4f} {sol.ms / before:10.2f}  "
            f"{sol.bound}, {paths}"
        )
    compute_bound = sum(1 for r in ratios if r < 0.99)
    print(
        f"{len(ratios)} problems with matrix products: {compute_bound} have a lower speed of light now "
        f"(median now/before {sorted(ratios)[len(ratios) // 2]:.2f}), the others are memory- or launch-bound"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="H200")
    parser.add_argument("--kernelbench", type=Path, default=KERNELBENCH, help="the folder of KernelBench's levels")
    parser.add_argument("--scan", type=int, help="list every problem of this level with matrix products instead")
    args = parser.parse_args()
    gpu = gpu_spec(args.target)
    if args.scan is not None:
        scan(args.kernelbench / f"level{args.scan}", gpu)
        return
    problems = {
        "12": args.kernelbench / "level2" / "12_Gemm_Multiply_LeakyReLU.py",
        "19": args.kernelbench / "level1" / "19_ReLU.py",
        "17": args.kernelbench / "level2" / "17_Conv2d_InstanceNorm_Divide.py",
    }
    print(f"{'problem':>8} {'ours ms':>10} {'by hand ms':>11} {'diff':>7} {'tf32x3 ms':>10}  bound, path")
    said = []
    for name, path in problems.items():
        if not path.is_file():
            raise SystemExit(f"no KernelBench problem at {path}: give the folder of its levels with --kernelbench")
        work, note = reference_work(str(path), None)
        if work is None:
            raise SystemExit(f"{path.name}: {note}")
        sol = sol_for(load_task(path), Mode.strict, work, gpu)
        assert sol is not None
        hand, bound = by_hand(name, gpu.bf16_tflops, gpu.hbm_gbps)
        before, _ = by_hand(name, gpu.tf32_tflops, gpu.hbm_gbps)
        print(
            f"{name:>8} {sol.ms:10.4f} {hand:11.4f} {sol.ms / hand - 1:+7.1%} {before:10.4f}  {sol.bound} "
            f"(by hand: {bound}), {sol.fp32_matmuls}"
        )
        said.append(f"{name}: {describe_sol(sol)}")
    print("\n".join(said))


if __name__ == "__main__":
    main()
