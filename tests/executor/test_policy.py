import ast

import pytest

from adaexplore.executor.policy import check_policy, defines_model_new, resolve_dotted

CLEAN = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.language.extra import libdevice

@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, libdevice.tanh(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)

class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self._cache = {}

    def forward(self, x):
        y = F.relu(self.linear(x)).contiguous()
        kernel[(triton.cdiv(y.numel(), 128),)](y, y.numel(), BLOCK=128)
        return y * math.sqrt(2.0)
"""


def codes(source: str) -> list[str]:
    return [v.code for v in check_policy(ast.parse(source))]


def test_a_typical_triton_candidate_breaks_no_rule() -> None:
    assert check_policy(ast.parse(CLEAN)) == []


@pytest.mark.parametrize(
    ("snippet", "code"),
    [
        ("import os", "import"),
        ("import threading", "import"),
        ("from concurrent.futures import ThreadPoolExecutor", "import"),
        ("import ctypes", "import"),
        ("import inspect", "import"),
        ("import sys", "import"),
        ("import gc", "import"),
        ("from importlib import import_module", "import"),
        ("from . import helper", "import"),
        ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True", "banned_api"),
        ("import torch\ntorch.set_float32_matmul_precision('high')", "banned_api"),
        ("import torch\ns = torch.cuda.Stream()", "banned_api"),
        ("import torch\nwith torch.cuda.stream(None):\n    pass", "banned_api"),
        ("import torch\nf = torch.compile(lambda x: x)", "banned_api"),
        ("import torch as T\nT.cuda.synchronize = lambda: None", "monkey_patch"),
        ("import torch\ntorch.Tensor.add = None", "monkey_patch"),
        # modules that allowed modules hold, reached as attributes instead of imports
        ("import torch\nmods = torch.sys.modules", "module_reach"),
        ("import torch\ntorch.os.system('true')", "module_reach"),
        ("import torch\nf = torch.builtins.open", "module_reach"),
        ("import dataclasses\nx = dataclasses.sys", "module_reach"),
        ("import typing\nx = typing.sys", "module_reach"),
        ("import torch\nx = torch.nn.functional.inspect", "module_reach"),
        ("import torch\nx = getattr(torch, 'sys')", "module_reach"),
        ("import torch\nimport functools\nx = functools.reduce(getattr, ['sys'], torch)", "banned_builtin"),
        ("import operator, torch\nx = operator.attrgetter('sys')(torch)", "banned_api"),
        ("import torch\nx = getattr(torch, 'load')", "banned_api"),
        ("import torch\nw = torch.load('weights.pt')", "banned_api"),
        ("import torch\nT = torch.Tensor\nT.add = None", "monkey_patch"),
        ("import torch\nx = torch.ones(1)\ntype(x).add = None", "monkey_patch"),
        ("import torch\nwith torch.overrides.TorchFunctionMode():\n    pass", "banned_api"),
        ("import triton\nx = triton.backends", "banned_api"),
        # annotation strings evaluated as code
        ("import typing\ndef f(x: 'print(1)'): pass\nh = typing.get_type_hints(f)", "banned_api"),
        ("import functools\n@functools.singledispatch\ndef f(a): pass", "banned_api"),
        ("from functools import singledispatch", "banned_api"),
        # frames reached through an exception, in plain or constant getattr form
        ("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    t = e.__traceback__", "introspection"),
        ("def f(tb):\n    return getattr(tb, 'tb_frame')", "introspection"),
        ("def f(fr):\n    return getattr(fr, 'f_back')", "introspection"),
        # a module handed around as a value escapes the rules about its attributes
        ("import torch\nt = torch", "module_value"),
        ("import torch\nm = [torch][0]", "module_value"),
        ("import torch\ndef f(m):\n    return m\nf(torch)", "module_value"),
        ("import torch.nn as nn\nnn.Module.__call__ = None", "monkey_patch"),
        ("import time", "import"),
        ("x = eval('1')", "banned_builtin"),
        ("exec('x = 1')", "banned_builtin"),
        ("f = open('out.txt', 'w')", "banned_builtin"),
        ("g = globals()", "banned_builtin"),
        ("setattr(object, 'x', 1)", "banned_builtin"),
        ("import torch\nv = getattr(torch, 'cu' + 'da')", "banned_builtin"),
        ("import torch\nv = getattr(torch, '_C')", "banned_builtin"),
        ("import torch\nclass Lazy(torch.Tensor):\n    pass", "tensor_subclass"),
        ("class T:\n    def __torch_function__(self, *a):\n        return None", "tensor_subclass"),
        ("import torch\nx = torch._C", "private_attribute"),
        ("def f():\n    return f.__globals__", "introspection"),
        ("def f(e):\n    return e.__traceback__.tb_frame.f_back", "introspection"),
        ("def f(x):\n    return x.numpy().ctypes", "module_reach"),
        ("x = ().__class__.__bases__", "introspection"),
        ("x = __builtins__", "introspection"),
    ],
)
def test_each_rule_names_what_it_catches(snippet: str, code: str) -> None:
    assert code in codes(snippet)


def test_violations_carry_line_and_an_actionable_sentence() -> None:
    violations = check_policy(ast.parse("import math\n\nimport subprocess\n"))
    assert len(violations) == 1
    assert violations[0].line == 3
    assert violations[0].message.startswith("You cannot import subprocess")


def test_a_parameter_is_not_the_module_level_name_it_shadows() -> None:
    source = "import torch\nx = torch.float16\n\ndef g(x):\n    x.data = x.data * 2\n    return x\n"
    assert codes(source) == []
    assert codes("import torch\nx = torch.Tensor\nx.add = None\n") == ["monkey_patch"]


def test_attributes_are_set_on_own_objects_only() -> None:
    allowed = (
        "import torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        lin = nn.Linear(2, 2)\n        lin.bias = None\n        self.lin = lin\n        M.count = 1\n"
    )
    assert codes(allowed) == []
    # a method shadowed on a tensor would run for the evaluator's own calls on it
    assert codes("def forward(x):\n    y = x * 2\n    y.detach = lambda: x\n    return y\n") == ["monkey_patch"]


def test_self_owned_private_attributes_and_super_init_are_allowed() -> None:
    source = "class A:\n    def __init__(self):\n        super().__init__()\n        self._x = 1\n"
    assert check_policy(ast.parse(source)) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("class ModelNew: pass", True),
        ("import torch.nn as nn\nModelNew = nn.Identity", True),
        ("class Model: pass", False),
        ("def make():\n    class ModelNew: pass", False),
    ],
)
def test_model_new_must_be_bound_at_module_level(source: str, expected: bool) -> None:
    assert defines_model_new(ast.parse(source)) is expected


def real_codes(source: str) -> list[str]:
    """The rules broken, names of allowed imports resolved to their objects as the candidate's worker does."""
    return [v.code for v in check_policy(ast.parse(source), resolve=resolve_dotted)]


