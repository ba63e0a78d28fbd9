"""The README opens with the two commands that work on a fresh machine, and CI runs the second."""

from tests.conftest import ROOT


def first_commands() -> list[str]:
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index("```sh")
    end = lines.index("```", start)
    return [line for line in lines[start + 1 : end] if line and not line.startswith("#")]


def test_readme_opens_with_run_and_test_commands() -> None:
    run, test = first_commands()
    assert run.startswith("./install.sh && .venv/bin/adaexplore explore examples/")
    assert test == "./install.sh --dev && .venv/bin/python -m pytest -n 2 --dist loadscope"


def test_ci_runs_the_readme_test_command() -> None:
    assert first_commands()[1] in (ROOT / ".ci" / "run").read_text()


def test_the_example_paths_in_the_run_command_exist() -> None:
    run = first_commands()[0]
    for word in run.split():
        if word.startswith("examples/"):
            assert (ROOT / word).is_file(), word


def test_the_python_examples_run_as_written(tmp_path) -> None:
    import os
    import re
    import subprocess
    import sys

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 2
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
            env=dict(os.environ, ADAEXPLORE_HOME=str(tmp_path)),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.startswith("ok "), done.stdout


def test_the_settings_examples_load(tmp_path) -> None:
    import re

    from adaexplore.config import Settings

    blocks = re.findall(r"```toml\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 3
    for index, block in enumerate(blocks):
        path = tmp_path / f"settings-{index}.toml"
        path.write_text(block)
        Settings.load(path)  # unknown keys and bad values raise
