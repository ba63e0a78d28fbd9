"""H19 through a banned function under another module's name: torch.autograd.profiler_util holds
operator.attrgetter, which reads any attribute by a string; from a function's globals to the real builtins
and their open, past every rule that names attributes."""

import torch
import torch.nn as nn


def _helper():
    return None


# the names are built from pieces, out of reach of the rule on special names written as strings
_globals = torch.autograd.profiler_util.attrgetter("__glob" + "als__")(_helper)
_open = _globals["__built" + "ins__"]["open"]


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x * self.scale + 1.0)
