# causal self-attention: cuBLAS c_attn and c_proj (F.linear), between them one flash-attention Triton kernel per (64 queries, batch, head): online softmax, tf32x3 dots, keys 64 at a time over the whole row (causal part masked, not skipped), head dim 96 padded to 128, w4 s2 [family=attention kind=softmax prec=tf32x3 bm=64 bn=64 warps=4 stages=2 causal_skip=0]
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _attention_kernel(qkv_ptr, out_ptr, T, C, H, HS, scale,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    # one block of queries of one (batch, head); q, k, v are columns h*HS, C + h*HS, 2C + h*HS of the (B, T, 3C) projection
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    row = 3 * C
    base = qkv_ptr + b.to(tl.int64) * T * row + h * HS
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < HS
    q = tl.load(base + offs_m[:, None] * row + offs_d[None, :], mask=(offs_m < T)[:, None] & d_ok[None, :], other=0.0)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    end = T  # every key block, the causal ones masked
    for n0 in range(0, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        kv_ok = (offs_n < T)[:, None] & d_ok[None, :]
        k = tl.load(base + C + offs_n[:, None] * row + offs_d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(base + 2 * C + offs_n[:, None] * row + offs_d[None, :], mask=kv_ok, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="tf32x3") * scale
        keep = (offs_n[None, :] <= offs_m[:, None]) & (offs_n < T)[None, :]
        s = tl.where(keep, s, float("-inf"))
        # online softmax: rescale what was accumulated when the row max grows
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p, v, acc, input_precision="tf32x3")
        m_i = m_new
    out_off = b.to(tl.int64) * T * C + offs_m[:, None] * C + h * HS + offs_d[None, :]
    tl.store(out_ptr + out_off, acc / l_i[:, None], mask=(offs_m < T)[:, None] & d_ok[None, :])


class ModelNew(nn.Module):
    def __init__(self, n_embd, n_head, attn_pdrop, resid_pdrop, max_seqlen):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(attn_pdrop)
        self.resid_dropout = nn.Dropout(resid_pdrop)
        self.register_buffer("bias", torch.tril(torch.ones(max_seqlen, max_seqlen)).view(1, 1, max_seqlen, max_seqlen))
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        # the problem's dropouts have p = 0: identities
        B, T, C = x.size()
        hs = C // self.n_head
        qkv = F.linear(x, self.c_attn.weight, self.c_attn.bias).contiguous()
        y = torch.empty((B, T, C), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(T, 64), B * self.n_head)
        _attention_kernel[grid](qkv, y, T, C, self.n_head, hs, 1.0 / math.sqrt(hs), BLOCK_M=64, BLOCK_N=64,
                                BLOCK_D=max(16, triton.next_power_of_2(hs)), num_warps=4, num_stages=2)
        return F.linear(y, self.c_proj.weight, self.c_proj.bias)
