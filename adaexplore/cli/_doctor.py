"""`adaexplore doctor`: one screen of what this machine gives adaexplore, each line ok or what to do."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from adaexplore import __version__, tools
from adaexplore.cluster import worker_command
from adaexplore.config import Settings
from adaexplore.errors import AdaexploreError

__all__ = ["run_doctor"]


@dataclass
class _Line:
    what: str
    found: str
    todo: str | None = None  # None: ok

    def render(self) -> str:
        verdict = "ok" if self.todo is None else f"to do: {self.todo}"
        return f"{self.what:<10}{self.found}\n{'':<10}{verdict}"


def _size(folder: Path) -> tuple[int, int]:
    """(bytes, files) under `folder`; (0, 0) when it does not exist."""
    total = files = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                total += (Path(root) / name).stat().st_size
                files += 1
            except OSError:
                continue  # a file removed while walking is simply not counted
    return total, files


async def _machine(settings: Settings) -> list[_Line]:
    try:
        env = await tools.probe_machine()
    except AdaexploreError as exc:
        return [_Line("torch", "cannot import torch and triton", f"reinstall adaexplore's dependencies ({exc})")]
    if env.gpus:
        names = ", ".join(dict.fromkeys(env.gpus))
        gpu = _Line("gpu", f"{len(env.gpus)} × {names}; driver {env.driver}, CUDA {env.cuda}")
    else:
        gpu = _Line(
            "gpu",
            "none visible to torch"
            + (f" (torch built for CUDA {env.cuda})" if env.cuda else " (a CPU build of torch)")
            + ": kernels are checked for correctness only; speedups need a CUDA GPU and a CUDA build of torch",
        )
    stack = _Line("torch", f"torch {env.torch}, triton {env.triton}, numpy {env.numpy}, python {env.python}")
    backends = ["compile", "interpret"] + (["cuda"] if env.gpus else [])
    chosen = settings.executor.backend
    backend = _Line(
        "backends",
        f"{', '.join(backends)} usable; executor.backend is {chosen!r}"
        + (" (cuda on a GPU, else compile + interpret)" if chosen == "auto" else ""),
        None
        if chosen in ("auto", *backends)
        else f"executor.backend {chosen!r} needs a GPU here; set it to 'auto' or pass --backend compile",
    )
    return [gpu, stack, backend]


async def _sandbox(settings: Settings) -> _Line:
    try:
        plan = await tools.probe_sandbox(settings)
    except AdaexploreError as exc:
        return _Line("sandbox", f"{settings.executor.sandbox!r} asked for, unavailable", str(exc))
    if plan.kind == "none":
        return _Line(
            "sandbox",
            plan.describe(),
            "run untrusted kernels only in a sandbox: unset ADAEXPLORE_SANDBOX / executor.sandbox = 'none'",
        )
    return _Line("sandbox", plan.describe())


def _home(settings: Settings) -> list[_Line]:
    home = settings.home
    if home.exists() and not os.access(home, os.W_OK):
        place = _Line("home", f"{home} (not writable)", f"make {home} writable, or pass --home DIR")
    else:
        place = _Line("home", f"{home}" + ("" if home.exists() else " (made at the first command that writes)"))
    url = settings.database_url
    where = url.removeprefix("sqlite:///")
    if not url.startswith("sqlite:///"):  # a server's database: its size is the server's business
        database = _server_database(settings)
    elif tools.database_exists(settings):
        database = _Line("database", f"{where} ({Path(where).stat().st_size / 2**20:.1f} MiB)")
    else:
        database = _Line("database", f"{where}: none yet (`adaexplore explore TASK` makes it)")
    folder = Path(os.environ.get("TRITON_CACHE_DIR") or Path.home() / ".triton" / "cache")
    size, files = _size(folder)
    cache = _Line(
        "cache",
        f"Triton cache {folder}: {size / 2**20:.1f} MiB in {files} files; the workers' own caches are in memory",
        None if size < 20 * 2**30 else f"it is large: remove {folder} to free the space (kernels compile again)",
    )
    return [place, database, cache]


def _server_database(settings: Settings) -> _Line:
    """A PostgreSQL store, connected to: the server's own message when it refuses (never the password)."""
    label = tools.database_label(settings)
    source = "url under [store] in the settings file" if settings.store.url else "ADAEXPLORE_DB"
    try:
        found = tools.check_database(settings)
    except AdaexploreError as exc:
        return _Line("database", f"{label} (from {source})", f"{exc.in_cli_words()}; fix {source}, or the server")
    server = f"{found.server} at {label}"
    if found.schema_version is None:
        return _Line("database", f"{server}: no adaexplore store yet (`adaexplore explore TASK` makes it)")
    held = f"{server}: store schema version {found.schema_version}, {found.runs} runs"
    if found.too_new:
        return _Line("database", held, "its schema is newer than this adaexplore: upgrade adaexplore")
    return _Line("database", held)


