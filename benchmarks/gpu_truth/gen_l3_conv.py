"""Level 3 convolutional blocks for the corpus generator: LeNet-5 (problem 4, batch 4096), a ResNet basic block
with batch norm in training mode (problem 8) and a SqueezeNet fire module (problem 17). cuDNN where the design
says so; the rest in Triton: fused ReLU + max-pool, a fully-connected chain in one kernel, per-channel batch
statistics and fused normalize + residual + ReLU, direct convolutions on the CUDA cores."""

from __future__ import annotations

_HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport triton\nimport triton.language as tl\n"

# ---- LeNet-5 ----
_LENET_INIT = """
class ModelNew(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=6, kernel_size=5, stride=1)
        self.conv2 = nn.Conv2d(in_channels=6, out_channels=16, kernel_size=5, stride=1)
        self.fc1 = nn.Linear(in_features=16 * 5 * 5, out_features=120)
        self.fc2 = nn.Linear(in_features=120, out_features=84)
        self.fc3 = nn.Linear(in_features=84, out_features=num_classes)
"""

_RELU_POOL = """
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
"""

_FC_CHAIN = """
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
"""

_DIRECT_CONV_POOL = """
@triton.jit
def _conv_relu_pool_kernel(x_ptr, w_ptr, b_ptr, out_ptr, Cin, H, W, Cout, PH, PW, KS: tl.constexpr, BLOCK: tl.constexpr):
    # direct valid convolution on the CUDA cores, then relu and 2x2 max pool, for BLOCK pooled outputs of one
    # (sample, output channel) plane: four conv outputs per pooled one
    plane = tl.program_id(0)
    n = plane // Cout
    co = plane % Cout
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < PH * PW
    oh = 2 * (offs // PW)
    ow = 2 * (offs % PW)
    a00 = tl.zeros((BLOCK,), dtype=tl.float32)
    a01 = tl.zeros((BLOCK,), dtype=tl.float32)
    a10 = tl.zeros((BLOCK,), dtype=tl.float32)
    a11 = tl.zeros((BLOCK,), dtype=tl.float32)
    for ci in range(0, Cin):
        src = x_ptr + (n * Cin + ci).to(tl.int64) * H * W + oh * W + ow
        for kh in tl.static_range(KS):
            for kw in tl.static_range(KS):
                wv = tl.load(w_ptr + ((co * Cin + ci) * KS + kh) * KS + kw)
                p = src + kh * W + kw
                a00 += wv * tl.load(p, mask=ok, other=0.0)
                a01 += wv * tl.load(p + 1, mask=ok, other=0.0)
                a10 += wv * tl.load(p + W, mask=ok, other=0.0)
                a11 += wv * tl.load(p + W + 1, mask=ok, other=0.0)
    m = tl.maximum(tl.maximum(a00, a01), tl.maximum(a10, a11)) + tl.load(b_ptr + co)
    tl.store(out_ptr + plane.to(tl.int64) * PH * PW + offs, tl.maximum(m, 0.0), mask=ok)


def _conv_relu_pool(x, conv):
    N, Cin, H, W = x.shape
    Cout, _, KS, _ = conv.weight.shape
    PH, PW = (H - KS + 1) // 2, (W - KS + 1) // 2
    out = torch.empty((N, Cout, PH, PW), device=x.device, dtype=torch.float32)
    _conv_relu_pool_kernel[(N * Cout, triton.cdiv(PH * PW, 256))](x, conv.weight, conv.bias, out, Cin, H, W, Cout,
                                                                   PH, PW, KS=KS, BLOCK=256, num_warps=4)
    return out
"""


def lenet(design: str) -> str:
    if design == "cudnn_fcchain":
        head = (
            "# LeNet-5: cuDNN convs, a Triton relu + 2x2 max-pool after each, and the three fully-connected layers in one "
            "Triton kernel (tf32x3 dots, 64 rows per program, hidden layers kept in registers) "
            "[family=lenet convs=cudnn fc=chain bm=64]"
        )
        body = (
            _RELU_POOL
            + _FC_CHAIN
            + _LENET_INIT
            + """
    def forward(self, x):
        h = _relu_pool(F.conv2d(x, self.conv1.weight, self.conv1.bias))
        h = _relu_pool(F.conv2d(h, self.conv2.weight, self.conv2.bias))
        return _fc_chain(h.reshape(h.shape[0], -1), self, 64)
"""
        )
    elif design == "direct_fcchain":
        head = (
            "# LeNet-5 all in Triton: each conv a direct convolution on the CUDA cores with relu and the 2x2 max-pool fused "
            "(four conv outputs per pooled one), then the three fully-connected layers in one kernel (tf32x3 dots, 32 rows "
            "per program) [family=lenet convs=direct fc=chain bm=32]"
        )
        body = (
            _DIRECT_CONV_POOL
            + _FC_CHAIN
            + _LENET_INIT
            + """
    def forward(self, x):
        h = _conv_relu_pool(x.contiguous(), self.conv1)
        h = _conv_relu_pool(h, self.conv2)
        return _fc_chain(h.reshape(h.shape[0], -1), self, 32)
"""
        )
    else:
        raise ValueError(design)
    return head + "\n" + _HEAD + body


