"""H19 through a module handed in as `self`: a function reads private attributes of its `self` freely, so
calling it with a module (written as an attribute chain, out of sight of the rule against modules as
values) reads that module's private names: here torch's raw ATen bindings (torch._VF), past the rule on
private attributes of torch."""

import torch
import torch.nn as nn


def private_of(self):
    return self._VF


_raw = private_of(torch.functional)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x * self.scale + 1.0)
