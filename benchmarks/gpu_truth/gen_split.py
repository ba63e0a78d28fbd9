"""The split pass of the GEMM template (`gen_gemm.py`): a Triton kernel that splits an fp32 matrix into its high
and low half-precision parts before the GEMM, formatted with the half type."""

SPLIT_KERNEL = """
@triton.jit
def _split_kernel(src_ptr, hi_ptr, lo_ptr, R, C, CP, stride_src, scale, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # hi = v*scale rounded to the nearest {half}; lo = (v*scale - hi) rounded to the nearest {half}; columns C..CP
    # of the (R, CP) outputs are zeros (the padding keeps their rows 16-byte aligned for TMA)
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    src = rows.to(tl.int64)[:, None] * stride_src + cols[None, :]
    v = tl.load(src_ptr + src, mask=(rows < R)[:, None] & (cols < C)[None, :], other=0.0) * scale
    hi = v.to({tl_half})
    lo = (v - hi.to(tl.float32)).to({tl_half})
    dst = rows.to(tl.int64)[:, None] * CP + cols[None, :]
    inside = (rows < R)[:, None] & (cols < CP)[None, :]
    tl.store(hi_ptr + dst, hi, mask=inside)
    tl.store(lo_ptr + dst, lo, mask=inside)


def _split(t, scale):
    # the two half-precision parts of an fp32 matrix, columns padded to a multiple of 8
    R, C = t.shape
    CP = (C + 7) // 8 * 8
    hi = torch.empty((R, CP), device=t.device, dtype={torch_half})
    lo = torch.empty((R, CP), device=t.device, dtype={torch_half})
    grid = (triton.cdiv(R, 32), triton.cdiv(CP, 128))
    _split_kernel[grid](t, hi, lo, R, C, CP, t.stride(0), scale, BLOCK_R=32, BLOCK_C=128, num_warps=4)
    return hi, lo
"""
