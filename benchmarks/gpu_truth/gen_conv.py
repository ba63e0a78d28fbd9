"""3D convolutions for the corpus generator (`generate.py`): an implicit-GEMM Triton conv3d (rows are one sample's
output pixels, columns the output channels, the reduction over (input channel, kd, kh, kw)) with the problem's
epilogue fused, in variants of tiles, warps, stages, dot precision (tf32x3, ieee, bf16x3 split in registers) and
input layout (NCDHW gathered as it lies, or a channels-last copy whose K tiles are contiguous channels); and
cuDNN followed by Triton epilogues, fused or one kernel per operation."""

from __future__ import annotations

from dataclasses import dataclass

_IMPORTS = (
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport triton\nimport triton.language as tl\n"
    "from triton.language.extra import libdevice\n"
)


@dataclass(frozen=True)
class ConvProblem:
    level: int
    number: int
    init_sig: str
    init_body: tuple[str, ...]
    conv: str  # the attribute holding the nn.Conv3d
    bias: bool
    epi_ptrs: tuple[tuple[str, str], ...]  # per-output-channel vectors: (kernel parameter, host tensor)
    epi_code: tuple[str, ...]  # Triton lines on y; a vector v loads as tl.load(v_ptr + co, ...)
    epi_words: str


P47 = ConvProblem(
    2,
    47,
    "in_channels, out_channels, kernel_size, stride=1, padding=0",
    ("self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)",),
    "conv",
    True,
    (),
    ("y = y * libdevice.tanh(tl.where(y > 20.0, y, tl.log(1.0 + tl.exp(y))))", "y = libdevice.tanh(y)"),
    "Mish + tanh",
)
P90 = ConvProblem(
    2,
    90,
    "in_channels, out_channels, kernel_size, sum_tensor_shape",
    (
        "self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)",
        "self.sum_tensor = nn.Parameter(torch.randn(sum_tensor_shape))",
    ),
    "conv",
    True,
    (("sum_ptr", "self.sum_tensor"),),
    (
        "y = tl.where(y >= 0, y, y * 0.2)",
        "y = y + tl.load(sum_ptr + co, mask=co_ok, other=0.0)[None, :]",
        "y = tl.minimum(tl.maximum(y, -1.0), 1.0)",
        "y = 0.5 * y * (1.0 + tl.math.erf(y * 0.7071067811865476))",
    ),
    "LeakyReLU + add + clamp + GELU",
)
L1_54 = ConvProblem(
    1,
    54,
    "in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1, "
    "groups: int = 1, bias: bool = False",
    (
        "self.conv3d = nn.Conv3d(in_channels, out_channels, (kernel_size, kernel_size, kernel_size), stride=stride, "
        "padding=padding, dilation=dilation, groups=groups, bias=bias)",
    ),
    "conv3d",
    False,
    (),
    (),
    "no epilogue",
)


def _dot_lines(prec: str) -> list[str]:
    if prec == "bf16x3":
        return [
            "a_hi = a.to(tl.bfloat16)",
            "a_lo = (a - a_hi.to(tl.float32)).to(tl.bfloat16)",
            "b_hi = b.to(tl.bfloat16)",
            "b_lo = (b - b_hi.to(tl.float32)).to(tl.bfloat16)",
            "acc = tl.dot(a_lo, b_hi, acc)",
            "acc = tl.dot(a_hi, b_lo, acc)",
            "acc = tl.dot(a_hi, b_hi, acc)",
        ]
    return [f'acc = tl.dot(a, b, acc, input_precision="{prec}")']


