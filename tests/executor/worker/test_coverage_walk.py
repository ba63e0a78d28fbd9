"""Full coverage at full size: the compile check follows a forward at the task's full sizes on shape-only tensors and
finds the output elements that nothing writes (worker/coverage/_coverage.py), without ever claiming a hole an honest
kernel does not leave: outputs prefilled by PyTorch, atomics, PyTorch operators after a kernel, views, several launches
into one buffer, persistent kernels, autotuned kernels with a grid computed from their config, TMA stores, and
masks that depend on data."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# rows x cols, float32: the task every case runs against (returns 2 * x); its full sizes are what the check follows
TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2.0

rows = 64
cols = 1000
SMALL_SIZES = {"rows": 3, "cols": 77}

def get_inputs():
    return [torch.randn(rows, cols)]

def get_init_inputs():
    return []
"""

HEAD = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double(x_ptr, y_ptr, start, n, BLOCK: tl.constexpr):
    offs = start + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
"""

# name -> (forward's body and any kernels of its own, what the check must find: None, or the gap's facts)
CASES: dict[str, tuple[str, dict | None]] = {
    "fixed_grid": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            double[(1,)](x, y, 0, x.numel(), BLOCK=256)
            return y
        """,
        {"missing": 64000 - 256, "first": [0, 256], "last": [63, 999], "writers": ["double over grid (1,)"]},
    ),
    # the same kernel with no time for the walk: taken as writing everywhere it might, and said (no gap claimed)
    "out_of_time": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            double[(1,)](x, y, 0, x.numel(), BLOCK=256)
            return y
        """,
        None,
    ),
    "grid_from_the_sizes": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            double[(triton.cdiv(x.numel(), 256),)](x, y, 0, x.numel(), BLOCK=256)
            return y
        """,
        None,
    ),
    "prefilled_by_pytorch_then_a_triangle": (
        """
        def forward(self, x):
            y = torch.zeros_like(x)
            lower[(x.shape[0],)](x, y, x.shape[1], BLOCK=1024)
            return y


@triton.jit
def lower(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    mask = c <= row
    tl.store(y_ptr + row * cols + c, tl.load(x_ptr + row * cols + c, mask=mask) * 2.0, mask=mask)
        """,
        None,
    ),
    "atomics_into_a_zeroed_buffer": (
        """
        def forward(self, x):
            y = torch.zeros_like(x)
            halves[(triton.cdiv(x.numel(), 256), 2)](x, y, x.numel(), BLOCK=256)
            return y


@triton.jit
def halves(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
        """,
        None,
    ),
    "atomics_into_an_empty_buffer_count_as_writes": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            halves[(triton.cdiv(x.numel(), 256), 2)](x, y, x.numel(), BLOCK=256)
            return y


@triton.jit
def halves(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
        """,
        None,
    ),
    "pytorch_after_a_kernel_that_covers": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            double[(triton.cdiv(x.numel(), 512),)](x, y, 0, x.numel(), BLOCK=512)
            return (y * 0.5).relu() * 2.0
        """,
        None,
    ),
    "pytorch_after_a_kernel_that_does_not": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            double[(2,)](x, y, 0, x.numel(), BLOCK=512)
            return y + 0.0
        """,
        {"missing": 64000 - 1024, "first": [1, 24], "last": [63, 999], "derived": "aten.add read 62,976 elements"},
    ),
    "a_view_of_a_padded_buffer": (
        """
        def forward(self, x):
            rows, cols = x.shape
            padded = torch.empty(rows, 1024, device=x.device)
            rowwise[(rows,)](x, padded, cols, 1024, BLOCK=1024)
            return padded[:, :cols]


