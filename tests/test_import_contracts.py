"""The package's layers, as pyproject.toml's import-linter contracts state them (DESIGN §2)."""

import ast
import subprocess
import sys

from tests.conftest import ROOT

LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def test_the_layers_contracts_hold() -> None:
    """pyproject.toml's import-linter contracts: the layers import one way, and the command line, the server, the
    bench and the agent reach the search not at all and the other lower packages only by their faces; and the
    executor's rooms (host, worker, wire, tasks, policy), the worker's and the tools' import one way and never up
    into the pipeline; and no two modules of the package import each other, however indirectly (an import inside
    a function counts)."""
    lint = subprocess.run(
        [sys.executable, "-c", LINT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert lint.returncode == 0, lint.stdout[-4000:] + lint.stderr[-2000:]
    assert "Contracts: 8 kept, 0 broken." in lint.stdout
    assert "no import cycle anywhere in the package" in lint.stdout


def test_the_tools_export_only_names_they_define() -> None:
    """The tools' face re-exports nothing of a lower package: an upper package that needs a lower one's type
    imports it from that package's face, where the contracts see it."""
    tools_dir = ROOT / "adaexplore" / "tools"
    face = ast.parse((tools_dir / "__init__.py").read_text(encoding="utf-8"))
    exported = next(
        ast.literal_eval(node.value)
        for node in face.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets)
    )
    source = {
        alias.asname or alias.name: node.module
        for node in face.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    foreign = []
    for name in exported:
        module = source.get(name, "")
        if not module.startswith("adaexplore.tools."):
            foreign.append(f"{name} (from {module or 'nowhere'})")
            continue
        relative = module.removeprefix("adaexplore.tools.").replace(".", "/")
        room = ast.parse((tools_dir / f"{relative}.py").read_text(encoding="utf-8"))
        defined = _top_level_names(room)
        if name not in defined:
            foreign.append(f"{name} (imported by {module})")
    assert not foreign, "adaexplore.tools exports names it does not define: " + ", ".join(foreign)


def _top_level_names(module: ast.Module) -> set[str]:
    """The names a module defines at its top level: its functions, classes and assigned names (not its imports)."""
    names = set()
    for node in module.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_executors_modules_and_the_packages_folders_stay_small() -> None:
    """No module of the executor over 400 lines, and no package folder with more than 20 modules (issue 53's
    rooms): a folder of kernel sources kept as data, with no `__init__.py`, is not a package and not counted."""
    package = ROOT / "adaexplore"
    long = {
        str(path.relative_to(package)): lines
        for path in (package / "executor").rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert not long, long
    crowded = {
        str(folder.relative_to(package)): count
        for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]
        if (folder / "__init__.py").is_file() and (count := len(list(folder.glob("*.py")))) > 20
    }
    assert not crowded, crowded
