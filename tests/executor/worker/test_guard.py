"""The guard tells PyTorch's own lazy wrapping of torch.manual_seed from a candidate's replacement of it.

Each case runs in a fresh interpreter: importing torch._dynamo changes torch for the rest of a process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

PRELUDE = """
import torch
from adaexplore.executor.worker.confine._guard import Guard

guard = Guard()
original = torch.manual_seed
"""


def flags_after(body: str) -> str:
    # the collector off while the prelude imports torch, then on past what it made, as in a worker
    script = f"import gc\ngc.disable()\n{PRELUDE}gc.freeze()\ngc.enable()\n{textwrap.dedent(body)}"
    script += "\nprint([f.code for f in guard.check('the step')])\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_torch_dynamo_wrapping_manual_seed_on_import_is_not_a_patch() -> None:
    # what PyTorch's reference ops do at their first call on meta tensors (the full-size compile pass)
    assert flags_after("import torch._dynamo\nassert torch.manual_seed is not original") == "[]"


@pytest.mark.parametrize(
    "body",
    [
        "torch.manual_seed = lambda seed: None",
        # the same wrapper around other code, claiming the original as what it wraps
        "fake = torch._disable_dynamo(lambda seed: None)\nfake.__wrapped__ = original\ntorch.manual_seed = fake",
    ],
    ids=["plain", "in_pytorchs_wrapper"],
)
def test_a_replaced_manual_seed_is_caught_even_in_pytorchs_wrapper(body: str) -> None:
    assert flags_after(body) == "['monkey_patch']"
