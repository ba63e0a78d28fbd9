"""`adaexplore explore` and `adaexplore adapt`: the settings and tasks checked up front, then the loop."""

from __future__ import annotations

import dataclasses
import re
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO

import anyio

from adaexplore import tools
from adaexplore.agent import _replay as replay
from adaexplore.agent._abandon import deaf_to_signals
from adaexplore.agent._display import TerminalDisplay, best_text, summary_table
from adaexplore.agent._explore import Budget, Explorer, TaskSummary, run_all
from adaexplore.agent._writers import ModelWriter, ReplayWriter, Writer
from adaexplore.config import BackendChoice, ModeName, Settings
from adaexplore.domain import SizeValue
from adaexplore.errors import RequestError, TaskError
from adaexplore.listing import first_of

if TYPE_CHECKING:
    from adaexplore.agent._client import ModelClient

__all__ = ["AdaptOptions", "ExploreOptions", "adapt", "connect_model", "explore", "parse_duration"]


def parse_duration(text: str) -> float:
    """'90', '90s', '30m', '2h', '1h30m' → seconds."""
    cleaned = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", cleaned):
        seconds = float(cleaned)
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", cleaned)
        if not parts or "".join(n + u for n, u in parts) != cleaned:
            raise RequestError(f"cannot read the duration {text!r}; write it like 90, 90s, 30m, 2h or 1h30m")
        seconds = sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
    if seconds <= 0:
        raise RequestError(f"the duration {text!r} is no time at all; give a positive one, like 90s, 30m or 2h")
    return seconds


@dataclass
class ExploreOptions:
    tasks: list[Path]
    steps: int | None = None
    parallel: int = 1
    seed: int | None = None
    preset: Literal["default", "paper"] | None = None
    mode: ModeName | None = None
    backend: BackendChoice | None = None
    resume: list[str] | None = None
    budget_tokens: int | None = None
    budget_usd: float | None = None
    budget_seconds: float | None = None
    memory_updates: bool | None = None
    out_dir: Path | None = None
    small_sizes: bool = True  # False: CPU checks at full sizes (no derived SMALL_SIZES, the modules' own ignored)
    # a folder of one's own kernels that the offline generator (replay) serves, in place of a model
    kernels: Path | None = None


@dataclass
class AdaptOptions:
    count: int
    steps: int | None = None
    parallel: int = 1
    seed: int = 0
    budget_tokens: int | None = None
    budget_usd: float | None = None
    budget_seconds: float | None = None
    out_dir: Path | None = None


def _banner(settings: Settings, writer: Writer, out: TextIO) -> None:
    if writer.is_model:
        where = settings.model.base_url or "the OpenAI API"
        out.write(f"model: {writer.label} at {where}\n")
    else:
        folders = list(writer.folders.values()) if isinstance(writer, ReplayWriter) else []
        out.write(replay.banner(folders) + "\n")


async def _model_writer(settings: Settings, display: TerminalDisplay) -> ModelClient:
    return await connect_model(settings, display.say)


async def connect_model(settings: Settings, say: Callable[[str], None]) -> ModelClient:
    """The model client for the configured endpoint, checked (it answers, knows the model, takes the key);
    a retried request is reported through `say`.

    Raises:
        ModelError: the endpoint cannot be used.
    """
    from adaexplore.agent._client import ModelClient  # the OpenAI SDK loads only when a model is used

    retries = settings.model.max_retries

    def retrying(purpose: str, attempt: int, reason: str, delay: float) -> None:
        # a model that fails for a while is waited for out loud, not in silence
        say(f"model request ({purpose}): {reason}; retry {attempt} of {retries} in {delay:.1f} s")

    client = ModelClient(settings.model.model_copy(update={"name": settings.model.resolved_name()}), on_retry=retrying)
    try:
        await client.check()
    except BaseException:
        await client.aclose()
        raise
    return client


def _timing_note(svc: tools.Services, backend: str | None) -> str | None:
    if backend in ("compile", "interpret"):
        return f"backend {backend}: kernels are checked for correctness only; speedups are not measured"
    if not tools.has_gpu(svc):
        return (
            "no GPU here: kernels are checked by the compile and interpret backends (correctness only); "
            "speedups are not measured, so the search can only tell correct kernels from failing ones"
        )
    return None


