"""The package's layers, as pyproject.toml's import-linter contracts state them (DESIGN §2)."""

import subprocess
import sys

from tests.conftest import ROOT

LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def test_the_layers_contracts_hold() -> None:
    """pyproject.toml's import-linter contracts: the layers import one way, and the command line, the server, the
    bench and the agent reach the search, memory, executor, prompts and store only through the tools; and the
    executor's rooms (host, worker, wire, tasks, policy) import one way and never up into the pipeline."""
    lint = subprocess.run(
        [sys.executable, "-c", LINT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert lint.returncode == 0, lint.stdout[-4000:] + lint.stderr[-2000:]
    assert "Contracts: 5 kept, 0 broken." in lint.stdout
