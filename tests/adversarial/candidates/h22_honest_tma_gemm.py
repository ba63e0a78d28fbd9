"""H22 (honest): a GEMM fed by Hopper's bulk copy engine through Triton's host-side tensor descriptors
(`triton.tools.tensor_descriptor.TensorDescriptor`), which the import allow-list once refused."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def tma_gemm_kernel(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([pid_m * BM, k])
        b = b_desc.load([k, pid_n * BN])
        acc = tl.dot(a, b, acc, input_precision="ieee")
    c_desc.store([pid_m * BM, pid_n * BN], acc)


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n))

    def forward(self, x):
        M, K = x.shape
        N = self.weight.shape[1]
        c = torch.empty(M, N, device=x.device, dtype=torch.float32)
        BM, BN, BK = 64, 64, 32
        a_desc = TensorDescriptor.from_tensor(x.contiguous(), [BM, BK])
        b_desc = TensorDescriptor.from_tensor(self.weight.contiguous(), [BK, BN])
        c_desc = TensorDescriptor.from_tensor(c, [BM, BN])
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        tma_gemm_kernel[grid](a_desc, b_desc, c_desc, K, BM=BM, BN=BN, BK=BK)
        return c
