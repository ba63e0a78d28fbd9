"""`adaexplore profile TASK KERNEL`: one kernel's verdict, as text, or as JSON with `--json FILE` or `--json -`."""

from __future__ import annotations

import argparse
import ast
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio

from adaexplore.cli._options import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_KERNEL_FAILED, EXIT_OK, OneLineErrors
from adaexplore.cli._output import STDOUT, output_file, write_file
from adaexplore.config import Settings
from adaexplore.domain import Status
from adaexplore.errors import RequestError
from adaexplore.executor import ProgressUpdate, render_evaluation
from adaexplore.tools import profile_kernel

__all__ = ["add_profile_parser", "run_profile"]


class _JsonTarget(argparse.Action):
    """`--json FILE`, `--json -`, or `--json` alone: standard output, as `--json` was before it took a FILE. Placed
    before TASK and KERNEL, the bare form would take TASK as its FILE; a Python module as FILE is refused, and when
    what it took leaves KERNEL missing, the error says what happened."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        if values is None:
            values = STDOUT
        elif values != STDOUT:
            if values.endswith(".py"):
                raise argparse.ArgumentError(
                    self,
                    f"{values} is a Python module, not the file to write the JSON to: put --json after TASK and "
                    "KERNEL, or give it a file (--json result.json) or - (standard output)",
                )
            try:
                values = output_file(values)
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentError(self, str(exc)) from None
            if isinstance(parser, OneLineErrors):  # the command line's parsers, which read the hint
                parser.error_hint = (
                    f"--json took {values} as the file to write the JSON to; put --json after TASK and KERNEL, or "
                    "write --json - for standard output"
                )
        setattr(namespace, self.dest, values)


def add_profile_parser(commands: argparse._SubParsersAction[OneLineErrors]) -> None:
    profile = commands.add_parser(
        "profile",
        help="evaluate one kernel against a task: correctness, timing, audit",
        description="Evaluate KERNEL (a module defining ModelNew) against TASK (a KernelBench-format module). "
        "Exit code 0: the kernel is ok; 1: it failed (the verdict says how); 2: the call was wrong; "
        "3: the evaluator failed; 4: interrupted (Ctrl-C or SIGTERM stop it at once). On the CPU backends the "
        "checks run at small sizes, the task's SMALL_SIZES or sizes derived as a search derives them; --full-size "
        "runs them at the task's full sizes.",
    )
    profile.add_argument("task", type=Path, help="task module (Model, get_inputs, get_init_inputs)")
    profile.add_argument("kernel", type=Path, help="candidate module defining ModelNew")
    profile.add_argument(
        "--backend",
        choices=["auto", "cuda", "compile", "interpret"],
        default=None,
        help="where to run: auto picks cuda on a GPU, else compile + interpret (default: auto)",
    )
    profile.add_argument(
        "--mode",
        choices=["strict", "kernelbench", "paper", "flashinfer"],
        default=None,
        help="evaluation protocol (default: strict; flashinfer for a FlashInfer-Bench definition)",
    )
    profile.add_argument(
        "--full-size",
        action="store_true",
        help="on the CPU backends, check at the task's full sizes (slow in the interpreter) instead of small ones",
    )
    profile.add_argument("--compile", action="store_true", help="also time torch.compile of the reference")
    profile.add_argument("--fresh-reference", action="store_true", help="time the reference again, ignoring the cache")
    profile.add_argument(
        "--json",
        nargs="?",
        action=_JsonTarget,
        metavar="FILE",
        help="write the whole result as one JSON object to FILE, the verdict still printed; - (or --json alone, "
        "after TASK and KERNEL) prints the JSON alone, on standard output",
    )


def _names(path: Path) -> set[str]:
    """The classes and functions a module defines at its top level, read without running it (empty where the file
    cannot be read or parsed: the evaluator then says what is wrong with it)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return set()
    return {node.name for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)}


def _swapped(task: Path, kernel: Path) -> str | None:
    """A hint when TASK and KERNEL were given the other way round: the task file defines a ModelNew and no Model,
    the kernel file a Model and get_inputs and no ModelNew."""
    if task.suffix != ".py" or kernel.suffix != ".py":
        return None
    as_task, as_kernel = _names(task), _names(kernel)
    looks_like_task = {"Model", "get_inputs"} <= as_kernel and "ModelNew" not in as_kernel
    if "ModelNew" in as_task and "Model" not in as_task and looks_like_task:
        return (
            f"{task} defines ModelNew (a kernel) and {kernel} defines Model and get_inputs (a task): the task comes "
            f"first; did you mean `adaexplore profile {kernel} {task}`?"
        )
    return None


