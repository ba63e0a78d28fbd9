"""A degenerate task (its reference's output a constant, float32 rounding noise, or blind to its inputs) is found
from the reference alone, named by the judge, and never made one by widening the tolerance: where PyTorch's own
float32 reference misses strict's tolerance but is closer to the float64 one than any constant, the widened
tolerance lets it pass and never a constant output. The judge runs in this process, on trusted task modules."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from adaexplore.domain import DEGENERATE_ZERO, Mode
from adaexplore.executor.wire._protocol import JobSpec, Load, Prepare, Prepared, Release
from adaexplore.executor.worker.judge._compare import compare
from adaexplore.executor.worker.judge._degenerate import check_cost_s, full_check_fits, outputs_degeneracy
from adaexplore.executor.worker.judge._judge import Judge
from adaexplore.executor.worker.judge._references import Reference
from adaexplore.executor.worker.task._taskrun import make_args


def _degeneracy(native: torch.Tensor, exact: torch.Tensor, other: torch.Tensor | None) -> str | None:
    found = outputs_degeneracy([native], [exact], None if other is None else [other], "full")
    return None if found is None else found.kind


def test_constant_noise_and_blind_outputs_are_found_and_an_honest_imprecise_one_is_not() -> None:
    torch.manual_seed(0)
    x, y = torch.rand(64, 32, dtype=torch.float64), torch.rand(64, 32, dtype=torch.float64)
    signal = torch.tanh(x @ torch.rand(32, 32, dtype=torch.float64))
    assert _degeneracy(signal.float(), signal, torch.tanh(y @ torch.rand(32, 32, dtype=torch.float64))) is None
    zeros = torch.zeros(64, 32, dtype=torch.float64)
    assert _degeneracy(zeros.float(), zeros, zeros) == "constant"
    # one value everywhere, the same for both draws (a bias broadcast over the output)
    bias = torch.full((64, 32), 0.37, dtype=torch.float64)
    found = outputs_degeneracy([bias.float()], [bias + 1e-12 * x], [bias + 1e-12 * y], "small")
    assert found is not None and found.kind == "constant" and found.value == pytest.approx(0.37)
    assert "at its small sizes" in found.line() and "one value" in found.line()
    # a per-draw constant that changes with the inputs (a mean broadcast) is not one value whatever the input
    assert _degeneracy(torch.full((64, 32), 0.5), torch.full((64, 32), 0.5, dtype=torch.float64), bias) is None
    # a GroupNorm over groups of one channel: float64 rounding noise, float32 noise a hundred million times larger
    noise = 1e-14 * (x - 0.5)
    found = outputs_degeneracy([(3e-6 * (y - 0.5)).float()], [noise], [1e-14 * (y - 0.5)], "full")
    assert found is not None and found.kind == "noise" and found.line().endswith(DEGENERATE_ZERO)
    # PyTorch's float32 result misses strict's tolerance by some times, as a long reduction does: still the task
    imprecise = signal + 3e-5 * signal.abs().mean() * (x - 0.5)
    assert _degeneracy(imprecise.float(), signal, torch.tanh(y)) is None
    # two draws, one output
    assert _degeneracy(signal.float(), signal, signal + 1e-13) == "input_blind"
    # an integer output of one value everywhere (an argmax over a dim of size 1)
    index = torch.zeros(64, dtype=torch.int64)
    assert _degeneracy(index, index, index) == "constant"


def _write(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def _prepare(judge: Judge, spec: JobSpec) -> tuple[Prepared, Reference]:
    judge.handle(Load(job=spec))
    prepared = judge.handle(Prepare(job_id=spec.job_id))
    assert isinstance(prepared, Prepared), prepared
    reference = judge.jobs[spec.job_id].ref
    judge.handle(Release(job_id=spec.job_id))
    return prepared, reference


def _native(judge: Judge, ref: Reference, trial: int) -> list[torch.Tensor]:
    """PyTorch's own result in the task's dtype for a trial's inputs, drawn again as the judge drew them."""
    args = make_args(ref.module, "get_inputs", ref.trial_seeds[trial], torch.device("cpu"), ref.cast)
    return judge.builder.forward(ref.native, args)


def _spec(task_path: str, job_id: str, **more: object) -> JobSpec:
    values: dict[str, object] = {
        "job_id": job_id,
        "task_path": task_path,
        "exchange_dir": str(Path(task_path).parent),
        "sizes": "full",
        "mode": Mode.strict,
        "trials": 5,
        "init_seed": 1,
        "trial_seeds": [11, 12, 13, 14, 15],
        "timing_seed": 9,
    }
    return JobSpec.model_validate(values | more)


# PyTorch's float32 result of (x * 2e-7 + 1) - 1 keeps a few bits of x: it misses strict's tolerance against the
# float64 result by about 1.6e4 times, where an output of one value (the mean) misses it by 2.5e4 times
IMPRECISE = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            return (x * 2e-7 + 1.0) - 1.0

    def get_inputs():
        return [torch.rand(64, 64)]

    def get_init_inputs():
        return []
