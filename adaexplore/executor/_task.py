"""Tasks: reference modules in the KernelBench format, read and checked without importing them."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from adaexplore.errors import TaskError

__all__ = ["Task", "code_hash", "load_task", "read_task_file", "task_from_source"]

_REQUIRED = {"Model": "class", "get_inputs": "function", "get_init_inputs": "function"}


class Task(BaseModel):
    """A reference problem: `Model`, `get_inputs()`, `get_init_inputs()` and module-level sizes.

    `small_sizes` (the module's `SMALL_SIZES` dict) replaces module-level names for CPU checks;
    `allowed_precision` (the module's `ALLOWED_PRECISION`) admits a lower internal precision.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    source: str
    hash: str
    small_sizes: dict[str, int | float] | None = None
    allowed_precision: str | None = None
    init_params: list[str] = []
    forward_params: list[str] = []


def code_hash(source: str) -> str:
    """A hash of the code that ignores comments and formatting (sha256 of the unparsed AST)."""
    try:
        normalized = ast.unparse(ast.parse(source))
    except SyntaxError:
        normalized = source
    return hashlib.sha256(normalized.encode()).hexdigest()[:16]


def load_task(path: str | Path) -> Task:
    """Read a task module from a file.

    Raises:
        TaskError: the file is missing or is not a usable task module.
    """
    path = Path(path)
    return task_from_source(read_task_file(path), name=path.stem)


def read_task_file(path: Path, what: str = "task") -> str:
    """The text of a Python module's file: a task's, or (`what`) a kernel's or a reproducer's.

    Raises:
        TaskError: the file is missing, unreadable, or not UTF-8 text.
    """
    if not path.is_file():
        raise TaskError(f"{what} file {path} " + ("is a directory" if path.is_dir() else "does not exist"))
    try:
        return path.read_text(encoding="utf-8-sig")  # a byte order mark is no part of the module
    except UnicodeDecodeError as exc:
        raise TaskError(
            f"{what} file {path} is not UTF-8 text (byte {exc.start}); it must be a Python module"
        ) from None
    except OSError as exc:
        raise TaskError(f"cannot read {what} file {path}: {exc.strerror or exc}") from None


def task_from_source(source: str, name: str = "task") -> Task:
    """Check a task module's text and describe it.

    Raises:
        TaskError: the text does not parse, or lacks `Model`, `get_inputs` or `get_init_inputs`,
            or its `SMALL_SIZES`/`ALLOWED_PRECISION` are not literals of the right kind.
    """
    source = source.removeprefix("\ufeff")  # a byte order mark, as some editors write: Python ignores it
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno is not None else ""
        raise TaskError(f"task {name!r} does not parse: {where}{exc.msg}") from exc
    except ValueError as exc:  # a NUL byte, on the Python versions that raise this instead of SyntaxError
        raise TaskError(f"task {name!r} does not parse: {exc}") from exc
    defined: dict[str, ast.AST] = {}
    literals: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            defined[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            literals[node.targets[0].id] = node.value
    missing = []
    for symbol, kind in _REQUIRED.items():
        node = defined.get(symbol)
        want = ast.ClassDef if kind == "class" else ast.FunctionDef
        if not isinstance(node, want):
            missing.append(f"a {kind} {symbol}")
    if missing:
        raise TaskError(
            f"task {name!r} is missing {', '.join(missing)}; a task module defines class Model(nn.Module), "
            "get_inputs() returning the forward inputs, and get_init_inputs() returning Model's constructor "
            "arguments"
        )
    model = defined["Model"]
    assert isinstance(model, ast.ClassDef)
    return Task(
        name=name,
        source=source,
        hash=code_hash(source),
        small_sizes=_small_sizes(name, literals.get("SMALL_SIZES")),
        allowed_precision=_allowed_precision(name, literals.get("ALLOWED_PRECISION")),
        init_params=_method_params(model, "__init__"),
        forward_params=_method_params(model, "forward"),
    )


def _small_sizes(name: str, node: ast.expr | None) -> dict[str, int | float] | None:
    if node is None:
        return None
    try:
        value = ast.literal_eval(node)
    except ValueError as exc:
        raise TaskError(f"task {name!r}: SMALL_SIZES must be a dict literal of names to numbers") from exc
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool) for k, v in value.items()
    ):
        raise TaskError(f"task {name!r}: SMALL_SIZES must map module-level names (str) to numbers")
    return value


def _allowed_precision(name: str, node: ast.expr | None) -> str | None:
    if node is None:
        return None
    try:
        value = ast.literal_eval(node)
    except ValueError as exc:
        raise TaskError(f"task {name!r}: ALLOWED_PRECISION must be a string literal") from exc
    allowed = {"tf32", "float16", "bfloat16", "float8"}
    if value not in allowed:
        raise TaskError(f"task {name!r}: ALLOWED_PRECISION must be one of {sorted(allowed)}, not {value!r}")
    return value


def _method_params(cls: ast.ClassDef, method: str) -> list[str]:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == method:
            args = node.args
            names = [a.arg for a in args.posonlyargs + args.args][1:]
            if args.vararg:
                names.append("*" + args.vararg.arg)
            return names
    return []
