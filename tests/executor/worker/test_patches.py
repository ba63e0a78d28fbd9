"""The table of the worker's patches on Triton and torch (worker/confine/_patches.py) against what installing them as a
worker does changes: every function, method and setting of Triton's and torch's modules and classes is noted
before and after, in a process of its own, and inside each context manager that patches for a while."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys

from adaexplore.executor.worker.confine._patches import PATCHES
from tests.conftest import ROOT

_SNAPSHOT = r"""
import gc
gc.disable()  # it imports, notes and ends: the collector would only look through the imports' objects again and again
import json, sys, warnings
warnings.simplefilter("ignore")
import torch, triton
import triton.backends.nvidia.compiler, triton.compiler.code_generator, triton.language.extra.cuda.libdevice
import triton.language.extra.libdevice, triton.runtime.autotuner, triton.runtime.interpreter, triton.runtime.jit
import torch._dynamo.debug_utils, torch._dynamo.repro.after_aot, torch._inductor.config
from triton.runtime.driver import driver

def namespaces():
    found = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "torch" or name.startswith(("torch.", "triton."))):
            continue
        found[name] = vars(module)
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = vars(value)
    for group in ("runtime", "compilation", "nvidia"):
        found[f"triton.knobs.{group}"] = vars(getattr(triton.knobs, group))
    found["triton.runtime.driver.driver"] = vars(driver)
    return found

def snapshot():
    return {space: {a: id(v) for a, v in list(ns.items())} for space, ns in namespaces().items()}

def changed(before, after):
    return sorted(f"{s}.{a}" for s, names in before.items() for a, i in after.get(s, {}).items() if names.get(a) != i)

before = snapshot()
from adaexplore.domain import Backend
from adaexplore.roofline import gpu_spec
from adaexplore.executor.worker.cpu import _interpret_shim
from adaexplore.executor.worker.candidate import _kernel_rules
from adaexplore.executor.worker.candidate._compile_only import activate_compile_only, compiling_for, install_mirrors
from adaexplore.executor.worker.cpu._cuda_on_cpu import cuda_on_cpu, install_device_queries, install_is_cuda
from adaexplore.executor.worker.cost._full_size import shape_only
from adaexplore.executor.worker.confine._guard import _WATCHED_CLASSES
from adaexplore.executor.worker.confine._inductor_env import prepare_inductor
from adaexplore.executor.worker.candidate._launches import LaunchTracker
from adaexplore.executor.worker.cost._static_cost import capture_ptxas_logs

# what the workers of every backend install (one process holds them all: only what changes is compared)
_interpret_shim.install()
_kernel_rules.install()
install_is_cuda()
install_device_queries(gpu_spec("H100"))
LaunchTracker(Backend.interpret).install()
LaunchTracker(Backend.cuda).install()
_interpret_shim.first_config_only()
install_mirrors()
capture_ptxas_logs()
prepare_inductor()
activate_compile_only("cuda:90")
installed = snapshot()
found = {"worker": changed(before, installed)}
for name, context in (("cuda_on_cpu", cuda_on_cpu), ("shape_only", shape_only), ("compiling_for", compiling_for)):
    with context():
        found[name] = changed(installed, snapshot())
    found[name + " after"] = changed(installed, snapshot())
spaces = namespaces().items()
found["classes"] = sorted({space for space, names in spaces if "__dict__" in names or "__module__" in names})
mros = [get().__mro__[:-1] for get in _WATCHED_CLASSES.values()]
found["watched"] = sorted({f"{c.__module__}.{c.__qualname__}" for mro in mros for c in mro})
print(json.dumps(found))
"""


def _installed() -> dict[str, list[str]]:
    # the checkout first, then wherever this interpreter finds its packages (`pip install --target` and PYTHONPATH)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-c", _SNAPSHOT], capture_output=True, text=True, env=env, cwd=ROOT, timeout=240, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_patch_on_triton_and_torch_is_in_the_table_with_its_reason() -> None:
    found = _installed()
    for holds in ("worker", "cuda_on_cpu", "shape_only", "compiling_for"):
        listed = [p.target for p in PATCHES if p.holds == holds]
        unlisted = [t for t in found[holds] if not any(fnmatch.fnmatchcase(t, pattern) for pattern in listed)]
        assert not unlisted, f"patched ({holds}) with no entry in worker/confine/_patches.py: {unlisted}"
        stale = [pattern for pattern in listed if not fnmatch.filter(found[holds], pattern)]
        assert not stale, f"in worker/confine/_patches.py ({holds}) but not patched: {stale}"
        if holds != "worker":
            assert not found[holds + " after"], f"{holds} left its patches behind: {found[holds + ' after']}"
    assert all(p.why and p.by.startswith("_") for p in PATCHES)
    # a candidate that put Triton's own method back where we patched one (the bounds checks of the interpreter's
    # loads, say) is caught by the Guard, which compares the classes it watches after each step
    classes, watched = set(found["classes"]), set(found["watched"])
    owners = {p.target.rsplit(".", 1)[0] for p in PATCHES if p.holds == "worker"}
    unwatched = sorted(owner for owner in owners & classes if owner not in watched)
    assert not unwatched, f"classes patched for the worker's life that the Guard does not watch: {unwatched}"
