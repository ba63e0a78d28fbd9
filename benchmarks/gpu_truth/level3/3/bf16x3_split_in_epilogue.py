# bf16x3 chain: one Triton GEMM per layer on bf16 high/low parts (3 bf16 dots per K step, fp32 accumulation), each epilogue (bias, ReLU) writing the next layer's high and low parts directly; the weights and the input are split by a Triton pass at every forward; 128x128x64 w8 s3 [family=mlp_chain prec=bf16x3 split=epilogue bm=128 bn=128 bk=64 warps=8 stages=3]
import torch
import torch.nn as nn
import triton
import triton.language as tl


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