@pytest.mark.parametrize(
    ("snippet", "code"),
    [
        # a banned function or module under another module's name
        ("import torch\nx = torch.nn.quantized.modules.conv.ops", "banned_api"),
        ("import triton.language as tl\nk = tl.core.knobs", "module_reach"),
        ("import torch\nd = torch.nn.parallel.distributed.dist.all_reduce", "banned_api"),
        # a module outside the allowed packages
        ("import typing\nb = typing.sys", "module_reach"),
        # a module handed around as a value, then used where the rules no longer see it
        ("import torch\nm = torch.nn.modules.module", "module_value"),
        ("import torch\ndef f(self):\n    return self._C\nf(torch.nn.modules.module)", "module_value"),
        ("from torch.nn import modules\nx = [modules][0]", "module_value"),
        # objects that come from modules out of bounds, whatever module holds them
        ("import torch\nd = torch.nn.parallel.distributed.dataclass", "banned_api"),
        ("import torch\nl = torch.autograd.graph.log", "module_reach"),
        ("import triton\nc = triton.compile", "banned_api"),
        # the same banned function re-exported by another module, and streams under other names
        ("import torch\ng = torch.autograd.profiler_util.attrgetter('x')", "banned_api"),
        ("import torch\ns = torch.cuda.streams.Stream()", "banned_api"),
        ("import torch\ns = torch.autograd.grad_mode.set_grad_enabled(False)", "banned_api"),
    ],
)
def test_resolved_names_are_checked_as_what_they_are(snippet: str, code: str) -> None:
    assert code in real_codes(snippet)


