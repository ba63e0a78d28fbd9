"""Entry point of a worker process: `python -m adaexplore.executor.worker --role ... --backend ...`."""

from __future__ import annotations

import gc

# Importing torch and triton makes some 300,000 objects, and the collector would look through all of them again
# and again as they come (about a sixth of a worker's start in CPU time): it stays off until the worker is ready, and
# what the start made is then frozen (`_collect_from_here`), out of every later collection's way.
gc.disable()

import argparse  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:
    import torch

    from adaexplore.domain import Backend

started = time.perf_counter()


def _harden(role: str) -> None:
    """No core files, and die with the evaluator even when stuck in a kernel. The judge, which holds the
    references, is also made non-dumpable: no process of its user may read its memory or environment."""
    import ctypes
    import resource
    import signal

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if role == "judge":
            libc.prctl(4, 0)  # PR_SET_DUMPABLE
    except OSError:
        pass


def _sample_on_request() -> None:
    """On `STACK_SIGNAL` the worker writes every thread's Python stack to stderr: the evaluator sends it to a worker
    that ran out of time before it kills it, to say where the candidate was (`host._stack`). Python's C handler
    writes it, so a loop that never returns to the interpreter's checks is caught as well as one that does."""
    import faulthandler

    from adaexplore.executor.wire._signals import STACK_SIGNAL

    faulthandler.register(STACK_SIGNAL, all_threads=True, chain=False)


def _collect_from_here() -> None:
    """The collector on again, before anything a task or a candidate brings runs: the objects of the worker's start
    (modules, functions, classes; kept for its whole life) move to the permanent generation, which no collection
    looks through."""
    gc.freeze()
    gc.enable()


def _driver_version() -> str | None:
    path = Path("/proc/driver/nvidia/version")
    if not path.exists():
        return None
    for token in path.read_text().split():
        if token.count(".") >= 1 and token.replace(".", "").isdigit():
            return token
    return None


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m adaexplore.executor.worker")
    parser.add_argument("--role", choices=["candidate", "judge", "synth", "sizes"], required=True)
    parser.add_argument("--backend", choices=["cuda", "compile", "interpret"], required=True)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--compile-target", default="cuda:90")
    parser.add_argument("--target-gpu", default="H200", help="the GPU torch.cuda's device queries answer as on the CPU")
    parser.add_argument("--confine", default='{"kind": "none"}', help="what to apply before Ready (JSON)")
    parser.add_argument("--side-fd", type=int, default=None, help="the inherited end of the side socket")
    parser.add_argument("--memory-budget", type=int, default=None, help="judge: bytes its references may hold")
    parser.add_argument("--memory-share", type=float, default=None, help="judge: that share of the device's memory")
    options = parser.parse_args()

    from adaexplore.executor.wire._confinement import Confinement
    from adaexplore.executor.worker.exchange._channel import Channel

    confinement = Confinement.model_validate_json(options.confine)
    if confinement.user is not None:
        from adaexplore.executor.worker.confine._user import drop_privileges

        drop_privileges(confinement.user)  # before _harden: a change of user clears the parent-death signal
    from adaexplore.executor.wire._side import SideSocket

    side = SideSocket.inherited(options.side_fd) if options.side_fd is not None else None
    channel = Channel()
    _harden(options.role)
    _sample_on_request()
    if options.backend == "interpret" and options.role == "candidate":
        if os.environ.get("TRITON_INTERPRET") != "1":
            raise SystemExit("the interpret backend needs TRITON_INTERPRET=1 in the environment")
        import warnings

        from adaexplore.executor.worker.cpu import _interpret_shim

        _interpret_shim.install()
        # numpy warns about overflow and division by zero where a GPU computes inf or NaN silently.
        warnings.filterwarnings("ignore", category=RuntimeWarning)

    import numpy
    import torch
    import triton

    from adaexplore.executor.wire._triton_key import TRITON_KEY_ENV

    if TRITON_KEY_ENV in os.environ:
        from adaexplore.executor.worker._triton_key import install

        install(os.environ[TRITON_KEY_ENV])  # before any compile, and before the guard notes Triton as it is
    from adaexplore import __version__
    from adaexplore.domain import Backend
    from adaexplore.executor.wire._protocol import Done, Ready, RunCandidate

    backend = Backend(options.backend)
    if backend is Backend.cuda:
        device = torch.device("cuda", options.device)  # its context is made after the handshake below
    else:
        device = torch.device("cpu")

    tracker = None
    if options.role == "candidate":
        from adaexplore.executor.worker.candidate import _kernel_rules
        from adaexplore.executor.worker.candidate._launches import LaunchTracker

        _kernel_rules.install()

        if backend is Backend.compile:
            from adaexplore.executor.worker.candidate._compile_only import activate_compile_only

            activate_compile_only(options.compile_target)
        if backend is not Backend.cuda:
            from adaexplore.executor.worker.cpu._cuda_on_cpu import install_device_queries, install_is_cuda
            from adaexplore.roofline import gpu_spec

            install_is_cuda()
            install_device_queries(gpu_spec(options.target_gpu))
        tracker = LaunchTracker(backend)
        tracker.install()
    if options.role in ("synth", "sizes"):
        # task synthesis, and the size probe (a task's reference at candidate small sizes): on the CPU, no
        # kernels; confined like any other worker before any task's code runs
        from adaexplore.executor.worker.confine._confine import confine

        if options.role == "synth":
            from adaexplore.executor.worker.synth._synth import serve
        else:
            from adaexplore.executor.worker.judge._size_probe import serve

        versions: dict[str, str | None] = {"torch": torch.__version__, "sandbox": confine(confinement, on_gpu=False)}
        _collect_from_here()
        channel.send(Ready(pid=os.getpid(), startup_s=time.perf_counter() - started, versions=versions))
        serve(channel)
        return
    if backend is Backend.cuda:
        # Warming up runs kernels; the evaluator says when, so that no other candidate is being timed.
        from adaexplore.executor.wire._protocol import Started, Warm

        # Making the CUDA context is part of it: it touches the device too.
        channel.send(Started())
        if not isinstance(channel.receive(), Warm):
            return
        torch.cuda.set_device(device)
    _warm_up(backend, device, options.role)
    versions = {
        "adaexplore": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "numpy": numpy.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(device) if backend is Backend.cuda else None,
        "driver": _driver_version() if backend is Backend.cuda else None,
        "gpu_count": str(torch.cuda.device_count()) if torch.cuda.is_available() else "0",
    }
    from adaexplore.executor.worker.confine._confine import confine

    # Nothing a candidate or a task brings runs before this line.
    versions["sandbox"] = confine(confinement, on_gpu=backend is Backend.cuda)
    _collect_from_here()
    channel.send(Ready(pid=os.getpid(), startup_s=time.perf_counter() - started, versions=versions))

    if options.role == "judge":
        from adaexplore.executor.worker.judge._judge import Judge

        judge = Judge(device, side, options.memory_budget, options.memory_share)
        while (command := channel.receive()) is not None:
            channel.send(judge.handle(command) or Done())  # type: ignore[arg-type]  # judge commands only
        return

    from adaexplore.executor.worker.candidate._candidate import CandidateRunner

    command = channel.receive()
    if isinstance(command, RunCandidate):
        assert tracker is not None
        CandidateRunner(channel, backend, device, tracker, side).run(command)


