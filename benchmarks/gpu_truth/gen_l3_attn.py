"""Level 3 attention for the corpus generator: problem 50 (ReLU self-attention, no softmax: B16 T1024 C768, 12
heads of 64) and problem 43 (minGPT causal attention with softmax and the output projection: B128 T512 C768, 8
heads of 96). The projections are cuBLAS (F.linear); the attention is one Triton kernel per (query block, batch
and head) that reads q, k and v from the projection's output and writes (B, T, C) directly. Variants: query and
key block sizes, warps, stages, dot precision, and whether the key loop stops at the causal diagonal."""

from __future__ import annotations

_HEAD = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport triton\nimport triton.language as tl\n"

_KERNEL = """
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
INIT_STATE
    END_LINE
    for n0 in range(0, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        kv_ok = (offs_n < T)[:, None] & d_ok[None, :]
        k = tl.load(base + C + offs_n[:, None] * row + offs_d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(base + 2 * C + offs_n[:, None] * row + offs_d[None, :], mask=kv_ok, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="PREC") * scale
        keep = (offs_n[None, :] <= offs_m[:, None]) & (offs_n < T)[None, :]
BODY
    out_off = b.to(tl.int64) * T * C + offs_m[:, None] * C + h * HS + offs_d[None, :]
    tl.store(out_ptr + out_off, FINAL, mask=(offs_m < T)[:, None] & d_ok[None, :])
"""

_RELU = dict(
    INIT_STATE="",
    BODY="""        p = tl.where(keep, tl.maximum(s, 0.0), 0.0)
        acc = tl.dot(p, v, acc, input_precision="PREC")""",
    FINAL="acc",
)
_SOFTMAX = dict(
    INIT_STATE="""    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)""",
    BODY="""        s = tl.where(keep, s, float("-inf"))
        # online softmax: rescale what was accumulated when the row max grows
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p, v, acc, input_precision="PREC")
        m_i = m_new""",
    FINAL="acc / l_i[:, None]",
)


def _kernel(kind: dict[str, str], prec: str, skip: bool) -> str:
    end = (
        "end = tl.minimum((pid_m + 1) * BLOCK_M, T)  # keys past the last query of the block are all masked: skipped"
        if skip
        else "end = T  # every key block, the causal ones masked"
    )
    text = (
        _KERNEL.replace("INIT_STATE", kind["INIT_STATE"]).replace("BODY", kind["BODY"]).replace("FINAL", kind["FINAL"])
    )
    text = text.replace("END_LINE", end).replace('"PREC"', f'"{prec}"')
    return text.replace("\n\n    end", "\n    end")


def relu_attention(prec: str, bm: int, bn: int, warps: int, stages: int, skip: bool) -> str:
    head = (
        f"# ReLU self-attention: cuBLAS c_attn (F.linear), then one Triton kernel per ({bm} queries, batch, head): "
        f"relu(q k^T / sqrt(hs)) masked causally, times v, {prec} dots, keys {bn} at a time "
        f"{'up to the diagonal' if skip else 'over the whole row (causal part masked, not skipped)'}, w{warps} s{stages} "
        f"[family=attention kind=relu prec={prec} bm={bm} bn={bn} warps={warps} stages={stages} causal_skip={int(skip)}]"
    )
    model = f"""

class ModelNew(nn.Module):
    def __init__(self, n_embd, n_head, max_seqlen):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(max_seqlen, max_seqlen)).view(1, 1, max_seqlen, max_seqlen))
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        hs = C // self.n_head
        qkv = F.linear(x, self.c_attn.weight, self.c_attn.bias).contiguous()
        out = torch.empty((B, T, C), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(T, {bm}), B * self.n_head)
        _attention_kernel[grid](qkv, out, T, C, self.n_head, hs, 1.0 / math.sqrt(hs), BLOCK_M={bm}, BLOCK_N={bn},
                                BLOCK_D=max(16, triton.next_power_of_2(hs)), num_warps={warps}, num_stages={stages})
        return out
"""
    return head + "\n" + _HEAD + "\n" + _kernel(_RELU, prec, skip) + model


def causal_attention(prec: str, bm: int, bn: int, warps: int, stages: int, skip: bool) -> str:
    head = (
        f"# causal self-attention: cuBLAS c_attn and c_proj (F.linear), between them one flash-attention Triton kernel "
        f"per ({bm} queries, batch, head): online softmax, {prec} dots, keys {bn} at a time "
        f"{'up to the diagonal' if skip else 'over the whole row (causal part masked, not skipped)'}, head dim 96 "
        f"padded to 128, w{warps} s{stages} [family=attention kind=softmax prec={prec} bm={bm} bn={bn} warps={warps} "
        f"stages={stages} causal_skip={int(skip)}]"
    )
    model = f"""

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
        grid = (triton.cdiv(T, {bm}), B * self.n_head)
        _attention_kernel[grid](qkv, y, T, C, self.n_head, hs, 1.0 / math.sqrt(hs), BLOCK_M={bm}, BLOCK_N={bn},
                                BLOCK_D=max(16, triton.next_power_of_2(hs)), num_warps={warps}, num_stages={stages})
        return F.linear(y, self.c_proj.weight, self.c_proj.bias)
"""
    return head + "\n" + _HEAD + "\n" + _kernel(_SOFTMAX, prec, skip) + model


def kernels() -> list[tuple[str, str]]:
    out = []
    for prec, bm, bn, w, s, skip in (
        ("tf32x3", 64, 64, 4, 2, True),
        ("tf32x3", 128, 64, 8, 2, True),
        ("tf32x3", 64, 128, 8, 3, True),
        ("tf32x3", 64, 64, 4, 2, False),
        ("ieee", 64, 32, 4, 2, True),
    ):
        name = f"relu_attn_{prec}_{bm}x{bn}_w{w}_s{s}{'' if skip else '_noskip'}"
        out.append((f"level3/50/{name}.py", relu_attention(prec, bm, bn, w, s, skip)))
    # head dim 96 pads to 128: a 128x64 key block in two stages needs 256 KiB of shared memory, more than an SM has
    for prec, bm, bn, w, s, skip in (
        ("tf32x3", 64, 64, 4, 2, True),
        ("tf32x3", 128, 32, 8, 2, True),
        ("tf32x3", 64, 64, 4, 2, False),
    ):
        name = f"flash_{prec}_{bm}x{bn}_w{w}_s{s}{'' if skip else '_noskip'}"
        out.append((f"level3/43/{name}.py", causal_attention(prec, bm, bn, w, s, skip)))
    return out