def igemm(p: ConvProblem, prec: str, bm: int, bn: int, bk: int, warps: int, stages: int, cl: bool) -> str:
    layout = "a channels-last copy of x (K tiles of contiguous channels)" if cl else "x gathered in NCDHW as it lies"
    dot = "bf16x3 split in registers (3 bf16 dots per K step)" if prec == "bf16x3" else f"tl.dot {prec}"
    head = (
        f"# Triton implicit-GEMM conv3d ({dot}), {layout}, {bm}x{bn}x{bk} w{warps} s{stages}, {p.epi_words} fused "
        f"[family=conv3d_igemm prec={prec} layout={'ndhwc' if cl else 'ncdhw'} bm={bm} bn={bn} bk={bk} warps={warps} "
        f"stages={stages}]"
    )
    if cl:
        k_split = [
            "tap = k // Cin",
            "ci = k - tap * Cin",
            "kd = tap // (KH * KW)",
            "kh = (tap // KW) % KH",
            "kw = tap % KW",
            "x_col = ((kd * H + kh) * W + kw) * Cin + ci",
        ]
        x_row = "x_row = ((od * H + oh) * W + ow) * Cin"
    else:
        k_split = [
            "ci = k // (KD * KH * KW)",
            "r = k - ci * (KD * KH * KW)",
            "kd = r // (KH * KW)",
            "kh = (r // KW) % KH",
            "kw = r % KW",
            "x_col = ci * (D * H * W) + (kd * H + kh) * W + kw",
        ]
        x_row = "x_row = (od * H + oh) * W + ow"
    epi_params = "".join(f"{name}, " for name, _ in p.epi_ptrs)
    lines = [
        head,
        _IMPORTS,
        "",
        "@triton.jit",
        f"def _conv3d_kernel(x_ptr, w_ptr, bias_ptr, out_ptr, {epi_params}Cin, D, H, W, Cout, OD, OH, OW,",
        "                   KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,",
        "                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, HAS_BIAS: tl.constexpr):",
        "    # rows: output pixels of sample n; columns: output channels; reduction k over (ci, kd, kh, kw)",
        "    pid_m = tl.program_id(0)",
        "    pid_n = tl.program_id(1)",
        "    n = tl.program_id(2)",
        "    P = OD * OH * OW",
        "    K = Cin * KD * KH * KW",
        "    pix = pid_m * BM + tl.arange(0, BM)",
        "    pix_ok = pix < P",
        "    od = pix // (OH * OW)",
        "    oh = (pix // OW) % OH",
        "    ow = pix % OW",
        f"    {x_row}",
        "    x_base = x_ptr + n.to(tl.int64) * Cin * D * H * W",
        "    co = pid_n * BN + tl.arange(0, BN)",
        "    co_ok = co < Cout",
        "    kk = tl.arange(0, BK)",
        "    acc = tl.zeros((BM, BN), dtype=tl.float32)",
        "    for k0 in range(0, K, BK):",
        "        k = k0 + kk",
        "        k_ok = k < K",
        *[f"        {line}" for line in k_split],
        "        a = tl.load(x_base + x_row[:, None] + x_col[None, :], mask=pix_ok[:, None] & k_ok[None, :], other=0.0)",
        "        b = tl.load(w_ptr + co[None, :] * K + k[:, None], mask=k_ok[:, None] & co_ok[None, :], other=0.0)",
        *[f"        {line}" for line in _dot_lines(prec)],
        "    y = acc",
        "    if HAS_BIAS:",
        "        y = y + tl.load(bias_ptr + co, mask=co_ok, other=0.0)[None, :]",
        *[f"    {line}" for line in p.epi_code],
        "    out_off = (n.to(tl.int64) * Cout + co)[None, :] * P + pix[:, None]",
        "    tl.store(out_ptr + out_off, y, mask=pix_ok[:, None] & co_ok[None, :])",
        "",
        "",
        "class ModelNew(nn.Module):",
        f"    def __init__(self, {p.init_sig}):",
        "        super().__init__()",
        *[f"        {line}" for line in p.init_body],
        "",
        "    def forward(self, x):",
        f"        conv = self.{p.conv}",
        "        w = conv.weight",
        "        Cout, Cin, KD, KH, KW = w.shape",
        "        N, _, D, H, W = x.shape",
        "        OD, OH, OW = D - KD + 1, H - KH + 1, W - KW + 1",
    ]
    if cl:
        lines += [
            "        # channels-last copies: a K tile is then BK contiguous (tap, channel) pairs",
            "        xs = x.permute(0, 2, 3, 4, 1).contiguous()",
            "        ws = w.permute(0, 2, 3, 4, 1).contiguous()",
        ]
    else:
        lines += ["        xs = x.contiguous()", "        ws = w.contiguous()"]
    bias = "conv.bias if conv.bias is not None else ws" if p.bias else "ws"
    epi_args = "".join(f"{expr}, " for _, expr in p.epi_ptrs)
    lines += [
        "        out = torch.empty((N, Cout, OD, OH, OW), device=x.device, dtype=torch.float32)",
        f"        grid = (triton.cdiv(OD * OH * OW, {bm}), triton.cdiv(Cout, {bn}), N)",
        "        _conv3d_kernel[grid](",
        f"            xs, ws, {bias}, out, {epi_args}Cin, D, H, W, Cout, OD, OH, OW, KD=KD, KH=KH, KW=KW,",
        f"            BM={bm}, BN={bn}, BK={bk}, HAS_BIAS={'conv.bias is not None' if p.bias else False}, num_warps={warps}, num_stages={stages},",
        "        )",
        "        return out",
    ]
    return "\n".join(lines) + "\n"


