"""A cache on the module itself, read with getattr(self, "_name", None), of weights laid out for the kernel."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_kernel(
    x_ptr, wt_ptr, b_ptr, out_ptr, M, N, K, RELU: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + rk
        a = tl.load(x_ptr + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(wt_ptr + k[:, None] * N + rn[None, :], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def linear(x: torch.Tensor, weight_t: torch.Tensor, bias: torch.Tensor, relu: bool) -> torch.Tensor:
    M, K = x.shape
    N = weight_t.shape[1]
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    _linear_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
        x, weight_t, bias, out, M, N, K, RELU=relu, BM=32, BN=32, BK=16
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features: int, hidden_features: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, hidden_features)
        self.fc3 = nn.Linear(hidden_features, out_features)

    def _weights(self, device: torch.device) -> list[torch.Tensor]:
        cached = getattr(self, "_cached_weight", None)
        if cached is None or cached[0].device != device:
            cached = [layer.weight.detach().t().contiguous() for layer in (self.fc1, self.fc2, self.fc3)]
            self._cached_weight = cached
        return cached

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w1, w2, w3 = self._weights(x.device)
        x = linear(x.contiguous(), w1, self.fc1.bias, True)
        x = linear(x, w2, self.fc2.bias, True)
        return linear(x, w3, self.fc3.bias, False)
