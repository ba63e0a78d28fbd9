"""The package passes ruff's checks and its formatting, with pyproject.toml's settings."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_the_package_is_clean_under_ruff(command: list[str]) -> None:
    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "adaexplore"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert ruff.returncode == 0, ruff.stdout[-4000:] + ruff.stderr[-2000:]