# ---- ResNet basic block, batch norm in training mode ----
_BLOCK_INIT = """
class ModelNew(nn.Module):
    expansion = 1

    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = nn.Sequential(
            nn.Conv2d(in_channels, out_channels * self.expansion, kernel_size=1, stride=stride, bias=False),
            nn.BatchNorm2d(out_channels * self.expansion),
        )
        self.stride = stride
"""

_BN_KERNELS = """
@triton.jit
def _stats_kernel(y_ptr, x_ptr, wd_ptr, sum_ptr, sq_ptr, N, C, HW, Cin, S, FROM_X: tl.constexpr, BLOCK: tl.constexpr):
    # per-channel partial sums and sums of squares over (N, H, W): program (c, part) takes every S-th chunk;
    # FROM_X: the channel is the 1x1 downsample conv of x, computed here instead of read
    c = tl.program_id(0)
    part = tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    q = tl.zeros((BLOCK,), dtype=tl.float32)
    chunks = tl.cdiv(HW, BLOCK)
    for i in range(part, N * chunks, S):
        n = i // chunks
        start = (i - n * chunks) * BLOCK
        ok = start + offs < HW
        if FROM_X:
            v = tl.zeros((BLOCK,), dtype=tl.float32)
            for ci in range(0, Cin):
                v += tl.load(wd_ptr + c * Cin + ci) * tl.load(x_ptr + (n * Cin + ci).to(tl.int64) * HW + start + offs, mask=ok, other=0.0)
        else:
            v = tl.load(y_ptr + (n * C + c).to(tl.int64) * HW + start + offs, mask=ok, other=0.0)
        s += v
        q += v * v
    tl.store(sum_ptr + c * S + part, tl.sum(s, axis=0))
    tl.store(sq_ptr + c * S + part, tl.sum(q, axis=0))


@triton.jit
def _affine(sum_ptr, sq_ptr, w_ptr, b_ptr, c, S, inv_count, eps, BLOCK_S: tl.constexpr):
    p = tl.arange(0, BLOCK_S)
    mean = tl.sum(tl.load(sum_ptr + c * S + p, mask=p < S, other=0.0), axis=0) * inv_count
    var = tl.sum(tl.load(sq_ptr + c * S + p, mask=p < S, other=0.0), axis=0) * inv_count - mean * mean
    g = tl.load(w_ptr + c) * tl.rsqrt(var + eps)
    return g, tl.load(b_ptr + c) - mean * g


@triton.jit
def _bn_relu_kernel(y_ptr, out_ptr, sum_ptr, sq_ptr, w_ptr, b_ptr, C, HW, S, inv_count, eps, BLOCK: tl.constexpr, BLOCK_S: tl.constexpr):
    plane = tl.program_id(0)
    g, h = _affine(sum_ptr, sq_ptr, w_ptr, b_ptr, plane % C, S, inv_count, eps, BLOCK_S)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < HW
    base = plane.to(tl.int64) * HW
    tl.store(out_ptr + base + offs, tl.maximum(tl.load(y_ptr + base + offs, mask=ok, other=0.0) * g + h, 0.0), mask=ok)


@triton.jit
def _bn_add_relu_kernel(y_ptr, d_ptr, x_ptr, wd_ptr, out_ptr, s2_ptr, q2_ptr, w2_ptr, b2_ptr, sd_ptr, qd_ptr, wdn_ptr, bdn_ptr,
                        C, HW, Cin, S, inv_count, eps2, epsd, FROM_X: tl.constexpr, BLOCK: tl.constexpr, BLOCK_S: tl.constexpr):
    # relu(bn2(y) + bn_d(d)), d the downsample conv's output (read, or computed from x when FROM_X)
    plane = tl.program_id(0)
    c = plane % C
    n = plane // C
    g2, h2 = _affine(s2_ptr, q2_ptr, w2_ptr, b2_ptr, c, S, inv_count, eps2, BLOCK_S)
    gd, hd = _affine(sd_ptr, qd_ptr, wdn_ptr, bdn_ptr, c, S, inv_count, epsd, BLOCK_S)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < HW
    base = plane.to(tl.int64) * HW
    if FROM_X:
        d = tl.zeros((BLOCK,), dtype=tl.float32)
        for ci in range(0, Cin):
            d += tl.load(wd_ptr + c * Cin + ci) * tl.load(x_ptr + (n * Cin + ci).to(tl.int64) * HW + offs, mask=ok, other=0.0)
    else:
        d = tl.load(d_ptr + base + offs, mask=ok, other=0.0)
    y = tl.load(y_ptr + base + offs, mask=ok, other=0.0)
    tl.store(out_ptr + base + offs, tl.maximum(y * g2 + h2 + d * gd + hd, 0.0), mask=ok)


def _stats(y, x, wd, from_x, S=64):
    N = x.shape[0]
    C = wd.shape[0] if from_x else y.shape[1]
    HW = x.shape[2] * x.shape[3]
    sums = torch.empty((C, S), device=x.device, dtype=torch.float32)
    sqs = torch.empty_like(sums)
    _stats_kernel[(C, S)](y, x, wd, sums, sqs, N, C, HW, x.shape[1], S, FROM_X=from_x, BLOCK=2048, num_warps=8)
    return sums, sqs
"""