def test_a_typical_triton_candidate_breaks_no_rule_when_its_names_are_resolved() -> None:
    assert real_codes(CLEAN) == []


@pytest.mark.parametrize(
    ("snippet", "code"),
    [
        # `case C(name=...)` reads C's attribute name of the subject
        (
            "def f(x):\n    match x:\n        case object(__globals__={'__builtins__': b}):\n            return b",
            "introspection",
        ),
        ("def f(x):\n    match x:\n        case object(sys=s):\n            return s", "module_reach"),
        # special attributes other than protocol methods
        ("def f(t):\n    return t.numpy().__array_namespace__()", "introspection"),
        ("def f(a):\n    a.tofile('x.bin')", "module_reach"),
        ("import torch\nx = torch.storage.np", "module_reach"),
        ("import torch\nx = torch.nn.functional.torch.load", "module_reach"),
        ("import torch\ns = torch.initial_seed()", "introspection"),
        ("import torch\ns = torch.cuda.default_generators[0]", "introspection"),
        ("def f(m):\n    return m.__x", "private_attribute"),
        # code generators fed names, namespaces handed out, classes from dictionaries
        ("import dataclasses", "import"),
        ("class H:\n    __annotations__ = {'a or exec(p)': int}", "introspection"),
        ("import triton\ndef f():\n    pass\nscope = triton.JITFunction(f).get_capture_scope()", "introspection"),
        ("H = type('H', (), {})", "banned_builtin"),
        ("from torch import sys", "module_reach"),
        ("import torch\ns = torch.accelerator.set_stream", "banned_api"),
        ("import torch\ntorch.cuda.tunable.write_file('x')", "banned_api"),
        # the import system, code from strings and operator hooks under other names
        ("import triton.language.extra as e\nb = e.modules['builtins']", "introspection"),
        ("import triton.language.extra as e\nd = e.spec.loader.get_data('/etc/hostname')", "introspection"),
        ("import torch\nu = torch.CompilationUnit('def f(x):\\n    return x')", "banned_api"),
        ("def f(k):\n    return k.used_global_vals", "introspection"),
        ("class H:\n    __annotations__['a or exec(p)'] = int", "introspection"),
        ("class M:\n    for __torch_dispatch__ in [print]:\n        pass", "introspection"),
        ("import math as __builtins__", "introspection"),
    ],
)
def test_the_detours_found_by_red_teaming_are_closed(snippet: str, code: str) -> None:
    assert code in codes(snippet)


def test_protocol_dunders_stay_allowed() -> None:
    source = (
        "class A:\n    def __init__(self):\n        super().__init__()\n"
        "    def f(self, x):\n        return x.__add__(1), self.__call__\n"
    )
    assert codes(source) == []


@pytest.mark.parametrize(
    ("snippet", "code"),
    [
        # code objects and frames, reached through coroutines, generators and tracebacks under any prefix
        ("async def f(x):\n    yield x", "introspection"),
        ("def f(g):\n    return g.ag_code", "introspection"),
        ("def f(c):\n    return c.co_names", "introspection"),
        ("def f(frame):\n    return frame.f_lasti", "introspection"),
        # trusted code that reads or sets the attributes it is told to
        ("import functools\ndef f(a, b):\n    functools.update_wrapper(a, b, assigned=('x',))", "banned_api"),
        ("import functools\n@functools.wraps(print)\ndef f():\n    pass", "banned_api"),
        ("class S:\n    def __setattr__(self, k, v):\n        pass", "introspection"),
        ("class S:\n    def __reduce_ex__(self, p):\n        return (print, ())", "introspection"),
        ("class S:\n    def __instancecheck__(self, o):\n        return True", "introspection"),
        ("def __getattr__(name):\n    return name", "introspection"),
        # metaclasses: classes made from namespaces of strings
        ("class M(type):\n    pass", "banned_builtin"),
        ("make = type", "banned_builtin"),
        ("def f(x):\n    return isinstance(x, type)", "banned_builtin"),
        ("import abc\nP = abc.ABCMeta('P', (), {})", "banned_api"),
        ("import abc\nclass P(abc.ABC, metaclass=abc.ABCMeta):\n    pass", "introspection"),
        # positional class patterns read the attributes __match_args__ names
        ("def f(x, P):\n    match x:\n        case P(v):\n            return v", "introspection"),
        ("int = object\ndef f(x):\n    match x:\n        case int(v):\n            return v", "introspection"),
        # format fields read attributes and items by name
        ("def f(x):\n    return '{0.__globals__}'.format(x)", "introspection"),
        ("def f(x):\n    return '{0[k]}'.format_map(x)", "introspection"),
        ("def f(x, s):\n    return s.format(x)", "introspection"),
        ("def f(x):\n    return str.format('{0}', x)", "introspection"),
        # names of internals as strings, and names nobody defined (Triton's interpreter adds its own)
        ("names = ('__globals__',)", "introspection"),
        ("names = {'gi_frame': 1}", "introspection"),
        ("def f():\n    return inspect.stack()", "undefined_name"),
        # files and shared libraries
        ("import torch\nx = torch.onnx.export", "banned_api"),
        ("import torch\na = torch.cuda.memory.CUDAPluggableAllocator", "banned_api"),
    ],
)
def test_the_fifth_round_of_red_teaming_is_closed(snippet: str, code: str) -> None:
    assert code in codes(snippet)