def _report(summaries: list[TaskSummary], out: TextIO, timing_note: str | None, settings: Settings) -> int:
    out.write("\n" + summary_table(summaries) + "\n")
    if any(s.verified for s in summaries):
        out.write("✓: confirmed by the final re-evaluation of the best candidates in fresh processes\n")
    for s in summaries:
        if s.best_file is not None:
            path = " → ".join(str(n) for n in s.best_path)
            out.write(f"{s.task_name}: best kernel {s.best_file} ({best_text(s)}; tree path {path})\n")
        else:
            out.write(f"{s.task_name}: no correct kernel in {s.steps_done} evaluations\n")
        if s.status == "stopped":
            out.write(f"{s.task_name}: stopped: {s.reason}. Resume with: {resume_command([s.run_id], settings)}\n")
    if timing_note:
        found = " and each best kernel is a correct one" if any(s.best_file is not None for s in summaries) else ""
        out.write(f"note: speedups were not measured (no timing on this machine){found}.\n")
    if any(s.reason.startswith(INTERRUPTED) for s in summaries):
        return 4  # interrupted, as the exit-code table of adaexplore.cli._options says
    return 0 if all(s.status == "finished" or "budget" in s.reason for s in summaries) else 1


INTERRUPTED = "interrupted"


async def _run_interruptibly(explorer: Explorer, run_ids: list[str], parallel: int) -> list[TaskSummary]:
    """`run_all`, where a first SIGINT or SIGTERM stops every run at once (resumably: the steps under way are
    abandoned, every finished one is in the store, and the summary is printed), and a second one, while the first
    stops them, leaves without the summary.

    Raises:
        KeyboardInterrupt: the second signal came; the steps in flight were abandoned (the store holds
            every step that completed).
    """
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        return await run_all(explorer, run_ids, parallel)
    summaries: list[TaskSummary] | None = None
    first: list[str] = []
    second: list[str] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
                count = 0
                async for signum in received:
                    count += 1
                    if count > 1:
                        second.append(signal.Signals(signum).name)
                        group.cancel_scope.cancel()
                        return
                    sys.stderr.write(
                        f"\n{signal.Signals(signum).name}: stopping now; the steps under way are abandoned, every "
                        "finished one is kept\n"
                    )
                    sys.stderr.flush()
                    first.append(signal.Signals(signum).name)
                    explorer.interrupt(f"{INTERRUPTED} ({signal.Signals(signum).name})")

        group.start_soon(watch)
        try:
            summaries = await run_all(explorer, run_ids, parallel)
        finally:
            group.cancel_scope.cancel()
    if first and summaries is not None:
        deaf_to_signals()
    if summaries is None:
        # The runs are open still: say so in the store, so `runs list` does not show them running.
        for run_id in run_ids:
            if tools.run_record(explorer.svc, run_id).status != "running":
                continue  # finished, or stopped already for a reason of its own
            tools.stop_run(
                explorer.svc,
                run_id,
                f"{INTERRUPTED} twice ({second[0] if second else 'signal'}): the steps in flight were dropped",
            )
        sys.stderr.write(f"stopped at once. Resume with: {resume_command(run_ids, explorer.svc.settings)}\n")
        raise KeyboardInterrupt
    return summaries


