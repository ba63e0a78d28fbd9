"""`adaexplore bench`: its options, and the dispatch to a new or resumed bench, `bench show` and `bench list`."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from adaexplore.cli._options import POSITIVE_INT, SEED, budget_options, budgets, model_options, with_model_options
from adaexplore.cli._output import STDOUT, output_file
from adaexplore.config import Settings
from adaexplore.errors import RequestError

__all__ = ["add_bench_parser", "run_bench_command"]

_USAGE = (
    "adaexplore bench SUITE (--replay DIR | --steps N) [options]\n"
    "       adaexplore bench --resume BENCH\n"
    "       adaexplore bench show BENCH [--json FILE] [--csv FILE]\n"
    "       adaexplore bench list"
)


def add_bench_parser(commands: Any) -> None:
    bench = commands.add_parser(
        "bench",
        help="run a suite (KernelBench problems or the examples): the paper's metrics vs eager and torch.compile",
        usage=_USAGE,
        description="Evaluate every problem of SUITE (a directory of KernelBench-format problems named by number, "
        "like KernelBench/level2, or `examples`), with kernels from --replay DIR (one file per problem, `17.py`, "
        "evaluated once) or from a search of --steps N evaluations per problem. Every evaluation is stored; the "
        "bench prints a table per problem and the summary: correct rate, mean speedup (clamped at 10, incorrect "
        "as 0), geometric mean, Fast@1.0/1.2/2 vs eager PyTorch and vs torch.compile (--compile). `bench show "
        "BENCH` prints it again, `bench list` lists the benches, `report BENCH --html FILE` draws it.",
    )
    bench.add_argument("words", nargs="*", metavar="SUITE", help="a suite; or `show BENCH`; or `list`")
    bench.add_argument("--ids", help="the problems to run, by number: 1-10,17 (default: all)")
    bench.add_argument("--replay", type=Path, metavar="DIR", help="a directory of kernels named by problem id")
    bench.add_argument("--steps", type=POSITIVE_INT, help="a search of this many evaluations per problem")
    bench.add_argument("--parallel", type=POSITIVE_INT, help="problems worked on at once (default 1)")
    bench.add_argument("--mode", choices=["strict", "kernelbench", "paper", "flashinfer"], help="evaluation protocol")
    bench.add_argument("--backend", choices=["auto", "cuda", "compile", "interpret"], help="where kernels run")
    bench.add_argument("--compile", action="store_true", help="also time torch.compile of each reference")
    bench.add_argument("--seed", type=SEED, help="the runs' random seed (default: drawn)")
    bench.add_argument("--resume", metavar="BENCH", help="continue a stopped or killed bench (see `bench list`)")
    for flag, what in (("--json", "JSON"), ("--csv", "CSV")):
        bench.add_argument(
            flag,
            type=output_file,
            metavar="FILE",
            help=f"also write the results as {what} to FILE; - prints them on standard output alone, and the "
            "table on standard error",
        )
    budget_options(bench)
    model_options(bench)


def run_bench_command(args: argparse.Namespace, settings: Settings) -> int:
    from adaexplore.bench._command import BenchOptions, list_benches, run_bench, show_bench

    words = list(args.words)
    new_only = [
        flag
        for flag, value in (
            ("--ids", args.ids),
            ("--replay", args.replay),
            ("--steps", args.steps),
            ("--parallel", args.parallel),
            ("--mode", args.mode),
            ("--backend", args.backend),
            ("--seed", args.seed),
            ("--compile", args.compile or None),
            ("--resume", args.resume),
        )
        if value is not None
    ]
    if words[:1] == ["list"]:
        if len(words) > 1 or new_only or args.json or args.csv:
            raise RequestError("`bench list` takes no other arguments")
        return list_benches(settings)
    if args.json == STDOUT and args.csv == STDOUT:
        raise RequestError("--json - and --csv - would both print on standard output: send one of them to a file")
    options = BenchOptions(json_to=args.json, csv_to=args.csv)
    # standard output carries the JSON or CSV alone; the table and what the bench says go to standard error
    out = sys.stderr if STDOUT in (args.json, args.csv) else sys.stdout
    if words[:1] == ["show"]:
        if len(words) != 2 or new_only:
            raise RequestError("`bench show BENCH` takes one bench id (see `adaexplore bench list`), and --json/--csv")
        return show_bench(settings, words[1], options, out=out)
    if len(words) > 1:
        raise RequestError(f"bench takes one suite, not {len(words)} ({' '.join(words)}); usage:\n{_USAGE}")
    settings = with_model_options(settings, args)
    limits = budgets(args, settings)
    options.suite = words[0] if words else None
    options.ids, options.replay, options.steps = args.ids, args.replay, args.steps
    options.parallel = args.parallel or 1
    options.mode, options.backend, options.with_compile = args.mode, args.backend, args.compile
    options.seed, options.resume = args.seed, args.resume
    options.budget_tokens = limits["budget_tokens"]
    options.budget_usd = limits["budget_usd"]
    options.budget_seconds = limits["budget_seconds"]
    if options.resume and args.parallel is None:
        options.parallel = 1
    return anyio.run(partial(run_bench, settings, options, out=out))
