"""GEMM + norm and reduction chains for the corpus generator (`generate.py`): the GEMM template with a
reduction in its epilogue (column statistics by atomics for a batch norm, per-tile row partials of a logsumexp
that never store the (M, N) product) and the library-plus-norm designs (cuBLAS, then one Triton kernel that
reads the product once or twice)."""

from __future__ import annotations

from gen_gemm import Gemm, GemmProblem, render

# ---- Level 2 problem 33: GEMM, scale, BatchNorm1d in training mode (statistics over the batch) ----
_BN_FINISH = """

@triton.jit
def _bn_finish_kernel(pmean_ptr, pm2_ptr, w_ptr, b_ptr, g_ptr, h_ptr, M, N, T, ROWS, eps, BLOCK: tl.constexpr):
    # per column: combine the T row tiles' (mean, M2) partials (Chan's formula), then the affine that normalizes
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < N
    mean = tl.zeros((BLOCK,), dtype=tl.float32)
    m2 = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in range(0, T):
        n_a = tl.minimum(t * ROWS, M).to(tl.float32)
        n_b = tl.minimum(ROWS, M - t * ROWS).to(tl.float32)
        mb = tl.load(pmean_ptr + t * N + cols, mask=ok, other=0.0)
        delta = mb - mean
        total = n_a + n_b
        mean = mean + delta * (n_b / total)
        m2 = m2 + tl.load(pm2_ptr + t * N + cols, mask=ok, other=0.0) + delta * delta * (n_a * n_b / total)
    g = tl.load(w_ptr + cols, mask=ok, other=1.0) * tl.rsqrt(m2 / M + eps)
    tl.store(g_ptr + cols, g, mask=ok)
    tl.store(h_ptr + cols, tl.load(b_ptr + cols, mask=ok, other=0.0) - mean * g, mask=ok)


@triton.jit
def _bn_apply_kernel(y_ptr, g_ptr, h_ptr, n_elements, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n_elements
    col = offs % N
    y = tl.load(y_ptr + offs, mask=inside, other=0.0)
    g = tl.load(g_ptr + col, mask=inside, other=1.0)
    h = tl.load(h_ptr + col, mask=inside, other=0.0)
    tl.store(y_ptr + offs, y * g + h, mask=inside)
"""

P33 = GemmProblem(
    2,
    33,
    "in_features, out_features, scale_shape, eps=1e-5, momentum=0.1",
    (
        "self.gemm = nn.Linear(in_features, out_features)",
        "self.scale = nn.Parameter(torch.randn(scale_shape))",
        "self.bn = nn.BatchNorm1d(out_features, eps=eps, momentum=momentum)",
    ),
    "linear",
    b_expr="self.gemm.weight",
    bias_expr="self.gemm.bias",
    epi_ptrs=(("scale_ptr", "self.scale"), ("pmean_ptr", "pmean"), ("pm2_ptr", "pm2")),
    epi_code=(
        "y = y * tl.load(scale_ptr + offs_n_ld)[None, :]",
        "# the batch statistics: each row tile stores its columns' mean and sum of squared deviations",
        "count = tl.minimum(M - pid_m * BLOCK_M, BLOCK_M).to(tl.float32)",
        "tile_mean = tl.sum(tl.where(mask, y, 0.0), axis=0) / count",
        "dev = tl.where(mask, y - tile_mean[None, :], 0.0)",
        "tl.store(pmean_ptr + pid_m * N + offs_n, tile_mean, mask=offs_n < N)",
        "tl.store(pm2_ptr + pid_m * N + offs_n, tl.sum(dev * dev, axis=0), mask=offs_n < N)",
    ),
    epi_words="scale fused, the batch norm's per-tile column mean and M2 in the epilogue, then a combine kernel and one normalize pass",
    host_pre=(
        "T = triton.cdiv(M, BLOCK_M)",
        "pmean = torch.empty((T, N), device=a.device, dtype=torch.float32)",
        "pm2 = torch.empty_like(pmean)",
    ),
    host_post=(
        "g = torch.empty((N,), device=a.device, dtype=torch.float32)",
        "h = torch.empty_like(g)",
        "_bn_finish_kernel[(triton.cdiv(N, 1024),)](pmean, pm2, self.bn.weight, self.bn.bias, g, h, M, N, T, BLOCK_M, "
        "float(self.bn.eps), BLOCK=1024, num_warps=4)",
        "n = M * N",
        "_bn_apply_kernel[(triton.cdiv(n, 1024),)](out, g, h, n, N, BLOCK=1024, num_warps=4)",
    ),
    extra_kernels=_BN_FINISH,
)


