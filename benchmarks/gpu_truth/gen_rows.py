"""Reductions, norms and pooling of Level 1 for the corpus generator (`generate.py`): families that differ in
block size and warps, in how a row is spread over programs (one program per row, a row split over several, rows
packed into one), in passes over memory, and in atomics against a partials buffer."""

from __future__ import annotations

_IMPORTS = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"


# ---- Level 1 problem 24: log-softmax over rows of 393216 ----
def logsoftmax_online(block: int, warps: int) -> str:
    return f"""# log-softmax over rows, one program per row: an online max/sum sweep ({block} columns at a time), then a write sweep (2 reads, 1 write), {warps} warps [family=row_online block={block} warps={warps}]
{_IMPORTS}

@triton.jit
def _logsoftmax_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        x = tl.load(x_ptr + base + c0 + cols, mask=c0 + cols < N, other=float("-inf"))
        new = tl.maximum(m, x)
        s = tl.where(new == float("-inf"), 0.0, s * tl.exp(m - new) + tl.exp(x - new))
        m = new
    row_max = tl.max(m, axis=0)
    lse = row_max + tl.log(tl.sum(s * tl.exp(m - row_max), axis=0))
    for c0 in range(0, N, BLOCK):
        ok = c0 + cols < N
        x = tl.load(x_ptr + base + c0 + cols, mask=ok, other=0.0)
        tl.store(out_ptr + base + c0 + cols, x - lse, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        R, N = x.shape
        out = torch.empty_like(x)
        _logsoftmax_kernel[(R,)](x, out, N, BLOCK={block}, num_warps={warps})
        return out
"""


def logsoftmax_split(splits: int) -> str:
    return f"""# log-softmax over rows, each row split over {splits} programs: a kernel of per-chunk (max, sum of exp) partials, then a kernel that combines the row's partials and writes its chunk (2 reads, 1 write), BLOCK 4096, 8 warps [family=row_split splits={splits} block=4096 warps=8]
{_IMPORTS}

@triton.jit
def _partials_kernel(x_ptr, pmax_ptr, psum_ptr, N, CHUNK, S, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    base = row.to(tl.int64) * N
    start = part * CHUNK
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(start, start + CHUNK, BLOCK):
        c = c0 + cols
        x = tl.load(x_ptr + base + c, mask=(c < N) & (c < start + CHUNK), other=float("-inf"))
        new = tl.maximum(m, x)
        s = tl.where(new == float("-inf"), 0.0, s * tl.exp(m - new) + tl.exp(x - new))
        m = new
    pm = tl.max(m, axis=0)
    ps = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - pm)), axis=0)
    tl.store(pmax_ptr + row * S + part, pm)
    tl.store(psum_ptr + row * S + part, ps)


@triton.jit
def _write_kernel(x_ptr, out_ptr, pmax_ptr, psum_ptr, N, CHUNK, S, BLOCK: tl.constexpr, BLOCK_S: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    p = tl.arange(0, BLOCK_S)
    pm = tl.load(pmax_ptr + row * S + p, mask=p < S, other=float("-inf"))
    ps = tl.load(psum_ptr + row * S + p, mask=p < S, other=0.0)
    row_max = tl.max(pm, axis=0)
    lse = row_max + tl.log(tl.sum(tl.where(pm == float("-inf"), 0.0, ps * tl.exp(pm - row_max)), axis=0))
    base = row.to(tl.int64) * N
    start = part * CHUNK
    cols = tl.arange(0, BLOCK)
    for c0 in range(start, start + CHUNK, BLOCK):
        c = c0 + cols
        ok = (c < N) & (c < start + CHUNK)
        x = tl.load(x_ptr + base + c, mask=ok, other=0.0)
        tl.store(out_ptr + base + c, x - lse, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        R, N = x.shape
        S = {splits}
        CHUNK = triton.cdiv(N, S)
        pmax = torch.empty((R, S), device=x.device, dtype=torch.float32)
        psum = torch.empty_like(pmax)
        out = torch.empty_like(x)
        _partials_kernel[(R, S)](x, pmax, psum, N, CHUNK, S, BLOCK=4096, num_warps=8)
        _write_kernel[(R, S)](x, out, pmax, psum, N, CHUNK, S, BLOCK=4096, BLOCK_S=triton.next_power_of_2(S), num_warps=8)
        return out
"""


