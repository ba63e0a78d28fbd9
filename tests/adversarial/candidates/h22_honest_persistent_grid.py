"""H22 (honest): a persistent kernel whose grid is the GPU's multiprocessor count, read from
`torch.cuda.get_device_properties`, which during CPU checks once raised "Torch not compiled with CUDA"."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# read once, as the module is imported
NUM_SMS = torch.cuda.get_device_properties(0).multi_processor_count


@triton.jit
def persistent_scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    num_tiles = tl.cdiv(n, BLOCK)
    for tile in range(tl.program_id(0), num_tiles, tl.num_programs(0)):
        offsets = tile * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(y_ptr + offsets, tl.maximum(x * scale + 1.0, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        # and again per device, as a model built for one GPU does
        major, _ = torch.cuda.get_device_capability()
        self.block = 256 if major >= 9 else 128

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count
        assert sms == NUM_SMS
        # at most one program per multiprocessor, each looping over the tiles it is dealt
        grid = (min(sms, triton.cdiv(n, self.block)),)
        persistent_scale_relu[grid](x, y, n, self.scale, BLOCK=self.block)
        return y
