"""Shared fixtures: one evaluator per test session (its workers are real processes), on anyio; and the lanes.

The fast lane, `pytest -m "not slow"`, is the in-process, fake-backed and unit tests. Every test of the
end-to-end modules below (real evaluator workers, Triton compiles, the CLI as a subprocess, a browser) is
marked `slow` here, so a test added to one of them joins the slow lane without a marker of its own; a slow
test in another module carries `@pytest.mark.slow` itself."""

from __future__ import annotations

import gc
import inspect
import os
import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import sniffio
import torch

from adaexplore.config import ExecutorConfig, Settings, StoreConfig
from adaexplore.executor import Evaluator
from tests.postgres import Server, Unavailable

# Settings that exist for tests only (executor.disable_guards_for_tests) are accepted where this is set.
os.environ["ADAEXPLORE_TESTING"] = "1"

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
# With a GPU the evaluator's automatic backend is cuda; without one, compile + interpret.
ON_GPU = torch.cuda.is_available()


# paths relative to tests/; a folder covers every module under it
END_TO_END = (
    "adversarial/",
    "sandbox/",
    "agent/test_adapt.py",
    "agent/test_explore.py",
    "agent/test_one_best_replay.py",
    "agent/test_own_kernels.py",
    "agent/test_small_step_contract.py",
    "agent/test_synth.py",
    "benchmarks/",
    "executor/test_small_sizes.py",
    "executor/worker/test_compile_only.py",
    "executor/worker/test_coverage_walk.py",
    "executor/worker/test_interpret_precision.py",
    "executor/worker/test_interpret_shim.py",
    "executor/worker/test_launches.py",
    "executor/worker/test_static_cost.py",
    "bench/test_bench_cli.py",
    "bench/test_report_browser.py",
    "executor/test_evaluator.py",
    "executor/test_coverage.py",
    "executor/test_candidate_budget.py",
    "executor/test_speed_and_precision.py",
    "executor/test_gpu_truth.py",
    "executor/test_construction.py",
    "executor/test_input_sets.py",
    "executor/test_no_stray_sandbox.py",
    "flashinfer/",
    "memory/test_confirm_rule.py",
    "memory/test_starter.py",
    "memory/test_memory_cli.py",
    "server/test_end_to_end.py",
    "server/test_report_routes.py",
    "tools/test_resume.py",
    "tools/test_tools_with_evaluator.py",
    "test_examples.py",
    "test_readme.py",
    "test_cli.py",
    "test_cli_profile.py",
    "test_layers.py",
)


# the end-to-end modules that take longest (CPU-seconds of a whole run on 2 cores), longest first: a parallel run
# (`-n 2 --dist loadscope`) hands them out first, so that none is left to run alone while the other worker idles
LONGEST = (
    "adversarial/test_adversarial.py",
    "executor/test_evaluator.py",
    "sandbox/test_sandbox.py",
    "test_examples.py",
    "memory/test_starter.py",
    "agent/test_explore.py",
    "cluster/test_cluster.py",
    "executor/test_small_sizes.py",
    "executor/test_gpu_truth.py",
    "bench/test_bench_cli.py",
    "server/test_end_to_end.py",
    "test_cli.py",
    "adversarial/test_worker_checks.py",
    "adversarial/test_hopper_code.py",
    "benchmarks/test_kernelbench_suite.py",
    "test_cli_profile.py",
)


def pytest_configure(config: pytest.Config) -> None:
    # Collecting imports every test module and what they import (torch, the MCP SDK, hypothesis, dask): the
    # collector, which would look through the hundreds of thousands of objects they make again and again as they come
    # (a quarter of the collection's CPU time), waits until the tests run (`pytest_runtestloop`)
    gc.disable()
    # pytest-xdist's loadscope hands out the modules with the most tests first, which leaves the long modules of
    # few tests (a single test of a minute) to the end of the run, where one can run alone: the order below is
    # the one to follow (no effect without xdist)
    if getattr(config.option, "loadscopereorder", None):
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """The collector on again before the first test (in each process of a parallel run, and in the one that hands out
    the tests, which collects nothing); what the start and the collection made, kept for the whole run, is frozen
    out of every later collection's way."""
    gc.freeze()
    gc.enable()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    lanes: dict[Path, str] = {}
    for item in items:
        where = item.path.relative_to(tests).as_posix() if item.path.is_relative_to(tests) else ""
        if where.startswith(END_TO_END):
            item.add_marker(pytest.mark.slow)
        lane = "slow" if item.get_closest_marker("slow") else "fast"
        # written into a JUnit report (--junitxml), where .ci/lanes times the fast lane from the full run
        item.user_properties.append(("lane", lane))
        if lanes.get(item.path) != "slow":
            lanes[item.path] = lane

    # Longest first, then the other modules with an end-to-end test, then the fast ones, which fill the end of a
    # parallel run; a module's tests stay together and in their order (the sort is stable).
    def order(item: pytest.Item) -> tuple[int, int]:
        where = item.path.relative_to(tests).as_posix() if item.path.is_relative_to(tests) else ""
        if where in LONGEST:
            return 0, LONGEST.index(where)
        return (1, 0) if lanes[item.path] == "slow" else (2, 0)

    items.sort(key=order)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_event_loop_named(request: pytest.FixtureRequest) -> Iterator[None]:
    """A plain test starts with no async library named in its context, as a fresh process would.

    While a session-scoped async fixture (the evaluator) lives, anyio's pytest plugin keeps its test runner
    open and leaves sniffio's context variable saying "asyncio" in the main thread, so a plain test that
    calls `anyio.run` (directly, or through the CLI's `main`) would be refused as nested, depending on which
    tests ran before it in the same worker."""
    if inspect.iscoroutinefunction(request.function):
        yield
        return
    token = sniffio.current_async_library_cvar.set(None)
    try:
        yield
    finally:
        sniffio.current_async_library_cvar.reset(token)


