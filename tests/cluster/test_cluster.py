"""Evaluations on a Dask cluster: a real LocalCluster of two worker processes, each started with the preload a
user gives `dask worker` (`--preload adaexplore.cluster`), and the CLI or the tools as a user drives them.

One cluster serves the module. Without a GPU its workers evaluate on the compile and interpret backends. The
faults: a worker killed mid-evaluation (Dask runs it again, or gives it up as infra_error), the only worker lost,
and the store's PostgreSQL connection ended mid-run, each followed by `explore --resume` where the search stopped."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import dask
import pytest
from distributed import Client, LocalCluster

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.errors import ConfigError
from adaexplore.executor.host._workspace import kill_orphaned_sandboxes
from adaexplore.store import open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    CreateTaskRequest,
    StartRunRequest,
    compile_and_profile,
    create_task,
    open_services,
    start_run,
)
from tests.agent.scripted import adaexplore, cli_env
from tests.conftest import EXAMPLES, ROOT
from tests.postgres import Server

pytestmark = pytest.mark.slow

KERNELS = EXAMPLES / "kernels"
TASKS = EXAMPLES / "tasks"
# A scheduler serves HTTP (its health and metrics routes) even with no dashboard: with None it takes 8787, so
# two clusters at once (another test process's, or this module's second) collide. Port 0: a free one each.
DASHBOARD = ":0"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    home = tmp_path_factory.mktemp("worker-home")
    # A LocalCluster closes the nanny of a worker that has not come back `lost-worker-timeout` (15 s) after it
    # was lost, for good: a killed worker's restart (its preload starts an evaluator) takes longer than that on a
    # loaded 2-core machine, and the tests that kill one wait for both to be back.
    with (
        dask.config.set({"distributed.deploy.lost-worker-timeout": "300s"}),
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            preload=["adaexplore.cluster"],
            env={"ADAEXPLORE_HOME": str(home)},
            dashboard_address=DASHBOARD,
        ) as local,
    ):
        yield local


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> Iterator[Client]:
    with Client(cluster) as c:
        yield c


def served(client: Client) -> dict[str, int]:
    """The requests each worker's plugin has answered."""
    return client.run(lambda dask_worker: dask_worker.plugins["adaexplore"].host.served)


def running_evaluation(client: Client) -> str | None:
    """The address of a worker that holds an evaluation (or a task check) now."""
    for address, keys in client.processing().items():
        if any(str(k).startswith("adaexplore-") for k in keys):
            return address
    return None


def kill_worker(client: Client, address: str) -> None:
    pid: Any = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGKILL)


def wait_for_both_workers(client: Client) -> None:
    """The nanny restarts a killed worker: wait until both are back with the plugin, for the tests after (in the
    calling thread, so a test of its own or an event loop's worker thread may call it)."""
    deadline = time.monotonic() + 90
    while len(client.scheduler_info(n_workers=-1)["workers"]) < 2:
        assert time.monotonic() < deadline, "the killed worker did not come back within 90 s"
        time.sleep(0.5)
    assert len(served(client)) == 2


async def both_workers_back(client: Client) -> None:
    await anyio.to_thread.run_sync(wait_for_both_workers, client)


def tree(store: Any, run_id: str) -> list[tuple[Any, ...]]:
    """What a finished step left: each node's place, kernel and verdict."""
    return [(n.id, n.parent_id, n.kind, n.seq, n.code_hash, n.evaluation_id, n.status) for n in store.nodes(run_id)]


def check_complete(store: Any, run_id: str, steps: int, before: list[tuple[Any, ...]]) -> None:
    """A run that took exactly its `steps`, one node each, kept every node it had `before`, judged no code
    twice and stored no verdict of a lost evaluation."""
    run = store.run(run_id)
    nodes = {n.id: n for n in store.nodes(run_id)}
    assert run.status == "finished" and run.steps == steps, run
    assert sorted(n.seq for n in nodes.values() if n.parent_id is not None) == list(range(1, steps + 1))
    assert set(before) <= set(tree(store, run_id)), "a node that had landed before the fault changed or went"
    for n in nodes.values():
        mine = [c for c in nodes.values() if c.parent_id == n.id]
        assert n.children == len(mine)
        assert n.visits == (0 if n.parent_id is None else 1) + sum(c.visits for c in mine)
    assert nodes[run.root_id].visits == steps
    assert store.claims(run_id) == []
    count, distinct, lost = store._db.execute(
        "SELECT count(*), count(DISTINCT code_hash), "
        "coalesce(sum(CASE WHEN status = 'infra_error' THEN 1 ELSE 0 END), 0) FROM evaluations"
    ).fetchone()
    assert count == distinct and lost == 0, (count, distinct, lost)


