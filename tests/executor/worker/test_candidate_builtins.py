"""A candidate module runs with builtins of its own: no code from strings, no files, no frames' namespaces,
and an __import__ that imports only the allowed modules. Whatever runs code in the candidate's namespace
(a generated method, say) meets the same builtins."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from adaexplore.executor.policy import ALLOWED_IMPORTS
from adaexplore.executor.worker.confine._importing import candidate_builtins, import_file


def load(tmp_path: Path, source: str, name: str = "builtins_probe"):  # type: ignore[no-untyped-def]
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    try:
        return import_file(name, path, builtins=candidate_builtins(ALLOWED_IMPORTS))
    finally:
        sys.modules.pop(name, None)


def test_allowed_imports_and_ordinary_builtins_work(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        "import torch\nimport torch.nn.functional as F\nfrom triton.language.extra import libdevice\nimport math\n"
        "values = sorted([3, 1, 2]) + [len('ab'), int(math.sqrt(16))]\n"
        "def f(x):\n    return F.relu(torch.full((1,), x)), isinstance(x, object), range(2)\n",
    )
    assert module.values == [1, 2, 3, 2, 4]
    kinds = load(tmp_path, "import torch\nkinds = [type(1), type(None), type(torch.ones(1)).__name__]\n").kinds
    assert kinds == [int, type(None), "Tensor"]
    assert module.f(-1.0)[0].item() == 0.0 and module.f(-1.0)[1] is True


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("import os", ImportError),
        ("from importlib import import_module", ImportError),
        ("x = __import__('sys')", ImportError),
        ("exec('y = 1')", NameError),
        ("eval('1')", NameError),
        ("open('/etc/hostname')", NameError),
        ("g = globals()", NameError),
        ("c = compile('1', 'x', 'eval')", NameError),
        ("setattr(object, 'x', 1)", NameError),
        # a computed name meets the attribute rules at run time
        ("def f():\n    pass\ng = getattr(f, '__glob' + 'als__')", AttributeError),
        ("import torch\nm = getattr(torch, 'sy' + 's')", AttributeError),
        # type(x) takes one argument and hands out neither metaclasses nor the constructors of code
        ("Made = type('Made', (), {})", TypeError),
        ("import torch\nmeta = type(torch.Tensor)", TypeError),
        ("def f():\n    pass\nFunction = type(f)", TypeError),
        ("def g():\n    yield 1\nGenerator = type(g())", TypeError),
        # nor the class of a stream, which would make a stream of the candidate's own
        ("import torch\nStream = type(torch.Stream('cpu'))", TypeError),
    ],
)
def test_what_a_candidate_goes_without(tmp_path: Path, source: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        load(tmp_path, source)


def test_code_run_later_in_the_candidates_namespace_meets_the_same_builtins(tmp_path: Path) -> None:
    # A function of the candidate's, and code executed in its module's namespace by someone else.
    module = load(tmp_path, "def later():\n    return exec\n")
    with pytest.raises(NameError):
        module.later()
    generated: dict[str, object] = {}
    exec("def generated():\n    return __import__('os')\n", module.__dict__, generated)
    with pytest.raises(ImportError, match="a candidate cannot import os"):
        generated["generated"]()  # type: ignore[operator]


@pytest.mark.parametrize("fromlist", [None, ("x",)])
def test_a_candidate_statement_still_cannot_import_a_loaded_module(fromlist: object) -> None:
    from adaexplore.executor.policy import ALLOWED_IMPORTS
    from adaexplore.executor.worker.confine._importing import candidate_builtins

    restricted = candidate_builtins(ALLOWED_IMPORTS)["__import__"]
    with pytest.raises(ImportError):
        restricted("torch.storage", {}, {}, fromlist, 0)


def test_torch_may_import_its_own_loaded_modules_under_a_candidate_frame() -> None:
    from adaexplore.executor.policy import ALLOWED_IMPORTS
    from adaexplore.executor.worker.confine._importing import candidate_builtins

    namespace = {"__builtins__": candidate_builtins(ALLOWED_IMPORTS), "__name__": "candidate"}
    # torch.tensor of a Python number on the CPU imports torch.storage from C (KernelBench problem 3's ModelNew)
    exec("import torch\nvalue = torch.nn.Parameter(torch.tensor(1.5))", namespace)
    assert namespace["value"].detach().item() == 1.5
    # what C code asked for is read from sys.modules by C; the caller gets nothing
    assert namespace["__builtins__"]["__import__"]("os", {}, {}, [], 0) is None


def test_the_tensor_descriptor_is_the_one_module_of_triton_tools_a_candidate_imports(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        "from triton.tools.tensor_descriptor import TensorDescriptor\nfrom triton.tools import tensor_descriptor\n",
    )
    assert module.TensorDescriptor is module.tensor_descriptor.TensorDescriptor
    assert module.TensorDescriptor.__module__ == "triton.tools.tensor_descriptor"
    # the package above it hands out none of its other modules (disasm and compile run programs), whatever the
    # fromlist is made of
    restricted = candidate_builtins(ALLOWED_IMPORTS)["__import__"]

    class Flips:  # falsy when asked first, then a fromlist after all
        asked = 0

        def __bool__(self) -> bool:
            self.asked += 1
            return self.asked > 1

        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(["disasm"])

    for fromlist in (["disasm"], ("tensor_descriptor", "compile"), {"link"}, iter(["disasm"]), ["*"]):
        with pytest.raises(ImportError, match=r"a candidate cannot import triton\.tools"):
            restricted("triton.tools", {}, {}, fromlist, 0)
    # a fromlist that turns truthy once checked imports nothing: what is imported is what was checked
    assert restricted("triton.tools", {}, {}, Flips(), 0).__name__ == "triton"
    with pytest.raises(ImportError):
        load(tmp_path, "from triton.tools import disasm\n")
