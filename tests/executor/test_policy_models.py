"""What whole PyTorch models write (KernelBench's Level 3) passes the policy, and what the policy refuses for a
reason stays refused beside it: classes handed to the module's own builders, `.modules()`, `collections.abc`,
and numpy or einops where the task itself imports them."""

from __future__ import annotations

import ast

import pytest

from adaexplore.executor.policy import NO_GRANTS, TaskGrants, check_policy, task_grants


def codes(source: str, grants: TaskGrants = NO_GRANTS) -> list[str]:
    return [v.code for v in check_policy(ast.parse(source), source=source, grants=grants)]


BLOCKS = (
    "import torch.nn as nn\n"
    "class Block(nn.Module):\n"
    "    expansion = 4\n"
    "    def __init__(self, c):\n        super().__init__()\n        self.c = c\n"
    "    def forward(self, x):\n        return x\n"
    "class Merge(nn.Module):\n"
    "    def forward(self, x):\n        return x\n"
)


def test_a_class_handed_to_the_modules_own_builders_passes() -> None:
    # ResNet's _make_layer(block, ...), Swin's BasicLayer(downsample=PatchMerging if last else None), a plain name
    source = BLOCKS + (
        "class Layer(nn.Module):\n"
        "    def __init__(self, block, downsample=None):\n"
        "        super().__init__()\n"
        "        self.b = block(block.expansion)\n"
        "        self.d = downsample() if downsample is not None else None\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self, last):\n"
        "        super().__init__()\n"
        "        self.a = self._make(Block, 2)\n"
        "        self.l = Layer(Block, downsample=Merge if last else None)\n"
        "        kind = Block\n"
        "        self.k = kind(3)\n"
        "    def _make(self, block, n):\n"
        "        return nn.Sequential(*[block(i) for i in range(n)])\n"
        "    def forward(self, x):\n"
        "        for m in self.modules():\n"
        "            if isinstance(m, nn.Linear):\n"
        "                pass\n"
        "        return x\n"
    )
    assert codes(source) == []


@pytest.mark.parametrize(
    ("snippet", "code"),
    [
        # a method read through a name that holds the class, whatever brought it there
        ("def make(block):\n    return block.forward(1, 2)\nmake(Block)", "method_detour"),
        # a class handed to anything but the module's own functions: a builtin, a container, a return
        ("kinds = [Block]", "method_detour"),
        ("m = map(Block, [1])", "method_detour"),
        ("def f(*blocks):\n    return blocks\nf(Block)", "method_detour"),
        # `modules` read as anything but a bare call is still the import system's dictionary
        ("import torch\nm = torch.sys.modules", "module_reach"),
        ("import triton.language.extra as e\nb = e.modules['builtins']", "introspection"),
        ("import triton.language.extra as e\nb = e.modules('builtins')", "introspection"),
    ],
)
def test_what_the_policy_refuses_for_a_reason_stays_refused(snippet: str, code: str) -> None:
    assert code in codes(BLOCKS + snippet)


def test_collections_abc_imports_as_plain_models_write_it() -> None:
    assert codes("import collections.abc\nfrom collections.abc import Iterable\nx = collections.abc.Sequence") == []


def test_numpy_and_einops_are_granted_only_where_the_task_imports_them() -> None:
    task = "import numpy as np\nfrom einops import rearrange\nimport torch\nclass Model: pass\n"
    grants = task_grants(task)
    assert grants.modules == {"numpy", "einops"}
    candidate = "import numpy as np\nfrom einops import rearrange\nx = np.log2(8.0) * np.pi\ny = rearrange\n"
    assert codes(candidate, grants) == []
    assert "import" in codes(candidate)  # a task without them grants nothing
    assert "import" in codes(candidate, task_grants("import torch\n"))
    # of a granted module, only what computes on numbers: no files, raw memory or settings, under any path
    for refused in ("np.load('w.npy')", "np.lib.stride_tricks.as_strided(a, (1,), (0,))", "np.ctypeslib", "np.seterr"):
        assert "banned_api" in codes(f"import numpy as np\nv = {refused}\n", grants), refused
    # a name of a module the allowed ones hold is never granted, though the task reads it undefined
    assert "sys" not in task_grants("def f():\n    return sys.modules\n").names
    assert "checkpoint" in task_grants("def f(x):\n    return checkpoint.checkpoint(x)\n").names