@pytest.mark.parametrize(
    "snippet",
    [
        "import torch\nM = torch.autograd.function.FunctionMeta",
        # abc.ABCMeta held by another module: banned by identity
        "import torch\nM = torch.ao.quantization.observer.ABCMeta",
    ],
)
def test_metaclasses_are_refused_under_any_name(snippet: str) -> None:
    assert "banned_api" in [v.code for v in check_policy(ast.parse(snippet), resolve=resolve_dotted)]


def test_plain_uses_of_type_format_match_and_protocol_methods_stay_allowed() -> None:
    source = """
def describe(x, n):
    kind = type(x).__name__
    text = "{}: {:.3f} {name}".format(kind, 1.0, name="x")
    match n:
        case int(k):
            return k
        case {"a": v}:
            return v
        case [first, *rest]:
            return first
    if __name__ == "__main__":
        return text
    return x


class Box:
    def __init__(self, v):
        self.v = v

    def __getitem__(self, i):
        return self.v[i]

    def __len__(self):
        return 1

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0
"""
    assert codes(source) == []


@pytest.mark.parametrize(
    ("snippet", "code"),
    [
        # addresses, which a kernel could turn into pointers
        ("def f(x):\n    return id(x)", "banned_builtin"),
        # graphs replay work out of sight of the launch counter; assembly reads any address
        ("import torch\ng = torch.cuda.CUDAGraph()", "banned_api"),
        ("import torch\ndef f():\n    with torch.cuda.graph(None):\n        pass", "banned_api"),
        ("import triton.language as tl\nasm = tl.inline_asm_elementwise", "banned_api"),
    ],
)
def test_the_sixth_round_of_red_teaming_is_closed(snippet: str, code: str) -> None:
    assert code in codes(snippet)


def test_the_allocators_functions_are_refused_under_torch_cuda_too() -> None:
    # torch.cuda re-exports the functions of torch.cuda.memory; refused by identity once names are resolved
    violations = check_policy(
        ast.parse("import torch\nfree = torch.cuda.caching_allocator_delete"), resolve=resolve_dotted
    )
    assert [v.code for v in violations] == ["banned_api"]
    assert "torch.cuda.memory" in violations[0].message


def test_getattr_with_a_literal_name_is_checked_as_the_attribute_it_reads() -> None:
    # the same object as torch.storage.copy, a module out of bounds, whichever way it is written
    for source in ("import torch\nc = torch.storage.copy", "import torch\nc = getattr(torch.storage, 'copy')"):
        assert "module_reach" in [v.code for v in check_policy(ast.parse(source), resolve=resolve_dotted)]


