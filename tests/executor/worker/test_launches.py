"""What the launch hook counts on a GPU, fed the object Triton's launcher hands it (a `LazyDict`).

The GPU suites run the same hook from real launches (`tests/adversarial`: the empty grid, the side
stream); these tests keep its rules checked on machines without one.
"""

import json
import os
import re
import subprocess
import sys
import textwrap

from triton.compiler.compiler import LazyDict

from adaexplore.domain import Backend
from adaexplore.executor.worker.candidate._kernel_sources import def_line_source
from adaexplore.executor.worker.candidate._launches import LaunchTracker, _launch_facts


def launch(name: str, stream: int, grid: tuple[int, ...]) -> LazyDict:
    # as Triton builds it: name, function and stream, then the kernel's launch_metadata with the grid
    facts = LazyDict({"name": name, "function": 0, "stream": stream})
    facts.add(_launch_facts, (grid, None, {}))
    return facts


def counting_tracker(stream: int) -> LaunchTracker:
    tracker = LaunchTracker(Backend.cuda)
    tracker.kernels = {"scale_relu"}
    tracker.counting, tracker._stream = True, stream
    return tracker


def test_a_launch_on_the_current_stream_with_programs_counts() -> None:
    tracker = counting_tracker(stream=0)
    tracker._enter(launch("scale_relu", 0, (4, 1, 1)))
    assert tracker.launches == ["scale_relu"] and not tracker.empty and not tracker.refusals


def test_a_grid_of_no_programs_is_not_a_launch() -> None:
    tracker = counting_tracker(stream=0)
    for grid in [(0, 1, 1), (4, 0, 1), (4, 1, 0)]:
        tracker._enter(launch("scale_relu", 0, grid))
    assert tracker.launches == [] and tracker.empty == ["scale_relu"] * 3


def test_a_launch_on_another_stream_is_refused() -> None:
    tracker = counting_tracker(stream=0)
    tracker._enter(launch("scale_relu", 0x5EED, (4, 1, 1)))
    assert len(tracker.refusals) == 1
    assert "You cannot launch kernels on a stream of your own: kernel scale_relu" in tracker.refusals[0]


def test_kernels_that_are_not_the_candidates_and_launches_outside_counting_are_ignored() -> None:
    tracker = counting_tracker(stream=0)
    tracker._enter(launch("torch_inductor_kernel", 0x5EED, (0, 1, 1)))
    tracker.counting = False
    tracker._enter(launch("scale_relu", 0x5EED, (0, 1, 1)))
    assert tracker.launches == [] and tracker.empty == [] and tracker.refusals == []


def test_a_kernels_source_starts_at_its_own_def_line_where_triton_would_start_elsewhere() -> None:
    honest = ["@triton.jit\n", "def k(x):\n", "    pass\n"]
    assert def_line_source(honest) == "def k(x):\n    pass\n"
    # a decorator's string holds a def line: Triton's cut (its first `^def` line) starts inside the string
    hidden = [
        "    @(lambda f, s='''\n",
        "    def k(x):\n",
        "        x.evil()\n",
        "    ''': f)\n",
        "    @triton.jit\n",
        "    def k(x):\n",
        "        pass\n",
    ]
    src = textwrap.dedent("".join(hidden))
    tritons_cut = src[re.search(r"^def\s+\w+\s*\(", src, re.MULTILINE).start() :]
    assert def_line_source(hidden) == "def k(x):\n    pass\n" != tritons_cut


COMPILE_PRELUDE = """
import json, sys
import torch, triton, triton.language as tl
from adaexplore.domain import Backend
from adaexplore.executor.worker.candidate._launches import LaunchTracker
from adaexplore.executor.worker.confine._importing import import_file
BACKEND = Backend(sys.argv[1])
if BACKEND is Backend.interpret:
    from adaexplore.executor.worker.cpu import _interpret_shim
    _interpret_shim.install()
else:
    from adaexplore.executor.worker.candidate._compile_only import activate_compile_only
    activate_compile_only("cuda:90")
tracker = LaunchTracker(BACKEND)
tracker.install()
candidate = import_file("adaexplore_candidate", sys.argv[2])


def attempt(call):
    try:
        call()
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
"""


