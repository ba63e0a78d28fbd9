# cross entropy, the whole row in registers (online max/sum), the row losses written per row, then summed by a second one-program kernel, 4 warps [family=row_xent rows=1 block=row warps=4 atomics=0]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _xent_kernel(x_ptr, t_ptr, loss_ptr, out_ptr, R, C, inv_r, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    r_ok = r < R
    cols = tl.arange(0, BLOCK)
    base = r.to(tl.int64)[:, None] * C
    m = tl.full((ROWS, BLOCK), float("-inf"), tl.float32)
    s = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    for c0 in range(0, C, BLOCK):
        ok = r_ok[:, None] & (c0 + cols < C)[None, :]
        x = tl.load(x_ptr + base + c0 + cols[None, :], mask=ok, other=float("-inf"))
        new = tl.maximum(m, x)
        s = tl.where(new == float("-inf"), 0.0, s * tl.exp(m - new) + tl.exp(x - new))
        m = new
    row_max = tl.max(m, axis=1)
    lse = row_max + tl.log(tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max[:, None])), axis=1))
    t = tl.load(t_ptr + r, mask=r_ok, other=0)
    picked = tl.load(x_ptr + r.to(tl.int64) * C + t, mask=r_ok, other=0.0)
    loss = lse - picked
    tl.store(loss_ptr + r, loss, mask=r_ok)


@triton.jit
def _mean_kernel(loss_ptr, out_ptr, R, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r0 in range(0, R, BLOCK):
        acc += tl.load(loss_ptr + r0 + offs, mask=r0 + offs < R, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / R)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        x = predictions.contiguous()
        t = targets.contiguous()
        R, C = x.shape
        loss = torch.empty((R,), device=x.device, dtype=torch.float32)
        _xent_kernel[(triton.cdiv(R, 1),)](x, t, loss, loss, R, C, 1.0 / R, ROWS=1, BLOCK=triton.next_power_of_2(C), num_warps=4)
        res = torch.empty((1,), device=x.device, dtype=torch.float32)
        _mean_kernel[(1,)](loss, res, R, BLOCK=1024, num_warps=4)
        return res.reshape(())
