"""Where the offline generator finds a run's kernels: `--kernels DIR` (DIR/TASK/*.py, else DIR/*.py), the
examples' samples beside their tasks, and on a resume the folder recorded with the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.agent import _replay as replay
from adaexplore.errors import RequestError
from adaexplore.tools import RunResult
from tests.conftest import EXAMPLES


def _run(name: str) -> RunResult:
    return RunResult.model_construct(run_id="run-1", task_name=name)


def test_own_kernels_are_a_folder_per_task_or_the_folder_itself(tmp_path: Path) -> None:
    (tmp_path / "mine" / "other").mkdir(parents=True)
    (tmp_path / "mine" / "a.py").write_text("A")
    (tmp_path / "mine" / "other" / "b.py").write_text("B")
    assert replay.for_task(tmp_path / "task.py", tmp_path / "mine").kernels == {"a": "A"}
    served = replay.for_task(tmp_path / "other.py", tmp_path / "mine")
    assert served.kernels == {"b": "B"} and served.folder == (tmp_path / "mine" / "other").resolve()
    (tmp_path / "empty").mkdir()
    with pytest.raises(RequestError, match=r"--kernels .*empty: no kernel for task task .*DIR/task/\*\.py"):
        replay.for_task(tmp_path / "task.py", tmp_path / "empty")


def test_a_task_without_kernels_names_the_flag_that_serves_ones_own(tmp_path: Path) -> None:
    assert replay.for_task(EXAMPLES / "tasks" / "row_softmax.py", None).kernels  # the examples' samples
    with pytest.raises(RequestError, match=r"replay has no kernels for task mine: .*--kernels DIR"):
        replay.for_task(tmp_path / "mine.py", None)


def test_a_resume_serves_the_recorded_folder_and_says_what_to_give_without_one(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("A")
    assert replay.for_resume(_run("mine"), str(tmp_path), None, None).kernels == {"a": "A"}
    with pytest.raises(RequestError, match=r"adaexplore explore --resume run-1 --kernels DIR"):
        replay.for_resume(_run("mine"), None, None, None)
    (tmp_path / "a.py").unlink()
    with pytest.raises(RequestError, match=r"holds none now.*--kernels DIR"):
        replay.for_resume(_run("mine"), str(tmp_path), None, None)
