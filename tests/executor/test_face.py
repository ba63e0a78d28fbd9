"""The executor's face: every name it exports resolves on first use, and a worker's start loads no room of the
evaluator's side."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import adaexplore.executor as face

SOURCE = Path(face.__file__).read_text(encoding="utf-8")


def _type_checking_imports() -> dict[str, str]:
    block = next(
        node
        for node in ast.parse(SOURCE).body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    )
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def test_the_imports_for_type_checkers_the_table_and_all_name_the_same_things() -> None:
    assert _type_checking_imports() == face._WHERE
    assert sorted(face.__all__) == sorted(face._WHERE)


@pytest.mark.parametrize("name", sorted(face._WHERE))
def test_each_name_is_the_object_its_room_defines(name: str) -> None:
    assert getattr(face, name) is getattr(importlib.import_module(face._WHERE[name]), name)
    assert name in dir(face)


def test_a_name_the_face_lacks_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Evaluater'"):
        face.Evaluater  # noqa: B018


def test_a_workers_imports_load_no_room_of_the_evaluators_side() -> None:
    # what `python -m adaexplore.executor.worker` imports for a candidate on the CPU backends, before the candidate
    code = (
        "import sys\n"
        "import adaexplore.executor.worker.__main__, adaexplore.executor.worker.candidate._candidate\n"
        "import adaexplore.executor.worker.candidate._launches, adaexplore.executor.worker.candidate._kernel_rules\n"
        "import adaexplore.executor.worker.confine._confine, adaexplore.executor.worker.cpu._cuda_on_cpu\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('adaexplore.executor.pipeline',"
        " 'adaexplore.executor.probes', 'adaexplore.tools', 'adaexplore.store')))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", f"a worker's start imports {done.stdout.strip()}"
