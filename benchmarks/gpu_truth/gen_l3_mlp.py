"""Level 3 problem 3 (DeepNarrowMLP: 8192 -> 16 x [1024, ReLU] -> 8192, batch 1024) for the corpus generator:
seventeen chained GEMMs whose 1024-wide layers give a 128x128 tiling only 64 tiles for 132 SMs. Designs: cuBLAS
with a Triton bias+ReLU per layer, one fused Triton GEMM per layer (tf32x3, two tilings, autotuned), and bf16x3
whose every epilogue writes the next layer's bf16 high and low parts directly (the activations never exist in
fp32 between layers)."""

from __future__ import annotations

_HEAD = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

_INIT = """
class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_layer_sizes, output_size):
        super().__init__()
        layers = []
        current = input_size
        for hidden in hidden_layer_sizes:
            layers.append(nn.Linear(current, hidden))
            layers.append(nn.ReLU())
            current = hidden
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)
        self.linears = [m for m in self.network if isinstance(m, nn.Linear)]
"""

_TF32X3_GEMM = """
@triton.jit
def _linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, RELU: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # out = relu?(x @ W^T + b), tf32x3 dots, grouped order; loads wrapped at the edges, the store masked
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = x_ptr + (offs_m % M)[:, None] * K + offs_k[None, :]
    b_ptrs = w_ptr + (offs_n % N)[None, :] * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    y = acc + tl.load(b_ptr + offs_n % N)[None, :]
    if RELU:
        y = tl.maximum(y, 0.0)
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    tl.store(out_ptr + offs_m[:, None] * N + offs_n[None, :], y, mask=mask)
"""


def tf32x3(bm: int, bn: int, bk: int, warps: int, stages: int) -> str:
    head = (
        f"# 17 fused Triton GEMMs (one per layer: tf32x3 dot, bias and ReLU in the epilogue), {bm}x{bn}x{bk} w{warps} "
        f"s{stages}, grouped order [family=mlp_chain prec=tf32x3 bm={bm} bn={bn} bk={bk} warps={warps} stages={stages}]"
    )
    forward = f"""
    def forward(self, x):
        h = x.contiguous()
        last = len(self.linears) - 1
        for i, layer in enumerate(self.linears):
            M, K = h.shape
            N = layer.weight.shape[0]
            out = torch.empty((M, N), device=h.device, dtype=torch.float32)
            grid = (triton.cdiv(M, {bm}) * triton.cdiv(N, {bn}),)
            _linear_kernel[grid](h, layer.weight, layer.bias, out, M, N, K, RELU=i < last,
                                 BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}, GROUP_M=8, num_warps={warps}, num_stages={stages})
            h = out
        return h
"""
    return head + "\n" + _HEAD + "\n" + _TF32X3_GEMM + "\n" + _INIT + forward


def autotuned() -> str:
    head = (
        "# 17 fused Triton GEMMs (one per layer: tf32x3 dot, bias and ReLU in the epilogue), autotuned over 128x128x32 "
        "w8 s3, 64x128x32 w4 s4, 64x64x32 w4 s4, 128x64x32 w4 s4 [family=mlp_chain prec=tf32x3 autotune=4]"
    )
    kernel = _TF32X3_GEMM.replace(
        "@triton.jit",
        """@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=4),
    ],
    key=["M", "N", "K"],
)
@triton.jit""",
        1,
    )
    forward = """
    def forward(self, x):
        h = x.contiguous()
        last = len(self.linears) - 1
        for i, layer in enumerate(self.linears):
            M, K = h.shape
            N = layer.weight.shape[0]
            out = torch.empty((M, N), device=h.device, dtype=torch.float32)
            grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)
            _linear_kernel[grid](h, layer.weight, layer.bias, out, M, N, K, RELU=i < last, GROUP_M=8)
            h = out
        return h
"""
    return head + "\n" + _HEAD + "\n" + kernel + "\n" + _INIT + forward


LIB = (
    "# cuBLAS per layer (fp32, torch.mm) + one Triton bias+ReLU kernel per layer (BLOCK 1024, 4 warps) "
    "[family=mlp_lib block=1024 warps=4]\n"
    + _HEAD
    + """

@triton.jit
def _bias_act_kernel(y_ptr, b_ptr, n_elements, N, RELU: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n_elements
    y = tl.load(y_ptr + offs, mask=ok, other=0.0) + tl.load(b_ptr + offs % N, mask=ok, other=0.0)
    if RELU:
        y = tl.maximum(y, 0.0)
    tl.store(y_ptr + offs, y, mask=ok)

"""
    + _INIT
    + """
    def forward(self, x):
        h = x.contiguous()
        last = len(self.linears) - 1
        for i, layer in enumerate(self.linears):
            y = torch.mm(h, layer.weight.t())
            n = y.numel()
            _bias_act_kernel[(triton.cdiv(n, 1024),)](y, layer.bias, n, y.shape[1], RELU=i < last, BLOCK=1024, num_warps=4)
            h = y
        return h
"""
)