@pytest.mark.parametrize(
    ("snippet", "code"),
    [
        # an import that binds a builtin's name turns the rules about that builtin off, even if it fails
        ("try:\n    from typing import getattr\nexcept ImportError:\n    pass", "import"),
        ("import torch as type", "import"),
        # enum writes an enum's members into the module its module= argument names
        ("import enum", "import"),
        # a base class named through a variable, or a tensor class of another name
        ("import torch\nBase = torch.Tensor\nclass Lazy(Base):\n    pass", "tensor_subclass"),
        # special attributes set through a method's first parameter, which may be any object
        ("class Helper:\n    def install(self, value):\n        self.__enter__ = value", "monkey_patch"),
        # a parameter named after a class of the module's, which may then be any object
        ("class Helper:\n    pass\ndef install(Helper):\n    Helper.run = None", "monkey_patch"),
        ("def helper():\n    pass\nfor helper in range(2):\n    pass", "monkey_patch"),
        # a kernel's compiled handle launches with integers as pointers
        ("import triton\n@triton.jit\ndef k(x):\n    pass\nc = k.warmup(1, grid=(1,))", "introspection"),
    ],
)
def test_the_eighth_round_of_red_teaming_is_closed(snippet: str, code: str) -> None:
    assert code in codes(snippet)


def test_tensor_classes_of_other_names_are_refused_as_bases_once_resolved() -> None:
    source = "import torch\nclass Kept(torch.nn.Buffer):\n    pass"
    assert "tensor_subclass" in [v.code for v in check_policy(ast.parse(source), resolve=resolve_dotted)]
    module = "import torch.nn as nn\nclass Block(nn.Module):\n    pass"
    assert check_policy(ast.parse(module), resolve=resolve_dotted) == []


def source_codes(source: str) -> list[str]:
    """The rules broken, checked with the text as it stands in the file (as the evaluator checks)."""
    return [v.code for v in check_policy(ast.parse(source), source=source)]


@pytest.mark.parametrize(
    "snippet",
    [
        # Triton cuts a kernel's source at a `def` line: the compiler at the first, the interpreter at the last
        'def k():\n    """\ndef k(x):\n    """\n    return 1',
        'def k():\n    """doc\n    def k(x):\n    """',
        "@(lambda f, s='''\ndef k(a):\n  ''': f)\ndef k():\n    pass",
        # a backslash at the end of a line continues the string onto a line that starts with def
        "x = 'abc\\\ndef k(a): pass'",
        'y = 1\nx = f"""{y}\ndef k(a):\n"""',
        "x = b'''\n  def k():\n'''",
    ],
)
def test_a_string_holding_a_def_line_is_refused(snippet: str) -> None:
    assert "kernel_source" in source_codes(snippet)
    # without the file's text the string's value is read: the same verdict where the value holds the line
    if "\\\n" not in snippet:
        assert "kernel_source" in codes(snippet)


def test_strings_that_only_mention_def_stay_allowed() -> None:
    source = 'def k():\n    """Compute.\n\n    define things; the default is fine\n    """\nx = "def k(a)"'
    assert source_codes(source) == []


@pytest.mark.parametrize(
    "snippet",
    [
        # the rules trust self, cls and ctx as a method's own object: no other binding may take the name
        "import torch\nself = torch.Tensor\nself._make_subclass",
        "import torch\ndef f(self):\n    return self._make_subclass\nf(torch.Tensor)",
        "g = lambda self: self._x",
        "class A:\n    def m(self, cls):\n        cls._x = 1",
        "class A:\n    def m(self):\n        def h(self):\n            return self._q\n        return h",
        "for self in [1]:\n    pass",
        "try:\n    pass\nexcept Exception as self:\n    pass",
        "import math as self",
        "if (ctx := 3):\n    pass",
    ],
)
def test_the_names_trusted_as_a_methods_object_are_bound_by_methods_only(snippet: str) -> None:
    assert "monkey_patch" in source_codes(snippet)


def test_methods_classmethods_autograd_functions_and_closures_keep_their_trust() -> None:
    source = (
        "import torch\n"
        "class A:\n    def m(self, x):\n        self._c = x\n        def h():\n            return self._c\n"
        "        return h\n    @classmethod\n    def k(cls):\n        return cls._c\n"
        "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        ctx.save_for_backward(x)\n        return x\n"
    )
    assert source_codes(source) == []


# A method whose first parameter the rules trust (self, cls, ctx), read through its class, takes any object
# there: Helper.go(kernel) would read the kernel's private attributes as Helper's own.
DETOUR_HELPER = "class Helper:\n    def go(self, text):\n        return self._unsafe_update_src(text)\n"
INSTEAD = "call the method on an instance of your class"


