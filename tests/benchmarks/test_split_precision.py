"""The errors the speed of light admits its paths by (`adaexplore/roofline/_sol.py`'s table) are what emulating
their roundings gives (`benchmarks/split_precision.py`, here at a shorter reduction than the table's K = 8192): each
path passes or fails strict's fp32 and tf32 rows as the table says, and its error is of the table's size."""

from __future__ import annotations

import sys

from adaexplore.roofline import PATHS
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT))
from benchmarks.split_precision import run

# the emulation's names for the table's paths
NAMES = {
    "ieee (fp32 CUDA cores)": "ieee",
    "tf32x3": "tf32x3",
    "fp16x3": "fp16x3",
    "bf16x3": "bf16x3",
    "tf32 (rounded)": "tf32",
    "fp16": "fp16",
    "bf16": "bf16",
    "fp8 e4m3 (scaled)": "fp8",
}


def test_the_paths_errors_are_what_their_roundings_give() -> None:
    rows = {r["path"]: r for r in run(k=1024, n=256, rows=16, draw="randn", seed=1, only=[])}
    for name, path in NAMES.items():
        row, table = rows[name], PATHS[path]
        assert row["fp32_ok"] == (table.error <= 2e-5), name
        assert row["tf32_ok"] == (table.error <= 2e-3), name
        # accumulation errors grow with the reduction; the representation errors do not
        assert table.error / 4 <= row["normwise"] <= table.error * 2, (name, row["normwise"])
    # the lossy splits fail strict's fp32 row
    assert not rows["bf16x3, truncating split"]["fp32_ok"]
    assert not rows["bf16x2 (weight's low part dropped)"]["fp32_ok"]
    assert rows["fp16x3, weight scaled by 2^8"]["normwise"] < rows["fp16x3"]["normwise"]