LOGSOFTMAX_3PASS = f"""# log-softmax over rows in three kernels, one program per row each: the row max, then the row sum of exp, then the write (3 reads, 1 write), BLOCK 4096, 8 warps [family=row_multipass passes=3 block=4096 warps=8]
{_IMPORTS}

@triton.jit
def _max_kernel(x_ptr, max_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    for c0 in range(0, N, BLOCK):
        m = tl.maximum(m, tl.load(x_ptr + base + c0 + cols, mask=c0 + cols < N, other=float("-inf")))
    tl.store(max_ptr + row, tl.max(m, axis=0))


@triton.jit
def _lse_kernel(x_ptr, max_ptr, lse_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    row_max = tl.load(max_ptr + row)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        x = tl.load(x_ptr + base + c0 + cols, mask=c0 + cols < N, other=float("-inf"))
        s += tl.exp(x - row_max)
    tl.store(lse_ptr + row, row_max + tl.log(tl.sum(s, axis=0)))


@triton.jit
def _write_kernel(x_ptr, lse_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    lse = tl.load(lse_ptr + row)
    for c0 in range(0, N, BLOCK):
        ok = c0 + cols < N
        tl.store(out_ptr + base + c0 + cols, tl.load(x_ptr + base + c0 + cols, mask=ok, other=0.0) - lse, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        R, N = x.shape
        row_max = torch.empty((R,), device=x.device, dtype=torch.float32)
        lse = torch.empty_like(row_max)
        out = torch.empty_like(x)
        _max_kernel[(R,)](x, row_max, N, BLOCK=4096, num_warps=8)
        _lse_kernel[(R,)](x, row_max, lse, N, BLOCK=4096, num_warps=8)
        _write_kernel[(R,)](x, lse, out, N, BLOCK=4096, num_warps=8)
        return out
"""


# ---- Level 1 problem 95: cross entropy over 4096 classes, mean over 32768 rows ----
def cross_entropy(rows: int, block: int, warps: int, atomics: bool) -> str:
    how = "atomically added into the mean" if atomics else "written per row, then summed by a second one-program kernel"
    looped = "the whole row in registers" if rows == 1 else f"{rows} rows per program, {block} classes at a time"
    reduce_kernel = (
        ""
        if atomics
        else """

@triton.jit
def _mean_kernel(loss_ptr, out_ptr, R, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r0 in range(0, R, BLOCK):
        acc += tl.load(loss_ptr + r0 + offs, mask=r0 + offs < R, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / R)
"""
    )
    if atomics:
        finish = "tl.atomic_add(out_ptr, tl.sum(tl.where(r_ok, loss, 0.0), axis=0) * inv_r)"
    else:
        finish = "tl.store(loss_ptr + r, loss, mask=r_ok)"
    host_finish = (
        "        return out.reshape(())"
        if atomics
        else "        res = torch.empty((1,), device=x.device, dtype=torch.float32)\n"
        "        _mean_kernel[(1,)](loss, res, R, BLOCK=1024, num_warps=4)\n        return res.reshape(())"
    )
    out_alloc = (
        "out = torch.zeros((1,), device=x.device, dtype=torch.float32)"
        if atomics
        else "loss = torch.empty((R,), device=x.device, dtype=torch.float32)"
    )
    dest = "out" if atomics else "loss"
    block_expr = "triton.next_power_of_2(C)" if rows == 1 else str(block)
    return f"""# cross entropy, {looped} (online max/sum), the row losses {how}, {warps} warps [family=row_xent rows={rows} block={block if rows > 1 else "row"} warps={warps} atomics={int(atomics)}]
{_IMPORTS}

@triton.jit
def _xent_kernel(x_ptr, t_ptr, loss_ptr, out_ptr, R, C, inv_r, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    r_ok = r < R
    cols = tl.arange(0, BLOCK)
    base = r.to(tl.int64)[:, None] * C
    m = tl.full((ROWS, BLOCK), float("-inf"), tl.float32)
    s = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    for c0 in range(0, C, BLOCK):
        ok = r_ok[:, None] & (c0 + cols < C)[None, :]
        x = tl.load(x_ptr + base + c0 + cols[None, :], mask=ok, other=float("-inf"))
        new = tl.maximum(m, x)
        s = tl.where(new == float("-inf"), 0.0, s * tl.exp(m - new) + tl.exp(x - new))
        m = new
    row_max = tl.max(m, axis=1)
    lse = row_max + tl.log(tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max[:, None])), axis=1))
    t = tl.load(t_ptr + r, mask=r_ok, other=0)
    picked = tl.load(x_ptr + r.to(tl.int64) * C + t, mask=r_ok, other=0.0)
    loss = lse - picked
    {finish}
{reduce_kernel}

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        x = predictions.contiguous()
        t = targets.contiguous()
        R, C = x.shape
        {out_alloc}
        _xent_kernel[(triton.cdiv(R, {rows}),)](x, t, {dest}, {dest}, R, C, 1.0 / R, ROWS={rows}, BLOCK={block_expr}, num_warps={warps})
{host_finish}
"""