@pytest.mark.parametrize(
    ("snippet", "fragment"),
    [
        ("Helper.go(k, 'x')", "You cannot read the method go through Helper"),
        ("f = Helper.go\nf(k, 'x')", "You cannot read the method go through Helper"),
        ("g = getattr(Helper, 'go')", "You cannot read the method go through Helper"),
        ("import functools\np = functools.partial(Helper.go, k)", "You cannot read the method go through Helper"),
        ("m = list(map(Helper.go, [k], ['x']))", "You cannot read the method go through Helper"),
        ("d = Helper.go.__get__(k)", "You cannot read the method go through Helper"),
        ("h = Helper()\nh.m = Helper.go", "You cannot read the method go through Helper"),
        ("class Box:\n    def __init__(self):\n        self.v = 1\nBox.__init__(k)", "the method __init__ through Box"),
        ("class Sub(Helper):\n    pass\nSub.go(k, 'x')", "You cannot read the method go through Sub"),
        (
            "class Outer:\n    class Inner:\n        def go(self):\n            return self._x\nOuter.Inner.go(k)",
            "You cannot read the method go through Inner",
        ),
        ("def f(h):\n    return type(h).go(k, 'x')", "You cannot read the method go through type(...)"),
        ("class M:\n    def run(self):\n        return type(self).go(k, 'x')", "through type(...)"),
        ("class M:\n    @classmethod\n    def run(cls):\n        return cls.go(k, 'x')", "through cls"),
        (
            "class M(Helper):\n    @classmethod\n    def run(cls):\n        return super().go(k, 'x')",
            "You cannot read the method go through super() outside a plain method",
        ),
        (
            "class M(Helper):\n    def run(self):\n        def inner(o):\n            return super().go(o)\n"
            "        return inner",
            "through super() outside a plain method",
        ),
        ("c = Helper\nc.go(k, 'x')", "You cannot use the class Helper as a value"),
        ("def call(kind):\n    return kind.go(k, 'x')\ncall(Helper)", "You cannot use the class Helper as a value"),
        ("kinds = [Helper]", "You cannot use the class Helper as a value"),
        ("class M:\n    @classmethod\n    def make(cls):\n        return [cls]", "You cannot use the class cls as"),
    ],
)
def test_methods_read_through_their_class_are_refused(snippet: str, fragment: str) -> None:
    violations = check_policy(ast.parse(DETOUR_HELPER + "k = 1\n" + snippet))
    messages = [v.message for v in violations if v.code == "method_detour"]
    assert any(fragment in m for m in messages), [v.message for v in violations]
    assert all(INSTEAD in m for m in messages if "through" in m or "as a value" in m)


@pytest.mark.parametrize(
    ("snippet", "fragment"),
    [
        # an autograd Function's static forward takes ctx; torch passes it through apply, anyone else may not
        (
            "import torch\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            "        ctx.elapsed_time = x\nFn.forward(torch.cuda.Event, 1)",
            "You cannot read the method forward through Fn",
        ),
        (
            "import torch\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            "        return x\nf = Fn()",
            "You cannot create instances of the autograd Function Fn; call Fn.apply(...)",
        ),
        # a static method takes any first argument, through an instance too
        ("class H:\n    @staticmethod\n    def go(self, t):\n        return t", "the static method go self"),
        ("class H:\n    @staticmethod\n    def forward(ctx, t):\n        return t", "the static method forward ctx"),
        # a decorator receives the bare function
        (
            "KEPT = []\ndef keep(f):\n    KEPT.append(f)\n    return f\nclass H:\n    @keep\n    def go(self):\n"
            "        return 1",
            "You cannot decorate the method go with keep",
        ),
        (
            "import functools\ndef keep(f):\n    return f\nclass H:\n    @functools.partial(keep)\n"
            "    def go(self):\n        return 1",
            "You cannot decorate the method go with functools.partial(keep)",
        ),
        (
            "import functools\nclass H:\n    @functools.partial\n    def go(self):\n        return 1",
            "You cannot decorate the method go with functools.partial",
        ),
        # in the class body a method is the bare function
        ("class H:\n    def go(self):\n        return 1\n    raw = staticmethod(go)", "the method go as a value"),
        ("class H:\n    def go(self):\n        return 1\n    table = [go]", "the method go as a value"),
        ("class H:\n    def go(self):\n        return 1\n    def f(self, g=go):\n        return g", "method go"),
        # super() bound to anything but self, and super handed around
        ("class H:\n    def go(self, o):\n        return super(H, o).go()", "You cannot call super with arguments"),
        ("class H:\n    def go(self):\n        s = super\n        return s", "You cannot use super except"),
        # a kernel is never called as a method: no trusted names there
        (
            "import triton\nclass H:\n    @triton.jit\n    def k(self, x):\n        pass",
            "You cannot name a kernel's parameter self",
        ),
        # bases named, not computed: a subclass of a class taken from an object inherits its private methods
        (
            "import triton\n@triton.jit\ndef k(x):\n    pass\nclass R(type(k.rewriter)):\n    pass",
            "You cannot derive from type(k.rewriter)",
        ),
        ("def base():\n    return object\nclass R(base()):\n    pass", "You cannot derive from base()"),
        ("Base = object\nclass R(Base):\n    pass", "You cannot derive from Base"),
    ],
)
def test_other_ways_to_a_bare_method_are_refused(snippet: str, fragment: str) -> None:
    messages = [v.message for v in check_policy(ast.parse(snippet))]
    assert any(fragment in m for m in messages), messages


