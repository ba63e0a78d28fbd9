"""create_checked_task gives a task without SMALL_SIZES derived ones, checked in the judge; a caller's dict,
or `{}` for none, overrides them. The task's code runs only in the evaluator's sandboxed workers."""

from __future__ import annotations

import secrets
import textwrap
from pathlib import Path

import pytest

from adaexplore.config import Settings
from adaexplore.errors import TaskError
from adaexplore.executor import Evaluator, task_from_source
from adaexplore.store import open_store
from adaexplore.tools import CreateTaskRequest, Services, create_checked_task, create_task
from tests.conftest import ON_GPU
from tests.executor.test_small_sizes import _escaping

pytestmark = pytest.mark.anyio
# sizes are derived, and checked by the judge, where candidates are judged on the CPU backends
ON_CPU_ONLY = pytest.mark.skipif(ON_GPU, reason="a GPU judges at full size: nothing is derived there")

UNSIZED = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, features, groups):
            super().__init__()
            self.norm = nn.GroupNorm(groups, features)

        def forward(self, x):
            return torch.relu(self.norm(x))

    batch_size = 256
    features = 480
    groups = 6
    length = 4000

    def get_inputs():
        return [torch.rand(batch_size, features, length)]

    def get_init_inputs():
        return [features, groups]
""")


def services(evaluator: Evaluator, home: Path) -> Services:
    settings = Settings(home=home)
    return Services(settings=settings, store=open_store(settings.database_url), evaluator=evaluator)


@ON_CPU_ONLY
async def test_a_task_without_small_sizes_gets_derived_ones_that_the_judge_accepts(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    svc = services(evaluator, tmp_path)
    result = await create_checked_task(svc, CreateTaskRequest(source=UNSIZED, name="norm"))
    assert result.small_sizes, result.small_sizes_note
    assert "SMALL_SIZES derived" in result.small_sizes_note and "features=" in result.small_sizes_note
    # not degenerate at the sizes the judge checked it at (its full sizes are too dear for the CPU)
    assert result.degenerate is None and svc.store.task(result.task_id).degeneracy_checked == "small"
    stored = task_from_source(svc.store.task(result.task_id).source)
    assert stored.small_sizes is not None
    assert stored.small_sizes["batch_size"] == 2 and stored.small_sizes["features"] % 6 == 0
    assert stored.small_sizes["length"] < 4000
    again = await create_checked_task(svc, CreateTaskRequest(source=UNSIZED))
    assert again.task_id == result.task_id  # the same module derives the same sizes, so keeps its id


async def test_no_sizes_are_derived_for_candidates_judged_on_the_gpu(evaluator: Evaluator, tmp_path: Path) -> None:
    # the GPU judges at the task's full sizes: the task is checked as it is, and no size probe starts
    svc = services(evaluator, tmp_path)
    small = UNSIZED.replace("length = 4000", "length = 40").replace("batch_size = 256", "batch_size = 2")
    result = await create_checked_task(svc, CreateTaskRequest(source=small, name="norm"), backend="cuda")
    assert not result.small_sizes
    assert result.small_sizes_note == (
        "no SMALL_SIZES: not derived, since candidates are judged on the GPU at the task's full sizes"
    )
    assert task_from_source(svc.store.task(result.task_id).source).small_sizes is None
    assert svc.store.task(result.task_id).work is not None  # the task was still loaded and its reference followed


@ON_CPU_ONLY
async def test_a_given_dict_or_none_overrides_the_derivation(evaluator: Evaluator, tmp_path: Path) -> None:
    svc = services(evaluator, tmp_path)
    given = {"batch_size": 3, "features": 12, "length": 50}
    chosen = await create_checked_task(svc, CreateTaskRequest(source=UNSIZED, small_sizes=given))
    assert chosen.small_sizes and chosen.small_sizes_note == (
        "SMALL_SIZES given with the request: batch_size=3, features=12, length=50"
    )
    assert task_from_source(svc.store.task(chosen.task_id).source).small_sizes == given
    unsized = create_task(svc, CreateTaskRequest(source=UNSIZED, small_sizes={}))
    assert not unsized.small_sizes and "full sizes" in unsized.small_sizes_note
    assert unsized.task_id != chosen.task_id


@ON_CPU_ONLY
async def test_given_sizes_the_task_does_not_define_are_refused_by_the_judge(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    svc = services(evaluator, tmp_path)
    with pytest.raises(TaskError, match="'channels'"):
        await create_checked_task(svc, CreateTaskRequest(source=UNSIZED, small_sizes={"channels": 4}))


@ON_CPU_ONLY
async def test_a_task_whose_code_tries_to_escape_gets_sizes_and_leaves_nothing_behind(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    token = secrets.token_hex(4)
    secret = Path.home() / f".adaexplore-sizes-secret-{token}"
    targets = [Path("/tmp") / f"adaexplore-sizes-pwned-{token}", Path.home() / f".adaexplore-sizes-pwned-{token}"]
    secret.write_text("secret")
    try:
        svc = services(evaluator, tmp_path)
        result = await create_checked_task(svc, CreateTaskRequest(source=_escaping(targets, Path.home())))
        assert result.small_sizes and "SMALL_SIZES derived" in result.small_sizes_note, result.small_sizes_note
        assert [t for t in targets if t.exists()] == []
    finally:
        secret.unlink(missing_ok=True)
        for target in targets:
            target.unlink(missing_ok=True)


@ON_CPU_ONLY
@pytest.mark.slow
async def test_a_degenerate_task_is_named_by_create_task_and_the_run_brief(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    from adaexplore.tools import StartRunRequest, run_brief_text, start_run
    from tests.executor.test_small_sizes import ZERO_EVERYWHERE

    svc = services(evaluator, tmp_path)
    result = await create_checked_task(svc, CreateTaskRequest(source=ZERO_EVERYWHERE, name="zero"))
    line = result.degenerate
    assert line is not None and line.startswith("degenerate task: its output is 0 everywhere")
    assert "at its full sizes" in line and line.endswith(
        "any kernel that writes 0 is correct on this task: its speedups say nothing"
    )
    stored = svc.store.task(result.task_id)
    assert stored.degeneracy is not None and stored.degeneracy_checked == "full"
    run = start_run(svc, StartRunRequest(task_id=result.task_id, total_steps=2))
    assert line in run.brief and line in run_brief_text(svc, run.run_id)


@ON_CPU_ONLY
@pytest.mark.slow
async def test_small_sizes_given_that_make_the_task_degenerate_are_accepted_with_a_warning(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    svc = services(evaluator, tmp_path)
    # as many groups as channels and a length of one: each GroupNorm group holds one number, normalized to zero
    given = {"batch_size": 2, "features": 6, "length": 1}
    result = await create_checked_task(svc, CreateTaskRequest(source=UNSIZED, small_sizes=given))
    assert result.small_sizes and "WARNING: at these small sizes its output is" in result.small_sizes_note
    assert "give other small_sizes" in result.small_sizes_note
