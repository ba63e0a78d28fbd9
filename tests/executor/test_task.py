from pathlib import Path

import pytest

from adaexplore.errors import TaskError
from adaexplore.executor import code_hash, load_task, task_from_source

GOOD = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features, scale=2.0):
        super().__init__()
    def forward(self, x, y):
        return x + y

rows = 4
SMALL_SIZES = {"rows": 2}
ALLOWED_PRECISION = "tf32"

def get_inputs():
    return [torch.randn(rows, 8), torch.randn(rows, 8)]

def get_init_inputs():
    return [8]
"""


def test_a_task_is_described_without_being_imported() -> None:
    task = task_from_source(GOOD, name="add")
    assert task.name == "add"
    assert task.small_sizes == {"rows": 2}
    assert task.allowed_precision == "tf32"
    assert task.init_params == ["features", "scale"]
    assert task.forward_params == ["x", "y"]


def test_the_hash_ignores_comments_and_formatting_but_not_code() -> None:
    reformatted = GOOD.replace("return x + y", "return (x +   y)  # sum")
    assert code_hash(reformatted) == code_hash(GOOD)
    assert code_hash(GOOD.replace("x + y", "x - y")) != code_hash(GOOD)


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        (GOOD.replace("def get_inputs", "def other_inputs"), "get_inputs"),
        (GOOD.replace("class Model(", "class Other("), "class Model"),
        (GOOD.replace("def get_init_inputs", "def other_init"), "get_init_inputs"),
        (GOOD.replace('SMALL_SIZES = {"rows": 2}', "SMALL_SIZES = compute()"), "SMALL_SIZES"),
        (GOOD.replace('SMALL_SIZES = {"rows": 2}', 'SMALL_SIZES = {"rows": "2"}'), "SMALL_SIZES"),
        (GOOD.replace('"tf32"', '"float99"'), "ALLOWED_PRECISION"),
        ("def broken(:\n", "does not parse"),
    ],
)
def test_an_unusable_task_is_refused_with_what_to_change(source: str, fragment: str) -> None:
    with pytest.raises(TaskError, match=fragment):
        task_from_source(source, name="t")


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="does not exist"):
        load_task(tmp_path / "nope.py")
    with pytest.raises(TaskError, match="is a directory"):
        load_task(tmp_path)


def test_a_byte_order_mark_is_no_part_of_the_task(tmp_path: Path) -> None:
    plain = tmp_path / "plain.py"
    plain.write_text(GOOD)
    marked = tmp_path / "marked.py"
    marked.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert load_task(marked).source == load_task(plain).source == GOOD
    assert task_from_source("\ufeff" + GOOD).source == GOOD