def cudnn(p: ConvProblem, fused: bool, block: int = 1024, warps: int = 4) -> str:
    """cuDNN's conv3d (bias included), then the epilogue in Triton over each (sample, channel) plane."""
    steps = list(p.epi_code) if p.epi_code else ["y = y"]
    groups = [steps] if fused else [[s] for s in steps]
    if p.epi_code:
        what = "one fused Triton epilogue" if fused else f"one Triton kernel per operation ({len(groups)})"
    else:
        what = "a Triton copy into the output"
    head = (
        f"# cuDNN conv3d (fp32, F.conv3d) + {what} ({p.epi_words}), BLOCK {block}, {warps} warps "
        f"[family=conv3d_lib fused={int(fused)} block={block} warps={warps}]"
    )
    epi_params = "".join(f"{name}, " for name, _ in p.epi_ptrs)
    epi_args = "".join(f"{expr}, " for _, expr in p.epi_ptrs)
    out = [head, _IMPORTS]
    for i, body in enumerate(groups):
        out += [
            "",
            "@triton.jit",
            f"def _epilogue_{i}(y_ptr, out_ptr, {epi_params}P, C, BLOCK: tl.constexpr):",
            "    plane = tl.program_id(0)",
            "    co = plane % C",
            "    co_ok = co >= 0",
            "    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)",
            "    ok = offs < P",
            "    y = tl.load(y_ptr + plane.to(tl.int64) * P + offs, mask=ok, other=0.0)",
            *[f"    {line.replace('[None, :]', '')}" for line in body],
            "    tl.store(out_ptr + plane.to(tl.int64) * P + offs, y, mask=ok)",
            "",
        ]
    out += [
        "",
        "class ModelNew(nn.Module):",
        f"    def __init__(self, {p.init_sig}):",
        "        super().__init__()",
        *[f"        {line}" for line in p.init_body],
        "",
        "    def forward(self, x):",
        f"        conv = self.{p.conv}",
        "        y = F.conv3d(x, conv.weight, conv.bias).contiguous()",
        "        N, C = y.shape[0], y.shape[1]",
        "        P = y[0, 0].numel()",
        f"        grid = (N * C, triton.cdiv(P, {block}))",
    ]
    for i in range(len(groups)):
        out += [
            "        out = torch.empty_like(y)",
            f"        _epilogue_{i}[grid](y, out, {epi_args}P, C, BLOCK={block}, num_warps={warps})",
            "        y = out",
        ]
    out.append("        return y")
    return "\n".join(out) + "\n"


def kernels() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for p, variants in (
        (
            P47,
            [
                ("tf32x3", 128, 64, 32, 4, 3, False),
                ("tf32x3", 64, 64, 32, 4, 3, False),
                ("tf32x3", 128, 64, 16, 8, 2, False),
                ("tf32x3", 256, 64, 32, 8, 3, False),
                ("tf32x3", 128, 64, 32, 4, 3, True),
                ("bf16x3", 128, 64, 32, 4, 3, False),
                ("ieee", 64, 64, 16, 4, 2, False),
            ],
        ),
        (
            P90,
            [
                ("tf32x3", 128, 64, 32, 4, 3, False),
                ("tf32x3", 128, 64, 16, 4, 4, False),
                ("tf32x3", 256, 64, 32, 8, 3, False),
                ("tf32x3", 128, 64, 32, 4, 3, True),
                ("bf16x3", 128, 64, 32, 4, 3, False),
            ],
        ),
        (
            L1_54,
            [
                ("tf32x3", 128, 64, 16, 4, 3, False),
                ("tf32x3", 128, 64, 32, 4, 3, False),
                ("bf16x3", 128, 64, 16, 4, 3, False),
            ],
        ),
    ):
        for prec, bm, bn, bk, w, s, cl in variants:
            name = f"igemm{'_ndhwc' if cl else ''}_{prec}_{bm}x{bn}x{bk}_w{w}_s{s}"
            out.append((f"level{p.level}/{p.number}/{name}.py", igemm(p, prec, bm, bn, bk, w, s, cl)))
    out += [
        ("level2/47/cudnn_epilogue.py", cudnn(P47, True)),
        ("level2/47/cudnn_unfused.py", cudnn(P47, False)),
        ("level2/90/cudnn_epilogue.py", cudnn(P90, True)),
        ("level2/90/cudnn_epilogue_4096_w8.py", cudnn(P90, True, 4096, 8)),
        ("level1/54/cudnn_copy.py", cudnn(L1_54, True)),
    ]
    return out
