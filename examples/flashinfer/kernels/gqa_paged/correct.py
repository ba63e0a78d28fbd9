"""Paged GQA decode attention in Triton for gqa_paged_decode_h32_kv8_d128_ps16.

One program per (request, KV head). The program loads the 4 query heads that share its KV head,
walks the request's pages in order (kv_indices[kv_indptr[b]:kv_indptr[b+1]]) and keeps an online
softmax in float32: running max, running sum of exponentials and the weighted sum of values. Only
the first kv_last_page_len[b] tokens of the last page are attended to. It writes the bfloat16
output and the natural-log log-sum-exp (max + log(sum)) of the scaled scores.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _gqa_paged_decode_kernel(
    q_ptr, k_ptr, v_ptr, indptr_ptr, indices_ptr, last_len_ptr, out_ptr, lse_ptr,
    sm_scale,
    stride_qb, stride_qh,
    stride_kp, stride_kt, stride_kh,
    stride_vp, stride_vt, stride_vh,
    stride_ob, stride_oh,
    stride_lb,
    GROUP: tl.constexpr, PAGE_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
):
    b = tl.program_id(0)
    kv_head = tl.program_id(1)
    g = tl.arange(0, GROUP)
    t = tl.arange(0, PAGE_SIZE)
    d = tl.arange(0, HEAD_DIM)
    heads = kv_head * GROUP + g  # query heads h with h // GROUP == kv_head

    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh + d[None, :]).to(tl.float32)
    q = q * sm_scale  # [GROUP, HEAD_DIM]

    first = tl.load(indptr_ptr + b)
    last = tl.load(indptr_ptr + b + 1)
    last_len = tl.load(last_len_ptr + b)

    m = tl.full([GROUP], float("-inf"), dtype=tl.float32)
    l = tl.zeros([GROUP], dtype=tl.float32)
    acc = tl.zeros([GROUP, HEAD_DIM], dtype=tl.float32)
    for i in range(first, last):
        page = tl.load(indices_ptr + i).to(tl.int64)
        n_valid = tl.where(i == last - 1, last_len, PAGE_SIZE)
        valid = t < n_valid
        k = tl.load(
            k_ptr + page * stride_kp + t[:, None] * stride_kt + kv_head * stride_kh + d[None, :],
            mask=valid[:, None], other=0.0,
        ).to(tl.float32)  # [PAGE_SIZE, HEAD_DIM]
        v = tl.load(
            v_ptr + page * stride_vp + t[:, None] * stride_vt + kv_head * stride_vh + d[None, :],
            mask=valid[:, None], other=0.0,
        ).to(tl.float32)
        s = tl.sum(q[:, None, :] * k[None, :, :], axis=2)  # [GROUP, PAGE_SIZE]
        s = tl.where(valid[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        l = l * alpha + tl.sum(p, axis=1)
        m = m_new

    # A request without pages gives output 0 and lse -inf.
    l_safe = tl.where(l > 0, l, 1.0)
    out = acc / l_safe[:, None]
    tl.store(out_ptr + b * stride_ob + heads[:, None] * stride_oh + d[None, :], out.to(tl.bfloat16))
    tl.store(lse_ptr + b * stride_lb + heads, m + tl.log(l))


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
        q = q.contiguous()
        k_cache = k_cache.contiguous()
        v_cache = v_cache.contiguous()
        kv_indptr = kv_indptr.contiguous()
        kv_indices = kv_indices.contiguous()
        kv_last_page_len = kv_last_page_len.contiguous()
        batch_size, num_qo_heads, head_dim = q.shape
        page_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
        group = num_qo_heads // num_kv_heads

        output = torch.empty((batch_size, num_qo_heads, head_dim), dtype=torch.bfloat16, device=q.device)
        lse = torch.empty((batch_size, num_qo_heads), dtype=torch.float32, device=q.device)
        if batch_size == 0:
            return output, lse
        _gqa_paged_decode_kernel[(batch_size, num_kv_heads)](
            q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, output, lse,
            float(sm_scale),
            q.stride(0), q.stride(1),
            k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
            v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
            output.stride(0), output.stride(1),
            lse.stride(0),
            GROUP=group, PAGE_SIZE=page_size, HEAD_DIM=head_dim,
            num_warps=4,
        )
        return output, lse
