"""The policy refuses hacks, not idioms (issue 27, item 8).

honest_corpus/ holds complete candidates in the styles honest PyTorch and Triton code is written in: autograd
Functions whose parameters are named input and grad_output, caches on self read with getattr(self, "_name",
None), parameters initialized as nn.Linear and nn.Conv2d initialize them (nn.init and its fan helper),
super(ModelNew, self).__init__(), autotune configs, heuristics, static and class methods, properties, typed
helpers, NamedTuple settings, libdevice, module constants. Every one passes the static policy as the worker
runs it. The idioms' look-alikes that are hacks (the builtin input read where no parameter shadows it, private
attributes of other objects, getattr with another object as self) are still refused, statically or at run time.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adaexplore.executor import Evaluator, Status, load_task
from adaexplore.executor.policy import ALLOWED_IMPORTS, check_policy, defines_model_new, resolve_dotted
from adaexplore.executor.policy._facts import _import_aliases, _is_kernel
from adaexplore.executor.worker.confine._faults import ReachRefused
from adaexplore.executor.worker.confine._importing import candidate_builtins
from tests.conftest import fast_settings

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
CORPUS = HERE / "honest_corpus"
TASKS = ROOT / "examples" / "tasks"
SCALE_RELU = HERE.parent / "executor" / "data" / "scale_relu_task.py"

# the task each corpus file computes, by the file's prefix
TASK_OF = {
    "conv": TASKS / "conv2d_activation.py",
    "elementwise": TASKS / "elementwise_chain.py",
    "gemm": TASKS / "gemm_epilogue.py",
    "layernorm": TASKS / "layernorm.py",
    "mlp": TASKS / "mlp.py",
    "rmsnorm": TASKS / "rmsnorm_bf16.py",
    "softmax": TASKS / "row_softmax.py",
    "sum_reduction": TASKS / "sum_reduction.py",
    "scale_relu": SCALE_RELU,
}
FILES = sorted(CORPUS.glob("*.py"))


def task_of(path: Path) -> Path:
    prefixes = [p for p in TASK_OF if path.stem.startswith(p + "_")]
    assert prefixes, f"{path.name} starts with none of {sorted(TASK_OF)}: name it after its task"
    return TASK_OF[max(prefixes, key=len)]


def test_the_corpus_is_a_corpus() -> None:
    assert len(FILES) >= 15
    for path in FILES:
        tree = ast.parse(path.read_text())
        assert defines_model_new(tree), path.name
        aliases = _import_aliases(tree)
        assert any(_is_kernel(node, aliases) for node in ast.walk(tree)), f"{path.name} has no Triton kernel"
        assert task_of(path).is_file()


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_each_honest_kernel_passes_the_policy(path: Path) -> None:
    source = path.read_text()
    # as the caller checks it (no torch), and as the worker does, with names resolved against the real modules
    assert check_policy(ast.parse(source), source=source) == []
    assert check_policy(ast.parse(source), resolve=resolve_dotted, source=source) == []


def _codes(source: str) -> list[tuple[str, str]]:
    return [(v.code, v.message) for v in check_policy(ast.parse(source), resolve=resolve_dotted, source=source)]


READ_INPUT = "You cannot read input in a candidate."

# (snippet, a fragment of the message it must get): the builtin reached where no function's own name shadows it
STILL_REFUSED = [
    ("def forward(input):\n    return input\n\nx = input\n", READ_INPUT),  # beside a shadowing parameter
    ("def f(x, y=input):\n    return x\n", READ_INPUT),  # a default runs in the scope around
    ("@input\ndef f(input):\n    return input\n", READ_INPUT),  # as does a decorator
    ("def f():\n    global input\n    return input\n", READ_INPUT),
    ("def f(input):\n    def g():\n        global input\n        return input\n    return g\n", READ_INPUT),
    ("class C:\n    input = 3\n\n    def m(self):\n        return input\n", READ_INPUT),  # class names stay inside
    ("class C:\n    x = input\n    input = 3\n", READ_INPUT),  # read before the class binds it
    ("input = 3\n\n\ndef f():\n    return input\n", READ_INPUT),  # a module binding may not have run
    ("def f(xs):\n    return [input for x in xs]\n", READ_INPUT),
    ("def f(input):\n    return [x for x in input]\n\ny = [x for x in input]\n", READ_INPUT),
    ("def f(x):\n    return [(input := 1) for _ in x]\n\ny = input\n", READ_INPUT),
    ("y = [(input := 1) for _ in range(2)] and input\n", READ_INPUT),
    ("def f(id):\n    return id\n\nz = id(f)\n", "You cannot use id()"),
    ("def f(type):\n    return type\n\nT = type\n", "You cannot use type except as type(x)"),
    ("def f(getattr):\n    return getattr\n\ng = getattr\n", "You cannot pass getattr around"),
    ("def f(super):\n    return super\n\ns = super\n", "You cannot use super except as super().method(...)"),
    # private attributes of objects other than self, and private names of modules other than nn.Linear's helpers
    ("import torch\n\n\ndef f(t):\n    return getattr(t, '_version', None)\n", "private one of an object other"),
    ("import torch.nn as nn\n\nf = nn.init._no_grad_uniform_\n", "private attribute ._no_grad_uniform_"),
    ("from torch.nn.init import _no_grad_fill_\n", "private attribute ._no_grad_fill_"),
    ("import torch\n\nC = torch._C\n", "private attribute ._C"),
    ("class C:\n    def m(self):\n        return getattr(self, '__dict__')\n", "You cannot use .__dict__"),
    ("class C:\n    def m(self, name):\n        return getattr(self, name)\n", "computed name"),
    # a method's name is no module-level function: setting attributes through it is setting them on anything
    ("class C:\n    def scale(self):\n        return 1\n\n\ndef f(scale):\n    scale.x = 1\n", "set attributes of"),
]


@pytest.mark.parametrize(("source", "reason"), STILL_REFUSED, ids=[str(i) for i in range(len(STILL_REFUSED))])
def test_the_builtins_and_private_names_are_still_refused_outside_their_scope(source: str, reason: str) -> None:
    found = _codes(source)
    assert any(reason in message for _, message in found), found


def test_a_parameter_shadows_the_builtin_only_inside_its_function() -> None:
    shadowed = "def f(input):\n    def g():\n        return input\n    return [input for _ in range(2)], g\n"
    assert _codes(shadowed) == []
    outside = shadowed + "x = input\n"
    assert [(v.line, v.message) for v in check_policy(ast.parse(outside), source=outside)] == [(5, READ_INPUT)]


def test_getattr_of_a_private_name_checks_at_run_time_that_the_object_is_the_candidates_own() -> None:
    names = candidate_builtins(ALLOWED_IMPORTS)
    checked_getattr = names["getattr"]
    with pytest.raises(
        ReachRefused, match=re.escape("You cannot use ._cache of a Thing object through a method's first")
    ):
        checked_getattr(type("Thing", (), {"_cache": 1})(), "_cache", None)
    with pytest.raises(ReachRefused, match=re.escape("You cannot use .__dict__")):
        checked_getattr(object(), "__dict__")
    assert checked_getattr(ReachRefused("x"), "args") == ("x",)


@pytest.fixture(scope="module")
async def timed_evaluator(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Evaluator]:
    # three interpreted matmuls per trial: a trial gets a minute on a loaded machine
    settings = fast_settings(
        tmp_path_factory.mktemp("honest"), trial_timeout_s=60.0, time_on_cpu=True, min_reps=12, timing_budget_ms=50.0
    )
    async with Evaluator(settings) as evaluator:
        yield evaluator


@pytest.mark.anyio
async def test_getattr_with_another_object_as_self_is_refused_when_it_runs(timed_evaluator: Evaluator) -> None:
    source = (HERE / "scope_hacks" / "h21_getattr_runtime_detour.py").read_text()
    assert check_policy(ast.parse(source), resolve=resolve_dotted, source=source) == []  # out of the rules' sight
    result = await timed_evaluator.evaluate(load_task(SCALE_RELU), source)
    assert result.status is Status.rejected, result.message
    assert "You cannot use ._unsafe_update_src of a" in result.message, result.message
    assert "through a method's first parameter" in result.message


@pytest.mark.anyio
async def test_a_cache_on_self_read_with_getattr_runs_ok(timed_evaluator: Evaluator) -> None:
    # the worker's getattr lets the candidate's own object through (mlp_cached_weights reads its cache so)
    path = CORPUS / "mlp_cached_weights.py"
    result = await timed_evaluator.evaluate(load_task(task_of(path)), path.read_text())
    assert result.status is Status.ok, result.message
    assert result.correctness is not None and all(r.passed for r in result.correctness.rechecks)


def test_an_autograd_function_with_input_parameters_profiles_ok_end_to_end() -> None:
    # the command a user runs, in a real subprocess: `adaexplore profile TASK KERNEL`
    path = CORPUS / "elementwise_autograd_input.py"
    run = subprocess.run(
        [sys.executable, "-m", "adaexplore", "profile", str(task_of(path)), str(path), "--json", "-"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    verdict = json.loads(run.stdout)
    assert verdict["status"] == "ok", verdict.get("message")
