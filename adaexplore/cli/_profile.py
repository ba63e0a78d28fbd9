"""`adaexplore profile TASK KERNEL`: one kernel's verdict, as text, or as JSON with `--json FILE` or `--json -`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio

from adaexplore.cli._options import EXIT_INFRA, EXIT_KERNEL_FAILED, EXIT_OK
from adaexplore.cli._output import STDOUT, output_file, write_file
from adaexplore.config import Settings
from adaexplore.domain import Status
from adaexplore.errors import RequestError
from adaexplore.tools import ProgressUpdate, profile_kernel, render_evaluation

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
            parser.error_hint = (  # type: ignore[attr-defined]  # read by OneLineErrors.error
                f"--json took {values} as the file to write the JSON to; put --json after TASK and KERNEL, or write "
                "--json - for standard output"
            )
        setattr(namespace, self.dest, values)


def add_profile_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    profile = commands.add_parser(
        "profile",
        help="evaluate one kernel against a task: correctness, timing, audit",
        description="Evaluate KERNEL (a module defining ModelNew) against TASK (a KernelBench-format module). "
        "Exit code 0: the kernel is ok; 1: it failed (the verdict says how); 2: the call was wrong; "
        "3: the evaluator failed; 4: interrupted.",
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


def run_profile(args: argparse.Namespace, settings: Settings) -> int:
    if args.json not in (None, STDOUT) and Path(args.json).resolve() in (args.task.resolve(), args.kernel.resolve()):
        raise RequestError(f"--json {args.json} would write over the task or the kernel; give another file")
    return anyio.run(_profile, args, settings)


async def _profile(args: argparse.Namespace, settings: Settings) -> int:
    show = _Progress(enabled=sys.stderr.isatty() and args.json != STDOUT)
    result = await profile_kernel(
        settings,
        args.task,
        args.kernel,
        mode=args.mode,
        backend=args.backend,
        with_compile=args.compile,
        fresh_reference=args.fresh_reference,
        progress=show,
    )
    show.clear()
    if args.json is not None and args.json != STDOUT:
        write_file(Path(args.json), result.model_dump_json(indent=2) + "\n")
    if args.json == STDOUT:
        print(result.model_dump_json(indent=2))
    else:
        print(render_evaluation(result, title=f"{args.kernel} against task {args.task.stem}"))
    if result.status is Status.ok:
        return EXIT_OK
    return EXIT_INFRA if result.status is Status.infra_error else EXIT_KERNEL_FAILED


class _Progress:
    """One status line on stderr, rewritten in place, while an evaluation runs in a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.width = 0

    async def __call__(self, update: ProgressUpdate) -> None:
        if not self.enabled:
            return
        text = f"[{update.elapsed_s:6.1f}s] {update.stage}: {update.message}"[:100]
        sys.stderr.write("\r" + text.ljust(self.width))
        sys.stderr.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.enabled and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()
