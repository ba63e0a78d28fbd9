"""server.json satisfies the MCP registry schema's rules (2025-12-11) and agrees with the package."""

import json
import re
import tomllib

from tests.conftest import ROOT

MANIFEST = json.loads((ROOT / "server.json").read_text())
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_required_fields_are_there_and_well_formed() -> None:
    assert MANIFEST["$schema"].endswith("/2025-12-11/server.schema.json")
    for field in ("name", "description", "version"):
        assert MANIFEST[field], field
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", MANIFEST["name"]) and 3 <= len(MANIFEST["name"]) <= 200
    assert len(MANIFEST["description"]) <= 100
    assert re.fullmatch(r"\d+\.\d+\.\d+", MANIFEST["version"]), "the version must be exact"
    assert "status" not in MANIFEST  # managed by the registry


def test_the_package_entry_runs_the_stdio_server_of_this_distribution() -> None:
    (package,) = MANIFEST["packages"]
    assert package["registryType"] == "pypi" and package["registryBaseUrl"] == "https://pypi.org"
    assert package["identifier"] == PROJECT["name"] and package["version"] == PROJECT["version"] == MANIFEST["version"]
    assert package["runtimeHint"] == "uvx" and package["transport"] == {"type": "stdio"}
    assert package["packageArguments"] == [{"type": "positional", "value": "serve"}]
    assert PROJECT["scripts"][PROJECT["name"]] == "adaexplore.cli:main"  # `uvx adaexplore` finds the command
    for variable in package["environmentVariables"]:
        assert set(variable) <= {"name", "description", "isRequired", "isSecret", "default", "choices", "format"}
        assert variable["name"] and variable["description"]


def test_every_environment_variable_it_names_is_one_adaexplore_reads() -> None:
    sources = "".join(p.read_text() for p in (ROOT / "adaexplore").rglob("*.py"))
    for variable in MANIFEST["packages"][0]["environmentVariables"]:
        if variable["name"].startswith("ADAEXPLORE_"):
            assert f'"{variable["name"]}"' in sources, variable["name"]


def test_the_readme_that_ships_to_pypi_carries_the_registry_name() -> None:
    # The registry proves the PyPI package belongs to this server by finding `mcp-name: <name>` (followed by a
    # boundary) in the package's long description, which is the README.
    readme = PROJECT["readme"]
    assert readme == "README.md"
    text = (ROOT / readme).read_text()
    assert re.search(rf"mcp-name: {re.escape(MANIFEST['name'])}(?![a-zA-Z0-9._/-])", text), MANIFEST["name"]
