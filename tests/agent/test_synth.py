"""Task synthesis from the installed torch's operator catalogue, with real worker processes and real torch."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from adaexplore.errors import AdaexploreError, EvaluatorError, RequestError
from adaexplore.executor import task_from_source
from adaexplore.executor.probes._synth import (
    SynthesisReport,
    check_task_sources,
    operator_catalogue,
    run_worker,
    synthesize_tasks,
)

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]

ANCHORS = {"gemm_epilogue": "nn.Linear", "conv2d_activation": "nn.Conv2d", "row_softmax": None}


@pytest.fixture(scope="module")
async def seed_one() -> SynthesisReport:
    return await synthesize_tasks(3, seed=1)


def task_with(forward: str, init: str = "") -> str:
    """A row-family task module whose forward body (and __init__ tail) are given."""
    return textwrap.dedent(
        '''\
        """A hand-written task for the checks."""

        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
        {init}
            def forward(self, x: torch.Tensor) -> torch.Tensor:
        {forward}


        batch_size = 4096
        dim = 2048
        SMALL_SIZES = {{"batch_size": 9, "dim": 300}}


        def get_inputs():
            return [torch.randn(batch_size, dim)]


        def get_init_inputs():
            return []
        '''
    ).format(
        init=textwrap.indent(init, " " * 8) + "\n" if init else "",
        forward=textwrap.indent(forward, " " * 8),
    )


async def test_three_tasks_of_three_to_six_operators_that_load_as_tasks(seed_one: SynthesisReport) -> None:
    assert len(seed_one.tasks) == 3
    assert seed_one.catalogue_size > 50
    assert seed_one.torch_version
    for task in seed_one.tasks:
        assert 3 <= len(task.operators) <= 6, task.operators
        assert re.fullmatch(r"syn_\d{4}_[a-z0-9_]+", task.name)
        assert task.seed_task in ANCHORS
        if ANCHORS[task.seed_task] is not None:
            assert task.operators[0] == ANCHORS[task.seed_task]
        loaded = task_from_source(task.source, task.name)
        assert loaded.small_sizes, "every task has SMALL_SIZES for the CPU checks"
        assert loaded.forward_params == ["x"]
        for operator in task.operators:  # the docstring names the operators, the code uses them
            assert operator in task.source.split('"""')[1]
            assert f"{operator}(" in task.source


async def test_the_same_seed_gives_the_same_sources_and_another_seed_others(seed_one: SynthesisReport) -> None:
    reports: dict[int, SynthesisReport] = {}

    async def run(seed: int) -> None:
        reports[seed] = await synthesize_tasks(3, seed=seed)

    async with anyio.create_task_group() as group:
        group.start_soon(run, 1)
        group.start_soon(run, 2)
    assert [t.source for t in reports[1].tasks] == [t.source for t in seed_one.tasks]
    assert [t.name for t in reports[1].tasks] == [t.name for t in seed_one.tasks]
    assert {t.source for t in reports[2].tasks}.isdisjoint(t.source for t in seed_one.tasks)
    for rejection in [*reports[1].rejected, *reports[2].rejected]:
        assert rejection.operators and rejection.reason


async def test_checks_pass_every_synthesized_task_and_reject_ill_posed_ones(seed_one: SynthesisReport) -> None:
    bad = {
        "not deterministic": task_with("return self.dropout(x)", init="self.dropout = nn.Dropout(p=0.5)\n"),
        "output does not depend on the input": task_with("return x * 0 + 1"),
        "output too small": task_with("return x * 1e-6"),
        "raised RuntimeError": task_with("return x @ x"),
        "modifies its input in place": task_with("return x.mul_(2)"),
        "output mostly near zero": task_with("return torch.relu(x - 1.5)"),
    }
    good = [t.source for t in seed_one.tasks]
    checks = await check_task_sources([*good, *bad.values()])
    for task, check in zip(seed_one.tasks, checks[: len(good)], strict=True):
        assert check.ok, (task.name, check.reason)
        assert check.rms is not None and check.rms >= 0.1
        assert check.relative_change is not None and check.relative_change >= 0.05
        assert check.output_shape and check.gpu_output_shape
        assert len(check.output_shape) == len(check.gpu_output_shape)
    for (reason, _), check in zip(bad.items(), checks[len(good) :], strict=True):
        assert not check.ok
        assert check.reason is not None and check.reason.startswith(reason), (reason, check.reason)


async def test_the_catalogue_holds_common_operators_and_no_lazy_or_random_ones(seed_one: SynthesisReport) -> None:
    catalogue = await operator_catalogue()
    names = catalogue.names()
    assert {"nn.GELU", "F.gelu", "nn.LayerNorm", "nn.Linear", "nn.Conv2d", "F.softmax"} <= names
    assert catalogue.anchors["gemm_epilogue"] == "nn.Linear"
    assert catalogue.anchors["conv2d_activation"] == "nn.Conv2d"
    assert len(names) == seed_one.catalogue_size
    assert not any(name.startswith("nn.Lazy") for name in names)
    assert "lazy" in catalogue.excluded["nn.LazyLinear"]
    for random_op in ("nn.Dropout", "F.dropout", "nn.RReLU", "nn.AlphaDropout"):
        assert random_op not in names
        assert catalogue.excluded[random_op].startswith("not deterministic"), catalogue.excluded[random_op]
    assert "nn.Identity" not in names and "nn.MSELoss" not in names and "nn.LSTM" not in names
    assert "F.relu_" not in names


async def test_a_failing_worker_is_an_error_with_its_stderr_not_a_hang() -> None:
    with pytest.raises(EvaluatorError, match="unknown command 'nonsense'"):
        await run_worker({"command": "nonsense"}, timeout_s=120)
    start = time.monotonic()
    with pytest.raises(AdaexploreError, match=r"did not finish within 0\.3 s"):
        await run_worker({"command": "catalogue"}, timeout_s=0.3)
    assert time.monotonic() - start < 10
    with pytest.raises(RequestError):
        await synthesize_tasks(-1, seed=0)


def test_the_caller_side_imports_no_torch() -> None:
    script = textwrap.dedent("""
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"torch", "triton", "numpy"}:
                    raise ImportError(f"{name} must not be imported in the caller's process")
        sys.meta_path.insert(0, Block())
        import adaexplore.executor.probes._synth
        print("imported")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