def resnet_block(fused_downsample: bool) -> str:
    if fused_downsample:
        head = (
            "# ResNet basic block, batch norm in training mode: cuDNN for the two 3x3 convs; in Triton the per-channel "
            "statistics (64 partials per channel), bn1 + relu, and one final kernel for bn2 + residual + relu whose 1x1 "
            "downsample conv (3 input channels) is computed in place from x, in its statistics pass and again there "
            "[family=resnet_block downsample=fused]"
        )
        forward = """
    def forward(self, x):
        x = x.contiguous()
        N, Cin, H, W = x.shape
        HW = H * W
        wd = self.downsample[0].weight.reshape(self.downsample[0].weight.shape[0], -1).contiguous()
        bnd = self.downsample[1]
        c1 = F.conv2d(x, self.conv1.weight, None, 1, 1)
        C = c1.shape[1]
        s1, q1 = _stats(c1, x, wd, False)
        a1 = torch.empty_like(c1)
        grid = (N * C, triton.cdiv(HW, 1024))
        _bn_relu_kernel[grid](c1, a1, s1, q1, self.bn1.weight, self.bn1.bias, C, HW, 64, 1.0 / (N * HW), float(self.bn1.eps), BLOCK=1024, BLOCK_S=64, num_warps=4)
        c2 = F.conv2d(a1, self.conv2.weight, None, 1, 1)
        s2, q2 = _stats(c2, x, wd, False)
        sd, qd = _stats(c2, x, wd, True)
        out = torch.empty_like(c2)
        _bn_add_relu_kernel[grid](c2, c2, x, wd, out, s2, q2, self.bn2.weight, self.bn2.bias, sd, qd, bnd.weight, bnd.bias,
                                  C, HW, Cin, 64, 1.0 / (N * HW), float(self.bn2.eps), float(bnd.eps), FROM_X=True,
                                  BLOCK=1024, BLOCK_S=64, num_warps=4)
        return out
"""
    else:
        head = (
            "# ResNet basic block, batch norm in training mode: cuDNN for all three convs; in Triton the per-channel "
            "statistics (64 partials per channel), bn1 + relu, and one final kernel for bn2 + the downsample's bn + "
            "residual + relu [family=resnet_block downsample=cudnn]"
        )
        forward = """
    def forward(self, x):
        x = x.contiguous()
        N, Cin, H, W = x.shape
        HW = H * W
        wd = self.downsample[0].weight.reshape(self.downsample[0].weight.shape[0], -1).contiguous()
        bnd = self.downsample[1]
        c1 = F.conv2d(x, self.conv1.weight, None, 1, 1)
        C = c1.shape[1]
        s1, q1 = _stats(c1, x, wd, False)
        a1 = torch.empty_like(c1)
        grid = (N * C, triton.cdiv(HW, 1024))
        _bn_relu_kernel[grid](c1, a1, s1, q1, self.bn1.weight, self.bn1.bias, C, HW, 64, 1.0 / (N * HW), float(self.bn1.eps), BLOCK=1024, BLOCK_S=64, num_warps=4)
        c2 = F.conv2d(a1, self.conv2.weight, None, 1, 1)
        d = F.conv2d(x, self.downsample[0].weight)
        s2, q2 = _stats(c2, x, wd, False)
        sd, qd = _stats(d, x, wd, False)
        out = torch.empty_like(c2)
        _bn_add_relu_kernel[grid](c2, d, x, wd, out, s2, q2, self.bn2.weight, self.bn2.bias, sd, qd, bnd.weight, bnd.bias,
                                  C, HW, Cin, 64, 1.0 / (N * HW), float(self.bn2.eps), float(bnd.eps), FROM_X=False,
                                  BLOCK=1024, BLOCK_S=64, num_warps=4)
        return out
"""
    return head + "\n" + _HEAD + _BN_KERNELS + _BLOCK_INIT + forward


