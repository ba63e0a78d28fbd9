"""Which of the candidate's Triton kernels ran, how long they took, and compiling without launching.

Installed before the candidate is imported. On `cuda` the count comes from Triton's own launch hooks,
called by the launcher right before the kernel is handed to the driver, so a kernel that is defined
but never reached does not count. On `compile` every launch is turned into a compile; on `interpret`
the interpreter's run is counted.

On `cuda`, the compile pass also builds each kernel's C launcher (Triton compiles it with the system's C
compiler, about 0.4 s, on a kernel's first launch unless its cache holds one for the same kinds of
arguments). That build is started on a thread as soon as Triton knows the kernel's signature, so it runs
beside the kernel's own compile instead of after it.
"""

from __future__ import annotations

import ast
import math
import textwrap
import threading
from collections.abc import Callable
from typing import Any

import torch
from triton import knobs
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITCallable, JITFunction

from adaexplore.executor._models import Backend

__all__ = ["CANDIDATE_MODULE", "LaunchTracker"]

CANDIDATE_MODULE = "adaexplore_candidate"
# The key under which a launch's grid reaches the launch hook (see `_launch_facts`).
_GRID = "adaexplore_grid"


def _launch_facts(grid: Any, metadata: Any, args: Any) -> dict[str, Any]:
    """Set as each candidate kernel's `launch_metadata`: Triton calls it with the launch's resolved grid."""
    return {_GRID: tuple(grid)}


def _empty(grid: Any) -> bool:
    """A grid of no programs: Triton's launcher returns without starting the kernel."""
    try:
        return math.prod(int(g) for g in grid) <= 0
    except (TypeError, ValueError):
        return False


def def_line_source(raw_src: list[str]) -> str:
    """A function's source from its own `def` line on, dedented as Triton dedents it: what Triton should
    compile for `raw_src` (the function's lines, decorators included, as `inspect.getsourcelines` gives them).
    Raises SyntaxError when the lines are not one function definition."""
    src = textwrap.dedent("".join(raw_src))
    tree = ast.parse(src)
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
        raise SyntaxError("the source is not a function definition")
    return "".join(src.splitlines(keepends=True)[tree.body[0].lineno - 1 :])


