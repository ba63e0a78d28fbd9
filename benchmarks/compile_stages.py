"""Where one fresh Triton compile spends its time, stage by stage, in a process that has just imported
torch and triton and made its CUDA context, as a candidate's worker has.

    python benchmarks/compile_stages.py [KERNEL TASK] [--warm] [--json FILE]

Triton's compilation listener reports, per compile, the IR initialization (MLIR context, dialects,
code generation from the kernel's Python source) and each lowering stage (ttir, ttgir, llir, ptx, cubin).
Triton's cache lives in a new temporary folder, so every kernel compiles. With `--warm`, a trivial
kernel is compiled first, as a worker does at start: the candidate's compile then no longer pays the
compiler's first-use costs. Run it once with and once without `--warm`, in separate processes. Needs a
GPU. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernel", nargs="?", type=Path, default=ROOT / "examples/kernels/gemm_epilogue/correct.py")
    parser.add_argument("task", nargs="?", type=Path, default=ROOT / "examples/tasks/gemm_epilogue.py")
    parser.add_argument("--warm", action="store_true", help="compile a trivial kernel first, as a worker does")
    parser.add_argument("--json", type=Path, help="also write the line to this file")
    args = parser.parse_args()
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="compile-stages-")

    started = time.perf_counter()
    import torch
    import triton

    from adaexplore.executor.worker.candidate._warmup_kernel import scale_kernel
    from adaexplore.executor.worker.confine._importing import import_file

    if not torch.cuda.is_available():
        sys.exit("compile_stages.py needs a GPU")
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    startup_s = time.perf_counter() - started

    compiles: list[dict[str, Any]] = []

    def listener(*, src: Any, metadata: Any, metadata_group: Any, times: Any, cache_hit: bool) -> None:
        stages = {name: round(us / 1e3, 1) for name, us in times.lowering_stages}
        compiles.append(
            {"kernel": src.name, "cache_hit": cache_hit, "ir_init_ms": round(times.ir_initialization / 1e3, 1)}
            | {f"{name}_ms": ms for name, ms in stages.items()}
            | {"total_ms": round(times.ir_initialization / 1e3 + sum(stages.values()), 1)}
        )

    triton.knobs.compilation.listener = listener
    warm_s = 0.0
    if args.warm:
        y = torch.ones(256, device="cuda")
        start = time.perf_counter()
        scale_kernel[(triton.cdiv(256, 128),)](y, 256, BLOCK=128)
        torch.cuda.synchronize()
        warm_s = time.perf_counter() - start

    task = import_file("task", args.task)
    candidate = import_file("candidate", args.kernel)
    torch.manual_seed(0)
    model = candidate.ModelNew(*task.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
    torch.cuda.synchronize()
    start = time.perf_counter()
    model(*inputs)
    torch.cuda.synchronize()
    first_call_s = time.perf_counter() - start

    line = json.dumps(
        {
            "warm": args.warm,
            "startup_s": round(startup_s, 2),
            "warm_compile_s": round(warm_s, 3),
            "first_call_s": round(first_call_s, 3),
            "compiles": compiles,
        }
    )
    if args.json:
        args.json.write_text(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