# ---- SqueezeNet fire module ----
_FIRE_INIT = """
class ModelNew(nn.Module):
    def __init__(self, in_channels, squeeze_channels, expand1x1_channels, expand3x3_channels):
        super().__init__()
        self.squeeze = nn.Conv2d(in_channels, squeeze_channels, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_channels, expand1x1_channels, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_channels, expand3x3_channels, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)
"""

FIRE_CUDNN = (
    "# SqueezeNet fire module: cuDNN for the three convs; Triton for the squeeze's relu (in place) and one kernel that "
    "writes both expands' relu into their halves of the concatenated output (no torch.cat) [family=fire convs=cudnn]\n"
    + _HEAD
    + """

@triton.jit
def _relu_kernel(y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n_elements
    tl.store(y_ptr + offs, tl.maximum(tl.load(y_ptr + offs, mask=ok, other=0.0), 0.0), mask=ok)


@triton.jit
def _relu_cat_kernel(e1_ptr, e3_ptr, out_ptr, C1, C3, P, BLOCK: tl.constexpr):
    # output plane (n, c): c < C1 from expand1x1's plane (n, c), else expand3x3's plane (n, c - C1)
    plane = tl.program_id(0)
    n = plane // (C1 + C3)
    c = plane % (C1 + C3)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < P
    if c < C1:
        v = tl.load(e1_ptr + (n * C1 + c).to(tl.int64) * P + offs, mask=ok, other=0.0)
    else:
        v = tl.load(e3_ptr + (n * C3 + c - C1).to(tl.int64) * P + offs, mask=ok, other=0.0)
    tl.store(out_ptr + plane.to(tl.int64) * P + offs, tl.maximum(v, 0.0), mask=ok)

"""
    + _FIRE_INIT
    + """
    def forward(self, x):
        s = F.conv2d(x, self.squeeze.weight, self.squeeze.bias).contiguous()
        n = s.numel()
        _relu_kernel[(triton.cdiv(n, 4096),)](s, n, BLOCK=4096, num_warps=8)
        e1 = F.conv2d(s, self.expand1x1.weight, self.expand1x1.bias).contiguous()
        e3 = F.conv2d(s, self.expand3x3.weight, self.expand3x3.bias, padding=1).contiguous()
        N, C1, H, W = e1.shape
        C3 = e3.shape[1]
        out = torch.empty((N, C1 + C3, H, W), device=x.device, dtype=torch.float32)
        _relu_cat_kernel[(N * (C1 + C3), triton.cdiv(H * W, 1024))](e1, e3, out, C1, C3, H * W, BLOCK=1024, num_warps=4)
        return out
"""
)


