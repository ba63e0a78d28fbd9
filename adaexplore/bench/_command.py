"""`adaexplore bench`: options checked before anything starts, the bench created (or resumed), its problems
run with a live display, and the table and summary printed (and written as JSON or CSV)."""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import anyio

from adaexplore import tools
from adaexplore.agent import (
    Budget,
    Explorer,
    ModelWriter,
    ReplayWriter,
    Writer,
    connect_model,
    deaf_to_signals,
    replay_kernels,
)
from adaexplore.bench._display import BenchDisplay
from adaexplore.bench._runner import BenchRunner, FileWriter, bench_provenance
from adaexplore.bench._suite import EXAMPLES, Suite, read_suite, replay_files
from adaexplore.bench._table import bench_document, dumps, render_bench, render_bench_list, write_csv
from adaexplore.config import Settings
from adaexplore.errors import RequestError
from adaexplore.store import BenchProblemRecord, BenchRecord

__all__ = ["BenchOptions", "list_benches", "run_bench", "show_bench"]

INTERRUPTED = "interrupted"
STDOUT = "-"  # json_to or csv_to: standard output (the table then goes where `out` says, stderr for the CLI)


@dataclass
class BenchOptions:
    suite: str | None = None
    ids: str | None = None
    replay: Path | None = None
    steps: int | None = None
    parallel: int = 1
    mode: str | None = None
    backend: str | None = None
    with_compile: bool = False
    seed: int | None = None
    resume: str | None = None
    json_to: str | None = None  # a file to write the results to as JSON, or STDOUT
    csv_to: str | None = None  # the same, as CSV
    budget_tokens: int | None = None
    budget_usd: float | None = None
    budget_seconds: float | None = None


def _new_options(options: BenchOptions, settings: Settings) -> dict[str, object]:
    if options.suite is None:
        raise RequestError("name a suite (a directory of KernelBench problems, or `examples`), or --resume BENCH")
    if (options.replay is None) == (options.steps is None):
        raise RequestError(
            "say where the kernels come from: --replay DIR (one kernel file per problem, evaluated once) or "
            "--steps N (a search of N evaluations per problem), not both"
        )
    model = "file" if options.replay is not None else settings.model.resolved_name()
    return {
        "ids": options.ids,
        "replay": str(options.replay.resolve()) if options.replay is not None else None,
        "steps": options.steps,
        "parallel": options.parallel,
        "seed": options.seed,
        "with_compile": options.with_compile,
        "model": model,
    }


def _check_resume_flags(options: BenchOptions) -> None:
    given = [
        flag
        for flag, value in (
            ("SUITE", options.suite),
            ("--ids", options.ids),
            ("--replay", options.replay),
            ("--steps", options.steps),
            ("--mode", options.mode),
            ("--backend", options.backend),
            ("--seed", options.seed),
            ("--compile", options.with_compile or None),
        )
        if value is not None
    ]
    if given:
        raise RequestError(
            f"{', '.join(given)} set up a new bench; a resumed bench keeps its own (`adaexplore bench show "
            f"{options.resume}` shows them). Drop {'it' if len(given) == 1 else 'them'} to resume."
        )


def _suite_of(bench: BenchRecord) -> Suite:
    suite = read_suite(bench.suite, bench.options_dict.get("ids"))
    if suite.hash != bench.suite_hash:
        raise RequestError(
            f"the problems of suite {bench.suite} changed since bench {bench.id} started (files added, removed or "
            "edited); its numbers would mix two suites, so start a new bench"
        )
    return suite


def _kernels(options: dict[str, object], suite: Suite) -> dict[int, str] | None:
    if options.get("replay") is None:
        return None
    problems = {p.id: p for p in suite.problems}
    return {
        pid: tools.kernel_file_code(path, problems[pid].path)
        for pid, path in replay_files(Path(str(options["replay"])), suite).items()
    }


