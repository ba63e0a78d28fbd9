"""The package passes mypy, with pyproject.toml's settings ([tool.mypy]: adaexplore/, unused ignores reported)."""

import subprocess
import sys

from tests.conftest import ROOT


def test_the_package_is_clean_under_mypy() -> None:
    mypy = subprocess.run([sys.executable, "-m", "mypy"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert mypy.returncode == 0, mypy.stdout[-4000:] + mypy.stderr[-2000:]