def test_the_workers_declare_adaexplore_and_no_gpu_here(client: Client) -> None:
    workers = client.scheduler_info(n_workers=-1)["workers"]
    assert len(workers) == 2
    for worker in workers.values():
        assert worker["resources"] == {"adaexplore": 1.0}  # one thread each; no GPU on this machine


def test_the_evaluators_processes_are_not_held_to_the_nannys_single_thread(client: Client) -> None:
    names = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")
    seen = client.run(lambda: {name: os.environ.get(name) for name in names})
    for environ in seen.values():
        assert environ["MALLOC_TRIM_THRESHOLD_"] is not None  # the nanny did set its environment here
        assert environ["OMP_NUM_THREADS"] is None and environ["MKL_NUM_THREADS"] is None, environ


@pytest.mark.parametrize("backend", ["compile", "interpret"])
def test_a_replay_explore_runs_its_evaluations_on_the_cluster(
    tmp_path: Path, cluster: LocalCluster, client: Client, backend: str
) -> None:
    before = sum(served(client).values())
    home = tmp_path / "home"
    done = adaexplore(
        "--cluster", cluster.scheduler_address, "explore", str(TASKS / "row_softmax.py"), "--steps", "4",
        "--seed", "2", "--parallel", "2", env=cli_env(home, None, backend=backend), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    store = open_store(f"sqlite:///{home / 'adaexplore.db'}")
    try:
        (run,) = store.runs()
        nodes = store.nodes(run.id)
        assert run.status == "finished" and run.steps == 4 and run.model == "replay"
        assert len(nodes) == 5  # the root and one node per step: none lost, none twice
        results = [json.loads(r[0]) for r in store._db.execute("SELECT result FROM evaluations").fetchall()]
        evaluated = len(results)
    finally:
        store.close()
    assert results and all(r["backends"] == [backend] for r in results)  # judged by the backend asked for
    # every evaluation (and the task's check) was answered by a worker, none on the searching machine
    assert sum(served(client).values()) - before >= 1 + evaluated >= 2


def test_a_replay_bench_runs_on_the_cluster_with_compile_and_interpret(
    tmp_path: Path, cluster: LocalCluster, client: Client
) -> None:
    before = sum(served(client).values())
    replay = tmp_path / "kernels"
    replay.mkdir()
    (replay / "7.py").write_text((KERNELS / "row_softmax" / "correct.py").read_text())
    (replay / "8.py").write_text((KERNELS / "sum_reduction" / "compile_error.py").read_text())
    env = {k: v for k, v in os.environ.items() if k != "ADAEXPLORE_BACKEND"}  # auto: compile, then interpret
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-m", "adaexplore", "--home", str(home), "--cluster", cluster.scheduler_address,
         "bench", "examples", "--ids", "7-8", "--replay", str(replay)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()[:1].isdigit()}
    assert "ok" in lines["7"] and "compile_error" in lines["8"], done.stdout
    store = open_store(f"sqlite:///{home / 'adaexplore.db'}")
    try:
        rows = store._db.execute("SELECT result FROM evaluations").fetchall()
    finally:
        store.close()
    assert len(rows) == 2
    assert any('"compile"' in r[0] and '"interpret"' in r[0] for r in rows)  # the correct one, on both backends
    assert sum(served(client).values()) - before >= 4  # two task checks and two evaluations


def test_an_address_that_does_not_answer_fails_fast_with_the_address_and_the_timeout(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port on this machine that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    config = tmp_path / "settings.toml"
    config.write_text("[executor]\ncluster_timeout_s = 2\n")
    start = time.monotonic()
    done = adaexplore(
        "--config", str(config), "--cluster", address, "explore", str(TASKS / "row_softmax.py"), "--steps", "1",
        env=cli_env(tmp_path / "home", None, backend="interpret"), timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]  # a setting that does not answer: usage
    assert f"the Dask cluster at {address} did not answer within 2 s" in done.stderr, done.stderr[-3000:]
    assert time.monotonic() - start < 60
    assert "ok" not in done.stdout.split()  # nothing was evaluated here instead


@pytest.mark.anyio
async def test_a_cluster_whose_workers_lack_the_plugin_is_refused_with_the_command(tmp_path: Path) -> None:
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=DASHBOARD) as plain:
        settings = Settings(
            home=tmp_path, executor=ExecutorConfig(cluster=plain.scheduler_address, cluster_timeout_s=1)
        )
        with pytest.raises(ConfigError) as refused:
            async with open_services(settings):
                raise AssertionError("services opened on a cluster that cannot evaluate")
    message = str(refused.value)
    assert f"the Dask cluster at {plain.scheduler_address} has no worker that evaluates for adaexplore" in message
    assert "its 1 worker(s) run without adaexplore's plugin" in message
    assert f"dask worker {plain.scheduler_address} --preload adaexplore.cluster" in message


