"""Which of the candidate's Triton kernels ran, how long they took, and compiling without launching.

Installed before the candidate is imported. On `cuda` the count comes from Triton's own launch hooks,
called by the launcher right before the kernel is handed to the driver, so a kernel that is defined
but never reached does not count. On `compile` every launch is turned into a compile; on `interpret`
the interpreter's run is counted, and each launch it runs is first compiled for sm_90 with the same
specialization, so that the code the interpreter judges is code the GPU's compiler accepts.

Each kernel's source is recorded when the kernel is made, and checked wherever Triton compiles or interprets it:
a source swapped afterwards (`_unsafe_update_src`) is refused (`_kernel_sources`).

On `cuda`, the compile pass also builds each kernel's C launcher (Triton compiles it with the system's C
compiler, about 0.4 s, on a kernel's first launch unless its cache holds one for the same kinds of
arguments). That build is started on a thread as soon as Triton knows the kernel's signature, so it runs
beside the kernel's own compile instead of after it.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal

import torch
from triton import knobs
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction

from adaexplore.domain import Backend
from adaexplore.executor.worker.candidate._kernel_sources import KernelSources, of_candidate
from adaexplore.executor.worker.confine._faults import CANDIDATE_MODULE, Refused, TargetCompileFailed

__all__ = ["LaunchTracker"]

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


class LaunchTracker:
    """Counts launches of kernels defined in the candidate module; optionally compiles instead of launching."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.kernels: set[str] = set()
        self.launches: list[str] = []
        # launches with a grid of no programs: nothing ran, so they are not counted in `launches`
        self.empty: list[str] = []
        # launches refused while counting (on cuda: on a stream other than the one current when counting began),
        # and kernels refused for their source (see _kernel_sources)
        self.refusals: list[str] = []
        self._stream: int | None = None
        self.counting = False
        # compile backend: always; cuda: during the compile pass before the GPU is taken.
        self.compile_only = backend is Backend.compile
        self.shared_memory: dict[str, int] = {}
        # compile-only: what each kernel costs per config, at the sizes named by `sizes` (see _static_cost);
        # an autotune config whose shared memory exceeds the limit is skipped, as on a GPU
        self.sizes: Literal["full", "small"] = "small"
        self.costs: list[Any] = []
        self.shared_memory_limit: int | None = None
        self._costed: set[tuple[str, str]] = set()
        self._tuning = False
        self._events: list[tuple[torch.cuda.Event, torch.cuda.Event]] | None = None
        self._pending: torch.cuda.Event | None = None
        self._prebuilds: list[threading.Thread] = []
        # Launcher builds started early and what became of them: "built", or the error (then Triton builds
        # the launcher itself at the first launch, and reports any real problem there).
        self.prebuilt: list[str] = []
        # the source each kernel was made from, and its checks (their refusals go into `refusals`)
        self.sources = KernelSources(self.refusals)
        # interpret: each launch is compiled for this target too; distinct specializations compiled per kernel,
        # and the compile failures (kernel name, the launch's constexprs and options, the compiler's error)
        self.target = "cuda:90"
        self.target_compiles: dict[str, int] = {}
        # False: the launches were compiled at the sizes that count already (the evaluator's check at the full
        # reduction lengths runs at sizes of its own)
        self.target_compile = True
        self._compiled: dict[int, Any] = {}
        self.compile_failures: list[tuple[str, str, BaseException]] = []
        # compile-only at full size: what the forward does, step by step (PyTorch operators and launches, see
        # _work_record), while `recording_work` is open; the configs of the autotuned kernel compiling now
        self.work: list[Any] | None = None
        self.tune_group: Any = None
        # compile-only at full size: where the forward's launches write (see _coverage), while one is given
        self.coverage: Any = None

    # installation ------------------------------------------------------------------------------
    def install(self) -> None:
        self.sources.install()
        if self.backend is Backend.interpret:
            self._install_interpreter()
            self.sources.install_interpreted()
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

    def _own(self, fn: Any) -> bool:
        return of_candidate(fn)

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
                if id(kernel) not in tracker._compiled:
                    tracker._compiled[id(kernel)] = kernel
                    tracker.target_compiles[name] = tracker.target_compiles.get(name, 0) + 1
                if not tracker._tuning:  # an autotuner's configs are weighed in `_wrap_autotuner_run`
                    tracker.shared_memory[name] = max(shared, tracker.shared_memory.get(name, 0))
                tracker._record_cost(jit, kwargs, kernel)
                if tracker.work is not None:
                    tracker._record_work(jit, args, kwargs, grid, kernel)
                if tracker.backend is Backend.cuda:
                    # Triton loads the binary and builds its C launcher on the first launch; on a GPU that is
                    # compile work too, so it happens here, before the candidate waits for the device.
                    kernel.run  # noqa: B018
            if own and not warmup and tracker.counting:
                tracker.launches.append(jit.__name__)
            return kernel

        JITFunction.run = run

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
                tracker._compile_configs(tuner, args, kwargs)
            finally:
                tuner.nargs = None
                tracker.counting = counting
            base = tuner.base_fn
            if counting and getattr(base, "__module__", None) == CANDIDATE_MODULE and not kwargs.get("warmup"):
                tracker.launches.append(base.__name__)
            return None

        Autotuner.run = run

    def _record_cost(self, jit: Any, kwargs: dict[str, Any], kernel: Any) -> None:
        from adaexplore.executor.worker.cost._static_cost import record_cost

        record_cost(self, jit, kwargs, kernel)

    def _record_work(self, jit: Any, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, kernel: Any) -> None:
        from adaexplore.executor.worker.cost._work_record import record_launch

        assert self.work is not None
        record_launch(self.work, self.tune_group, jit, args, kwargs, grid, kernel)
        if self.coverage is not None:
            self.coverage.launch(jit, args, kwargs, grid, kernel, self.tune_group)

    @contextlib.contextmanager
    def recording_work(self) -> Iterator[list[Any]]:
        """Inside, every PyTorch operator and every compiled launch of the candidate is recorded, in order, into
        the list yielded (see `_work_record`)."""
        from adaexplore.executor.worker.cost._work_record import OpRecorder

        steps: list[Any] = []
        self.work = steps
        try:
            with OpRecorder(steps):
                yield steps
        finally:
            self.work = None

    def _compile_configs(self, tuner: Autotuner, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        from adaexplore.executor.worker.cost._static_cost import compile_configs

        compile_configs(self, tuner, args, kwargs)

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

            if tracker.target_compile:
                tracker._compile_for_target(fn, args, kwargs)
            result = original(fn, *args, grid=grid, warmup=warmup, **kwargs)
            if tracker.counting:
                (tracker.empty if _empty(resolved[-1]) else tracker.launches).append(name)
            return result

        InterpretedFunction.run = run

    def _compile_for_target(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """The launch the interpreter is about to run, compiled for the GPU target first with the same argument
        types, constexprs and options (once per specialization), so that the code the interpreter judges is
        code the GPU's compiler accepts."""
        from adaexplore.executor.worker.candidate._compile_only import compile_launch

        name = fn.fn.__name__
        try:
            if compile_launch(fn, args, kwargs, self.target):
                self.target_compiles[name] = self.target_compiles.get(name, 0) + 1
        except Exception as exc:
            constants = ", ".join(
                f"{k}={v!r}" for k, v in kwargs.items() if isinstance(v, int | float | bool | str | type(None))
            )
            self.compile_failures.append((name, constants, exc))
            raise TargetCompileFailed(
                f"kernel {name} does not compile for {self.target.replace('cuda:', 'sm_')} as the interpreter "
                f"ran it ({constants or 'no constexprs or options'}): {type(exc).__name__}: {exc}"
            ) from exc

    def _refuse_handle(self, name: str) -> None:
        """`kernel.run(..., warmup=True)` from the candidate: it would hand out the compiled kernel, whose own
        launcher takes any stream, any integers as pointers and no launch hooks."""
        message = (
            f"You cannot compile kernel {name} ahead with run(..., warmup=True) and launch its compiled handle: "
            "launch it with kernel[grid](...)."
        )
        self.refusals.append(message)
        raise Refused(message)

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
