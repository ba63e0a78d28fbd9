# LayerNorm as five kernels: partial sums, mean finalize, partial sums of squared deviations, rstd finalize, normalize+affine (3 reads of x, 1 write).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(x_ptr, part_ptr, N, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1)
    offs = c * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(part_ptr + row * n_chunks + c, tl.sum(x, axis=0))


@triton.jit
def partial_sqdev_kernel(x_ptr, mean_ptr, part_ptr, N, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1)
    offs = c * CHUNK + tl.arange(0, CHUNK)
    mask = offs < N
    mean = tl.load(mean_ptr + row)
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0).to(tl.float32)
    d = tl.where(mask, x - mean, 0.0)
    tl.store(part_ptr + row * n_chunks + c, tl.sum(d * d, axis=0))


@triton.jit
def finalize_mean_kernel(part_ptr, mean_ptr, N, n_chunks, BLOCK_C: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK_C], tl.float32)
    for start in range(0, n_chunks, BLOCK_C):
        idx = start + tl.arange(0, BLOCK_C)
        acc += tl.load(part_ptr + row * n_chunks + idx, mask=idx < n_chunks, other=0.0)
    tl.store(mean_ptr + row, tl.sum(acc, axis=0) / (N * 1.0))


@triton.jit
def finalize_rstd_kernel(part_ptr, rstd_ptr, N, n_chunks, eps, BLOCK_C: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK_C], tl.float32)
    for start in range(0, n_chunks, BLOCK_C):
        idx = start + tl.arange(0, BLOCK_C)
        acc += tl.load(part_ptr + row * n_chunks + idx, mask=idx < n_chunks, other=0.0)
    var = tl.sum(acc, axis=0) / (N * 1.0)
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
    tl.store(y_ptr + row * N + offs, (x - mean) * rstd * w + b, mask=mask)


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
        part = torch.empty((rows, n_chunks), device=x.device, dtype=torch.float32)
        mean = torch.empty(rows, device=x.device, dtype=torch.float32)
        rstd = torch.empty(rows, device=x.device, dtype=torch.float32)
        BLOCK_C = min(1024, triton.next_power_of_2(n_chunks))
        partial_sum_kernel[(rows, n_chunks)](x, part, N, n_chunks, CHUNK=CHUNK, num_warps=8)
        finalize_mean_kernel[(rows,)](part, mean, N, n_chunks, BLOCK_C=BLOCK_C, num_warps=4)
        partial_sqdev_kernel[(rows, n_chunks)](x, mean, part, N, n_chunks, CHUNK=CHUNK, num_warps=8)
        finalize_rstd_kernel[(rows,)](part, rstd, N, n_chunks, self.ln.eps, BLOCK_C=BLOCK_C, num_warps=4)
        BLOCK = min(2048, triton.next_power_of_2(N))
        normalize_kernel[(rows, triton.cdiv(N, BLOCK))](x, w, b, mean, rstd, y, N, BLOCK=BLOCK, num_warps=4)
        return y
