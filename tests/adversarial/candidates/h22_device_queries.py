"""H22 (honest): a candidate that asks torch.cuda about the device in each way honest code does, and fails (with
what it was told) unless each answer is EXPECTED's, which the test fills in: the target GPU's facts during CPU
checks, the GPU's own on a GPU."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECTED = None  # filled in by the test


@triton.jit
def scale_relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask) * scale + 1.0, 0.0), mask=mask)


def told(x):
    props = [torch.cuda.get_device_properties(d) for d in (None, 0, "cuda", "cuda:0", torch.device("cuda"), x.device)]
    first = props[0]
    return {
        "same": all(p.multi_processor_count == first.multi_processor_count and p.name == first.name for p in props),
        "name": first.name,
        "capability": list(torch.cuda.get_device_capability()),
        "capability_of_x": list(torch.cuda.get_device_capability(x.device)),
        "major_minor": [first.major, first.minor],
        "device_name": torch.cuda.get_device_name(0),
        "sms": first.multi_processor_count,
        "shared_per_block": first.shared_memory_per_block,
        "shared_per_block_optin": first.shared_memory_per_block_optin,
        "shared_per_sm": first.shared_memory_per_multiprocessor,
        "l2": first.L2_cache_size,
        "total_memory": first.total_memory,
        "regs_per_sm": first.regs_per_multiprocessor,
        "threads_per_sm": first.max_threads_per_multi_processor,
        "warp_size": first.warp_size,
        "count_at_least_one": torch.cuda.device_count() >= 1,
        "current_is_counted": 0 <= torch.cuda.current_device() < torch.cuda.device_count(),
    }


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        answers = told(x)
        wrong = {k: v for k, v in answers.items() if EXPECTED.get(k, v) != v}
        if wrong:
            raise RuntimeError(f"torch.cuda answered {wrong}, expected {EXPECTED}")
        y = torch.empty_like(x)
        scale_relu[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), self.scale, BLOCK=256)
        return y
