"""The tolerances decide honesty: an implementation in the output's precision passes, one a step lower fails."""

import pytest
import torch

from adaexplore.domain import Tolerance
from adaexplore.executor import Mode, tolerance_for
from adaexplore.executor.worker.judge._compare import compare


def round_mantissa(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Round float32 values to `bits` explicit mantissa bits, nearest-even (TF32 keeps 10)."""
    drop = 23 - bits
    u = x.float().contiguous().view(torch.int32).to(torch.int64)
    rounded = (u + (1 << (drop - 1)) - 1 + ((u >> drop) & 1)) & ~((1 << drop) - 1)
    return rounded.to(torch.int32).view(torch.float32)


@pytest.fixture
def gemm() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(256, 1024, generator=g), torch.randn(1024, 192, generator=g)
    return a, b, a.double() @ b.double()


def test_an_fp32_gemm_passes_the_strict_fp32_tolerance(gemm) -> None:
    a, b, ref = gemm
    assert compare(a @ b, ref, tolerance_for(Mode.strict, "float32")).passed


def test_a_tf32_gemm_fails_it_unless_the_task_allows_tf32(gemm) -> None:
    a, b, ref = gemm
    tf32 = (round_mantissa(a, 10).double() @ round_mantissa(b, 10).double()).float()
    result = compare(tf32, ref, tolerance_for(Mode.strict, "float32"))
    assert not result.passed
    assert result.norm_rel_error is not None and result.norm_rel_error > 1e-4
    assert compare(tf32, ref, tolerance_for(Mode.strict, "float32", allowed_precision="tf32")).passed


def test_the_paper_tolerance_accepts_tf32_as_the_authors_did(gemm) -> None:
    a, b, ref = gemm
    tf32 = (round_mantissa(a, 10).double() @ round_mantissa(b, 10).double()).float()
    assert compare(tf32, ref.float(), tolerance_for(Mode.paper, "float32")).passed


def test_bf16_output_of_an_fp32_computation_passes_and_fp8_precision_fails() -> None:
    g = torch.Generator().manual_seed(1)
    ref = torch.randn(512, 512, generator=g, dtype=torch.float64)
    tol = tolerance_for(Mode.strict, "bfloat16")
    assert compare(ref.to(torch.bfloat16), ref, tol).passed
    three_bit_mantissa = round_mantissa(ref.float(), 3).to(torch.bfloat16)
    assert not compare(three_bit_mantissa, ref, tol).passed


def test_one_wrong_element_fails_even_when_the_norm_would_hide_it() -> None:
    ref = torch.randn(1_000_000, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    out = ref.to(torch.bfloat16)
    out[123_456] = 0
    result = compare(out, ref, tolerance_for(Mode.strict, "bfloat16"))
    assert not result.passed
    assert "index [123456]" in (result.message or "")


def test_zeros_pass_the_paper_tolerance_on_a_small_output_but_never_strict() -> None:
    ref = torch.softmax(torch.randn(8, 16384, dtype=torch.float64), dim=-1)
    assert compare(torch.zeros_like(ref, dtype=torch.float32), ref, tolerance_for(Mode.paper, "float32")).passed
    assert not compare(torch.zeros_like(ref, dtype=torch.float32), ref, tolerance_for(Mode.strict, "float32")).passed


def test_nan_must_match_the_reference() -> None:
    ref = torch.tensor([1.0, float("nan"), 3.0], dtype=torch.float64)
    tol = tolerance_for(Mode.strict, "float32")
    assert compare(torch.tensor([1.0, float("nan"), 3.0]), ref, tol).passed
    result = compare(torch.tensor([float("nan"), float("nan"), 3.0]), ref, tol)
    assert not result.passed and "NaN" in (result.message or "")
    assert not compare(torch.tensor([1.0, 2.0, 3.0]), ref, tol).passed


def test_integer_outputs_compare_exactly() -> None:
    ref = torch.arange(10)
    tol = tolerance_for(Mode.strict, "int64")
    assert compare(torch.arange(10), ref, tol).passed
    assert not compare(torch.arange(10) + (torch.arange(10) == 3), ref, tol).passed


def test_a_shape_difference_is_reported_not_broadcast() -> None:
    result = compare(torch.zeros(1, 4), torch.zeros(4, 4, dtype=torch.float64), tolerance_for(Mode.strict, "float32"))
    assert not result.passed and "shape" in (result.message or "")


def test_allowance_widens_the_tolerance_proportionally(gemm) -> None:
    a, b, ref = gemm
    tol = tolerance_for(Mode.strict, "float32")
    tf32 = (round_mantissa(a, 10).double() @ round_mantissa(b, 10).double()).float()
    assert not compare(tf32, ref, tol, allowance=2.0).passed
    assert compare(tf32, ref, tol, allowance=1000.0).passed


def test_complex_outputs_compare_both_parts_at_their_real_dtypes_tolerance() -> None:
    torch.manual_seed(0)
    x = torch.randn(256, dtype=torch.float64)
    ref = torch.fft.fft(x)  # complex128
    out = torch.fft.fft(x.float()).to(torch.complex64)  # an honest float32 computation
    tol = tolerance_for(Mode.strict, "complex64")
    assert tol.atol > 0 and tol == tolerance_for(Mode.strict, "float32").model_copy(update={"dtype": "complex64"})
    assert compare(out, ref.to(torch.complex64), tol).passed
    real_only = torch.complex(out.real, torch.zeros_like(out.real))
    failed = compare(real_only, ref.to(torch.complex64), tol)
    assert not failed.passed and "real and imaginary parts exceed the tolerance" in (failed.message or "")
    assert not compare(out.real, ref.to(torch.complex64), tol).passed
    # The index names the element of the output (one index for a 1-d output) and the part that is wrong.
    wrong = out.clone()
    wrong[7] = complex(out[7].real.item(), out[7].imag.item() + 1.0)
    message = compare(wrong, ref.to(torch.complex64), tol).message or ""
    assert "at index [7] (imaginary part)" in message, message


def test_outputs_that_cannot_be_compared_are_named_not_crashed_on() -> None:
    from adaexplore.executor.worker.task._taskrun import flatten_output

    dense = torch.ones(3, 3)
    assert flatten_output((dense, dense)) == [dense, dense]
    for value, fragment in [
        (dense.to_sparse(), "has layout sparse_coo"),
        (torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]), "is a nested tensor"),
        (dense.to(torch.complex32), "has dtype complex32, which cannot be compared"),
    ]:
        with pytest.raises(TypeError, match=fragment):
            flatten_output(value)


def test_outputs_carrying_attributes_of_their_own_are_refused() -> None:
    # an attribute on the tensor would shadow torch's method in the evaluator's own calls (detach, numel ...)
    from adaexplore.executor.worker.task._taskrun import ShadowedTensor, flatten_output

    plain, shadowed, parameter = torch.ones(2), torch.ones(2), torch.nn.Parameter(torch.ones(2))
    shadowed.detach = lambda: plain  # type: ignore[method-assign]
    parameter.numel = lambda: 1  # type: ignore[method-assign]
    assert flatten_output([plain]) == [plain]
    for value, name in [((plain, shadowed), "output 1 carries detach"), (parameter, "output 0 carries numel")]:
        with pytest.raises(ShadowedTensor, match=name):
            flatten_output(value)


def test_tensor_subclass_outputs_are_refused_before_anything_is_read_from_them() -> None:
    from adaexplore.executor.worker.task._taskrun import flatten_output

    read: list[str] = []

    class Deferred(torch.Tensor):
        @property
        def is_nested(self) -> bool:  # type: ignore[override]
            read.append("is_nested")
            return False

    with pytest.raises(TypeError, match=r"output 0 is a Deferred, not a plain torch\.Tensor"):
        flatten_output(torch.ones(2).as_subclass(Deferred))
    assert read == []


def test_either_fails_an_element_only_where_it_misses_both_atol_and_rtol_as_flashinfer_bench_does() -> None:
    tol = Tolerance(kind="either", atol=0.01, rtol=0.01, dtype="bfloat16", reference_dtype="bfloat16")
    ref = torch.tensor([0.0, 100.0, 0.5])
    # 0.009 off a zero (within atol), 0.9 off 100 (within rtol), 0.004 off 0.5 (within both)
    assert compare(torch.tensor([0.009, 100.9, 0.504]), ref, tol).passed
    # 0.02 off a zero misses both (|ref| is 0); allclose's atol + rtol*|ref| would have passed 1.05 off 100 too
    failed = compare(torch.tensor([0.02, 100.0, 0.5]), ref, tol)
    assert not failed.passed and "1 of 3 elements exceed the tolerance" in (failed.message or "")
    assert not compare(torch.tensor([0.0, 101.05, 0.5]), ref, tol).passed
    allclose = Tolerance(kind="allclose", atol=0.01, rtol=0.01, dtype="bfloat16", reference_dtype="bfloat16")
    assert compare(torch.tensor([0.0, 101.005, 0.5]), ref, allclose).passed
    assert not compare(torch.tensor([0.0, 101.005, 0.5]), ref, tol).passed


def test_the_normwise_errors_spread_is_said_only_when_asked_and_follows_where_the_error_lies() -> None:
    g = torch.Generator().manual_seed(2)
    ref = torch.randn(16, 17, generator=g, dtype=torch.float64)
    tol = tolerance_for(Mode.strict, "float32")
    even = (ref * (1 + 1e-5)).float()  # the same relative error everywhere: every block agrees
    assert compare(even, ref, tol).norm_rel_spread is None
    spread = compare(even, ref, tol, spread=True).norm_rel_spread
    assert spread is not None and spread < 1e-7
    lumped = ref.clone()
    lumped[:, 3] *= 1 + 1e-4  # all of the error in one column: leaving its block out changes the estimate
    result = compare(lumped.float(), ref, tol, spread=True)
    assert result.norm_rel_error is not None and result.norm_rel_spread is not None
    assert result.norm_rel_spread > 0.3 * result.norm_rel_error