async def explore(settings: Settings, options: ExploreOptions, *, out: TextIO = sys.stdout) -> int:
    """Run (or resume) searches on tasks; returns the exit code.

    Raises:
        TaskError: a task file is missing or unusable (before any run starts).
        RequestError: an option is wrong, or replay has no kernels for a task.
        ModelError: the endpoint is unreachable, refuses the key, or does not know the model (before any
            run starts).
    """
    if not options.tasks and not options.resume:
        raise RequestError("name at least one task file, or a run to resume with --resume RUN")
    if options.resume:
        ignored = [
            flag
            for flag, value in (
                ("--steps", options.steps),
                ("--seed", options.seed),
                ("--preset", options.preset),
                ("--mode", options.mode),
                ("--backend", options.backend),
            )
            if value is not None
        ]
        if ignored:
            raise RequestError(
                f"{', '.join(ignored)} set{'s' if len(ignored) == 1 else ''} up new runs; a resumed run keeps its "
                "own (`adaexplore runs show RUN` shows them). Drop "
                + ("it" if len(ignored) == 1 else "them")
                + " to resume, or start a new run."
            )
        options.resume = list(dict.fromkeys(options.resume))  # a run named twice is resumed once
    _check_out_dir(options.out_dir)
    if options.kernels is not None:
        replay.check_option(options.kernels, settings.model.resolved_name())
    for path in options.tasks:
        tools.check_task_file(path)  # a missing or broken task stops everything before a run starts
    if options.resume:
        with tools.open_reader(settings) as reader:
            for run_id in options.resume:  # before the model is asked anything or a worker started
                run = _check_resumable(reader, run_id)
                if run.model != settings.model.resolved_name():
                    raise RequestError(
                        f"run {run_id} was searched by {run.model}, and this command would go on with "
                        f"{settings.model.resolved_name()}; resume it with the same generator: "
                        f"{resume_command([run_id], settings, run.model)} (with its key in the environment)"
                    )
    model_name = settings.model.resolved_name()
    display = TerminalDisplay()
    client = None if model_name == "replay" else await _model_writer(settings, display)
    try:
        async with tools.open_services(settings) as svc:
            writer: Writer
            if client is None:
                writer = ReplayWriter(kernels={}, svc=svc)
            else:
                writer = ModelWriter(client=client, svc=svc, label=model_name)
                svc = dataclasses.replace(svc, judge=writer)
            run_ids = await _prepare_runs(svc, writer, options)
            _banner(settings, writer, out)
            note = _timing_note(svc, options.backend or settings.executor.backend)
            if note:
                out.write(f"note: {note}.\n")
            out.flush()
            explorer = _explorer(svc, writer, options, options.memory_updates, display)
            summaries = await _run_interruptibly(explorer, run_ids, options.parallel)
            return _report(summaries, out, note if not any(s.timed for s in summaries) else None, settings)
    finally:
        if client is not None:
            await client.aclose()


async def _prepare_runs(svc: tools.Services, writer: Writer, options: ExploreOptions) -> list[str]:
    run_ids: list[str] = []
    if options.resume:
        if options.tasks and not isinstance(writer, ReplayWriter):
            raise RequestError("give task files or --resume, not both (replay alone reads task files on resume)")
        by_name = {p.stem: p for p in options.tasks}
        runs = [_check_resumable(svc, run_id) for run_id in options.resume]
        strays = sorted(set(by_name) - {run.task_name for run in runs})
        if strays:
            raise RequestError(
                f"with --resume, a task file only tells replay where a resumed run's task lies, and no resumed run "
                f"is on {', '.join(strays)}; start new runs on it without --resume"
            )
        for run in runs:
            if isinstance(writer, ReplayWriter):
                stored = tools.run_record(svc, run.run_id).kernels
                served = replay.for_resume(run, stored, by_name.get(run.task_name), options.kernels)
                replay.serve(writer, svc, run.task_id, run.run_id, served)
            run_ids.append(run.run_id)
        return run_ids
    # every task is loaded in the evaluator's own process, and replay finds its kernels, before any run
    # starts: a task that fails stops the command with its reason and leaves no run behind; sizes {}: none, in
    # place of derived or the module's own
    sizes: dict[str, SizeValue] | None = None if options.small_sizes else {}
    tasks = [
        await tools.create_checked_task(
            svc, tools.task_file_request(path, small_sizes=sizes), backend=options.backend, mode=options.mode
        )
        for path in options.tasks
    ]
    replaying = isinstance(writer, ReplayWriter)
    found = [replay.for_task(path, options.kernels) for path in options.tasks] if replaying else []
    for i, task in enumerate(tasks):
        started = tools.start_run(
            svc,
            tools.StartRunRequest(
                task_id=task.task_id,
                seed=options.seed,
                total_steps=options.steps,
                preset=options.preset,
                mode=options.mode,
                backend=options.backend,
                model=writer.label,
            ),
        )
        if isinstance(writer, ReplayWriter):
            replay.serve(writer, svc, task.task_id, started.run_id, found[i])
        run_ids.append(started.run_id)
    return run_ids


def _explorer(
    svc: tools.Services,
    writer: Writer,
    options: ExploreOptions | AdaptOptions,
    memory_updates: bool | None,
    display: TerminalDisplay,
) -> Explorer:
    budget = Budget(tokens=options.budget_tokens, usd=options.budget_usd, seconds=options.budget_seconds)
    return Explorer(
        svc, writer, budget=budget, observer=display, out_dir=options.out_dir, memory_updates=memory_updates
    )


def _check_out_dir(folder: Path | None) -> None:
    """--out is checked before any work: a folder that cannot be made would lose a whole run's kernels."""
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise RequestError(f"--out {folder} is a file, not a folder") from None
    except OSError as exc:
        raise RequestError(f"--out {folder} cannot be made: {exc.strerror or exc}") from None


