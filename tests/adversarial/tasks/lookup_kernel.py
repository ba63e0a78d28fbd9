import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gather_relu(table_ptr, ids_ptr, out_ptr, width, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    index = tl.load(ids_ptr + row)
    cols = tl.arange(0, BLOCK)
    mask = cols < width
    values = tl.load(table_ptr + index * width + cols, mask=mask)
    tl.store(out_ptr + row * width + cols, tl.maximum(values, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, rows, width):
        super().__init__()
        self.table = nn.Parameter(torch.randn(rows, width))

    def forward(self, ids):
        width = self.table.shape[1]
        out = torch.empty(ids.shape[0], width, device=ids.device, dtype=self.table.dtype)
        gather_relu[(ids.shape[0],)](self.table, ids, out, width, BLOCK=triton.next_power_of_2(width))
        return out