class LaunchTracker:
    """Counts launches of kernels defined in the candidate module; optionally compiles instead of launching."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.kernels: set[str] = set()
        self.launches: list[str] = []
        # launches with a grid of no programs: nothing ran, so they are not counted in `launches`
        self.empty: list[str] = []
        # launches refused while counting (on cuda: on a stream other than the one current when counting began)
        self.refusals: list[str] = []
        self._stream: int | None = None
        self.counting = False
        # compile backend: always; cuda: during the compile pass before the GPU is taken.
        self.compile_only = backend is Backend.compile
        self.shared_memory: dict[str, int] = {}
        self._events: list[tuple[torch.cuda.Event, torch.cuda.Event]] | None = None
        self._pending: torch.cuda.Event | None = None
        self._prebuilds: list[threading.Thread] = []
        # Launcher builds started early and what became of them: "built", or the error (then Triton builds
        # the launcher itself at the first launch, and reports any real problem there).
        self.prebuilt: list[str] = []

    # installation ------------------------------------------------------------------------------
    def install(self) -> None:
        self._check_jit_sources()
        if self.backend is Backend.interpret:
            self._install_interpreter()
            return
        self._wrap_jit_run()
        self._wrap_autotuner_run()
        if self.backend is Backend.cuda:
            knobs.runtime.launch_enter_hook.add(self._enter)
            knobs.runtime.launch_exit_hook.add(self._exit)
            self._install_launcher_prebuild()

    def hooks_intact(self) -> bool:
        if self.backend is not Backend.cuda:
            return True
        return (
            self._enter in knobs.runtime.launch_enter_hook.calls and self._exit in knobs.runtime.launch_exit_hook.calls
        )

    def _check_jit_sources(self) -> None:
        """Triton cuts a kernel's source out of its file at the first line that starts with `def`, which may
        be inside a string of a decorator: it would compile code other than the function written. Each
        function made into a Triton kernel is checked when it is made (the static rules refuse such strings
        first)."""
        original = JITCallable.__init__
        tracker = self

        def __init__(jit: JITCallable, fn: Any) -> None:
            original(jit, fn)
            try:
                own = def_line_source(jit.raw_src)
            except SyntaxError:
                own = None
            if jit._src != own:
                message = (
                    f"You cannot hide code from the evaluator in kernel {fn.__name__}: the source Triton reads "
                    "for it does not start at its own def line (a string holds a line that starts with `def`)."
                )
                tracker.refusals.append(message)
                raise RuntimeError(message)

        JITCallable.__init__ = __init__  # type: ignore[method-assign]

    def _own(self, fn: Any) -> bool:
        return getattr(getattr(fn, "fn", None), "__module__", None) == CANDIDATE_MODULE

    def _wrap_jit_run(self) -> None:
        original = JITFunction.run
        tracker = self

        def run(jit: JITFunction, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            own = tracker._own(jit)
            if own:
                tracker.kernels.add(jit.__name__)
                if warmup:
                    tracker._refuse_handle(jit.__name__)
                # the launch hook learns the grid from this (a compiled handle launched later reads it too)
                jit.launch_metadata = _launch_facts
            if not tracker.compile_only:
                return original(jit, *args, grid=grid, warmup=warmup, **kwargs)
            try:
                kernel = original(jit, *args, grid=grid, warmup=True, **kwargs)
            finally:
                tracker._join_prebuilds()
            if kernel is not None and own:
                kernel = kernel.result() if hasattr(kernel, "result") else kernel
                shared = int(getattr(kernel.metadata, "shared", 0) or 0)
                name = jit.__name__
                tracker.shared_memory[name] = max(shared, tracker.shared_memory.get(name, 0))
                if tracker.backend is Backend.cuda:
                    # Triton loads the binary and builds its C launcher on the first launch; on a GPU that is
                    # compile work too, so it happens here, before the candidate waits for the device.
                    kernel.run  # noqa: B018
            if own and not warmup and tracker.counting:
                tracker.launches.append(jit.__name__)
            return kernel

        JITFunction.run = run  # type: ignore[method-assign]

    def _install_launcher_prebuild(self) -> None:
        previous = knobs.runtime.jit_cache_hook
        tracker = self

        def hook(*, key: Any, repr: str, fn: Any, compile: dict[str, Any], **kwargs: Any) -> Any:
            jit = fn.jit_function
            if tracker.compile_only and tracker._own(jit):
                configs = compile.get("configs") or [None]
                thread = threading.Thread(
                    target=tracker._prebuild,
                    args=(jit, compile["signature"], compile["constants"], configs[0]),
                    name="adaexplore-launcher-build",
                    daemon=True,
                )
                thread.start()
                tracker._prebuilds.append(thread)
            if previous is not None:
                return previous(key=key, repr=repr, fn=fn, compile=compile, **kwargs)
            return None

        knobs.runtime.jit_cache_hook = hook

    def _prebuild(self, jit: JITFunction, signature: Any, constants: Any, attrs: Any) -> None:
        """Build the launcher the way Triton's CUDA driver will ask for it, so that it finds it cached."""
        try:
            from triton.backends.nvidia import driver

            src = jit.ASTSource(jit, signature, constants, attrs)
            by_index = {((jit.arg_names.index(k),) if isinstance(k, str) else k): v for k, v in src.constants.items()}
            driver.compile_module_from_src(
                src=driver.make_launcher(by_index, dict(src.signature), None),
                name="__triton_launcher",
                library_dirs=driver.library_dirs(),
                include_dirs=driver.include_dirs,
                libraries=driver.libraries,
            )
            self.prebuilt.append("built")
        except Exception as exc:  # Triton builds it at the first launch instead, and reports real errors
            self.prebuilt.append(f"{type(exc).__name__}: {exc}")

    def _join_prebuilds(self) -> None:
        while self._prebuilds:
            self._prebuilds.pop().join()

    def _wrap_autotuner_run(self) -> None:
        original = Autotuner.run
        tracker = self

        def run(tuner: Autotuner, *args: Any, **kwargs: Any) -> Any:
            if not tracker.compile_only:
                return original(tuner, *args, **kwargs)
            # Compile every config without benchmarking, and leave the tuner's cache untouched, so the
            # real run later benchmarks on the GPU as usual.
            tuner.nargs = dict(zip(tuner.arg_names, args, strict=False))
            counting, tracker.counting = tracker.counting, False
            try:
                for config in tuner.prune_configs(kwargs):
                    tuner.fn.run(*args, **kwargs, **config.all_kwargs())
            finally:
                tuner.nargs = None
                tracker.counting = counting
            base = tuner.base_fn
            if counting and getattr(base, "__module__", None) == CANDIDATE_MODULE and not kwargs.get("warmup"):
                tracker.launches.append(base.__name__)
            return None

        Autotuner.run = run  # type: ignore[method-assign]

    def _install_interpreter(self) -> None:
        from triton.runtime.interpreter import InterpretedFunction

        original = InterpretedFunction.run
        tracker = self

        def run(fn: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not tracker._own(fn):
                return original(fn, *args, grid=grid, warmup=warmup, **kwargs)
            name = fn.fn.__name__
            tracker.kernels.add(name)
            if warmup:
                tracker._refuse_handle(name)
            resolved: list[Any] = [grid]
            if callable(grid):
                given = grid

                def grid(meta: Any) -> Any:
                    resolved.append(given(meta))
                    return resolved[-1]

            result = original(fn, *args, grid=grid, warmup=warmup, **kwargs)
            if tracker.counting:
                (tracker.empty if _empty(resolved[-1]) else tracker.launches).append(name)
            return result

        InterpretedFunction.run = run  # type: ignore[method-assign]

    def _refuse_handle(self, name: str) -> None:
        """`kernel.run(..., warmup=True)` from the candidate: it would hand out the compiled kernel, whose own
        launcher takes any stream, any integers as pointers and no launch hooks."""
        message = (
            f"You cannot compile kernel {name} ahead with run(..., warmup=True) and launch its compiled handle: "
            "launch it with kernel[grid](...)."
        )
        self.refusals.append(message)
        raise RuntimeError(message)

    # cuda launch hooks -------------------------------------------------------------------------
    def _enter(self, metadata: Any) -> None:
        name = metadata.data.get("name") if metadata is not None else None
        if not self.counting or name not in self.kernels:
            return
        facts = metadata.get()
        if self._stream is not None and facts.get("stream") != self._stream:
            # work on a stream of its own would run out of sight of the events on the current one
            self.refusals.append(
                f"You cannot launch kernels on a stream of your own: kernel {name} was launched on another "
                "stream than the current one. Launch every kernel on the current stream."
            )
        if _GRID in facts and _empty(facts[_GRID]):
            self.empty.append(name)  # the launcher starts nothing for a grid of no programs
            return
        self.launches.append(name)
        if self._events is not None:
            self._pending = torch.cuda.Event(enable_timing=True)
            self._pending.record()

    def _exit(self, metadata: Any) -> None:
        if self._events is None or self._pending is None:
            return
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        self._events.append((self._pending, end))
        self._pending = None

    # measurement -------------------------------------------------------------------------------
    def count(self, call: Callable[[], Any]) -> tuple[Any, list[str]]:
        """Run `call` and return its result with the candidate's launches during it."""
        self.launches, self.empty = [], []
        self.counting = True
        self._stream = self._current_stream()
        try:
            result = call()
        finally:
            self.counting = False
        return result, list(self.launches)

    def _current_stream(self) -> int | None:
        return torch.cuda.current_stream().cuda_stream if self.backend is Backend.cuda else None

    def triton_share(self, call: Callable[[], Any]) -> float | None:
        """Share of one call's GPU time spent in the candidate's Triton kernels (cuda only)."""
        if self.backend is not Backend.cuda:
            return None
        self._events = []
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        self.counting = True
        self._stream = self._current_stream()
        try:
            start.record()
            call()
            end.record()
            torch.cuda.synchronize()
        finally:
            self.counting = False
            events, self._events = self._events, None
        total = start.elapsed_time(end)
        if total <= 0:
            return None
        inside = sum(a.elapsed_time(b) for a, b in events)
        return min(1.0, inside / total)
