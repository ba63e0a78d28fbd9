# LayerNorm over a long row split across programs: per-chunk mean/M2 kernel, a per-row combine kernel, then a normalize+affine kernel (2 reads of x, 1 write).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def chunk_stats_kernel(x_ptr, cmean_ptr, cm2_ptr, N, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1)
    offs = c * CHUNK + tl.arange(0, CHUNK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0).to(tl.float32)
    cnt = tl.minimum(N - c * CHUNK, CHUNK).to(tl.float32)
    mean = tl.sum(x, axis=0) / cnt
    d = tl.where(mask, x - mean, 0.0)
    m2 = tl.sum(d * d, axis=0)
    tl.store(cmean_ptr + row * n_chunks + c, mean)
    tl.store(cm2_ptr + row * n_chunks + c, m2)


@triton.jit
def combine_kernel(cmean_ptr, cm2_ptr, mean_ptr, rstd_ptr, N, n_chunks, eps,
                   CHUNK: tl.constexpr, BLOCK_C: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_chunks
    nf = N * 1.0
    acc = tl.zeros([BLOCK_C], tl.float32)
    for start in range(0, n_chunks, BLOCK_C):
        idx = start + tl.arange(0, BLOCK_C)
        m = idx < n_chunks
        cnt = tl.minimum(tl.maximum(N - idx * CHUNK, 0), CHUNK).to(tl.float32)
        mu = tl.load(cmean_ptr + base + idx, mask=m, other=0.0)
        acc += cnt * mu
    mean = tl.sum(acc, axis=0) / nf
    acc2 = tl.zeros([BLOCK_C], tl.float32)
    for start in range(0, n_chunks, BLOCK_C):
        idx = start + tl.arange(0, BLOCK_C)
        m = idx < n_chunks
        cnt = tl.minimum(tl.maximum(N - idx * CHUNK, 0), CHUNK).to(tl.float32)
        mu = tl.load(cmean_ptr + base + idx, mask=m, other=0.0)
        m2 = tl.load(cm2_ptr + base + idx, mask=m, other=0.0)
        d = mu - mean
        acc2 += tl.where(m, m2 + cnt * d * d, 0.0)
    var = tl.sum(acc2, axis=0) / nf
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, 1.0 / tl.sqrt(var + eps))


@triton.jit
def normalize_kernel(x_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = (x - mean) * rstd * w + b
    tl.store(y_ptr + row * N + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N = self.ln.weight.numel()
        rows = x.numel() // N
        w = self.ln.weight.contiguous()
        b = self.ln.bias.contiguous()
        y = torch.empty_like(x)
        CHUNK = min(4096, triton.next_power_of_2(N))
        n_chunks = triton.cdiv(N, CHUNK)
        cmean = torch.empty((rows, n_chunks), device=x.device, dtype=torch.float32)
        cm2 = torch.empty((rows, n_chunks), device=x.device, dtype=torch.float32)
        mean = torch.empty(rows, device=x.device, dtype=torch.float32)
        rstd = torch.empty(rows, device=x.device, dtype=torch.float32)
        chunk_stats_kernel[(rows, n_chunks)](x, cmean, cm2, N, n_chunks, CHUNK=CHUNK, num_warps=8)
        BLOCK_C = min(1024, triton.next_power_of_2(n_chunks))
        combine_kernel[(rows,)](cmean, cm2, mean, rstd, N, n_chunks, self.ln.eps,
                                CHUNK=CHUNK, BLOCK_C=BLOCK_C, num_warps=4)
        BLOCK = min(2048, triton.next_power_of_2(N))
        normalize_kernel[(rows, triton.cdiv(N, BLOCK))](x, w, b, mean, rstd, y, N, BLOCK=BLOCK, num_warps=4)
        return y
