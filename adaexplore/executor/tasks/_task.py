"""Tasks: reference modules in the KernelBench format, read and checked without importing them."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from adaexplore.domain import SizeValue
from adaexplore.errors import TaskError

__all__ = ["Task", "code_hash", "load_task", "model_view", "module_assignment", "read_task_file", "task_from_source"]

_REQUIRED = {"Model": "class", "get_inputs": "function", "get_init_inputs": "function"}


class Task(BaseModel):
    """A reference problem: `Model`, `get_inputs()`, `get_init_inputs()` and module-level sizes.

    `small_sizes` (the module's `SMALL_SIZES` dict) replaces module-level names for CPU checks;
    `allowed_precision` (the module's `ALLOWED_PRECISION`) admits a lower internal precision.
    `input_sets` (the module's `INPUT_SETS`: a label for each set of module-level names and their values, as
    the workloads of a FlashInfer-Bench definition) makes a kernel be judged on every set at full size;
    `tolerance` (the module's `TOLERANCE`, {"atol": ..., "rtol": ...}) is the task's own, which mode
    `flashinfer` holds outputs to.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    source: str
    hash: str
    small_sizes: dict[str, SizeValue] | None = None
    allowed_precision: str | None = None
    input_sets: dict[str, dict[str, int | float]] | None = None
    tolerance: dict[str, float] | None = None
    init_params: list[str] = []
    forward_params: list[str] = []

    @property
    def model_view(self) -> str:
        """The source as a model should read it: the value of a module-level GIVEN_TENSORS (the encoded bytes
        of inputs a workload gives, such as a page table) replaced by a note of its size."""
        return model_view(self.source)


def module_assignment(source: str, name: str) -> ast.Assign | None:
    """The module-level `name = ...` statement of `source` (its last, as the module would end with), or None."""
    if name not in source:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [name]:
            found = node
    return found


def model_view(source: str) -> str:
    """`source` with the value of its module-level GIVEN_TENSORS assignment elided (see Task.model_view)."""
    node = module_assignment(source, "GIVEN_TENSORS")
    if node is None or node.end_lineno is None:
        return source
    lines = source.splitlines(keepends=True)
    held = sum(len(line) for line in lines[node.lineno - 1 : node.end_lineno])
    note = f"GIVEN_TENSORS = {{...}}  # {held:,} characters of encoded input tensors, not shown\n"
    return "".join(lines[: node.lineno - 1]) + note + "".join(lines[node.end_lineno :])


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
        found = defined.get(symbol)
        want = ast.ClassDef if kind == "class" else ast.FunctionDef
        if not isinstance(found, want):
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
        input_sets=_input_sets(name, literals.get("INPUT_SETS")),
        tolerance=_tolerance(name, literals.get("TOLERANCE")),
        init_params=_method_params(model, "__init__"),
        forward_params=_method_params(model, "forward"),
    )


def _small_sizes(name: str, node: ast.expr | None) -> dict[str, SizeValue] | None:
    """The module's SMALL_SIZES: names to numbers, or to lists (tuples) of integers for a module-level list or
    tuple of sizes, element for element (a tuple is kept as a list: the worker gives the name its own kind)."""
    if node is None:
        return None
    refusal = (
        f"task {name!r}: SMALL_SIZES must map module-level names (str) to numbers, or to lists of integers for a "
        "list or tuple of sizes"
    )
    try:
        value = ast.literal_eval(node)
    except ValueError as exc:
        raise TaskError(refusal) from exc
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise TaskError(refusal)
    sizes: dict[str, SizeValue] = {}
    for key, size in value.items():
        if _number(size):
            sizes[key] = size
        elif isinstance(size, list | tuple) and all(isinstance(e, int) and not isinstance(e, bool) for e in size):
            sizes[key] = list(size)
        else:
            raise TaskError(refusal)
    return sizes


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _literal(node: ast.expr, refusal: str) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError as exc:
        raise TaskError(refusal) from exc


def _input_sets(name: str, node: ast.expr | None) -> dict[str, dict[str, int | float]] | None:
    if node is None:
        return None
    value = _literal(node, f"task {name!r}: INPUT_SETS must be a dict literal of labels to dicts of names to numbers")
    if (
        not isinstance(value, dict)
        or not value
        or not all(
            isinstance(label, str)
            and isinstance(sizes, dict)
            and all(isinstance(k, str) and _number(v) for k, v in sizes.items())
            for label, sizes in value.items()
        )
    ):
        raise TaskError(
            f"task {name!r}: INPUT_SETS must map each set's label (str) to the module-level names it assigns and "
            "their numbers, with at least one set"
        )
    return value


def _tolerance(name: str, node: ast.expr | None) -> dict[str, float] | None:
    if node is None:
        return None
    value = _literal(node, f"task {name!r}: TOLERANCE must be a dict literal such as {{'atol': 0.01, 'rtol': 0.01}}")
    if (
        not isinstance(value, dict)
        or set(value) != {"atol", "rtol"}
        or not all(_number(v) and v >= 0 for v in value.values())
    ):
        raise TaskError(f"task {name!r}: TOLERANCE must be {{'atol': number, 'rtol': number}}, both at least 0")
    return {k: float(v) for k, v in value.items()}


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
