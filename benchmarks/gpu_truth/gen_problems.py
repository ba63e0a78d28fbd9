"""The problems of the corpus's GEMM families (`generate.py`): for each KernelBench problem, its constructor, where
the GEMM's operands come from and the epilogue fused after it (`gen_gemm.GemmProblem`)."""

from __future__ import annotations

from gen_gemm import GemmProblem


def _linear(level: int, number: int, sig: str, body: tuple[str, ...], layer: str, **kw: object) -> GemmProblem:
    return GemmProblem(
        level,
        number,
        sig,
        body,
        "linear",
        b_expr=f"self.{layer}.weight",
        bias_expr=f"self.{layer}.bias",
        **kw,  # type: ignore[arg-type]
    )


P12 = _linear(
    2,
    12,
    "in_features, out_features, multiplier, negative_slope",
    (
        "self.gemm = nn.Linear(in_features, out_features)",
        "self.multiplier = float(multiplier)",
        "self.negative_slope = float(negative_slope)",
    ),
    "gemm",
    epi_scalars=(("multiplier", "self.multiplier"), ("negative_slope", "self.negative_slope")),
    epi_code=("y = y * multiplier", "y = tl.where(y >= 0, y, y * negative_slope)"),
    epi_words="multiply + LeakyReLU fused",
)
P63 = _linear(
    2,
    63,
    "in_features, out_features, divisor",
    ("self.linear = nn.Linear(in_features, out_features)", "self.divisor = float(divisor)"),
    "linear",
    epi_scalars=(("divisor", "self.divisor"),),
    epi_code=("y = tl.maximum(y, 0.0) / divisor",),
    epi_words="bias, ReLU and divide fused",
)
P70 = _linear(
    2,
    70,
    "input_size, hidden_size, scaling_factor",
    ("self.gemm = nn.Linear(input_size, hidden_size)", "self.scaling_factor = float(scaling_factor)"),
    "gemm",
    epi_scalars=(("scaling_factor", "self.scaling_factor"),),
    epi_code=("y = tl.sigmoid(y) * scaling_factor + y",),
    epi_words="sigmoid, scaling and residual add fused",
)
P76 = GemmProblem(
    2,
    76,
    "in_features, out_features, bias_shape",
    (
        "self.gemm = nn.Linear(in_features, out_features, bias=False)",
        "self.bias = nn.Parameter(torch.randn(bias_shape))",
    ),
    "linear",
    b_expr="self.gemm.weight",
    bias_expr="self.bias",
    epi_code=("y = tl.maximum(y, 0.0)",),
    epi_words="bias add and ReLU fused",
)
P53 = _linear(
    2,
    53,
    "in_features, out_features, scaling_factor, hardtanh_min, hardtanh_max",
    (
        "self.gemm = nn.Linear(in_features, out_features)",
        "self.scaling_factor = float(scaling_factor)",
        "self.hardtanh_min = float(hardtanh_min)",
        "self.hardtanh_max = float(hardtanh_max)",
    ),
    "gemm",
    epi_scalars=(
        ("scaling_factor", "self.scaling_factor"),
        ("ht_min", "self.hardtanh_min"),
        ("ht_max", "self.hardtanh_max"),
    ),
    epi_code=(
        "y = tl.minimum(tl.maximum(y * scaling_factor, ht_min), ht_max)",
        "y = 0.5 * y * (1.0 + tl.math.erf(y * 0.7071067811865476))",
    ),
    epi_words="scaling, hardtanh and exact GELU fused",
)
P81 = _linear(
    2,
    81,
    "in_features, out_features, bias=True",
    ("self.gemm = nn.Linear(in_features, out_features, bias=bias)",),
    "gemm",
    epi_code=(
        "y = y * tl.sigmoid(y)",
        "y = y / 2.0",
        "y = tl.minimum(tl.maximum(y, -1.0), 1.0)",
        "y = 2.0 * tl.sigmoid(2.0 * y) - 1.0",
        "y = tl.minimum(tl.maximum(y, -1.0), 1.0)",
    ),
    epi_words="swish, divide, clamp, tanh and clamp fused",
)
P59 = _linear(
    2,
    59,
    "in_features, out_features, scaling_factor",
    ("self.matmul = nn.Linear(in_features, out_features)", "self.scaling_factor = float(scaling_factor)"),
    "matmul",
    epi_scalars=(("scaling_factor", "self.scaling_factor"),),
    epi_code=("y = y * tl.sigmoid(y) * scaling_factor",),
    epi_words="swish and scaling fused",
)
L1_2 = GemmProblem(
    1,
    2,
    "",
    (),
    "matmul",
    forward_sig="A, B",
    a_expr="A",
    b_expr="B",
    bias_expr=None,
    epi_words="no epilogue",
    fp16_scale_b=1.0,
)
L1_8 = GemmProblem(
    1,
    8,
    "",
    (),
    "matmul",
    forward_sig="A, B",
    a_expr="A",
    b_expr="B",
    bias_expr=None,
    epi_words="no epilogue",
    fp16_scale_b=1.0,
)
# M = 128 against a 1 GiB weight (16384 x 16384); the constant is a parameter tensor, read by the kernel (no sync)
P68 = _linear(
    2,
    68,
    "in_features, out_features, constant",
    ("self.linear = nn.Linear(in_features, out_features)", "self.constant = nn.Parameter(torch.tensor(constant))"),
    "linear",
    epi_ptrs=(("const_ptr", "self.constant"),),
    epi_code=("c = tl.load(const_ptr)", "y = tl.minimum(y, c) - c"),
    epi_words="bias, min with the constant and subtract fused",
)
P95 = _linear(
    2,
    95,
    "in_features, out_features, add_value_shape",
    (
        "self.matmul = nn.Linear(in_features, out_features)",
        "self.add_value = nn.Parameter(torch.randn(add_value_shape))",
    ),
    "matmul",
    epi_ptrs=(("add_ptr", "self.add_value"),),
    epi_code=(
        "y = y + tl.load(add_ptr + offs_n_ld)[None, :]",
        "y = y * tl.sigmoid(y)",
        "y = 2.0 * tl.sigmoid(2.0 * y) - 1.0",
        "y = 0.5 * y * (1.0 + tl.math.erf(y * 0.7071067811865476))",
        "y = tl.minimum(tl.maximum(y, -1.0), 1.0)",
    ),
    epi_words="add, swish, tanh, exact GELU and hardtanh fused",
)
# A (M, K) @ B (N, K)^T: the linear layout with no bias
L1_17 = GemmProblem(
    1,
    17,
    "",
    (),
    "linear",
    forward_sig="A, B",
    a_expr="A",
    b_expr="B",
    bias_expr=None,
    epi_words="no epilogue",
    fp16_scale_b=1.0,
)
