"""The task module written for a FlashInfer-Bench definition and its workloads: plain data in, Python text out.

The module is a KernelBench-format task that a model can read: the definition's reference as it is written,
`Model` calling it, one module-level name per axis, `get_inputs()` drawing each input as the workloads say, and
INPUT_SETS (one per workload), SMALL_SIZES (the smallest workload), TOLERANCE (the package's default evaluator's)
and GIVEN_TENSORS (the bytes of inputs a workload gives in a safetensors file) for the evaluator.
"""

from __future__ import annotations

import ast
import keyword
import textwrap
from dataclasses import dataclass, field
from typing import Any

from adaexplore.errors import TaskError

__all__ = ["WorkloadData", "task_module"]

# the names the module defines beside the reference's own
_OURS = {
    "Model",
    "get_inputs",
    "get_init_inputs",
    "INPUT_SETS",
    "SMALL_SIZES",
    "TOLERANCE",
    "WORKLOAD",
    "GIVEN_SCALARS",
    "GIVEN_TENSORS",
    "FLASHINFER",
    "torch",
    "nn",
    "base64",
    "_tensor",
    "_scalar",
}

# torch's name of each dtype of the format
_DTYPES = {
    "float32": "torch.float32",
    "float16": "torch.float16",
    "bfloat16": "torch.bfloat16",
    "float8_e4m3fn": "torch.float8_e4m3fn",
    "float8_e5m2": "torch.float8_e5m2",
    "float4_e2m1": "torch.float4_e2m1fn_x2",
    "int64": "torch.int64",
    "int32": "torch.int32",
    "int16": "torch.int16",
    "int8": "torch.int8",
    "bool": "torch.bool",
}


@dataclass
class WorkloadData:
    """One workload as the module needs it: its var axes, the scalars it gives, and the tensors a safetensors
    file gives (dtype name, shape, base64 of the raw bytes, little-endian)."""

    uuid: str
    axes: dict[str, int]
    scalars: dict[str, int | float | bool] = field(default_factory=dict)
    tensors: dict[str, tuple[str, list[int], str]] = field(default_factory=dict)


def _defined_names(reference: str) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(reference).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _check_names(definition: dict[str, Any]) -> None:
    name = definition["name"]
    inputs, axes = list(definition["inputs"]), list(definition["axes"])
    for what, names in (("input", inputs), ("axis", axes)):
        for n in names:
            if not n.isidentifier() or keyword.iskeyword(n):
                raise TaskError(
                    f"definition {name}: {what} name {n!r} is not a Python identifier, so it cannot be an argument"
                )
    clash = (set(inputs) | set(axes)) & (_OURS | _defined_names(definition["reference"]) - {"run"})
    if clash:
        raise TaskError(
            f"definition {name}: the names {sorted(clash)} are both inputs or axes and names the task module defines "
            "(or the reference defines at its top level); adaexplore cannot import it as it is"
        )
    reserved = _OURS & _defined_names(definition["reference"]) - {"torch", "nn", "base64"}
    if reserved:
        raise TaskError(
            f"definition {name}: its reference defines {sorted(reserved)}, names the task module needs for itself"
        )


def _size(workload: WorkloadData, definition: dict[str, Any]) -> int:
    """The elements of all the workload's inputs, to order workloads by."""
    values = {**{k: v["value"] for k, v in definition["axes"].items() if v["type"] == "const"}, **workload.axes}
    total = 0
    for spec in definition["inputs"].values():
        count = 1
        for axis in spec["shape"] or []:
            count *= values[axis]
        total += count
    return total


def _label(workload: WorkloadData, taken: set[str]) -> str:
    label = workload.uuid[:8]
    return workload.uuid if label in taken else label


def _input_expr(name: str, spec: dict[str, Any]) -> str:
    dtype = _DTYPES[spec["dtype"]]
    if spec["shape"] is None:
        return f'_scalar("{name}", {dtype})'
    axes = spec["shape"]
    shape = f"({axes[0]},)" if len(axes) == 1 else "(" + ", ".join(axes) + ")"
    return f'_tensor("{name}", {shape}, {dtype})'


