"""An independent speedup: triton.testing.do_bench medians of the reference and a candidate, in this
process, with none of the evaluator's code. Prints one JSON line.

    python benchmarks/independent_dobench.py TASK KERNEL
"""

from __future__ import annotations

import importlib.util
import json
import sys

import torch
import triton


def load(name: str, path: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    task, kernel = load("task", sys.argv[1]), load("kernel", sys.argv[2])
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    init = task.get_init_inputs()
    torch.manual_seed(1)
    reference = task.Model(*init).cuda()
    torch.manual_seed(1)
    candidate = kernel.ModelNew(*init).cuda()
    torch.manual_seed(2)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
    with torch.no_grad():
        ref_ms = triton.testing.do_bench(lambda: reference(*inputs), warmup=50, rep=500, return_mode="median")
        cand_ms = triton.testing.do_bench(lambda: candidate(*inputs), warmup=50, rep=500, return_mode="median")
    print(json.dumps({"reference_ms": ref_ms, "candidate_ms": cand_ms, "speedup": ref_ms / cand_ms}))


if __name__ == "__main__":
    main()