def resume_command(run_ids: list[str], settings: Settings, model: str | None = None) -> str:
    """The command that resumes runs with the generator that searched them (`model`, by default the
    configured one): replay needs no options, a model its name and where it is served."""
    words = ["adaexplore explore", *(f"--resume {run_id}" for run_id in run_ids)]
    model = model or settings.model.resolved_name()
    if model != "replay":
        words.append(f"--model {model}")
        if settings.model.base_url:
            words.append(f"--base-url {settings.model.base_url}")
        if settings.model.api_key_env != "OPENAI_API_KEY":
            words.append(f"--api-key-env {settings.model.api_key_env}")
    return " ".join(words)


def _check_resumable(svc: tools.Services, run_id: str) -> tools.RunResult:
    run = tools.get_run(svc, tools.GetRunRequest(run_id=run_id))
    if run.status == "finished":
        raise RequestError(f"run {run_id} is already finished; `adaexplore runs show {run_id}` shows its tree")
    return run


async def adapt(settings: Settings, options: AdaptOptions, *, out: TextIO = sys.stdout) -> int:
    """Synthesize practice tasks, search them with memory updates on, and report what the memory gained.

    Raises:
        RequestError: the model is replay (it has no kernels for synthetic tasks).
        ModelError: the endpoint cannot be used (before any run starts).
        EvaluatorError: task synthesis failed.
    """
    model_name = settings.model.resolved_name()
    if model_name == "replay":
        raise RequestError(
            "adapt needs a model: the replay generator only has sample kernels for the example tasks. Set "
            "OPENAI_API_KEY (or --api-key-env) and --model, or --base-url for another endpoint"
        )
    _check_out_dir(options.out_dir)
    display = TerminalDisplay()
    client = await _model_writer(settings, display)
    try:
        out.write(f"synthesizing {options.count} tasks (seed {options.seed}) from the installed torch…\n")
        out.flush()
        report = await tools.synthesize_tasks(settings, options.count, seed=options.seed)
        out.write(
            f"{len(report.tasks)} tasks kept, {len(report.rejected)} candidates rejected "
            f"(torch {report.torch_version}, {report.catalogue_size} operators usable)\n"
        )
        if not report.tasks:
            why = first_of([r.reason for r in report.rejected], 5, sep="; ")
            raise TaskError(f"no synthetic task passed the checks: {why}")
        async with tools.open_services(settings) as svc:
            writer = ModelWriter(client=client, svc=svc, label=model_name)
            svc = dataclasses.replace(svc, judge=writer)
            folder = settings.home / "synthetic"
            folder.mkdir(parents=True, exist_ok=True)
            tools.seed_starter_memory(svc)
            before = {r.id: (r.occurrences, r.tasks) for r in tools.list_rules(svc)}
            run_ids = []
            steps = options.steps or settings.agent.adapt_steps
            for task in report.tasks:
                (folder / f"{task.name}.py").write_text(task.source)
                created = tools.create_task(svc, tools.CreateTaskRequest(source=task.source, name=task.name))
                started = tools.start_run(
                    svc, tools.StartRunRequest(task_id=created.task_id, total_steps=steps, model=writer.label)
                )
                run_ids.append(started.run_id)
            out.write(f"task sources: {folder}\n")
            _banner(settings, writer, out)
            explorer = _explorer(svc, writer, options, True, display)
            summaries = await _run_interruptibly(explorer, run_ids, options.parallel)
            code = _report(summaries, out, None, settings)
            out.write("\n" + _memory_gains(svc, before) + "\n")
            return code
    finally:
        await client.aclose()


def _memory_gains(svc: tools.Services, before: dict[int, tuple[int, int]]) -> str:
    rows = []
    config = svc.settings.memory
    running = tools.running_triton()
    for rule in tools.list_rules(svc):
        old = before.get(rule.id)
        if old is not None and old == (rule.occurrences, rule.tasks):
            continue
        gained = rule.occurrences - (old[0] if old else 0)
        state = "injected" if tools.injected(rule, config, running) else "not yet injected"
        label = "new" if old is None else f"+{gained}"
        rows.append(
            f"  rule {rule.id:<4} {label:<4} seen {rule.occurrences} times in {rule.tasks} task(s), {state}: "
            + rule.text
        )
    if not rows:
        return "skill memory: no rule gained or counted in this run"
    return f"skill memory: {len(rows)} rule(s) gained or counted\n" + "\n".join(rows)