def _docstring(definition: dict[str, Any], count: int, package: str) -> str:
    def shape(spec: dict[str, Any]) -> str:
        return "scalar" if spec["shape"] is None else "[" + ", ".join(spec["shape"]) + "]"

    lines = [
        f"FlashInfer-Bench definition {definition['name']} (op_type {definition['op_type']}), with its {count} "
        "workload(s),",
        f"imported by adaexplore through flashinfer-bench {package}.",
        "",
    ]
    if definition.get("description"):
        lines += [*textwrap.wrap(definition["description"], 100), ""]
    params = ", ".join(definition["inputs"])
    outs = ", ".join(definition["outputs"])
    lines.append(f"ModelNew() takes no arguments; its forward({params}) returns {outs}")
    lines.append("(a tuple in this order when there are several):")
    for kind, specs in (("input", definition["inputs"]), ("output", definition["outputs"])):
        for n, spec in specs.items():
            lines.append(f"  {kind} {n}: {spec['dtype']} {shape(spec)}")
    consts = [f"{k} = {v['value']}" for k, v in definition["axes"].items() if v["type"] == "const"]
    variables = [k for k, v in definition["axes"].items() if v["type"] == "var"]
    if consts:
        lines.append("Constant axes: " + ", ".join(consts) + ".")
    if variables:
        lines.append("Variable axes, set by each workload: " + ", ".join(variables) + ".")
    for constraint in definition.get("constraints") or []:
        lines.append(f"Constraint: {constraint}")
    lines += [
        "A kernel is judged on every workload (INPUT_SETS) and must be correct on each; its speedup is the",
        "geometric mean of the workloads' speedups. Do not rely on one workload's sizes.",
    ]
    return "\n".join(lines).replace('"""', "'''")


def task_module(
    definition: dict[str, Any], workloads: list[WorkloadData], tolerance: dict[str, float], package: str
) -> str:
    """The task module's text for `definition` (the package's Definition as JSON data) and its `workloads`.

    Raises:
        TaskError: there are no workloads, or the definition's names cannot be module names.
    """
    name = definition["name"]
    if not workloads:
        raise TaskError(f"definition {name} has no workloads: give --workload FILE or --workloads DIR")
    _check_names(definition)
    ordered = sorted(workloads, key=lambda w: _size(w, definition))
    labels: list[str] = []
    for w in ordered:
        labels.append(_label(w, set(labels)))
    consts = {k: v["value"] for k, v in definition["axes"].items() if v["type"] == "const"}
    variables = [k for k, v in definition["axes"].items() if v["type"] == "var"]
    largest = len(ordered) - 1

    def sizes(index: int) -> dict[str, int]:
        return {"WORKLOAD": index, **{axis: ordered[index].axes[axis] for axis in variables}}

    axis_lines = [f"{k} = {v}  # constant" for k, v in consts.items()]
    axis_lines += [f"{k} = {ordered[largest].axes[k]}  # each input set assigns its own" for k in variables]
    input_sets = ",\n".join(f"    {labels[i]!r}: {sizes(i)!r}" for i in range(len(ordered)))
    scalars = [w.scalars for w in ordered]
    tensors = [{k: list(v) for k, v in w.tensors.items()} for w in ordered]
    params = ", ".join(definition["inputs"])
    inputs = "".join(f"        {_input_expr(n, spec)},\n" for n, spec in definition["inputs"].items())
    meta = {"definition": name, "workloads": [w.uuid for w in ordered], "flashinfer_bench": package}
    reference = definition["reference"].strip("\n")
    return f'''"""{_docstring(definition, len(ordered), package)}
"""

import base64

import torch
import torch.nn as nn

# ---- the definition's reference, as written there ----
{reference}
# ---- end of the reference ----

{chr(10).join(axis_lines)}
WORKLOAD = {largest}  # which workload's given inputs get_inputs() uses; each input set assigns it

INPUT_SETS = {{
{input_sets},
}}
SMALL_SIZES = {sizes(0)!r}  # the CPU checks run the smallest workload
# FlashInfer-Bench's default evaluator: an element fails where |out - ref| > atol and |out - ref| > rtol * |ref|
TOLERANCE = {tolerance!r}
FLASHINFER = {meta!r}


class Model(nn.Module):
    def forward(self, {params}):
        return run({params})


def get_inputs():
    return [
{inputs}    ]


def get_init_inputs():
    return []


def _tensor(name, shape, dtype):
    given = GIVEN_TENSORS[WORKLOAD].get(name)
    if given is not None:  # from the workload's safetensors file
        given_dtype, given_shape, data = given
        raw = bytearray(base64.b64decode(data))
        return torch.frombuffer(raw, dtype=getattr(torch, given_dtype)).reshape(given_shape).clone()
    # random, as FlashInfer-Bench draws it: normal floats; small floats clamped to [-2, 2]; integers uniform
    if dtype in (torch.float32, torch.float16, torch.bfloat16):
        return torch.randn(shape, dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(shape).clamp(-2.0, 2.0).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.bool)
    low, high = (-128, 128) if dtype == torch.int8 else (-1024, 1024)
    return torch.randint(low, high, shape, dtype=dtype)


def _scalar(name, dtype):
    given = GIVEN_SCALARS[WORKLOAD]
    if name in given:
        return given[name]
    return _tensor(name, (), dtype).item()


GIVEN_SCALARS = {scalars!r}
GIVEN_TENSORS = {tensors!r}
'''