"""


def test_widening_for_an_imprecise_reference_never_lets_a_constant_output_pass(tmp_path: Path) -> None:
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    prepared, ref = _prepare(judge, _spec(_write(tmp_path, "imprecise", IMPRECISE), "a"))
    tol, allowance = ref.tolerances[0], ref.allowance[0]
    assert allowance > 1.0, "PyTorch's own float32 reference misses the tolerance here"
    widened = [f.message for f in prepared.task_flags if f.code == "reference_imprecise"]
    assert widened and "not more: an output of one value misses it" in widened[0]
    for i, exact in enumerate(ref.refs):
        native = _native(judge, ref, i)  # PyTorch's own float32 result still passes the widened tolerance
        assert compare(native[0], exact[0], tol, allowance=allowance).passed
        for value in (0.0, float(exact[0].mean())):  # zeros, or the one value closest to the output, never do
            assert not compare(torch.full_like(exact[0], value), exact[0], tol, allowance=allowance).passed
    # the task's facts are held to the same widened tolerance: zeros do not pass it, and the task is no degenerate one
    assert not any("all-zero" in f.message for f in prepared.task_flags)
    assert prepared.degeneracy is None and prepared.degeneracy_checked == "full"


GROUPS_OF_ONE = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, features, groups):
            super().__init__()
            self.fc = nn.Linear(features, features)
            self.norm = nn.GroupNorm(groups, features)

        def forward(self, x):
            return self.norm(self.fc(x))

    batch_size = 4
    features = 32
    groups = 2

    def get_inputs():
        return [torch.rand(batch_size, features)]

    def get_init_inputs():
        return [features, groups]
"""


def test_the_judge_names_a_degenerate_task_and_tells_degenerate_small_sizes_from_the_full_task(
    tmp_path: Path,
) -> None:
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    task = _write(tmp_path, "groups", GROUPS_OF_ONE)
    # at full size (two groups of 16 channels) the task is itself
    prepared, _ = _prepare(judge, _spec(task, "full"))
    assert prepared.degeneracy is None and prepared.small_degeneracy is None
    assert not any(f.code.startswith("degenerate") for f in prepared.task_flags)
    # small sizes with as many groups as channels: the output is rounding noise, and the full sizes are cheap to
    # check on the CPU, so the task is not named degenerate but its small sizes are
    small = {"batch_size": 2, "features": 4, "groups": 4}
    prepared, ref = _prepare(judge, _spec(task, "small", sizes="small", small_sizes=small))
    assert prepared.degeneracy is None and prepared.degeneracy_checked == "full"
    assert prepared.small_degeneracy is not None and prepared.small_degeneracy.kind == "noise"
    flags = {f.code: f.message for f in prepared.task_flags}
    assert "degenerate_sizes" in flags and "though at its full sizes it does not" in flags["degenerate_sizes"]
    # every group of one channel at full size too: the task itself is degenerate, named in one line
    one = _write(tmp_path, "one", GROUPS_OF_ONE.replace("groups = 2", "groups = 32"))
    prepared, ref = _prepare(judge, _spec(one, "one"))
    assert prepared.degeneracy is not None and prepared.degeneracy.sizes == "full"
    flags = {f.code: f.message for f in prepared.task_flags}
    assert flags["degenerate_task"] == prepared.degeneracy.line()
    assert flags["degenerate_task"].endswith(DEGENERATE_ZERO)
    # a degenerate task keeps its widened tolerance: PyTorch's own float32 result, rounding noise, passes
    native = _native(judge, ref, 0)
    assert compare(native[0], ref.refs[0][0], ref.tolerances[0], allowance=ref.allowance[0]).passed


def test_the_cost_of_a_full_size_check_comes_from_the_reference_s_work(tmp_path: Path) -> None:
    from adaexplore.executor.worker.cost._full_size import reference_work

    cheap, _ = reference_work(_write(tmp_path, "cheap", GROUPS_OF_ONE), None)
    dear, _ = reference_work(
        _write(tmp_path, "dear", GROUPS_OF_ONE.replace("batch_size = 4", "batch_size = 65536").replace("32", "4096")),
        None,
    )
    cheap_s, dear_s = check_cost_s(cheap), check_cost_s(dear)
    assert cheap_s is not None and dear_s is not None
    assert cheap_s < 0.01 < 100 < dear_s  # 4 x 32 x 32 against 65536 x 4096 x 4096 multiply-adds
    assert check_cost_s(None) is None and full_check_fits(None)[0] is False
    assert full_check_fits(cheap) == (True, "")
    fits, why = full_check_fits(dear)
    assert not fits and "CPU s" in why
    # cheap in time but not in memory: a 65536 x 4096 input held in float32 and float64 for two draws
    fits, why = full_check_fits(dear, budget_s=1e9)
    assert not fits and "GiB" in why


def test_an_exactly_zero_float64_output_widens_nothing(tmp_path: Path) -> None:
    """A float64 output of exact zeros where the float32 one is rounding noise (here made so on purpose): PyTorch's
    float32 result misses it without bound, and no tolerance is widened for that, so only zeros pass."""
    exact_zero = """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return torch.zeros_like(x) if x.dtype == torch.float64 else 1e-7 * (x - 0.5)

        def get_inputs():
            return [torch.rand(8, 16)]

        def get_init_inputs():
            return []
    """
    judge = Judge(torch.device("cpu"), budget=1 << 30)
    prepared, ref = _prepare(judge, _spec(_write(tmp_path, "zero", exact_zero), "z"))
    assert ref.allowance == [1.0]
    assert prepared.degeneracy is not None and prepared.degeneracy.kind == "constant"
    exact = ref.refs[0][0]
    assert not compare(torch.full_like(exact, 1e-3), exact, ref.tolerances[0], allowance=ref.allowance[0]).passed