# ---- Level 1 problem 33: BatchNorm2d in training mode (statistics per channel over N, H, W) ----
def batchnorm(splits: int, atomics: bool, apply_block: int, apply_warps: int) -> str:
    where = "atomics into per-channel sums" if atomics else "a partials buffer"
    store = (
        "tl.atomic_add(sum_ptr + c, tl.sum(s, axis=0))\n    tl.atomic_add(sq_ptr + c, tl.sum(q, axis=0))"
        if atomics
        else "tl.store(sum_ptr + c * S + part, tl.sum(s, axis=0))\n    tl.store(sq_ptr + c * S + part, tl.sum(q, axis=0))"
    )
    width = 1 if atomics else splits
    alloc = "torch.zeros" if atomics else "torch.empty"
    return f"""# batch norm (training statistics): per-channel sums over (N, H, W) from {splits} programs per channel into {where}, then one normalize kernel ({apply_block} elements per program, {apply_warps} warps) that finishes the statistics itself [family=channel_stats splits={splits} atomics={int(atomics)} apply_block={apply_block} apply_warps={apply_warps}]
{_IMPORTS}

@triton.jit
def _stats_kernel(x_ptr, sum_ptr, sq_ptr, N, C, HW, S, BLOCK: tl.constexpr):
    c = tl.program_id(0)
    part = tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    q = tl.zeros((BLOCK,), dtype=tl.float32)
    # this program's share of the channel: every S-th chunk of BLOCK elements of each of the N planes
    chunks = tl.cdiv(HW, BLOCK)
    for i in range(part, N * chunks, S):
        n = i // chunks
        start = (i - n * chunks) * BLOCK
        ok = start + offs < HW
        x = tl.load(x_ptr + (n * C + c).to(tl.int64) * HW + start + offs, mask=ok, other=0.0)
        s += x
        q += x * x
    {store}


@triton.jit
def _apply_kernel(x_ptr, out_ptr, sum_ptr, sq_ptr, w_ptr, b_ptr, C, HW, S, inv_count, eps, BLOCK: tl.constexpr, BLOCK_S: tl.constexpr):
    plane = tl.program_id(0)
    c = plane % C
    p = tl.arange(0, BLOCK_S)
    mean = tl.sum(tl.load(sum_ptr + c * S + p, mask=p < S, other=0.0), axis=0) * inv_count
    var = tl.sum(tl.load(sq_ptr + c * S + p, mask=p < S, other=0.0), axis=0) * inv_count - mean * mean
    g = tl.load(w_ptr + c) * tl.rsqrt(var + eps)
    h = tl.load(b_ptr + c) - mean * g
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < HW
    base = plane.to(tl.int64) * HW
    x = tl.load(x_ptr + base + offs, mask=ok, other=0.0)
    tl.store(out_ptr + base + offs, x * g + h, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        HW = H * W
        S = {width}
        sums = {alloc}((C, S), device=x.device, dtype=torch.float32)
        sqs = {alloc}((C, S), device=x.device, dtype=torch.float32)
        _stats_kernel[(C, {splits})](x, sums, sqs, N, C, HW, {splits}, BLOCK=4096, num_warps=8)
        out = torch.empty_like(x)
        _apply_kernel[(N * C, triton.cdiv(HW, {apply_block}))](
            x, out, sums, sqs, self.bn.weight, self.bn.bias, C, HW, S, 1.0 / (N * HW), float(self.bn.eps),
            BLOCK={apply_block}, BLOCK_S=triton.next_power_of_2(S), num_warps={apply_warps},
        )
        return out
"""