def _warm_up(backend: Backend, device: torch.device, role: str) -> None:
    """Pay one-time costs now: CUDA context, cuBLAS and cuDNN handles, Triton's compiler and launcher."""
    import torch

    from adaexplore.domain import Backend

    if backend is Backend.cuda:
        x = torch.randn(64, 64, device=device)
        (x @ x).sum().item()
        torch.nn.functional.conv2d(x.view(1, 1, 64, 64), torch.randn(1, 1, 3, 3, device=device)).sum().item()
        torch.cuda.Event(enable_timing=True)
        from adaexplore.executor.worker.timing._perturb import PatternSource, apply_pattern

        # Strict timing's first pattern runs integer kernels nothing else in a worker uses, and CUDA loads
        # each kernel's module at its first launch (about 50 ms for these on an H200 host): load them now.
        # On the CPU there is nothing to load, and building the patterns' pool of a million factors costs a
        # worker 0.3 s of CPU at every start, as much the second time as the first: not done there.
        for base in ([torch.ones(8, device=device)], [torch.eye(4, device=device)]):
            source = PatternSource(base)
            assert source.pool is not None
            apply_pattern(base, source.next(), source.pool)
    if role == "candidate":
        import ast
        from pathlib import Path

        import triton

        from adaexplore.executor.policy import check_policy, resolve_dotted
        from adaexplore.executor.worker.candidate import _warmup_kernel
        from adaexplore.executor.worker.candidate._warmup_kernel import scale_kernel

        # The policy's check against the real modules finds its banned objects by identity once per
        # process, importing the modules that hold them (torch.onnx alone takes about 50 ms): here, not
        # in the candidate's load.
        check_policy(ast.parse(Path(_warmup_kernel.__file__).read_text(encoding="utf-8")), resolve=resolve_dotted)

        y = torch.ones(256, device=device)
        # Compiled past the cache: a cache hit loads the binary and never starts the compiler, so the
        # candidate's first compile would still pay for its MLIR context, dialects and code generator
        # (0.4 s on an H200 host, measured by Triton's compilation listener).
        with triton.knobs.compilation.scope():
            triton.knobs.compilation.always_compile = True
            scale_kernel[(triton.cdiv(256, 128),)](y, 256, BLOCK=128)
        if backend is Backend.cuda:
            torch.cuda.synchronize()
    if backend is Backend.cuda:
        from triton.backends.nvidia.driver import libcuda_dirs

        # Triton finds the driver's library with ldconfig, a program the sandbox does not let it run later
        libcuda_dirs()


if __name__ == "__main__":
    main()