async def _cluster(settings: Settings) -> list[_Line]:
    """The Dask scheduler of --cluster (or ADAEXPLORE_CLUSTER, executor.cluster), asked for its workers within
    executor.cluster_timeout_s; no line when evaluations run on this machine."""
    address = settings.executor.cluster
    if address is None:
        return []
    try:
        found = await tools.probe_cluster(settings)
    except AdaexploreError as exc:
        return [_Line("cluster", f"Dask scheduler {address}: no answer", exc.in_cli_words())]
    assert found is not None
    others = found.workers - found.adaexplore_workers
    without = f", {others} without adaexplore's plugin (they get no evaluations)" if others else ""
    counted = (
        f"Dask scheduler {address}: {found.adaexplore_workers} adaexplore worker(s) with {found.gpus} GPU(s){without}"
    )
    if not found.adaexplore_workers:
        return [
            _Line(
                "cluster",
                counted,
                f"start a worker on each GPU host with `{worker_command(address)}` (`adaexplore worker "
                f"{address}` prints it)",
            )
        ]
    return [_Line("cluster", counted)]


async def _endpoint(settings: Settings) -> _Line:
    model = settings.model
    name = model.resolved_name()
    if name == "replay":
        return _Line(
            "model",
            "replay (the offline generator, not a language model): no endpoint set",
            None,
        )
    from adaexplore.agent._client import ModelClient

    where = model.base_url or os.environ.get("OPENAI_BASE_URL") or "the OpenAI API"
    try:
        async with ModelClient(model.model_copy(update={"name": name})) as client:
            await client.check()
    except AdaexploreError as exc:
        return _Line("model", f"{name} at {where} ({model.base_url_source()})", str(exc))
    return _Line("model", f"{name} at {where}: answers chat completions")


def _estimate(settings: Settings) -> _Line:
    """Which efficiencies the estimate uses for each GPU model: a calibration the store holds, or the package's."""
    if not tools.database_exists(settings):
        return _Line("estimate", "adaexplore's own efficiencies for every GPU (no store yet, so no calibration)")
    try:
        with tools.open_reader(settings) as svc:
            fitted = tools.calibrations_in_force(svc)
    except AdaexploreError as exc:
        return _Line("estimate", f"cannot read the store's calibrations: {exc.in_cli_words()}")
    if not fitted:
        return _Line(
            "estimate",
            "adaexplore's own efficiencies for every GPU: the store holds no calibration (`adaexplore calibrate` "
            "fits one to its GPU verdicts)",
        )
    said = [f"{c.label()} in force for {c.gpu} estimates" for c in fitted if c.current]
    stale = [c for c in fitted if not c.current]
    said += [f"{c.label()} fitted to another version's estimate, not used" for c in stale]
    todo = f"run `adaexplore calibrate --gpu {stale[0].gpu}` again" if stale else None
    return _Line("estimate", "; ".join(said) + "; adaexplore's own efficiencies for the other GPUs", todo)


async def run_doctor(settings: Settings) -> int:
    """Print the checks; 0 when every line is ok, 1 when one says what to do."""
    lines = [
        *await _machine(settings),
        await _sandbox(settings),
        *_home(settings),
        _estimate(settings),
        *await _cluster(settings),
        await _endpoint(settings),
    ]
    print(f"adaexplore {__version__} doctor")
    for line in lines:
        print(line.render())
    todo = [line.what for line in lines if line.todo is not None]
    print(f"{len(lines) - len(todo)} ok" + (f"; to do: {', '.join(todo)}" if todo else ""))
    return 1 if todo else 0