def _bn_lib(block_m: int, block_n: int, warps: int) -> str:
    return f"""# cuBLAS GEMM (fp32, torch.mm) + one Triton kernel for bias, scale and the batch norm: each program owns {block_n} columns and sweeps all rows twice ({block_m} at a time: statistics shifted by the first row, then normalize) [family=lib_colnorm block_m={block_m} block_n={block_n} warps={warps}]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_bn_kernel(y_ptr, out_ptr, bias_ptr, scale_ptr, w_ptr, b_ptr, M, N, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    bias = tl.load(bias_ptr + cols, mask=col_ok, other=0.0)
    scale = tl.load(scale_ptr + cols, mask=col_ok, other=0.0)
    # sums shifted by the first row's values (no cancellation in E[d^2] - E[d]^2 when the batch varies little)
    shift = (tl.load(y_ptr + cols, mask=col_ok, other=0.0) + bias) * scale
    s = tl.zeros((BLOCK_N,), dtype=tl.float32)
    sq = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        inside = (rows < M)[:, None] & col_ok[None, :]
        y = tl.load(y_ptr + rows[:, None] * N + cols[None, :], mask=inside, other=0.0)
        d = tl.where(inside, (y + bias[None, :]) * scale[None, :] - shift[None, :], 0.0)
        s += tl.sum(d, axis=0)
        sq += tl.sum(d * d, axis=0)
    mean_d = s / M
    mean = shift + mean_d
    rstd = tl.rsqrt(sq / M - mean_d * mean_d + eps)
    g = tl.load(w_ptr + cols, mask=col_ok, other=1.0) * rstd
    h = tl.load(b_ptr + cols, mask=col_ok, other=0.0) - mean * g
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        inside = (rows < M)[:, None] & col_ok[None, :]
        y = tl.load(y_ptr + rows[:, None] * N + cols[None, :], mask=inside, other=0.0)
        y = (y + bias[None, :]) * scale[None, :]
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], y * g[None, :] + h[None, :], mask=inside)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale_shape, eps=1e-5, momentum=0.1):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.bn = nn.BatchNorm1d(out_features, eps=eps, momentum=momentum)

    def forward(self, x):
        y = torch.mm(x.contiguous(), self.gemm.weight.t())
        M, N = y.shape
        out = torch.empty_like(y)
        _scale_bn_kernel[(triton.cdiv(N, {block_n}),)](
            y, out, self.gemm.bias, self.scale, self.bn.weight, self.bn.bias, M, N, float(self.bn.eps),
            BLOCK_M={block_m}, BLOCK_N={block_n}, num_warps={warps},
        )
        return out
"""


# ---- Level 2 problem 22: GEMM, scale, x + x, clamp, logsumexp over the row, x * mish(x) ----
_LSE_FINISH = """

@triton.jit
def _lse_finish_kernel(pmax_ptr, psum_ptr, out_ptr, M, T, BLOCK_T: tl.constexpr):
    # one row: combine the T column tiles' (max, sum of exp) into the row's logsumexp, then lse * mish(lse)
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK_T)
    m = tl.full((BLOCK_T,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_T,), dtype=tl.float32)
    for t0 in range(0, T, BLOCK_T):
        ok = t0 + t < T
        pm = tl.load(pmax_ptr + (t0 + t) * M + row, mask=ok, other=float("-inf"))
        ps = tl.load(psum_ptr + (t0 + t) * M + row, mask=ok, other=0.0)
        new = tl.maximum(m, pm)
        s = s * tl.exp(m - new) + ps * tl.exp(pm - new)
        s = tl.where(new == float("-inf"), 0.0, s)
        m = new
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - row_max), axis=0)
    lse = row_max + tl.log(total)
    sp = tl.where(lse > 20.0, lse, tl.log(1.0 + tl.exp(lse)))
    tl.store(out_ptr + row, lse * lse * (2.0 * tl.sigmoid(2.0 * sp) - 1.0))
"""

