"""What a candidate may use because its task does: a third-party module the task imports, in the part of it that
only computes, and a name the task reads without ever defining it.

A candidate is usually the task's model rewritten, and whole models (KernelBench's Level 3) import more than torch:
Swin V2 computes a constant with `numpy.log2`, the Mamba2 blocks reshape with `einops.rearrange`. `task_grants`
reads the task's source for such imports; the checker then lets the candidate import the same module and use, of
it, the names of its reviewed table here, nothing else (numpy's file readers and writers, its raw-memory views
(`lib.stride_tricks.as_strided`, `ctypeslib`, `frombuffer`, `ndarray(buffer=...)`) and its global settings are
out, under any path). Neither module is granted to a candidate whose task does not import it.

A name the task reads but never binds (Swin's `checkpoint.checkpoint(...)`, in a branch its settings never take)
may be read by the candidate too, where a copy of that code would otherwise be refused as an undefined name: the
candidate's module holds nothing under that name (its builtins are its own, and the worker's interpreter shim
adds only one special name to it), so reading it raises NameError there, as in the task. A name of a module that
the allowed ones hold (`inspect`, `np`, `sys`) is never granted.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from adaexplore.executor.policy._facts import _module_names
from adaexplore.executor.policy._tables_attrs import _MODULE_ATTRS

__all__ = ["GRANTABLE", "NO_GRANTS", "TaskGrants", "granted_refusal", "task_grants"]

# The modules a task's import grants its candidates, each with the names a candidate may use of it: what computes
# on numbers and arrays and returns new ones. Reviewed for numpy 1.26 to 2.3 and einops 0.8.
GRANTABLE: dict[str, frozenset[str]] = {
    "numpy": frozenset(
        {
            # constants and scalar types
            *("pi", "e", "inf", "nan", "newaxis", "euler_gamma"),
            *("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_"),
            # elementwise arithmetic
            *("abs", "absolute", "sqrt", "cbrt", "square", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p"),
            *("sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh"),
            *("arccosh", "arctanh", "hypot", "deg2rad", "rad2deg", "floor", "ceil", "trunc", "rint", "round", "sign"),
            *("maximum", "minimum", "fmax", "fmin", "power", "clip", "where", "reciprocal", "negative", "add"),
            *("subtract", "multiply", "divide", "true_divide", "floor_divide", "mod", "remainder"),
            *("isnan", "isinf", "isfinite", "isclose", "allclose"),
            # reductions
            *("sum", "prod", "mean", "std", "var", "median", "max", "min", "amax", "amin", "argmax", "argmin"),
            *("cumsum", "cumprod", "any", "all"),
            # new arrays, from numbers or from other arrays
            *("arange", "linspace", "logspace", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like"),
            *("eye", "array", "asarray", "meshgrid", "indices", "tril", "triu", "stack", "concatenate", "reshape"),
            *("transpose", "flip", "expand_dims", "squeeze", "ravel", "tile", "repeat", "sort", "argsort"),
            *("unique", "diff", "dot", "matmul", "outer", "einsum"),
        }
    ),
    "einops": frozenset({"rearrange", "reduce", "repeat", "einsum", "pack", "unpack", "parse_shape", "EinopsError"}),
}


@dataclass(frozen=True)
class TaskGrants:
    """What a task's own code lets its candidates use beyond the policy's tables."""

    modules: frozenset[str] = frozenset()  # modules of GRANTABLE that the task imports
    names: frozenset[str] = frozenset()  # names the task reads and never binds


NO_GRANTS = TaskGrants()


def _imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def task_grants(task_source: str | None) -> TaskGrants:
    """The grants of a task's source (none for None, or for a source that does not parse)."""
    if not task_source:
        return NO_GRANTS
    try:
        tree = ast.parse(task_source)
    except SyntaxError:
        return NO_GRANTS
    bound, _ = _module_names(tree)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    undefined = {
        name
        for name in read - bound
        if not hasattr(builtins, name) and name not in _MODULE_ATTRS and not name.startswith("__")
    }
    return TaskGrants(modules=frozenset(_imported_roots(tree) & GRANTABLE.keys()), names=frozenset(undefined))


def granted_refusal(dotted: str, grants: TaskGrants) -> str | None:
    """The message for a dotted name under a granted module that is not in its table (`numpy.lib`, `numpy.load`),
    or None (the module itself, a name of its table, or a name under no granted module)."""
    root, _, rest = dotted.partition(".")
    if root not in grants.modules or not rest:
        return None
    name = rest.split(".")[0]
    if name in GRANTABLE[root]:
        return None
    return (
        f"You cannot use {root}.{name}; of {root}, which your task imports, a candidate may use only what computes "
        f"on numbers and arrays ({', '.join(sorted(GRANTABLE[root])[:12])}, ...)."
    )