@triton.jit
def rowwise(x_ptr, y_ptr, cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    mask = c < cols
    tl.store(y_ptr + row * stride + c, tl.load(x_ptr + row * cols + c, mask=mask) * 2.0, mask=mask)
        """,
        None,
    ),
    "a_flat_buffer_reshaped": (
        """
        def forward(self, x):
            flat = torch.empty(x.numel(), device=x.device)
            double[(triton.cdiv(x.numel(), 1024),)](x, flat, 0, x.numel(), BLOCK=1024)
            return flat.view(x.shape[0], -1)
        """,
        None,
    ),
    "two_launches_for_two_halves": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            n = x.numel()
            double[(triton.cdiv(n // 2, 256),)](x, y, 0, n // 2, BLOCK=256)
            double[(triton.cdiv(n - n // 2, 256),)](x, y, n // 2, n, BLOCK=256)
            return y
        """,
        None,
    ),
    "one_launch_for_one_half": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            n = x.numel()
            double[(triton.cdiv(n // 2, 256),)](x, y, 0, n // 2, BLOCK=256)
            return y
        """,
        {"missing": 32000, "first": [32, 0], "last": [63, 999]},
    ),
    "persistent_over_the_multiprocessors": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            sms = torch.cuda.get_device_properties(x.device).multi_processor_count
            persistent[(sms,)](x, y, x.numel(), SMS=sms, BLOCK=128)
            return y


@triton.jit
def persistent(x_ptr, y_ptr, n, SMS: tl.constexpr, BLOCK: tl.constexpr):
    for tile in range(tl.program_id(0), tl.cdiv(n, BLOCK), SMS):
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
        """,
        None,
    ),
    "autotuned_with_the_grid_from_its_config": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            n = x.numel()
            tuned[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
            return y


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 512})], key=["n"])
@triton.jit
def tuned(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
        """,
        None,
    ),
    "autotuned_with_a_grid_one_config_does_not_fill": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            n = x.numel()
            tuned[(triton.cdiv(n, 512),)](x, y, n)
            return y


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 512})], key=["n"])
@triton.jit
def tuned(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
        """,
        {"writers": ["tuned over grid (125,) (2 configs)"]},
    ),
    "a_kernel_that_reads_what_another_left_unwritten": (
        """
        def forward(self, x):
            tmp = torch.empty_like(x)
            double[(4,)](x, tmp, 0, x.numel(), BLOCK=256)
            y = torch.empty_like(x)
            double[(triton.cdiv(x.numel(), 256),)](tmp, y, 0, x.numel(), BLOCK=256)
            return y
        """,
        {"missing": 64000, "derived": "reads elements of a buffer that double over grid (4,) never wrote"},
    ),
    "a_kernel_that_reads_back_what_it_stored": (
        """
        def forward(self, x):
            scratch = torch.empty_like(x)
            y = torch.zeros_like(scratch)
            through[(triton.cdiv(x.numel(), 256),)](x, scratch, y, x.numel(), BLOCK=256)
            return y


@triton.jit
def through(x_ptr, s_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(s_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    tl.store(y_ptr + offs, tl.load(s_ptr + offs, mask=mask) * 2.0, mask=mask)
        """,
        None,
    ),
    "tiles_that_miss_the_last_columns": (
        """
        def forward(self, x):
            rows, cols = x.shape
            y = torch.empty_like(x)
            tile[(triton.cdiv(rows, 16), cols // 64)](x, y, rows, cols, BM=16, BN=64)
            return y


@triton.jit
def tile(x_ptr, y_ptr, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(0) * BM + tl.arange(0, BM)
    c = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    p = r[:, None] * cols + c[None, :]
    tl.store(y_ptr + p, tl.load(x_ptr + p, mask=mask) * 2.0, mask=mask)
        """,
        {"missing": 64 * 40, "first": [0, 960], "last": [63, 999], "writers": ["tile over grid (4, 15)"]},
    ),
    "a_tma_store_over_every_tile": (
        """
        def forward(self, x):
            rows, cols = x.shape
            y = torch.empty(rows, 1024, device=x.device)
            desc = TensorDescriptor.from_tensor(y, [16, 64])
            tma[(rows // 16, 1024 // 64)](x, desc, cols, BM=16, BN=64)
            return y[:, :cols]


@triton.jit
def tma(x_ptr, desc, cols, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(0) * BM + tl.arange(0, BM)
    c = tl.program_id(1) * BN + tl.arange(0, BN)
    v = tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=c[None, :] < cols, other=0.0)
    desc.store([tl.program_id(0) * BM, tl.program_id(1) * BN], v * 2.0)
        """,
        None,
    ),
    "a_mask_that_depends_on_the_data_is_not_held_against_it": (
        """
        def forward(self, x):
            y = torch.empty_like(x)
            positive[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
            return y


@triton.jit
def positive(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, v * 2.0, mask=(offs < n) & (v > -1e30))
        """,
        None,
    ),
}