# set (`--setenv`) in a sandbox a test leaves without its parent on purpose, for a second, to show what the
# launcher prevents: the check below passes over it, whichever test of whichever process sees it
DELIBERATE = ("ADAEXPLORE_DELIBERATE_ORPHAN", "1")
# how long a stray may take to go (a launcher ending a tree, an init reaping late, a loaded machine)
_GRACE_S = 5.0


def _stray_sandboxes(known: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Live bubblewrap processes that outlived the process that started them. A worker's outer bwrap has the
    launcher (`host/_reaper.py`) as parent; its inner one, the first process of the new PID namespace (two PIDs in
    `NSpid`), has the outer one. An inner one whose parent is no bwrap, or an outer one reparented to init, is a
    stray; each is named with the evaluator whose exchange directory its command line names."""
    stray = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or entry.name in known:
            continue
        try:
            if (entry / "comm").read_text().strip() != "bwrap":
                continue
            state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            if state == "Z":
                continue  # ended, its namespace with it; an init that reaps late keeps the entry a while
            status = (entry / "status").read_text()
            inner = any(line.startswith("NSpid:") and len(line.split()) > 2 for line in status.splitlines())
            parent = int(ppid)
            above = "" if parent <= 1 else Path(f"/proc/{parent}/comm").read_text().strip()
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, ValueError, IndexError):
            continue
        if "=".join(DELIBERATE) in "=".join(argv):
            continue
        if parent <= 1 or (inner and above != "bwrap"):
            owners = sorted({m.group(1) for arg in argv for m in re.finditer(r"/adaexplore-(\d+)-", arg)})
            owner = f", evaluator {'/'.join(owners)}" if owners else ""
            kind = "inner" if inner else "outer"
            stray.append(f"pid {entry.name} ({kind}, parent {parent} {above or 'init'}{owner})")
    return stray


# strays already reported in this process (or there before its first test), by pid
_STRAYS_SEEN: set[str] = {line.split()[1] for line in _stray_sandboxes()}


@pytest.fixture(autouse=True)
def _no_sandbox_outlives_its_worker(request: pytest.FixtureRequest) -> Iterator[None]:
    """After every test: no bubblewrap process (nor the PID namespace it holds) is left without its worker. A
    process that ends takes a moment to go, so what is seen is looked at again for a few seconds. A stray that
    was there before the test began is not its doing (another run on this machine, an earlier test that failed
    for it already), and is not counted again. The check sees the whole machine: where tests run in parallel
    (`-n`), a stray it names may be another process's test's, which the message says."""
    before = _STRAYS_SEEN  # as the previous test of this process left them: one scan a test, not two
    yield
    stray = _stray_sandboxes(before)
    deadline = time.monotonic() + _GRACE_S
    # A worker's sandbox usually goes within a few tens of milliseconds of its worker (the kernel tears down its
    # memory): looked at again soon, then less and less often (a scan costs a few milliseconds of CPU), so that
    # the usual case waits for what it must and no more, and the slow one still has its whole grace.
    pause = 0.01
    while stray and time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(pause * 2, 0.2)
        stray = _stray_sandboxes(before)
    _STRAYS_SEEN.update(line.split()[1] for line in stray)
    where = "" if "PYTEST_XDIST_WORKER" not in os.environ else " (or by a test running beside it)"
    assert not stray, (
        f"sandboxes outlived their workers after {request.node.nodeid}{where}, still there {_GRACE_S:.0f} s "
        f"later: {', '.join(stray)}"
    )


@pytest.fixture(scope="session")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("adaexplore-home")


def fast_settings(home: Path, **executor: object) -> Settings:
    """Settings for tests: short timeouts so a hanging kernel costs seconds, not a minute."""
    defaults: dict[str, object] = {"trial_timeout_s": 10.0, "load_timeout_s": 120.0, "timing_timeout_s": 60.0}
    defaults.update(executor)
    return Settings(home=home, executor=ExecutorConfig(**defaults))  # type: ignore[arg-type]


@pytest.fixture(scope="session")
async def evaluator(home: Path) -> AsyncIterator[Evaluator]:
    async with Evaluator(fast_settings(home)) as ev:
        yield ev


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """A PostgreSQL server (tests/postgres.py says which); the tests that need one skip, saying why, without."""
    try:
        server = Server.start()
    except Unavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


class Databases:
    """The database URL of each home a test uses: a file in it (SQLite), or a new database on the test server
    (PostgreSQL), so that two homes are two stores on either."""

    def __init__(self, kind: str, server: Server | None) -> None:
        self.kind, self.server = kind, server
        self.urls: dict[Path, str] = {}

    def __call__(self, home: Path) -> str:
        if home not in self.urls:
            if self.server is None:
                self.urls[home] = f"sqlite:///{home / 'adaexplore.db'}"
            else:
                self.urls[home] = self.server.store_database()
        return self.urls[home]

    def settings(self, home: Path, **fields: object) -> Settings:
        """Settings over `home` whose store is this home's database."""
        return Settings(home=home, store=StoreConfig(url=self(home)), **fields)  # type: ignore[arg-type]

    def drop(self) -> None:
        if self.server is not None:
            for url in self.urls.values():
                self.server.give_back(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def databases(request: pytest.FixtureRequest) -> Iterator[Databases]:
    """The test runs on each kind of store: SQLite, and a real PostgreSQL server."""
    server = request.getfixturevalue("postgres_server") if request.param == "postgresql" else None
    made = Databases(request.param, server)
    try:
        yield made
    finally:
        made.drop()