P22 = GemmProblem(
    2,
    22,
    "input_size, hidden_size, scale_factor, clamp_min, clamp_max",
    (
        "self.matmul = nn.Linear(input_size, hidden_size)",
        "self.scale_factor = float(scale_factor)",
        "self.clamp_min = float(clamp_min)",
        "self.clamp_max = float(clamp_max)",
    ),
    "linear",
    b_expr="self.matmul.weight",
    bias_expr="self.matmul.bias",
    epi_ptrs=(("pmax_ptr", "pmax"), ("psum_ptr", "psum")),
    epi_scalars=(
        ("twice_scale", "2.0 * self.scale_factor"),
        ("clamp_min", "self.clamp_min"),
        ("clamp_max", "self.clamp_max"),
    ),
    epi_code=(
        "y = tl.minimum(tl.maximum(y * twice_scale, clamp_min), clamp_max)",
        "# the tile's share of each row's logsumexp: its max and its sum of exp; the product itself is never stored",
        'y = tl.where(mask, y, float("-inf"))',
        "tile_max = tl.max(y, axis=1)",
        "tile_sum = tl.sum(tl.exp(y - tile_max[:, None]), axis=1)",
        "tl.store(pmax_ptr + pid_n * M + offs_m, tile_max, mask=offs_m < M)",
        "tl.store(psum_ptr + pid_n * M + offs_m, tile_sum, mask=offs_m < M)",
    ),
    epi_words="scale, doubling, clamp and per-tile logsumexp partials fused (no (M, N) store), then one finishing kernel per row",
    host_pre=(
        "T = triton.cdiv(N, BLOCK_N)",
        "pmax = torch.empty((T, M), device=a.device, dtype=torch.float32)",
        "psum = torch.empty_like(pmax)",
    ),
    host_post=(
        "res = torch.empty((M, 1), device=a.device, dtype=torch.float32)",
        "_lse_finish_kernel[(M,)](pmax, psum, res, M, T, BLOCK_T=64, num_warps=1)",
    ),
    extra_kernels=_LSE_FINISH,
    store=False,
    returns="res",
)


def _lse_lib(block: int, warps: int) -> str:
    return f"""# cuBLAS GEMM (fp32, torch.mm) + one Triton kernel per row for bias, scale, doubling, clamp, logsumexp and x * mish(x): an online max/sum sweep over the row, {block} columns at a time, {warps} warps [family=lib_rowreduce block={block} warps={warps}]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_lse_kernel(y_ptr, bias_ptr, out_ptr, N, twice_scale, clamp_min, clamp_max, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        ok = c0 + cols < N
        y = tl.load(y_ptr + row.to(tl.int64) * N + c0 + cols, mask=ok, other=0.0)
        y = y + tl.load(bias_ptr + c0 + cols, mask=ok, other=0.0)
        y = tl.minimum(tl.maximum(y * twice_scale, clamp_min), clamp_max)
        y = tl.where(ok, y, float("-inf"))
        new = tl.maximum(m, y)
        s = s * tl.exp(m - new) + tl.exp(y - new)
        s = tl.where(new == float("-inf"), 0.0, s)
        m = new
    row_max = tl.max(m, axis=0)
    lse = row_max + tl.log(tl.sum(s * tl.exp(m - row_max), axis=0))
    sp = tl.where(lse > 20.0, lse, tl.log(1.0 + tl.exp(lse)))
    tl.store(out_ptr + row, lse * lse * (2.0 * tl.sigmoid(2.0 * sp) - 1.0))


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, scale_factor, clamp_min, clamp_max):
        super().__init__()
        self.matmul = nn.Linear(input_size, hidden_size)
        self.scale_factor = float(scale_factor)
        self.clamp_min = float(clamp_min)
        self.clamp_max = float(clamp_max)

    def forward(self, x):
        y = torch.mm(x.contiguous(), self.matmul.weight.t())
        M, N = y.shape
        out = torch.empty((M, 1), device=y.device, dtype=torch.float32)
        _row_lse_kernel[(M,)](
            y, self.matmul.bias, out, N, 2.0 * self.scale_factor, self.clamp_min, self.clamp_max,
            BLOCK={block}, num_warps={warps},
        )
        return out
"""


# ---- Level 2 problem 30: GEMM, GroupNorm (16 groups of 512 columns), hardtanh ----
_GN_KERNEL = """

@triton.jit
def _gn_hardtanh_kernel(y_ptr, out_ptr, bias_ptr, w_ptr, b_ptr, M, N, GS, eps, lo, hi, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # ROWS rows of one group per program: the group's mean and variance from one read, then normalize + hardtanh
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    g = tl.program_id(1)
    c = g * GS + tl.arange(0, BLOCK)
    c_ok = tl.arange(0, BLOCK) < GS
    inside = c_ok[None, :] & (r < M)[:, None]
    offs = r.to(tl.int64)[:, None] * N + c[None, :]
    y = tl.load(y_ptr + offs, mask=inside, other=0.0) + HAS_BIAS_LOAD
    y = tl.where(inside, y, 0.0)
    mean = tl.sum(y, axis=1) / GS
    d = tl.where(inside, y - mean[:, None], 0.0)
    rstd = tl.rsqrt(tl.sum(d * d, axis=1) / GS + eps)
    w = tl.load(w_ptr + c, mask=c_ok, other=1.0)
    b = tl.load(b_ptr + c, mask=c_ok, other=0.0)
    o = d * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(o, lo), hi), mask=inside)
"""


def _gn_text(bias_load: bool) -> str:
    load = "tl.load(bias_ptr + c, mask=c_ok, other=0.0)[None, :]" if bias_load else "0.0"
    return _GN_KERNEL.replace("HAS_BIAS_LOAD", load)


