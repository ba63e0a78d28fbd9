"""The `adaexplore` command line."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import TypeVar

import anyio

from adaexplore import __version__
from adaexplore.cli._bench import add_bench_parser, run_bench_command
from adaexplore.cli._calibrate import add_calibrate_parser, run_calibrate
from adaexplore.cli._memory import run_memory_command
from adaexplore.cli._options import (
    EXIT_INFRA,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    PORT,
    POSITIVE_INT,
    SEED,
    Budgets,
    OneLineErrors,
    add_global_options,
    budget_options,
    budgets,
    model_options,
    with_model_options,
)
from adaexplore.cli._profile import add_profile_parser, run_profile
from adaexplore.cli._report import add_report_parser, run_report
from adaexplore.cli._tasks import add_task_parsers, run_create_task, run_export
from adaexplore.cli._worker import add_worker_parser, run_worker_command
from adaexplore.config import Settings
from adaexplore.errors import AdaexploreError, ConfigError, ConflictError, EvaluatorError, NotFoundError
from adaexplore.tools import (
    ConfirmRuleRequest,
    CreateTaskRequest,
    check_task_file,
    confirm_rule,
    create_task,
    database_exists,
    open_reader,
    open_services,
    read_code_file,
    render_run_tree,
    render_runs,
    seed_starter_memory,
    single_use,
)

__all__ = ["main"]

_E = TypeVar("_E", bound=BaseException)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineErrors(
        prog="adaexplore",
        description="Optimize GPU kernels with an LLM, on an evaluator that cannot be fooled. "
        "`adaexplore explore TASK` searches for a fast kernel; `adaexplore profile TASK KERNEL` evaluates one.",
    )
    parser.add_argument("--version", action="version", version=f"adaexplore {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    add_profile_parser(commands)

    serve = commands.add_parser(
        "serve",
        help="run the MCP server (stdio for an MCP host; --http for streamable HTTP)",
        description="Run the MCP server. Without --http it speaks stdio, for an MCP host (Claude Code, Claude "
        "Desktop, Cursor, VS Code) to start. With --http it listens on 127.0.0.1 with DNS-rebinding protection; "
        "any other address needs a bearer token: ADAEXPLORE_TOKEN, or one generated and printed at start. Over "
        "HTTP it also serves the report pages, read-only, at /runs/RUN and /benches/BENCH.",
    )
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    serve.add_argument("--host", help="address to listen on (with --http; default 127.0.0.1)")
    serve.add_argument("--port", type=PORT, help="port to listen on (with --http; default 8765)")

    explore = commands.add_parser(
        "explore",
        help="search for fast kernels for tasks, unattended, with the built-in model client",
        description="Run the AdaExplore search on each TASK: pick a node of the tree, the model writes a kernel "
        "from it, the kernel is evaluated, and failures are distilled into the skill memory (the same steps an "
        "MCP client takes). With --kernels DIR, or without an API key or --base-url, the model is `replay`, an "
        "offline generator (not a language model) that serves the kernels of DIR (your own: DIR/TASK/*.py, or "
        "DIR/*.py for one task) or else the sample kernels of examples/kernels. Without a GPU kernels are "
        "checked by the compile and interpret backends and speedups are not measured.",
    )
    explore.add_argument("tasks", nargs="*", type=Path, help="task modules (KernelBench format)")
    explore.add_argument("--steps", type=POSITIVE_INT, help="evaluations per run (default: settings, 50)")
    explore.add_argument("--parallel", type=POSITIVE_INT, default=1, help="tasks searched at once (default 1)")
    explore.add_argument("--seed", type=SEED, help="the runs' random seed (default: drawn)")
    explore.add_argument("--preset", choices=["default", "paper"], help="'paper': the authors' search exactly")
    explore.add_argument("--mode", choices=["strict", "kernelbench", "paper", "flashinfer"], help="evaluation protocol")
    explore.add_argument("--backend", choices=["auto", "cuda", "compile", "interpret"], help="where kernels run")
    explore.add_argument(
        "--resume",
        action="append",
        metavar="RUN",
        help="continue a stopped or killed run (repeatable; see `runs list`)",
    )
    explore.add_argument("--no-memory-updates", action="store_true", help="do not distill failures into rules")
    explore.add_argument(
        "--no-small-sizes",
        action="store_true",
        help="check kernels on the CPU at the tasks' full sizes: derive no SMALL_SIZES, ignore the tasks' own",
    )
    explore.add_argument(
        "--kernels",
        type=Path,
        metavar="DIR",
        help="search with your own kernels, no API key: replay serves the modules of DIR (DIR/TASK/*.py, or DIR/*.py "
        "for one task), each defining ModelNew",
    )
    explore.add_argument("--out", type=Path, help="where best kernels are written (default: $ADAEXPLORE_HOME/runs)")
    budget_options(explore)
    model_options(explore)

    adapt = commands.add_parser(
        "adapt",
        help="build the skill memory: synthesize tasks, search them, distill their failures into rules",
        description="Synthesize practice tasks from the installed torch's operators (checked to be deterministic, "
        "input-dependent and well above the tolerance), run the search on each with memory updates, and report "
        "the rules gained. Needs a model (an API key or --base-url).",
    )
    adapt.add_argument("--tasks", type=POSITIVE_INT, default=10, dest="count", help="synthetic tasks (default 10)")
    adapt.add_argument("--steps", type=POSITIVE_INT, help="evaluations per task (default: settings, 10)")
    adapt.add_argument("--parallel", type=POSITIVE_INT, default=1, help="tasks searched at once (default 1)")
    adapt.add_argument("--seed", type=SEED, default=0, help="seed of the task synthesis (default 0)")
    adapt.add_argument("--out", type=Path, help="where best kernels are written (default: $ADAEXPLORE_HOME/runs)")
    budget_options(adapt)
    model_options(adapt, replay=False)

    add_bench_parser(commands)
    add_report_parser(commands)

    runs = commands.add_parser("runs", help="search runs in the store: list them, or show one as a tree")
    run_commands = runs.add_subparsers(dest="runs_command", required=True)
    run_commands.add_parser("list", help="every run: task, status, steps, best speedup")
    show = run_commands.add_parser("show", help="one run as an indented tree; * marks the path to the best node")
    show.add_argument("run", help="run id (see `adaexplore runs list`)")

    memory = commands.add_parser("memory", help="the skill memory: rules learned from failures")
    memory_commands = memory.add_subparsers(dest="memory_command", required=True)
    listing = memory_commands.add_parser("list", help="the rules, most frequent first")
    listing.add_argument("--all", action="store_true", help="also retired rules")
    for name, text in (
        ("show", "one rule with its signatures and recent failures"),
        ("retire", "stop injecting a rule (kept, and still counted)"),
        ("pin", "always inject a rule, whatever its counts"),
        ("activate", "undo retire or pin: the counts decide again"),
    ):
        memory_commands.add_parser(name, help=text).add_argument("rule", type=int, help="rule id")
    edit = memory_commands.add_parser("edit", help="replace a rule's text")
    edit.add_argument("rule", type=int, help="rule id")
    edit.add_argument("text", help="the new sentence, starting with 'You cannot'")
    export = memory_commands.add_parser("export", help="write the memory to a file ('-': standard output)")
    export.add_argument("file")
    export.add_argument(
        "--format",
        choices=["adaexplore", "paper"],
        default="adaexplore",
        help="adaexplore: everything, as JSON; paper: the authors' 'rule||count' lines",
    )
    load = memory_commands.add_parser("import", help="add rules from a file (either format), all or nothing")
    load.add_argument("file")
    confirm = memory_commands.add_parser(
        "confirm",
        help="back a rule with a reproducer that fails with its mistake (gives an imported rule its scope)",
        description="Evaluate REPRODUCER (a module defining ModelNew) against TASK. If it fails with a mistake "
        "no other rule covers, its signature joins the rule, the rule becomes curated, and its scope starts at "
        "the running Triton, so it is injected into prompts while that holds.",
    )
    confirm.add_argument("rule", type=int, help="rule id")
    confirm.add_argument("reproducer", type=Path, help="a module defining ModelNew that makes the rule's mistake")
    confirm.add_argument("--task", type=Path, required=True, help="the task the reproducer is a candidate for")
    confirm.add_argument(
        "--backend", choices=["auto", "cuda", "compile", "interpret"], default=None, help="where it runs"
    )

    examples = commands.add_parser(
        "examples",
        help="write the example tasks and sample kernels to a folder (DIR/tasks, DIR/kernels)",
        description="Write the example tasks and their sample kernels, which ship inside the package, to DIR "
        "(default: ./examples), so that `adaexplore explore DIR/tasks/row_softmax.py` and `adaexplore profile` "
        "work after a plain `pip install`. Files already there are left alone unless --force.",
    )
    examples.add_argument("dir", nargs="?", type=Path, default=Path("examples"), help="target folder")
    examples.add_argument("--force", action="store_true", help="overwrite files that differ")

    doctor = commands.add_parser(
        "doctor",
        help="what this machine gives adaexplore: GPU, torch, triton, backends, sandbox, store, endpoint",
        description="Check, in one screen, what adaexplore can use here: the GPU and driver, torch and triton, "
        "the usable backends, the sandbox in force, the home directory and database, the Triton cache, and the "
        "model endpoint (with a real request) when one is set. Each line says ok or what to do. Exit code 0 "
        "when nothing needs doing, 1 otherwise.",
    )
    model_options(doctor)
    add_calibrate_parser(commands)
    add_worker_parser(commands)
    add_task_parsers(commands)
    add_global_options(parser, top=True)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    try:
        settings = Settings.load(args.config)
        if args.home is not None:
            settings = settings.model_copy(update={"home": args.home})
        if args.gpus is not None:
            settings = settings.model_copy(
                update={"executor": settings.executor.model_copy(update={"gpus": args.gpus})}
            )
        if args.cluster is not None:
            settings = settings.model_copy(
                update={"executor": settings.executor.model_copy(update={"cluster": args.cluster})}
            )
        if args.target is not None:
            settings = settings.model_copy(
                update={"executor": settings.executor.model_copy(update={"target_gpu": args.target})}
            )
        if args.command == "profile":
            code = run_profile(args, settings)
        elif args.command == "serve":
            # the MCP SDK, like the model client below, is imported by the commands that use it alone, so
            # the other commands start without paying for it
            from adaexplore.server import serve_http, serve_stdio

            if args.http:
                serve_http(settings, args.host or "127.0.0.1", 8765 if args.port is None else args.port)
            elif args.host is not None or args.port is not None:
                raise ConfigError("--host and --port apply to --http; without it the server speaks stdio")
            else:
                serve_stdio(settings)
            code = EXIT_OK
        elif args.command in ("explore", "adapt"):
            settings = with_model_options(settings, args)
            limits = budgets(args, settings)  # checked before anything starts
            code = anyio.run(_explore if args.command == "explore" else _adapt, args, settings, limits)
        elif args.command == "bench":
            code = run_bench_command(args, settings)
        elif args.command == "report":
            code = run_report(args, settings)
        elif args.command == "calibrate":
            code = run_calibrate(args, settings)
        elif args.command == "runs":
            code = _runs(args, settings)
        elif args.command == "examples":
            from adaexplore.cli._examples import write_examples

            print(write_examples(args.dir, force=args.force))
            code = EXIT_OK
        elif args.command == "worker":
            code = run_worker_command(args, settings)
        elif args.command == "create-task":
            code = run_create_task(args, settings)
        elif args.command == "export":
            code = run_export(args, settings)
        elif args.command == "doctor":
            from adaexplore.cli._doctor import run_doctor

            code = anyio.run(run_doctor, with_model_options(settings, args))
        elif args.memory_command == "confirm":
            code = anyio.run(_confirm, args, settings)
        else:
            code = _memory(args, settings)
        sys.stdout.flush()  # here, where a reader that went away can be handled, not at exit
    except BrokenPipeError:
        # the reader of the output stopped early (`adaexplore memory list | head`): stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 128 + signal.SIGPIPE
    except AdaexploreError as exc:
        code = _report_error(exc, args)
    except BaseExceptionGroup as group:  # raised through a task group: report ours plainly, the rest as bugs
        interrupted, others = group.split(KeyboardInterrupt)
        if interrupted is not None and others is None:
            code = EXIT_INTERRUPTED
        else:
            ours, rest = group.split(AdaexploreError)
            if ours is None or rest is not None:
                code = _report_bug(group)
            else:
                code = max(_report_error(exc, args) for exc in _leaves(ours))
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    except Exception as exc:
        code = _report_bug(exc)
    sys.exit(code)


def _report_error(exc: AdaexploreError, args: argparse.Namespace) -> int:
    """Print an error of ours in the command line's words (never the MCP tools' names: `in_cli_words`); its
    exit code from the table in _options."""
    if isinstance(exc, ConflictError) and args.command == "explore":
        # another command got to the run first (a second `explore --resume` of it, or an MCP client's step)
        run = args.resume[0] if args.resume and len(args.resume) == 1 else "RUN"
        print(
            f"adaexplore: error: {exc.in_cli_words()}: another command got to the run first; "
            f"`adaexplore runs show {run}` shows where it stands, and once no other command works on it, "
            f"`adaexplore explore --resume {run}` goes on with it if it is not finished",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    print(f"adaexplore: error: {exc.in_cli_words()}", file=sys.stderr)
    if isinstance(exc, EvaluatorError):
        return EXIT_INFRA
    if isinstance(exc, ConflictError):
        return EXIT_INTERRUPTED
    return EXIT_USAGE


def _report_bug(exc: BaseException) -> int:
    import traceback

    traceback.print_exception(exc, file=sys.stderr)
    print(
        f"adaexplore: internal error ({type(exc).__name__}); this is a fault of adaexplore {__version__}, not of "
        "your call: please report it with the traceback above",
        file=sys.stderr,
    )
    return EXIT_INFRA


def _leaves(group: BaseExceptionGroup[_E]) -> list[_E]:
    leaves: list[_E] = []
    for exc in group.exceptions:
        leaves.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return leaves


async def _explore(args: argparse.Namespace, settings: Settings, budgets: Budgets) -> int:
    from adaexplore.agent import ExploreOptions, explore

    options = ExploreOptions(
        tasks=args.tasks,
        steps=args.steps,
        parallel=args.parallel,
        seed=args.seed,
        preset=args.preset,
        mode=args.mode,
        backend=args.backend,
        resume=args.resume,
        memory_updates=False if args.no_memory_updates else None,
        out_dir=args.out,
        small_sizes=not args.no_small_sizes,
        kernels=args.kernels,
        **budgets,
    )
    if args.kernels is not None and args.model is None:  # your own kernels, served in place of any model
        settings = settings.model_copy(update={"model": settings.model.model_copy(update={"name": "replay"})})
    return await explore(settings, options)


async def _adapt(args: argparse.Namespace, settings: Settings, budgets: Budgets) -> int:
    from adaexplore.agent import AdaptOptions, adapt

    options = AdaptOptions(
        count=args.count,
        steps=args.steps,
        parallel=args.parallel,
        seed=args.seed,
        out_dir=args.out,
        **budgets,
    )
    return await adapt(settings, options)


def _runs(args: argparse.Namespace, settings: Settings) -> int:
    url = settings.database_url
    where = url.removeprefix("sqlite:///")
    if not database_exists(settings):  # reading runs creates no database
        if args.runs_command == "list":
            print(f"no runs yet: there is no database at {where} (`adaexplore explore TASK` creates it)")
            return EXIT_OK
        raise NotFoundError(
            f"unknown run {args.run!r}: there is no database at {where}; set ADAEXPLORE_DB or ADAEXPLORE_HOME "
            "(or --home) to the one the run was made in"
        )
    with open_reader(settings) as svc:
        if args.runs_command == "list":
            print(render_runs(svc))
            return EXIT_OK
        try:
            print(render_run_tree(svc, args.run))
        except NotFoundError:
            raise NotFoundError(
                f"no run has id {args.run!r} in {where}; `adaexplore runs list` lists the runs"
            ) from None
    return EXIT_OK


def _memory(args: argparse.Namespace, settings: Settings) -> int:
    with open_reader(settings) as svc:
        print(run_memory_command(svc, args))
    return EXIT_OK


async def _confirm(args: argparse.Namespace, settings: Settings) -> int:
    check_task_file(args.task)  # a task file that is missing or unusable is named before anything starts
    code = read_code_file(args.reproducer, "reproducer")
    async with open_services(single_use(settings)) as svc:
        seed_starter_memory(svc)
        task = create_task(svc, CreateTaskRequest(path=str(args.task)))
        result = await confirm_rule(
            svc, ConfirmRuleRequest(rule_id=args.rule, task_id=task.task_id, code=code, backend=args.backend)
        )
    print(result.message)
    return EXIT_OK
