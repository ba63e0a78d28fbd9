"""The package: what pyproject.toml lists, server.json's entry, the LICENSE, and `adaexplore examples`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _folders(top: Path, prefix: str) -> set[str]:
    found = {prefix}
    for path in top.rglob("*"):
        if path.is_dir() and "__pycache__" not in path.parts:
            found.add(".".join([prefix, *path.relative_to(top).parts]))
    return found


def test_every_folder_of_the_package_is_listed():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    expected = _folders(ROOT / "adaexplore", "adaexplore") | _folders(ROOT / "examples", "adaexplore.examples")
    assert listed == expected, f"missing: {sorted(expected - listed)}; stale: {sorted(listed - expected)}"


def test_server_json_names_this_package_and_version():
    server = json.loads((ROOT / "server.json").read_text())
    project = PYPROJECT["project"]
    assert server["version"] == project["version"]
    (package,) = server["packages"]
    assert package["identifier"] == project["name"]
    assert package["version"] == project["version"]
    assert [a["value"] for a in package["packageArguments"]] == ["serve"]
    assert (
        "serve"
        in subprocess.run(
            [sys.executable, "-m", "adaexplore", "--help"], capture_output=True, text=True, check=True
        ).stdout
    )


def test_server_json_lists_the_environment_variables_the_readme_names():
    (package,) = json.loads((ROOT / "server.json").read_text())["packages"]
    listed = {v["name"]: v["description"] for v in package["environmentVariables"]}
    readme = (ROOT / "README.md").read_text()
    paragraph = readme.split("`server.json` describes the server")[1].split("\n\n")[0]
    assert sorted(listed) == sorted(re.findall(r"`((?:ADAEXPLORE|CUDA)_[A-Z_]+)`", paragraph))
    assert {"ADAEXPLORE_HOME", "ADAEXPLORE_DB", "ADAEXPLORE_CLUSTER"} <= set(listed)
    # the settings read them from the environment (adaexplore/config.py)
    config = (ROOT / "adaexplore" / "config.py").read_text()
    assert all(f'"{name}"' in config for name in ("ADAEXPLORE_HOME", "ADAEXPLORE_DB", "ADAEXPLORE_CLUSTER"))
    assert "sqlite:///" in listed["ADAEXPLORE_DB"] and "postgresql://" in listed["ADAEXPLORE_DB"]


def test_license_file_is_the_mit_license_the_metadata_names():
    assert PYPROJECT["project"]["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_examples_command_writes_every_example_and_keeps_changed_files(tmp_path):
    target = tmp_path / "ex"
    run = subprocess.run(
        [sys.executable, "-m", "adaexplore", "examples", str(target)], capture_output=True, text=True, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    source = ROOT / "examples"
    expected = sorted(p.relative_to(source) for p in [*source.glob("tasks/*.py"), *source.glob("kernels/*/*.py")])
    written = sorted(p.relative_to(target) for p in target.rglob("*.py"))
    assert written == expected and len(expected) > 20
    assert (target / "tasks/row_softmax.py").read_text() == (source / "tasks/row_softmax.py").read_text()
    assert "explore" in run.stdout and "row_softmax" in run.stdout

    changed = target / "tasks" / "mlp.py"
    changed.write_text("# mine\n")
    again = subprocess.run(
        [sys.executable, "-m", "adaexplore", "examples", str(target)], capture_output=True, text=True, cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
    assert changed.read_text() == "# mine\n" and "--force" in again.stdout and "tasks/mlp.py" in again.stdout
    forced = subprocess.run(
        [sys.executable, "-m", "adaexplore", "examples", str(target), "--force"], capture_output=True, text=True
    )
    assert forced.returncode == 0 and changed.read_text() == (source / "tasks/mlp.py").read_text()


def test_examples_into_a_file_is_refused(tmp_path):
    file = tmp_path / "f"
    file.write_text("x")
    run = subprocess.run([sys.executable, "-m", "adaexplore", "examples", str(file)], capture_output=True, text=True)
    assert run.returncode == 2 and "is a file" in run.stderr