@pytest.fixture
def postgres_url(postgres_server: Server) -> Iterator[str]:
    made = postgres_server.store_database()
    yield made
    postgres_server.give_back(made)


def test_an_explore_whose_postgresql_connection_is_ended_mid_run_resumes_and_takes_each_step_once(
    tmp_path: Path, cluster: LocalCluster, postgres_url: str
) -> None:
    """The store on PostgreSQL, as a team shares it: the explore's connection is ended while an evaluation is
    under way (the next write makes a new one), and then in the middle of a write (the command fails with the
    server's message). `explore --resume` takes the rest of the steps, and no node that landed is lost."""
    import psycopg

    from adaexplore.store._postgres import WRITER_LOCK

    home = tmp_path / "home"
    env = {**cli_env(home, None, backend="compile"), "ADAEXPLORE_DB": postgres_url}
    command = [sys.executable, "-m", "adaexplore", "--cluster", cluster.scheduler_address]
    steps = 4
    explore = subprocess.Popen(
        [*command, "explore", str(TASKS / "row_softmax.py"), "--steps", str(steps), "--seed", "2"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    ours = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'adaexplore'"
    ended: list[int] = []
    with psycopg.connect(postgres_url, autocommit=True) as admin:

        def end(extra: str = "") -> None:
            pids = [r[0] for r in admin.execute(ours + extra).fetchall()]
            for pid in pids:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            ended.extend(pids)

        def under_way() -> bool:  # a step landed, and the next one's evaluation is in flight
            if not admin.execute("SELECT to_regclass('claims') IS NOT NULL").fetchone()[0]:
                return False
            landed = admin.execute("SELECT coalesce(max(steps), 0) FROM runs").fetchone()[0]
            return landed >= 1 and bool(admin.execute("SELECT count(*) FROM claims").fetchone()[0])

        deadline = time.monotonic() + 240
        while not under_way() and explore.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert explore.poll() is None, "the explore ended before an evaluation was seen in flight"
        admin.execute("SELECT pg_advisory_lock(%s)", (WRITER_LOCK,))  # the explore's next write waits for it
        try:
            end()  # idle (the evaluation runs outside any transaction): its next write connects again
            first = len(ended)
            while explore.poll() is None and time.monotonic() < deadline:
                waiting = " AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
                if admin.execute(ours + waiting).fetchone() is not None:
                    end(waiting)  # in the middle of its write, on the new connection
                    break
                time.sleep(0.02)
        finally:
            admin.execute("SELECT pg_advisory_unlock(%s)", (WRITER_LOCK,))
    out, err = explore.communicate(timeout=240)
    assert first >= 1 and len(ended) > first, (ended, out, err[-3000:])
    assert explore.returncode != 0, out + err[-3000:]
    assert "terminating connection due to administrator command" in err, err[-3000:]
    assert "internal error" not in err and "Traceback" not in err, err[-3000:]
    store = open_store(postgres_url)
    try:
        (run,) = store.runs()
        before = tree(store, run.id)
        assert run.steps >= 1 and len(before) == run.steps + 1, (run, before)
    finally:
        store.close()
    resumed = adaexplore(*command[3:], "explore", "--resume", run.id, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr[-4000:]
    store = open_store(postgres_url)
    try:
        check_complete(store, run.id, steps, before)
    finally:
        store.close()


@pytest.mark.anyio
async def test_a_worker_killed_mid_evaluation_is_replaced_and_the_step_lands_once(
    tmp_path: Path, cluster: LocalCluster, client: Client
) -> None:
    settings = Settings(
        home=tmp_path,
        executor=ExecutorConfig(
            cluster=cluster.scheduler_address, backend="interpret", trial_timeout_s=4.0, load_timeout_s=120.0
        ),
    )
    hang = (KERNELS / "elementwise_chain" / "hang.py").read_text()
    killed: list[str] = []

    async def kill_the_worker_running_it() -> None:
        with anyio.fail_after(120):
            while (address := await anyio.to_thread.run_sync(running_evaluation, client)) is None:
                await anyio.sleep(0.2)
        await anyio.sleep(2.0)  # the candidate is loading or spinning by now
        await anyio.to_thread.run_sync(kill_worker, client, address)
        killed.append(address)

    async with open_services(settings) as svc:
        task = create_task(svc, CreateTaskRequest(path=str(TASKS / "elementwise_chain.py")))
        run = start_run(svc, StartRunRequest(task_id=task.task_id, total_steps=3, seed=1))
        async with anyio.create_task_group() as tg:
            tg.start_soon(kill_the_worker_running_it)
            result = await compile_and_profile(
                svc,
                CompileAndProfileRequest(run_id=run.run_id, parent_id=run.root_node_id, action="large", code=hang),
            )
        nodes = svc.store.nodes(run.run_id)
        steps = svc.store.run(run.run_id).steps
    assert killed, "no worker was killed"
    # Dask ran it again on the worker left: a verdict on the kernel (it hangs), not on the lost worker, and the
    # step landed once
    assert result.status == "timeout", result
    assert steps == 1 and len(nodes) == 2 and nodes[1].status == "timeout"
    await both_workers_back(client)


@pytest.mark.anyio
async def test_the_only_plugin_worker_lost_for_good_is_an_infra_error_that_adds_no_node(tmp_path: Path) -> None:
    """The one worker, started as a user starts one (`dask worker ... --preload adaexplore.cluster`, without a
    nanny that would start it again), is killed holding the evaluation: no worker is left to run it again, so
    after `cluster_timeout_s` the verdict is infra_error, and the step adds no node, counts no step, leaves no
    claim and stores nothing to be reused."""
    code = (KERNELS / "elementwise_chain" / "hang.py").read_text()
    with (
        LocalCluster(n_workers=0, processes=True, dashboard_address=DASHBOARD) as lone,
        Client(lone) as lone_client,
        (tmp_path / "worker.log").open("w") as log,
    ):
        address = lone.scheduler_address
        worker = subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", address, "--preload", "adaexplore.cluster", "--no-nanny",
             "--nthreads", "1"],
            cwd=ROOT, env={**os.environ, "ADAEXPLORE_HOME": str(tmp_path / "worker")}, stdout=log, stderr=log,
        )  # fmt: skip
        try:
            await anyio.to_thread.run_sync(lambda: lone_client.wait_for_workers(1, timeout=120))
            settings = Settings(
                home=tmp_path / "home",
                executor=ExecutorConfig(cluster=address, backend="interpret", cluster_timeout_s=1.0),
            )

            async def kill_the_worker_holding_it() -> None:
                with anyio.fail_after(60):
                    while await anyio.to_thread.run_sync(running_evaluation, lone_client) is None:
                        await anyio.sleep(0.05)
                worker.kill()

            async with open_services(settings) as svc:
                task = create_task(svc, CreateTaskRequest(path=str(TASKS / "elementwise_chain.py")))
                run = start_run(svc, StartRunRequest(task_id=task.task_id, total_steps=3, seed=1))
                step = CompileAndProfileRequest(
                    run_id=run.run_id, parent_id=run.root_node_id, action="large", code=code
                )
                with anyio.fail_after(60):  # the search does not wait forever on a cluster with no worker
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(kill_the_worker_holding_it)
                        result = await compile_and_profile(svc, step)
                store = svc.store
                assert worker.poll() is not None, "the worker was not killed"
                assert result.status == "infra_error" and result.node_id is None, result
                assert f"no worker with adaexplore's plugin was left in the Dask cluster at {address}" in result.message
                assert f"dask worker {address} --preload adaexplore.cluster" in result.message
                assert "not added to the tree" in result.message
                assert store.run(run.run_id).steps == 0 and len(store.nodes(run.run_id)) == 1
                assert store.claims(run.run_id) == []
                assert store._db.execute("SELECT count(*) FROM evaluations").fetchone()[0] == 0
        finally:
            worker.kill()
            worker.wait()
            # The worker's evaluator died by SIGKILL with the hanging kernel's sandbox running: its PID namespace
            # outlives it, the kernel spinning, until an evaluator's start ends the sandboxes of dead evaluators
            # (as a restarted worker's would); this test's run stands for that start.
            kill_orphaned_sandboxes()


def steps_taken(database: Path) -> int:
    """The steps of the (one) run in a SQLite store that another process writes, 0 before it has one."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)) as db:
            row = db.execute("SELECT max(steps) FROM runs").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0] or 0)


def test_an_explore_stopped_by_a_killed_worker_resumes_and_takes_each_step_once(
    tmp_path: Path, cluster: LocalCluster, client: Client
) -> None:
    # replay's samples for a copy of the task: a kernel that fails at once, and one that hangs (in flight long
    # enough for its worker to be killed); the seed draws the failing one first, so a node lands before the kill
    tasks, samples = tmp_path / "tasks", tmp_path / "kernels" / "elementwise_chain"
    tasks.mkdir()
    samples.mkdir(parents=True)
    task_file = tasks / "elementwise_chain.py"
    task_file.write_text((TASKS / "elementwise_chain.py").read_text())
    (samples / "compile_error.py").write_text((KERNELS / "elementwise_chain" / "compile_error.py").read_text())
    (samples / "spins.py").write_text((KERNELS / "elementwise_chain" / "hang.py").read_text())  # replay skips "hang"
    config = tmp_path / "settings.toml"  # one lost evaluation stops the search (the default gives up at 5)
    config.write_text("[executor]\ntrial_timeout_s = 4.0\nload_timeout_s = 120.0\n[agent]\nmax_failed_steps = 1\n")
    home = tmp_path / "home"
    database = home / "adaexplore.db"
    command = [sys.executable, "-m", "adaexplore", "--config", str(config), "--cluster", cluster.scheduler_address]
    env = cli_env(home, None, backend="interpret")
    steps = 4
    scheduler = cluster.scheduler
    allowed = scheduler.allowed_failures
    scheduler.allowed_failures = 0  # Dask gives an evaluation up when the first worker running it dies
    try:
        explore = subprocess.Popen(
            [*command, "explore", str(task_file), "--steps", str(steps), "--seed", "3"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        killed, held_since = None, None
        deadline = time.monotonic() + 240
        while killed is None and explore.poll() is None and time.monotonic() < deadline:
            address = running_evaluation(client) if steps_taken(database) >= 1 else None
            if address is None:
                held_since = None
            elif held_since is None:
                held_since = time.monotonic()
            elif time.monotonic() - held_since >= 1.0:  # the candidate is loading or spinning by now
                kill_worker(client, address)
                killed = address
            time.sleep(0.1)
        out, err = explore.communicate(timeout=240)
    finally:
        scheduler.allowed_failures = allowed
    assert killed, f"no evaluation was in flight after the first step to kill: {out}{err[-3000:]}"
    said = out + err
    assert explore.returncode == 1, said[-4000:]  # stopped, resumably
    assert "KilledWorker" in said and "failed in adaexplore's evaluator" in said, said[-4000:]
    store = open_store(f"sqlite:///{database}")
    try:
        (run,) = store.runs()
        before = tree(store, run.id)
        # the lost evaluation added no node and counted no step; the nodes before it stay
        assert run.status == "stopped" and run.steps >= 1 and len(before) == run.steps + 1, (run, before)
        assert f"Resume with: adaexplore explore --resume {run.id}" in out
    finally:
        store.close()
    resumed = adaexplore(*command[3:], "explore", "--resume", run.id, str(task_file), env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr[-4000:]
    assert f"(resuming after step {len(before) - 1})" in resumed.stdout + resumed.stderr
    store = open_store(f"sqlite:///{database}")
    try:
        check_complete(store, run.id, steps, before)
    finally:
        store.close()
    wait_for_both_workers(client)


def test_dask_setup_refuses_to_be_the_schedulers_preload() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import anyio, adaexplore.cluster as c; anyio.run(c.dask_setup, object())"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode != 0 and "adaexplore.cluster is a worker's preload, not a object's" in done.stderr


def test_the_worker_command_says_how_to_start_a_worker_with_the_plugin(tmp_path: Path) -> None:
    shown = adaexplore("worker", "tcp://10.1.2.3:8786", "--gpus", "1", env=cli_env(tmp_path, None))
    assert shown.returncode == 0, shown.stderr
    assert "CUDA_VISIBLE_DEVICES=1 dask worker tcp://10.1.2.3:8786 --preload adaexplore.cluster" in shown.stdout
    assert "8786" in shown.stdout and "8787" in shown.stdout
    missing = adaexplore("worker", env={k: v for k, v in cli_env(tmp_path, None).items() if k != "ADAEXPLORE_CLUSTER"})
    assert missing.returncode == 2 and "say which Dask scheduler the worker joins" in missing.stderr


def test_without_distributed_the_error_names_the_extra() -> None:
    script = (
        "import sys; sys.modules['distributed'] = None\n"
        "import anyio\n"
        "from adaexplore.config import ExecutorConfig, Settings\n"
        "from adaexplore.cluster import ClusterEvaluator\n"
        "async def main():\n"
        "    async with ClusterEvaluator(Settings(executor=ExecutorConfig(cluster='tcp://127.0.0.1:1'))):\n"
        "        pass\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode != 0 and "pip install 'adaexplore[cluster]'" in done.stderr, done.stderr[-2000:]