async def run_bench(settings: Settings, options: BenchOptions, *, out: TextIO = sys.stdout) -> int:
    """Run (or resume) a bench; returns the exit code: 0 when every problem has its verdict, 4 when it was
    interrupted, 1 when it stopped short for another reason (a budget, the model).

    Raises:
        RequestError: an option is wrong, the suite or replay directory is unusable, or the bench to resume
            is unknown, finished, or its suite changed.
        ModelError: the endpoint cannot be used (before any problem starts).
    """
    for target in (options.json_to, options.csv_to):
        if target is not None and target != STDOUT and Path(target).is_dir():
            raise RequestError(f"{target} is a directory; give a file to write")
    with tools.open_reader(settings) as reader:
        if options.resume:
            _check_resume_flags(options)
            bench = tools.bench_record(reader, options.resume)
            if bench.status == "finished":
                raise RequestError(f"bench {bench.id} is finished; `adaexplore bench show {bench.id}` prints it")
            suite, stored = _suite_of(bench), bench.options_dict
            settings = settings.model_copy(
                update={"model": settings.model.model_copy(update={"name": stored["model"]})}
            )
        else:
            stored = _new_options(options, settings)
            suite = read_suite(str(options.suite), options.ids)
            bench = None
        kernels = _kernels(stored, suite)
        model = str(stored["model"])
        if kernels is None and model == "replay":
            if bench is None and options.suite != EXAMPLES and not _has_samples(suite):
                raise RequestError(
                    "without a model, --steps searches with `replay`, which serves only the sample kernels of the "
                    "example tasks (suite `examples`); give --replay DIR for this suite, or a model (--model NAME "
                    "with OPENAI_API_KEY or --base-url)"
                )
    if kernels is not None:
        settings = replay_settings(settings)
    display = BenchDisplay()
    client = None if kernels is not None or model == "replay" else await connect_model(settings, display.say)
    try:
        async with tools.open_services(settings) as svc:
            writer: Writer
            if kernels is not None:
                writer = FileWriter(kernels={}, label=f"file:{Path(str(stored['replay'])).name}")
            elif client is None:
                writer = ReplayWriter(kernels={}, svc=svc)
                for problem in suite.problems:
                    _add_samples(writer, svc, problem.path)
            else:
                writer = ModelWriter(client=client, svc=svc, label=model)
                svc = dataclasses.replace(svc, judge=writer)
            if bench is None:
                bench = tools.create_bench(
                    svc,
                    suite=suite.name,
                    suite_hash=suite.hash,
                    mode=_bench_mode(options.mode, settings, suite),
                    backend=options.backend or settings.executor.backend,
                    source="replay" if kernels is not None else "search",
                    options=stored,
                    provenance=bench_provenance(svc),
                    problems=[(p.id, p.name, p.file_hash) for p in suite.problems],
                )
            budget = Budget(tokens=options.budget_tokens, usd=options.budget_usd, seconds=options.budget_seconds)
            explorer = Explorer(
                svc, writer, budget=budget, observer=display, memory_updates=False if kernels is not None else None
            )
            runner = BenchRunner(
                svc,
                explorer,
                bench,
                suite,
                kernels=kernels,
                observer=display,
                parallel=int(stored.get("parallel") or 1),
            )
            try:
                await _run_interruptibly(runner, svc, bench.id)
            finally:
                display.close()
            return _conclude(svc, bench.id, runner, options, out)
    finally:
        if client is not None:
            await client.aclose()


def _bench_mode(asked: str | None, settings: Settings, suite: Suite) -> str:
    """The bench's mode: the one asked for; else the settings' own where they name one; else flashinfer for a
    FlashInfer-Bench trace set; else the default."""
    if asked is not None:
        return asked
    if "mode" in settings.executor.model_fields_set or suite.kind != "flashinfer":
        return settings.executor.mode
    return "flashinfer"


def _has_samples(suite: Suite) -> bool:
    """Whether replay has sample kernels for every problem of the suite (a trace set with a kernels/ folder)."""
    return all(replay_kernels(problem.path) for problem in suite.problems)


def _add_samples(writer: ReplayWriter, svc: tools.Services, path: Path) -> None:
    kernels = replay_kernels(path)
    if kernels:
        writer.kernels[tools.task_hash(path)] = kernels


