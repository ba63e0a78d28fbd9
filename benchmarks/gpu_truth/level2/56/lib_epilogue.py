# cuBLAS GEMM (fp32) + one fused Triton epilogue kernel (row reduction, one program per row)
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def _sigmoid(v):
    return 1.0 / (1.0 + tl.exp(-v))

@triton.jit
def _rowsum_epilogue_kernel(y_ptr, out_ptr, N, stride_ym, stride_yn, BLOCK_N: tl.constexpr):
    # sum over columns of sigmoid(x @ W^T + b); output (M, 1): one program per row of the GEMM output
    row = tl.program_id(0)
    base = y_ptr + row.to(tl.int64) * stride_ym
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_ok = cols < N
        y = tl.load(base + cols * stride_yn, mask=col_ok, other=0.0)
        y = _sigmoid(y)
        acc += tl.where(col_ok, y, 0.0)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + row, total)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)
        M, N = y.shape
        out = torch.empty((M, 1), device=x.device, dtype=torch.float32)
        _rowsum_epilogue_kernel[(M,)](y, out, N, y.stride(0), y.stride(1), BLOCK_N=1024, num_warps=4)
        return out