def fire_direct(block: int, warps: int) -> str:
    head = (
        f"# SqueezeNet fire module all in Triton on the CUDA cores: a squeeze kernel (1x1 conv + relu, every squeeze "
        f"channel of a pixel block per program) and one expand kernel that computes both expands for {block} pixels and "
        f"all output channels as rank-1 updates (6 + 54 per pixel), relu, written into the concatenated output, "
        f"{warps} warps [family=fire convs=direct block={block} warps={warps}]"
    )
    body = """

@triton.jit
def _squeeze_kernel(x_ptr, w_ptr, b_ptr, s_ptr, Cin, CS, P, BLOCK: tl.constexpr, BLOCK_C: tl.constexpr):
    n = tl.program_id(1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < P
    cs = tl.arange(0, BLOCK_C)
    cs_ok = cs < CS
    acc = tl.zeros((BLOCK, BLOCK_C), dtype=tl.float32)
    for ci in range(0, Cin):
        xv = tl.load(x_ptr + (n * Cin + ci).to(tl.int64) * P + offs, mask=ok, other=0.0)
        wv = tl.load(w_ptr + cs * Cin + ci, mask=cs_ok, other=0.0)
        acc += xv[:, None] * wv[None, :]
    acc = tl.maximum(acc + tl.load(b_ptr + cs, mask=cs_ok, other=0.0)[None, :], 0.0)
    tl.store(s_ptr + (n * CS + cs).to(tl.int64)[None, :] * P + offs[:, None], acc, mask=ok[:, None] & cs_ok[None, :])


@triton.jit
def _expand_kernel(s_ptr, w1_ptr, b1_ptr, w3_ptr, b3_ptr, out_ptr, CS, C1, C3, H, W,
                   BLOCK: tl.constexpr, BLOCK_C1: tl.constexpr, BLOCK_C3: tl.constexpr):
    n = tl.program_id(1)
    P = H * W
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < P
    oh = offs // W
    ow = offs % W
    c1 = tl.arange(0, BLOCK_C1)
    c3 = tl.arange(0, BLOCK_C3)
    acc1 = tl.zeros((BLOCK, BLOCK_C1), dtype=tl.float32)
    acc3 = tl.zeros((BLOCK, BLOCK_C3), dtype=tl.float32)
    for ci in range(0, CS):
        plane = s_ptr + (n * CS + ci).to(tl.int64) * P
        centre = tl.load(plane + offs, mask=ok, other=0.0)
        acc1 += centre[:, None] * tl.load(w1_ptr + c1 * CS + ci, mask=c1 < C1, other=0.0)[None, :]
        for kh in tl.static_range(3):
            for kw in tl.static_range(3):
                ih = oh + kh - 1
                iw = ow + kw - 1
                inside = ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                v = tl.load(plane + ih * W + iw, mask=inside, other=0.0)
                wv = tl.load(w3_ptr + ((c3 * CS + ci) * 3 + kh) * 3 + kw, mask=c3 < C3, other=0.0)
                acc3 += v[:, None] * wv[None, :]
    acc1 = tl.maximum(acc1 + tl.load(b1_ptr + c1, mask=c1 < C1, other=0.0)[None, :], 0.0)
    acc3 = tl.maximum(acc3 + tl.load(b3_ptr + c3, mask=c3 < C3, other=0.0)[None, :], 0.0)
    base = n.to(tl.int64) * (C1 + C3) * P
    tl.store(out_ptr + base + c1[None, :].to(tl.int64) * P + offs[:, None], acc1, mask=ok[:, None] & (c1 < C1)[None, :])
    tl.store(out_ptr + base + (C1 + c3)[None, :].to(tl.int64) * P + offs[:, None], acc3, mask=ok[:, None] & (c3 < C3)[None, :])

"""
    forward = f"""
    def forward(self, x):
        x = x.contiguous()
        N, Cin, H, W = x.shape
        P = H * W
        CS = self.squeeze.weight.shape[0]
        C1 = self.expand1x1.weight.shape[0]
        C3 = self.expand3x3.weight.shape[0]
        s = torch.empty((N, CS, H, W), device=x.device, dtype=torch.float32)
        _squeeze_kernel[(triton.cdiv(P, 1024), N)](x, self.squeeze.weight, self.squeeze.bias, s, Cin, CS, P, BLOCK=1024,
                                                   BLOCK_C=triton.next_power_of_2(CS), num_warps=4)
        out = torch.empty((N, C1 + C3, H, W), device=x.device, dtype=torch.float32)
        _expand_kernel[(triton.cdiv(P, {block}), N)](s, self.expand1x1.weight, self.expand1x1.bias, self.expand3x3.weight,
                                                     self.expand3x3.bias, out, CS, C1, C3, H, W, BLOCK={block},
                                                     BLOCK_C1=triton.next_power_of_2(C1), BLOCK_C3=triton.next_power_of_2(C3),
                                                     num_warps={warps})
        return out
"""
    return head + "\n" + _HEAD + body + _FIRE_INIT + forward


def kernels() -> list[tuple[str, str]]:
    return [
        ("level3/4/cudnn_fcchain.py", lenet("cudnn_fcchain")),
        ("level3/4/direct_fcchain.py", lenet("direct_fcchain")),
        ("level3/8/cudnn_bn_triton.py", resnet_block(False)),
        ("level3/8/cudnn_bn_triton_fused_downsample.py", resnet_block(True)),
        ("level3/17/cudnn_relu_cat.py", FIRE_CUDNN),
        ("level3/17/direct_128_w4.py", fire_direct(128, 4)),
        ("level3/17/direct_64_w4.py", fire_direct(64, 4)),
    ]