@pytest.mark.parametrize(
    ("snippet", "code"),
    [
        # the old ways in stay closed: a class's namespace and a bound method's function
        (DETOUR_HELPER + "d = Helper.__dict__['go']", "introspection"),
        (DETOUR_HELPER + "d = vars(Helper)", "banned_builtin"),
        (DETOUR_HELPER + "class M:\n    def f(self):\n        return self.__class__", "introspection"),
        (DETOUR_HELPER + "h = Helper()\nf = h.go.__func__", "introspection"),
        (DETOUR_HELPER + "h = Helper()\nf = getattr(h, '_x')", "banned_builtin"),
        # hasattr reads the attribute (and runs its getter) to answer
        ("import torch\nf = hasattr(torch, '_C')", "private_attribute"),
        # inside a kernel, self (a closure of the method around it) is not trusted
        (
            "import triton\nclass M:\n    def run(self):\n        @triton.jit\n        def k(x):\n"
            "            v = self._secret\n        return k",
            "private_attribute",
        ),
    ],
)
def test_private_attributes_stay_out_of_reach_by_other_paths(snippet: str, code: str) -> None:
    assert code in codes(snippet)


HONEST_CLASSES = """
import functools
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class Settings:
    BLOCK = 128

    def __init__(self, block):
        self.block = block
        self._cache = {}

    @classmethod
    def default(cls):
        return cls(cls.BLOCK)

    @staticmethod
    def grid(n, block):
        return (triton.cdiv(n, block),)

    @property
    def half(self):
        return self.block // 2

    @half.setter
    def half(self, value):
        self.block = value * 2

    @functools.cache
    def doubled(self):
        return self.block * 2


class Double(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(ctx, x, settings):
        ctx.save_for_backward(x)
        ctx.block = settings.block
        y = x.clone()
        kernel[Settings.grid(y.numel(), settings.block)](y, y.numel(), BLOCK=settings.block)
        return y * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2, None


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self._settings = Settings.default()

    def forward(self, x):
        return Double.apply(x, self._settings)


class ModelNew(Base):
    NAME = "double"

    def __init__(self, scale):
        super().__init__()
        nn.Module.__init__(self)
        self.scale = scale
        self.label = ModelNew.__name__ + ModelNew.NAME + type(self).__name__

    @torch.no_grad()
    def check(self, other: Base) -> bool:
        kept: list[Settings] = [self._settings]
        if hasattr(self, "_settings") and isinstance(other, (ModelNew, Base)) and type(other) is ModelNew:
            return issubclass(type(other), Base)
        return super(ModelNew, self).forward(other)

    def forward(self, x):
        try:
            return super().forward(x) * self.scale
        except ValueError:
            raise
"""


def test_the_honest_class_idioms_stay_allowed() -> None:
    assert codes(HONEST_CLASSES) == []
    assert real_codes(HONEST_CLASSES) == []
