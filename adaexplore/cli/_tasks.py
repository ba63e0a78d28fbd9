"""`adaexplore create-task` (a task file, or a FlashInfer-Bench definition with its workloads, into the store) and
`adaexplore export RUN --flashinfer-solution FILE` (a run's best kernel as a FlashInfer-Bench Solution)."""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from adaexplore import tools
from adaexplore.cli._options import EXIT_OK, OneLineErrors
from adaexplore.config import Settings
from adaexplore.errors import NotFoundError, RequestError

__all__ = ["add_task_parsers", "run_create_task", "run_export"]


def add_task_parsers(commands: argparse._SubParsersAction[OneLineErrors]) -> None:
    create = commands.add_parser(
        "create-task",
        help="register a task (a KernelBench-format module, or a FlashInfer-Bench definition) and print its id",
        description="Register a task in the store after loading it as an evaluation would (its module imported, "
        "Model built, inputs drawn and the reference run, in the evaluator's sandbox), and print its id. With "
        "--flashinfer, the task is a FlashInfer-Bench Definition with its workloads: each workload is one of the "
        "task's input sets, a kernel must be correct on all of them, and its speedup is their geometric mean. "
        "`adaexplore explore DEFINITION.json` and `adaexplore profile DEFINITION.json KERNEL` take the "
        "definition directly too.",
    )
    create.add_argument("task", nargs="?", type=Path, help="a task module (KernelBench format)")
    create.add_argument("--flashinfer", type=Path, metavar="DEFINITION", help="a FlashInfer-Bench Definition file")
    workloads = create.add_mutually_exclusive_group()
    workloads.add_argument(
        "--workload",
        type=Path,
        action="append",
        metavar="FILE",
        help="a workload file (.jsonl of workload traces, or .json of one); may repeat",
    )
    workloads.add_argument("--workloads", type=Path, metavar="DIR", help="a folder of workload files")
    create.add_argument("--name", help="the task's name (default: the file's stem, or the definition's name)")
    create.add_argument("--out", type=Path, metavar="FILE", help="also write the task's module to FILE")

    export = commands.add_parser(
        "export",
        help="write a run's best kernel in another system's format (a FlashInfer-Bench Solution)",
        description="Write the best kernel of a search run as a FlashInfer-Bench Solution (language triton, "
        "value-returning entry point kernel.py::run, author adaexplore, the run's provenance in its "
        "description), which FlashInfer-Bench's loader and benchmark take. The run's task must come from a "
        "FlashInfer-Bench definition.",
    )
    export.add_argument("run", help="a run id (see `adaexplore runs list`)")
    export.add_argument(
        "--flashinfer-solution", type=Path, required=True, metavar="FILE", help="the Solution JSON file to write"
    )


def _request(args: argparse.Namespace) -> tools.CreateTaskRequest:
    if (args.task is None) == (args.flashinfer is None):
        raise RequestError(
            "give a task module (`adaexplore create-task TASK.py`) or a FlashInfer-Bench definition "
            "(`adaexplore create-task --flashinfer DEFINITION.json`)"
        )
    if args.flashinfer is None:
        if args.workload or args.workloads:
            raise RequestError("--workload and --workloads go with --flashinfer DEFINITION.json")
        return tools.CreateTaskRequest(path=str(args.task), name=args.name)
    given = [str(p) for p in args.workload] if args.workload else [str(args.workloads)] if args.workloads else None
    return tools.CreateTaskRequest(
        flashinfer_definition=str(args.flashinfer), flashinfer_workloads=given, name=args.name
    )


async def _create(args: argparse.Namespace, settings: Settings) -> int:
    request = _request(args)
    async with tools.open_services(tools.single_use(settings)) as svc:
        created = await tools.create_checked_task(svc, request)
        source = tools.task_source(svc, created.task_id)
    lines = [f"task {created.task_id} ({created.name})"]
    if created.input_sets:
        sets = ", ".join(created.input_sets)
        lines.append(f"  input sets: {len(created.input_sets)} ({sets}), each judged at full size on a GPU")
    lines.append(f"  forward({', '.join(created.forward_params)})")
    lines.append(f"  small sizes: {created.small_sizes_note or ('yes' if created.small_sizes else 'none')}")
    if created.degenerate:
        lines.append(f"  {created.degenerate}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(source)
        lines.append(f"  module written to {args.out}: `adaexplore explore {args.out}` searches it")
    elif args.flashinfer is not None:
        lines.append(f"  `adaexplore explore {args.flashinfer}` searches it")
    print("\n".join(lines))
    return EXIT_OK


def run_create_task(args: argparse.Namespace, settings: Settings) -> int:
    return anyio.run(_create, args, settings)


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    if not tools.database_exists(settings):
        raise NotFoundError(
            f"no run has id {args.run!r}: there is no database at {settings.database_url.removeprefix('sqlite:///')}"
            "; set ADAEXPLORE_DB or ADAEXPLORE_HOME (or --home) to the one the run was made in"
        )
    with tools.open_reader(settings) as svc:
        path, name = tools.export_flashinfer_solution(svc, args.run, args.flashinfer_solution)
    print(f"wrote {path}: FlashInfer-Bench solution {name} (entry point kernel.py::run)")
    return EXIT_OK