def _gn_launch(rows: int, src: str) -> tuple[str, ...]:
    return (
        "G = self.group_norm.num_groups",
        "GS = N // G",
        "res = torch.empty((M, N), device=a.device, dtype=torch.float32)",
        f"_gn_hardtanh_kernel[(triton.cdiv(M, {rows}), G)]({src}, res, self.gemm.bias, self.group_norm.weight, "
        "self.group_norm.bias, M, N, GS, float(self.group_norm.eps), self.lo, self.hi, "
        f"ROWS={rows}, BLOCK=triton.next_power_of_2(GS), num_warps=4)",
    )


_P30_INIT = (
    "self.gemm = nn.Linear(in_features, out_features)",
    "self.group_norm = nn.GroupNorm(num_groups, out_features)",
    "self.lo = float(hardtanh_min)",
    "self.hi = float(hardtanh_max)",
)
_P30_SIG = "in_features, out_features, num_groups, hardtanh_min, hardtanh_max"


def _p30(rows: int) -> GemmProblem:
    return GemmProblem(
        2,
        30,
        _P30_SIG,
        _P30_INIT,
        "linear",
        b_expr="self.gemm.weight",
        bias_expr="self.gemm.bias",
        epi_words=f"bias fused; then one group-norm + hardtanh kernel ({rows} rows of a group per program)",
        host_post=_gn_launch(rows, "out"),
        extra_kernels=_gn_text(False),
        returns="res",
    )


def _gn_lib(rows: int) -> str:
    head = (
        f"# cuBLAS GEMM (fp32, torch.mm) + one Triton kernel for bias, group norm and hardtanh, {rows} rows of a group "
        f"per program (one read, one write) [family=lib_groupnorm rows={rows}]"
    )
    body = "\n".join(
        [
            head,
            "import torch",
            "import torch.nn as nn",
            "import triton",
            "import triton.language as tl",
            _gn_text(True),
            "",
            "class ModelNew(nn.Module):",
            f"    def __init__(self, {_P30_SIG}):",
            "        super().__init__()",
            *[f"        {line}" for line in _P30_INIT],
            "",
            "    def forward(self, x):",
            "        a = x.contiguous()",
            "        out = torch.mm(a, self.gemm.weight.t())",
            "        M, N = out.shape",
            *[f"        {line}" for line in _gn_launch(rows, "out")],
            "        return res",
        ]
    )
    return body + "\n"


def _v(prec: str, bm: int, bn: int, bk: int, w: int, s: int, name: str) -> Gemm:
    return Gemm(name=name, prec=prec, bm=bm, bn=bn, bk=bk, warps=w, stages=s)


def kernels() -> list[tuple[str, str]]:
    out = [
        ("level2/33/bf16x3pre_colstats_128x128x64_w8_s3.py", render(P33, _v("bf16x3", 128, 128, 64, 8, 3, ""))),
        ("level2/33/bf16x3pre_colstats_64x128x64_w4_s3.py", render(P33, _v("bf16x3", 64, 128, 64, 4, 3, ""))),
        ("level2/33/tf32x3_colstats_128x128x32_w8_s3.py", render(P33, _v("tf32x3", 128, 128, 32, 8, 3, ""))),
        ("level2/33/lib_colnorm_64x32_w4.py", _bn_lib(64, 32, 4)),
        ("level2/33/lib_colnorm_32x128_w8.py", _bn_lib(32, 128, 8)),
        ("level2/22/bf16x3pre_lsepartials_128x128x64_w8_s3.py", render(P22, _v("bf16x3", 128, 128, 64, 8, 3, ""))),
        ("level2/22/bf16x3pre_lsepartials_64x256x32_w8_s3.py", render(P22, _v("bf16x3", 64, 256, 32, 8, 3, ""))),
        ("level2/22/tf32x3_lsepartials_128x128x32_w8_s3.py", render(P22, _v("tf32x3", 128, 128, 32, 8, 3, ""))),
        ("level2/22/lib_rowlse_2048_w8.py", _lse_lib(2048, 8)),
        ("level2/22/lib_rowlse_256_w2.py", _lse_lib(256, 2)),
        ("level2/30/bf16x3pre_then_gn_rows1.py", render(_p30(1), _v("bf16x3", 128, 128, 64, 8, 3, ""))),
        ("level2/30/tf32x3_then_gn_rows4.py", render(_p30(4), _v("tf32x3", 128, 128, 32, 8, 3, ""))),
        ("level2/30/lib_gn_rows1.py", _gn_lib(1)),
        ("level2/30/lib_gn_rows8.py", _gn_lib(8)),
    ]
    return out