def run_worker(tmp_path, backend: str, kernels: str, body: str) -> dict:  # type: ignore[no-untyped-def]
    """Run `body` in a fresh process with the tracker installed for `backend`, and `kernels` imported as the
    candidate's module `candidate` (Triton reads kernels from a real file)."""
    (tmp_path / "candidate.py").write_text("import torch, triton, triton.language as tl\n" + textwrap.dedent(kernels))
    script = tmp_path / "script.py"
    # the collector off while the prelude imports torch and triton, then on past what they made, as in a worker
    script.write_text(f"import gc\ngc.disable()\n{COMPILE_PRELUDE}gc.freeze()\ngc.enable()\n{textwrap.dedent(body)}")
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"), HOME=str(tmp_path))
    env.pop("TRITON_INTERPRET", None)
    if backend == "interpret":
        env["TRITON_INTERPRET"] = "1"
    done = subprocess.run(
        [sys.executable, str(script), backend, str(tmp_path / "candidate.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


KERNEL = """
@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x / tl.sum(x, axis=0) + tl.max(x, axis=0) + x.sum(), mask=m)


@triton.jit
def other(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 3.0)
"""


def test_a_kernel_whose_source_changed_after_it_was_made_is_refused_when_compiled(tmp_path) -> None:
    result = run_worker(
        tmp_path,
        "compile",
        KERNEL,
        """
        x = torch.ones(16)
        candidate.k._unsafe_update_src(candidate.other._src.replace("def other", "def k"))
        print(json.dumps({"error": attempt(lambda: candidate.k[(1,)](x, x, 16, BLOCK=16)),
                          "refusals": tracker.refusals}))
        """,
    )
    assert result["error"].startswith("SourceChanged: You cannot change the source of kernel k after it was made")
    assert len(result["refusals"]) == 1


def test_a_kernel_whose_source_changed_is_refused_by_the_interpreter(tmp_path) -> None:
    # the interpreter reads a kernel's source from its file through the function's code object
    result = run_worker(
        tmp_path,
        "interpret",
        KERNEL,
        """
        x = torch.ones(16)
        candidate.k.fn.__code__ = candidate.other.fn.__code__
        print(json.dumps({"error": attempt(lambda: candidate.k[(1,)](x, x, 16, BLOCK=16)),
                          "refusals": len(tracker.refusals)}))
        """,
    )
    assert "You cannot change the source of kernel" in result["error"]
    assert result["refusals"] >= 1


def test_the_interpreter_compiles_each_launch_for_sm_90_once_per_specialization(tmp_path) -> None:
    result = run_worker(
        tmp_path,
        "interpret",
        KERNEL
        + """
@triton.jit
def refused(x_ptr, BLOCK: tl.constexpr, BREAK: tl.constexpr):
    if BREAK:
        for _ in range(4):
            break
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)
""",
        """
        x, y = torch.rand(64) + 0.5, torch.empty(64)  # positive: x / x.sum() is well conditioned
        for _ in range(3):
            candidate.k[(1,)](x, y, 64, BLOCK=64)
        candidate.k[(1,)](x, y, 32, BLOCK=32)
        ok = bool(torch.allclose(y[:32], x[:32] / x[:32].sum() + x[:32].max() + x[:32].sum()))
        fine = attempt(lambda: candidate.refused[(1,)](x, BLOCK=16, BREAK=False))
        broken = attempt(lambda: candidate.refused[(1,)](x, BLOCK=16, BREAK=True))
        print(json.dumps({"compiles": tracker.target_compiles, "ok": ok, "fine": fine, "broken": broken,
                          "failures": [(n, c) for n, c, _ in tracker.compile_failures]}))
        """,
    )
    assert result["compiles"] == {"k": 2, "refused": 1} and result["ok"] and result["fine"] is None
    assert result["broken"].startswith("TargetCompileFailed: kernel refused does not compile for sm_90")
    assert "unsupported AST node type: Break" in result["broken"]
    assert result["failures"] == [["refused", "BLOCK=16, BREAK=True"]]