def run_profile(args: argparse.Namespace, settings: Settings) -> int:
    hint = _swapped(args.task, args.kernel)
    if hint is not None:
        raise RequestError(hint)
    if args.json not in (None, STDOUT) and Path(args.json).resolve() in (args.task.resolve(), args.kernel.resolve()):
        raise RequestError(f"--json {args.json} would write over the task or the kernel; give another file")
    # until the event loop watches for them, SIGTERM stops the command as Ctrl-C does (exit code 4, not 143)
    previous = signal.signal(signal.SIGTERM, _interrupt) if _main_thread() else None
    try:
        return anyio.run(_profile, args, settings)
    except KeyboardInterrupt:
        _say_stopped("interrupted")
        return EXIT_INTERRUPTED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


async def _profile(args: argparse.Namespace, settings: Settings) -> int:
    show = _Progress(live=sys.stderr.isatty(), quiet=sys.stderr.isatty() and args.json == STDOUT)
    stopped_by: list[str] = []
    evaluation = anyio.CancelScope()
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            # the first signal stops the evaluation; those that come while it stops (within 2 s) change nothing
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
                async for signum in received:
                    stopped_by.append(signal.Signals(signum).name)
                    evaluation.cancel()

        if _main_thread():  # signals reach the main thread only
            group.start_soon(watch)
        group.start_soon(show.tick)
        try:
            with evaluation:
                result, sizes = await profile_kernel(
                    settings,
                    args.task,
                    args.kernel,
                    mode=args.mode,
                    backend=args.backend,
                    with_compile=args.compile,
                    fresh_reference=args.fresh_reference,
                    full_size=args.full_size,
                    progress=show,
                )
        finally:
            group.cancel_scope.cancel()
    show.clear()
    if stopped_by:
        _say_stopped(stopped_by[0])
        return EXIT_INTERRUPTED
    if args.json is not None and args.json != STDOUT:
        write_file(Path(args.json), result.model_dump_json(indent=2) + "\n")
    if args.json == STDOUT:
        print(result.model_dump_json(indent=2))
    else:
        print(render_evaluation(result, title=f"{args.kernel} against task {args.task.stem}"))
        if sizes is not None:
            print(f"{'sizes':<12}{sizes}")
    if result.status is Status.ok:
        return EXIT_OK
    return EXIT_INFRA if result.status is Status.infra_error else EXIT_KERNEL_FAILED


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _say_stopped(why: str) -> None:
    sys.stderr.write(f"\nadaexplore profile: {why}: stopped before the verdict; the evaluation was abandoned\n")
    sys.stderr.flush()


class _Progress:
    """Where an evaluation stands, on stderr: in a terminal one status line rewritten in place; elsewhere (a log
    file, CI) a line at once and then one every few seconds, so that a long evaluation is seen to be alive."""

    EVERY_S = 5.0

    def __init__(self, live: bool, quiet: bool = False) -> None:
        self.live = live
        self.quiet = quiet  # the JSON alone goes to the terminal
        self.width = 0
        self.began = time.monotonic()
        self.latest = "starting the evaluator"
        # the first line goes out with the first update (an error in the files or the settings comes alone), or
        # after a few seconds without one
        self.written = self.began

    async def __call__(self, update: ProgressUpdate) -> None:
        self.latest = f"{update.stage}: {update.message}"
        if self.quiet:
            return
        if self.live:
            text = f"[{time.monotonic() - self.began:6.1f}s] {self.latest}"[:100]
            sys.stderr.write("\r" + text.ljust(self.width))
            sys.stderr.flush()
            self.width = len(text)
        elif update.stage == "sizes" or self.written == self.began:  # the first, and which sizes the checks use
            self._line()

    async def tick(self) -> None:
        """Off a terminal, the latest stage every few seconds."""
        if self.live or self.quiet:
            return
        while True:
            if time.monotonic() - self.written >= self.EVERY_S:
                self._line()
            await anyio.sleep(0.5)

    def _line(self) -> None:
        now = time.monotonic()
        sys.stderr.write(f"[{now - self.began:6.1f}s] {self.latest}\n")
        sys.stderr.flush()
        self.written = now

    def clear(self) -> None:
        if self.live and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()
