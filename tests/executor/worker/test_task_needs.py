"""A package the task imports that is not installed is the task's need, said with what to install."""

from pathlib import Path

import pytest

from adaexplore.executor.worker.confine._faults import TaskFault
from adaexplore.executor.worker.task._taskrun import load_task_module

TASK = """import torch
import adaexplore_not_a_real_package.layers as layers


class Model(torch.nn.Module):
    def forward(self, x):
        return x


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("small_sizes", [None, {"n": 4}], ids=["full size", "small sizes"])
def test_a_missing_package_is_the_tasks_need_with_what_to_install(tmp_path: Path, small_sizes: dict | None) -> None:
    task = tmp_path / "task.py"
    task.write_text(TASK + "n = 128\n")
    with pytest.raises(TaskFault) as raised:
        load_task_module(str(task), small_sizes, name="task_needs_probe")
    assert str(raised.value) == (
        "the task needs adaexplore_not_a_real_package, which is not installed here: "
        "pip install adaexplore_not_a_real_package"
    )