# what the check says it could not follow, where it could not
NOTES = {
    "out_of_time": "double was followed only in part: it ran out of time",
    "a_mask_that_depends_on_the_data_is_not_held_against_it": "positive was followed only in part: its stores "
    "into y_ptr are masked by data",
}

SCRIPT = """
import gc
gc.disable()  # while torch and triton are imported; on again past what they made (below), as in a worker
import json, sys
import torch
from adaexplore.domain import Backend
from adaexplore.executor.worker.confine._compile_clock import listen
from adaexplore.executor.worker.candidate._compile_only import activate_compile_only
from adaexplore.executor.worker.coverage._coverage import CoverageRecorder
from adaexplore.executor.worker.cpu._cuda_on_cpu import cuda_on_cpu, install_device_queries, install_is_cuda
from adaexplore.executor.worker.confine._faults import CANDIDATE_MODULE
from adaexplore.executor.worker.cost._full_size import full_size_pass
from adaexplore.executor.worker.confine._importing import import_file
from adaexplore.executor.worker.candidate._launches import LaunchTracker
from adaexplore.roofline import gpu_spec

activate_compile_only("cuda:90")
install_is_cuda()
install_device_queries(gpu_spec("H200"))
tracker = LaunchTracker(Backend.compile)
tracker.install()
tracker.shared_memory_limit = 232448
told = []  # what the worker tells the evaluator as not the candidate's time (see _compile_clock)
listen(lambda name: told.append(name) if name else None)
gc.freeze()
gc.enable()
found = {}
task, cases = sys.argv[1], json.loads(sys.argv[2])
for name, path in cases.items():
    module = import_file(CANDIDATE_MODULE, path)
    told.clear()
    with cuda_on_cpu(), torch.no_grad():
        recorder = CoverageRecorder(232448, budget_s=0.0 if name == "out_of_time" else 3.0)
        stopped, _, coverage = full_size_pass(tracker, module.ModelNew, task, None, recorder)
    found[name] = {"stopped": stopped, "coverage": coverage.model_dump() if coverage else None, "told": list(told)}
print(json.dumps(found))
"""


def _candidate(body: str) -> str:
    forward, _, rest = textwrap.dedent(body).strip("\n").partition("\n\n\n")
    return (
        HEAD
        + "from triton.tools.tensor_descriptor import TensorDescriptor\n\n\n"
        + (rest + "\n\n\n" if rest else "")
        + "class ModelNew(nn.Module):\n"
        + textwrap.indent(forward, "    ")
        + "\n"
    )


@pytest.fixture(scope="module")
def followed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("coverage")
    task = folder / "task.py"
    task.write_text(TASK)
    paths = {}
    for name, (body, _) in CASES.items():
        path = folder / f"{name}.py"
        path.write_text(_candidate(body))
        paths[name] = str(path)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(task), json.dumps(paths)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"TRITON_CACHE_DIR": str(folder / "cache"), "PATH": "/usr/bin:/bin", "HOME": str(folder)},
        cwd=Path(__file__).parents[3],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(CASES))
def test_the_check_finds_the_holes_and_only_those(followed: dict, name: str) -> None:
    result = followed[name]
    assert result["stopped"] == "", result
    coverage = result["coverage"]
    assert coverage is not None and coverage["outputs"] == 1 and coverage["launches"] >= 1, coverage
    expected = CASES[name][1]
    assert coverage["notes"] == ([NOTES[name]] if name in NOTES else []), coverage
    if expected is None:
        assert coverage["gaps"] == [], coverage
        return
    assert len(coverage["gaps"]) == 1, coverage
    gap = coverage["gaps"][0]
    assert gap["shape"] == [64, 1000]
    for key in ("missing", "first", "last", "writers"):
        if key in expected:
            assert gap[key] == expected[key], (key, gap)
    if "derived" in expected:
        assert any(expected["derived"] in text for text in gap["derived"]), gap


def test_the_walk_is_told_as_the_evaluators_time(followed: dict) -> None:
    """The walk is the evaluator's work, like the compiler's: the worker says so, and the candidate's budget is not
    charged with it."""
    assert "double (followed for full coverage)" in followed["fixed_grid"]["told"], followed["fixed_grid"]["told"]
