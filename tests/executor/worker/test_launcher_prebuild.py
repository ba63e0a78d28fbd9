"""On a GPU the compile pass starts building a kernel's C launcher while Triton compiles the kernel, and
the launch that follows finds it built."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def add_scaled(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * alpha + y, mask=mask)
"""

SCRIPT = """
import importlib.util, json, sys
import torch, triton
import triton.runtime.build as build
from adaexplore.domain import Backend
from adaexplore.executor.worker.candidate._launches import LaunchTracker
from adaexplore.executor.worker.confine._faults import CANDIDATE_MODULE

builds = []
original = build._build
def counting(name, *args, **kwargs):
    builds.append(name)
    return original(name, *args, **kwargs)
build._build = counting

tracker = LaunchTracker(Backend.cuda)
tracker.install()
spec = importlib.util.spec_from_file_location(CANDIDATE_MODULE, sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[CANDIDATE_MODULE] = module
spec.loader.exec_module(module)
x, y = torch.ones(1000, device="cuda"), torch.ones(1000, device="cuda")
out = torch.empty_like(x)
tracker.compile_only = True
module.add_scaled[(4,)](x, y, out, 1000, 2.0, BLOCK=256)  # compiles, loads, builds the launcher
at_compile = list(builds)
tracker.compile_only = False
module.add_scaled[(4,)](x, y, out, 1000, 2.0, BLOCK=256)
torch.cuda.synchronize()
print(json.dumps({"prebuilt": tracker.prebuilt, "at_compile": at_compile, "all": builds,
                  "ok": bool((out == 3).all())}))
"""


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: launchers are built for the driver")
def test_the_launcher_is_built_beside_the_compile_and_found_by_the_launch(tmp_path) -> None:
    kernel = tmp_path / "candidate.py"
    kernel.write_text(KERNEL)
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run(
        [sys.executable, str(script), str(kernel)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["prebuilt"] == ["built"]
    # Built once, by the thread: Triton's own request at the first launch found it in the cache.
    assert result["at_compile"].count("__triton_launcher") == 1
    assert result["all"].count("__triton_launcher") == 1
    assert result["ok"]