BF16X3_CHAIN = (
    "# bf16x3 chain: one Triton GEMM per layer on bf16 high/low parts (3 bf16 dots per K step, fp32 accumulation), "
    "each epilogue (bias, ReLU) writing the next layer's high and low parts directly; the weights and the input are "
    "split by a Triton pass at every forward; 128x128x64 w8 s3 [family=mlp_chain prec=bf16x3 split=epilogue bm=128 "
    "bn=128 bk=64 warps=8 stages=3]\n"
    + _HEAD
    + """

@triton.jit
def _split_kernel(src_ptr, hi_ptr, lo_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n_elements
    v = tl.load(src_ptr + offs, mask=ok, other=0.0)
    hi = v.to(tl.bfloat16)
    tl.store(hi_ptr + offs, hi, mask=ok)
    tl.store(lo_ptr + offs, (v - hi.to(tl.float32)).to(tl.bfloat16), mask=ok)


def _split(t):
    hi = torch.empty(t.shape, device=t.device, dtype=torch.bfloat16)
    lo = torch.empty(t.shape, device=t.device, dtype=torch.bfloat16)
    n = t.numel()
    _split_kernel[(triton.cdiv(n, 4096),)](t, hi, lo, n, BLOCK=4096, num_warps=8)
    return hi, lo


@triton.jit
def _linear_bf16x3_kernel(xh_ptr, xl_ptr, wh_ptr, wl_ptr, b_ptr, out_ptr, oh_ptr, ol_ptr, M, N, K,
                          LAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_off = (offs_m % M)[:, None] * K + offs_k[None, :]
    b_off = (offs_n % N)[None, :] * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a_hi = tl.load(xh_ptr + a_off, mask=k_ok[None, :], other=0.0)
        a_lo = tl.load(xl_ptr + a_off, mask=k_ok[None, :], other=0.0)
        b_hi = tl.load(wh_ptr + b_off, mask=k_ok[:, None], other=0.0)
        b_lo = tl.load(wl_ptr + b_off, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a_lo, b_hi, acc)
        acc = tl.dot(a_hi, b_lo, acc)
        acc = tl.dot(a_hi, b_hi, acc)
        a_off += BLOCK_K
        b_off += BLOCK_K
    y = acc + tl.load(b_ptr + offs_n % N)[None, :]
    mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    off = offs_m[:, None] * N + offs_n[None, :]
    if LAST:
        tl.store(out_ptr + off, y, mask=mask)
    else:
        # the next layer's operand, split here: its high and low bf16 parts
        y = tl.maximum(y, 0.0)
        hi = y.to(tl.bfloat16)
        tl.store(oh_ptr + off, hi, mask=mask)
        tl.store(ol_ptr + off, (y - hi.to(tl.float32)).to(tl.bfloat16), mask=mask)

"""
    + _INIT
    + """
    def forward(self, x):
        h_hi, h_lo = _split(x.contiguous())
        last = len(self.linears) - 1
        for i, layer in enumerate(self.linears):
            w_hi, w_lo = _split(layer.weight)
            M, K = h_hi.shape
            N = layer.weight.shape[0]
            grid = (triton.cdiv(M, 128) * triton.cdiv(N, 128),)
            if i == last:
                out = torch.empty((M, N), device=x.device, dtype=torch.float32)
                _linear_bf16x3_kernel[grid](h_hi, h_lo, w_hi, w_lo, layer.bias, out, out, out, M, N, K, LAST=True,
                                            BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
                return out
            n_hi = torch.empty((M, N), device=x.device, dtype=torch.bfloat16)
            n_lo = torch.empty_like(n_hi)
            _linear_bf16x3_kernel[grid](h_hi, h_lo, w_hi, w_lo, layer.bias, n_hi, n_hi, n_lo, M, N, K, LAST=False,
                                        BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
            h_hi, h_lo = n_hi, n_lo
        return h_hi
"""
)


def kernels() -> list[tuple[str, str]]:
    return [
        ("level3/3/lib_bias_relu.py", LIB),
        ("level3/3/tf32x3_128x128x32_w8_s3.py", tf32x3(128, 128, 32, 8, 3)),
        ("level3/3/tf32x3_64x64x32_w4_s4.py", tf32x3(64, 64, 32, 4, 4)),
        ("level3/3/tf32x3_autotuned4.py", autotuned()),
        ("level3/3/bf16x3_split_in_epilogue.py", BF16X3_CHAIN),
    ]
