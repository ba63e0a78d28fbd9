# batch norm (training statistics): per-channel sums over (N, H, W) from 64 programs per channel into a partials buffer, then one normalize kernel (4096 elements per program, 8 warps) that finishes the statistics itself [family=channel_stats splits=64 atomics=0 apply_block=4096 apply_warps=8]
import torch
import torch.nn as nn
import triton
import triton.language as tl


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
    tl.store(sum_ptr + c * S + part, tl.sum(s, axis=0))
    tl.store(sq_ptr + c * S + part, tl.sum(q, axis=0))


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
        S = 64
        sums = torch.empty((C, S), device=x.device, dtype=torch.float32)
        sqs = torch.empty((C, S), device=x.device, dtype=torch.float32)
        _stats_kernel[(C, 64)](x, sums, sqs, N, C, HW, 64, BLOCK=4096, num_warps=8)
        out = torch.empty_like(x)
        _apply_kernel[(N * C, triton.cdiv(HW, 4096))](
            x, out, sums, sqs, self.bn.weight, self.bn.bias, C, HW, S, 1.0 / (N * HW), float(self.bn.eps),
            BLOCK=4096, BLOCK_S=triton.next_power_of_2(S), num_warps=8,
        )
        return out