# ---- Level 1 problem 42: MaxPool2d, kernel 4, stride 1, padding 1, dilation 1 ----
def maxpool_tiles(bh: int, bw: int, warps: int) -> str:
    return f"""# max pooling (4x4 window, stride 1, padding 1), 2D output tiles of {bh}x{bw} per program, 16 shifted masked loads, {warps} warps [family=pool_tiles bh={bh} bw={bw} warps={warps}]
{_IMPORTS}

@triton.jit
def _maxpool_kernel(x_ptr, out_ptr, H, W, OH, OW, KS: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr, DIL: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr):
    plane = tl.program_id(0)
    oh = tl.program_id(1) * BH + tl.arange(0, BH)
    ow = tl.program_id(2) * BW + tl.arange(0, BW)
    x_base = x_ptr + plane.to(tl.int64) * H * W
    acc = tl.full((BH, BW), float("-inf"), tl.float32)
    for kh in tl.static_range(KS):
        ih = oh * STRIDE - PAD + kh * DIL
        h_ok = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KS):
            iw = ow * STRIDE - PAD + kw * DIL
            ok = h_ok[:, None] & ((iw >= 0) & (iw < W))[None, :]
            v = tl.load(x_base + ih[:, None] * W + iw[None, :], mask=ok, other=float("-inf"))
            acc = tl.maximum(acc, v)
    out_ok = (oh < OH)[:, None] & (ow < OW)[None, :]
    tl.store(out_ptr + plane.to(tl.int64) * OH * OW + oh[:, None] * OW + ow[None, :], acc, mask=out_ok)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.k, self.s, self.p, self.d = kernel_size, stride, padding, dilation

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        OH = (H + 2 * self.p - self.d * (self.k - 1) - 1) // self.s + 1
        OW = (W + 2 * self.p - self.d * (self.k - 1) - 1) // self.s + 1
        out = torch.empty((N, C, OH, OW), device=x.device, dtype=x.dtype)
        grid = (N * C, triton.cdiv(OH, {bh}), triton.cdiv(OW, {bw}))
        _maxpool_kernel[grid](x, out, H, W, OH, OW, KS=self.k, STRIDE=self.s, PAD=self.p, DIL=self.d, BH={bh}, BW={bw}, num_warps={warps})
        return out
"""


MAXPOOL_FLAT = f"""# max pooling (4x4 window, stride 1, padding 1), flat: 1024 outputs per program, each index unravelled to (plane, row, column), 16 gathered masked loads, 4 warps [family=pool_flat block=1024 warps=4]
{_IMPORTS}

@triton.jit
def _maxpool_flat_kernel(x_ptr, out_ptr, total, H, W, OH, OW, KS: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr, DIL: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok_out = offs < total
    ow = offs % OW
    oh = (offs // OW) % OH
    plane = offs // (OW * OH)
    acc = tl.full((BLOCK,), float("-inf"), tl.float32)
    for kh in tl.static_range(KS):
        ih = oh * STRIDE - PAD + kh * DIL
        for kw in tl.static_range(KS):
            iw = ow * STRIDE - PAD + kw * DIL
            ok = ok_out & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            acc = tl.maximum(acc, tl.load(x_ptr + (plane * H + ih) * W + iw, mask=ok, other=float("-inf")))
    tl.store(out_ptr + offs, acc, mask=ok_out)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.k, self.s, self.p, self.d = kernel_size, stride, padding, dilation

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        OH = (H + 2 * self.p - self.d * (self.k - 1) - 1) // self.s + 1
        OW = (W + 2 * self.p - self.d * (self.k - 1) - 1) // self.s + 1
        out = torch.empty((N, C, OH, OW), device=x.device, dtype=x.dtype)
        total = out.numel()
        _maxpool_flat_kernel[(triton.cdiv(total, 1024),)](x, out, total, H, W, OH, OW, KS=self.k, STRIDE=self.s, PAD=self.p, DIL=self.d, BLOCK=1024, num_warps=4)
        return out
"""


def kernels() -> list[tuple[str, str]]:
    out = [
        (f"level1/24/online_{b}_w{w}.py", logsoftmax_online(b, w))
        for b, w in ((1024, 4), (4096, 8), (8192, 8), (16384, 16), (4096, 4))
    ]
    out += [(f"level1/24/split{s}.py", logsoftmax_split(s)) for s in (16, 64)]
    out.append(("level1/24/three_pass.py", LOGSOFTMAX_3PASS))
    out += [
        ("level1/95/row_w4.py", cross_entropy(1, 0, 4, False)),
        ("level1/95/row_w8.py", cross_entropy(1, 0, 8, False)),
        ("level1/95/row_w16.py", cross_entropy(1, 0, 16, False)),
        ("level1/95/rows4_1024_w4.py", cross_entropy(4, 1024, 4, False)),
        ("level1/95/row_w8_atomics.py", cross_entropy(1, 0, 8, True)),
    ]
    out += [
        ("level1/33/split64.py", batchnorm(64, False, 4096, 8)),
        ("level1/33/split8.py", batchnorm(8, False, 4096, 8)),
        ("level1/33/split1.py", batchnorm(1, False, 4096, 8)),
        ("level1/33/split64_atomics.py", batchnorm(64, True, 4096, 8)),
        ("level1/33/split64_apply1024.py", batchnorm(64, False, 1024, 4)),
    ]
    out += [
        (f"level1/42/tiles_{bh}x{bw}_w{w}.py", maxpool_tiles(bh, bw, w))
        for bh, bw, w in ((32, 32, 4), (16, 64, 4), (8, 128, 4), (64, 64, 8), (4, 32, 1))
    ]
    out.append(("level1/42/flat_1024_w4.py", MAXPOOL_FLAT))
    return out
