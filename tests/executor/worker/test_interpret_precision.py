"""The interpreter reads fp32 `tl.dot` operands as the H200's tensor cores do.

`data/tf32_h200.npz` holds inputs and outputs that `benchmarks/tf32_probe.py` recorded on an H200 (torch
2.11, triton 3.6): one product per element for each input precision, a whole 64x64x64 product, and two
hand-made high/low splits of each operand fed to three tf32 dots. The same kernels run here in the
interpreter with our patches, on the same inputs, and must give what the GPU gave, not what exact
arithmetic or rounding to nearest would give: a kernel's error, and so its verdict, is then the same on
the CPU as on the GPU.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.executor.worker.test_interpret_shim import PRELUDE, run_interpreted

DATA = Path(__file__).parent / "data" / "tf32_h200.npz"

# the kernels of benchmarks/tf32_probe.py; the rounding split computes with integers what `cvt.rna.tf32.f32`
# gives (nearest, ties away from zero), since the interpreter cannot run inline assembly
KERNELS = """
import numpy as np

@triton.jit
def dot_k(a_ptr, b_ptr, c_ptr, N: tl.constexpr, PRECISION: tl.constexpr):
    rows = tl.arange(0, N)
    a = tl.load(a_ptr + rows[:, None] * N + rows[None, :])
    b = tl.load(b_ptr + rows[:, None] * N + rows[None, :])
    tl.store(c_ptr + rows[:, None] * N + rows[None, :], tl.dot(a, b, input_precision=PRECISION))

@triton.jit
def split(x, ROUND: tl.constexpr):
    bits = x.to(tl.uint32, bitcast=True)
    if ROUND:
        bits = bits + 0x1000
    hi = (bits & 0xFFFFE000).to(tl.float32, bitcast=True)
    return hi, x - hi

@triton.jit
def split_k(a_ptr, b_ptr, c_ptr, N: tl.constexpr, ROUND: tl.constexpr):
    rows = tl.arange(0, N)
    a = tl.load(a_ptr + rows[:, None] * N + rows[None, :])
    b = tl.load(b_ptr + rows[:, None] * N + rows[None, :])
    a_hi, a_lo = split(a, ROUND)
    b_hi, b_lo = split(b, ROUND)
    c = tl.dot(a_hi, b_lo, input_precision="tf32")
    c = tl.dot(a_lo, b_hi, c, input_precision="tf32")
    c = tl.dot(a_hi, b_hi, c, input_precision="tf32")
    tl.store(c_ptr + rows[:, None] * N + rows[None, :], c)

data = np.load(os.environ["PROBE"])
out = {}
for name in [k[:-2] for k in data.files if k.endswith("_c")]:
    a, b = torch.from_numpy(data[name + "_a"]), torch.from_numpy(data[name + "_b"])
    c = torch.empty_like(a)
    if name.startswith("split"):
        split_k[(1,)](a, b, c, 64, name == "split_round")
    else:
        dot_k[(1,)](a, b, c, 64, name.split("_", 1)[1])
    out[name] = c.numpy().tolist()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def replayed(monkeypatch_module: pytest.MonkeyPatch) -> dict[str, np.ndarray]:
    monkeypatch_module.setenv("PROBE", str(DATA))
    got = run_interpreted(KERNELS, prelude=PRELUDE)
    return {name: np.asarray(values, dtype=np.float32) for name, values in got.items()}


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _errors(name: str, interpreted: np.ndarray) -> tuple[float, float, float]:
    """(interpreter vs GPU, GPU vs exact, interpreter vs exact), each relative to the output's largest value."""
    data = np.load(DATA)
    exact = data[name + "_a"].astype(np.float64) @ data[name + "_b"].astype(np.float64)
    gpu, mine = data[name + "_c"].astype(np.float64), interpreted.astype(np.float64)
    scale = np.abs(exact).max()
    return (
        float(np.abs(mine - gpu).max() / scale),
        float(np.abs(gpu - exact).max() / scale),
        float(np.abs(mine - exact).max() / scale),
    )


def test_a_tf32_product_drops_the_low_mantissa_bits_bit_for_bit_as_the_gpu(replayed: dict) -> None:
    data = np.load(DATA)
    assert np.array_equal(replayed["product_tf32"], data["product_tf32_c"])  # rounding to nearest: 25% equal


@pytest.mark.parametrize("name", ["dot_tf32", "dot_tf32x3", "product_tf32x3", "dot_ieee", "product_ieee"])
def test_each_input_precision_errs_as_the_gpu_does(replayed: dict, name: str) -> None:
    versus_gpu, gpu_error, my_error = _errors(name, replayed[name])
    # within fp32 accumulation noise of the GPU's own output, far below the precision's own error for tf32
    assert versus_gpu < 5e-7, (name, versus_gpu, gpu_error)
    if name == "dot_tf32":  # the error a verdict sees: rounding to nearest would have halved it
        assert 0.8 < my_error / gpu_error < 1.25


@pytest.mark.parametrize("name", ["split_mask", "split_round"])
def test_a_hand_made_high_low_split_gets_the_gpus_error(replayed: dict, name: str) -> None:
    versus_gpu, gpu_error, my_error = _errors(name, replayed[name])
    assert versus_gpu < 5e-7, (name, versus_gpu)
    assert my_error < 1e-6 and gpu_error < 1e-6  # both far inside strict fp32 tolerances: the same verdict
