# LeNet-5: cuDNN convs, a Triton relu + 2x2 max-pool after each, and the three fully-connected layers in one Triton kernel (tf32x3 dots, 64 rows per program, hidden layers kept in registers) [family=lenet convs=cudnn fc=chain bm=64]
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

@triton.jit
def _relu_pool_kernel(y_ptr, out_ptr, H, W, OH, OW, BLOCK: tl.constexpr):
    # relu then 2x2 max pool (stride 2) of one (sample, channel) plane
    plane = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < OH * OW
    oh = offs // OW
    ow = offs % OW
    src = y_ptr + plane.to(tl.int64) * H * W + (2 * oh) * W + 2 * ow
    m = tl.maximum(tl.maximum(tl.load(src, mask=ok, other=0.0), tl.load(src + 1, mask=ok, other=0.0)),
                   tl.maximum(tl.load(src + W, mask=ok, other=0.0), tl.load(src + W + 1, mask=ok, other=0.0)))
    tl.store(out_ptr + plane.to(tl.int64) * OH * OW + offs, tl.maximum(m, 0.0), mask=ok)


def _relu_pool(y):
    N, C, H, W = y.shape
    out = torch.empty((N, C, H // 2, W // 2), device=y.device, dtype=torch.float32)
    P = (H // 2) * (W // 2)
    _relu_pool_kernel[(N * C, triton.cdiv(P, 256))](y, out, H, W, H // 2, W // 2, BLOCK=256, num_warps=2)
    return out

@triton.jit
def _fc_chain_kernel(x_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr, out_ptr, M, K1, N1, N2, N3,
                     BM: tl.constexpr, BK: tl.constexpr, P1: tl.constexpr, P2: tl.constexpr, P3: tl.constexpr):
    # three linear layers for BM rows in one program: h1 and h2 stay in registers (widths padded to P1, P2, P3)
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    r_ok = rows < M
    c1 = tl.arange(0, P1)
    c2 = tl.arange(0, P2)
    c3 = tl.arange(0, P3)
    kk = tl.arange(0, BK)
    h1 = tl.zeros((BM, P1), dtype=tl.float32)
    for k0 in range(0, K1, BK):
        k = k0 + kk
        a = tl.load(x_ptr + rows[:, None] * K1 + k[None, :], mask=r_ok[:, None] & (k < K1)[None, :], other=0.0)
        w = tl.load(w1_ptr + c1[None, :] * K1 + k[:, None], mask=(k < K1)[:, None] & (c1 < N1)[None, :], other=0.0)
        h1 = tl.dot(a, w, h1, input_precision="tf32x3")
    h1 = tl.maximum(h1 + tl.load(b1_ptr + c1, mask=c1 < N1, other=0.0)[None, :], 0.0)
    w2 = tl.load(w2_ptr + c2[None, :] * N1 + c1[:, None], mask=(c1 < N1)[:, None] & (c2 < N2)[None, :], other=0.0)
    h2 = tl.dot(h1, w2, input_precision="tf32x3")
    h2 = tl.maximum(h2 + tl.load(b2_ptr + c2, mask=c2 < N2, other=0.0)[None, :], 0.0)
    w3 = tl.load(w3_ptr + c3[None, :] * N2 + c2[:, None], mask=(c2 < N2)[:, None] & (c3 < N3)[None, :], other=0.0)
    y = tl.dot(h2, w3, input_precision="tf32x3") + tl.load(b3_ptr + c3, mask=c3 < N3, other=0.0)[None, :]
    tl.store(out_ptr + rows[:, None] * N3 + c3[None, :], y, mask=r_ok[:, None] & (c3 < N3)[None, :])


def _fc_chain(h, m, bm):
    M, K1 = h.shape
    N3 = m.fc3.weight.shape[0]
    out = torch.empty((M, N3), device=h.device, dtype=torch.float32)
    _fc_chain_kernel[(triton.cdiv(M, bm),)](h, m.fc1.weight, m.fc1.bias, m.fc2.weight, m.fc2.bias, m.fc3.weight, m.fc3.bias,
                                            out, M, K1, 120, 84, N3, BM=bm, BK=32, P1=128, P2=128,
                                            P3=max(16, triton.next_power_of_2(N3)), num_warps=4)
    return out

class ModelNew(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=6, kernel_size=5, stride=1)
        self.conv2 = nn.Conv2d(in_channels=6, out_channels=16, kernel_size=5, stride=1)
        self.fc1 = nn.Linear(in_features=16 * 5 * 5, out_features=120)
        self.fc2 = nn.Linear(in_features=120, out_features=84)
        self.fc3 = nn.Linear(in_features=84, out_features=num_classes)

    def forward(self, x):
        h = _relu_pool(F.conv2d(x, self.conv1.weight, self.conv1.bias))
        h = _relu_pool(F.conv2d(h, self.conv2.weight, self.conv2.bias))
        return _fc_chain(h.reshape(h.shape[0], -1), self, 64)