async def _run_interruptibly(runner: BenchRunner, svc: tools.Services, bench_id: str) -> None:
    """The runner, where a first SIGINT or SIGTERM stops the bench at once (resumably: the steps and task checks
    under way are abandoned, every finished problem and step is kept, and the table is printed), and a second
    one, while the first stops it, leaves without the table."""
    if threading.current_thread() is not threading.main_thread():
        await runner.run()
        return
    second = False
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal second
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
                count = 0
                async for signum in received:
                    count += 1
                    name = signal.Signals(signum).name
                    if count > 1:
                        second = True
                        runner.stop(f"{INTERRUPTED} twice ({name})")
                        group.cancel_scope.cancel()
                        return
                    sys.stderr.write(
                        f"\n{name}: stopping now; the steps under way are abandoned, every finished one is kept\n"
                    )
                    sys.stderr.flush()
                    runner.interrupt(f"{INTERRUPTED} ({name})")

        group.start_soon(watch)
        try:
            await runner.run()
        finally:
            group.cancel_scope.cancel()
    if runner.stopped is not None and runner.stopped.startswith(INTERRUPTED) and not second:
        deaf_to_signals()
    if second:
        for row in tools.bench_rows(svc, bench_id):
            if not row.done and row.run_id is not None and tools.run_record(svc, row.run_id).status == "running":
                tools.stop_run(svc, row.run_id, "the bench was interrupted twice: the step in flight was dropped")


def _conclude(svc: tools.Services, bench_id: str, runner: BenchRunner, options: BenchOptions, out: TextIO) -> int:
    rows = tools.bench_rows(svc, bench_id)
    if all(r.done for r in rows):
        bench = tools.set_bench_status(svc, bench_id, "finished")
    else:
        reason = runner.stopped or "stopped before every problem was done"
        bench = tools.set_bench_status(svc, bench_id, "stopped", reason)
    out.write("\n" + render_bench(bench, rows))
    _write_files(bench, rows, options)
    if bench.status != "finished":
        out.write(f"stopped: {bench.stop_reason}. Resume with: adaexplore bench --resume {bench.id}\n")
        out.flush()
        return 4 if (bench.stop_reason or "").startswith(INTERRUPTED) else 1  # 4: interrupted (the CLI's table)
    out.write(f"report: adaexplore report {bench.id} --html {bench.id}.html\n")
    out.flush()
    return 0


def _write_files(bench: BenchRecord, rows: list[BenchProblemRecord], options: BenchOptions) -> None:
    for target, render in ((options.json_to, _as_json), (options.csv_to, write_csv)):
        if target is None:
            continue
        text = render(bench, rows)
        if target == STDOUT:
            sys.stdout.write(text)
            sys.stdout.flush()
            continue
        try:
            Path(target).write_text(text)
        except OSError as exc:
            raise RequestError(
                f"cannot write {target}: {exc.strerror or exc}; the bench is kept (`adaexplore bench show "
                f"{bench.id}` with --json or --csv writes it again)"
            ) from None


def _as_json(bench: BenchRecord, rows: list[BenchProblemRecord]) -> str:
    return dumps(bench_document(bench, rows))


def show_bench(settings: Settings, bench_id: str, options: BenchOptions, *, out: TextIO = sys.stdout) -> int:
    if not tools.database_exists(settings):
        raise RequestError(f"no bench has id {bench_id!r}: there is no store yet at {settings.database_url}")
    with tools.open_reader(settings) as reader:
        bench = tools.bench_record(reader, bench_id)
        rows = tools.bench_rows(reader, bench_id)
    out.write(render_bench(bench, rows))
    _write_files(bench, rows, options)
    return 0


def list_benches(settings: Settings, *, out: TextIO = sys.stdout) -> int:
    if not tools.database_exists(settings):
        out.write(render_bench_list([], {}))
        return 0
    with tools.open_reader(settings) as reader:
        benches = tools.bench_list(reader)
        out.write(render_bench_list(benches, {b.id: tools.bench_rows(reader, b.id) for b in benches}))
    return 0


def replay_settings(settings: Settings) -> Settings:
    """A replay bench's settings: the one step of a replayed kernel is its result, so there is no final
    re-evaluation, a step the evaluator gave up on (after its own retry) is not tried again with the same
    file, and no reference is built ahead for a next evaluation of a problem that has none (unless asked)."""
    search = settings.search.model_copy(update={"final_reevaluation": 0})
    agent = settings.agent.model_copy(update={"max_failed_steps": 1})
    executor = settings.executor
    if executor.reference_ahead is None:
        executor = executor.model_copy(update={"reference_ahead": False})
    return settings.model_copy(update={"search": search, "agent": agent, "executor": executor})
