# cuBLAS GEMM (fp32) + one fused Triton epilogue kernel (row reduction, one program per row)
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def _rowsum_epilogue_kernel(y_ptr, out_ptr, N, stride_ym, stride_yn, scale, BLOCK_N: tl.constexpr):
    # sum over columns of (x @ W^T) / 2, times scaling_factor; output (M, 1): one program per row of the GEMM output
    row = tl.program_id(0)
    base = y_ptr + row.to(tl.int64) * stride_ym
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_ok = cols < N
        y = tl.load(base + cols * stride_yn, mask=col_ok, other=0.0)
        y = y * 0.5
        acc += tl.where(col_ok, y, 0.0)
    total = tl.sum(acc, axis=0)
    total = total * scale
    tl.store(out_ptr + row, total)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = float(scaling_factor)

    def forward(self, x):
        y = torch.mm(x, self.weight.t())
        M, N = y.shape
        out = torch.empty((M, 1), device=x.device, dtype=torch.float32)
        _rowsum_epilogue_kernel[(M,)](y, out, N, y.stride(0), y.stride(1), self.scaling_factor, BLOCK_N=1024, num_warps=4)
        return out
