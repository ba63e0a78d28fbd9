"""Evaluations on a Dask cluster: a real LocalCluster of two worker processes, each started with the preload a
user gives `dask worker` (`--preload adaexplore.cluster`), and the CLI or the tools as a user drives them.

One cluster serves the module. Without a GPU its workers evaluate on the compile and interpret backends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from distributed import Client, LocalCluster

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.errors import ConfigError
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

pytestmark = pytest.mark.slow

KERNELS = EXAMPLES / "kernels"
TASKS = EXAMPLES / "tasks"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    home = tmp_path_factory.mktemp("worker-home")
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        preload=["adaexplore.cluster"],
        env={"ADAEXPLORE_HOME": str(home)},
        dashboard_address=None,
    ) as local:
        yield local


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> Iterator[Client]:
    with Client(cluster) as c:
        yield c


def served(client: Client) -> dict[str, int]:
    """The requests each worker's plugin has answered."""
    return client.run(lambda dask_worker: dask_worker.plugins["adaexplore"].host.served)


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


def test_a_replay_explore_runs_its_evaluations_on_the_cluster(tmp_path: Path, cluster: LocalCluster, client: Client):
    before = sum(served(client).values())
    home = tmp_path / "home"
    done = adaexplore(
        "--cluster", cluster.scheduler_address, "explore", str(TASKS / "row_softmax.py"), "--steps", "4",
        "--seed", "2", "--parallel", "2", env=cli_env(home, None, backend="interpret"), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    store = open_store(f"sqlite:///{home / 'adaexplore.db'}")
    try:
        (run,) = store.runs()
        nodes = store.nodes(run.id)
        assert run.status == "finished" and run.steps == 4 and run.model == "replay"
        assert len(nodes) == 5  # the root and one node per step: none lost, none twice
        evaluated = store._db.execute("SELECT count(*) FROM evaluations").fetchone()[0]
    finally:
        store.close()
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
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as plain:
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
        def running() -> str | None:
            for address, keys in client.processing().items():
                if any(str(k).startswith("adaexplore-") for k in keys):
                    return address
            return None

        with anyio.fail_after(120):
            while (address := await anyio.to_thread.run_sync(running)) is None:
                await anyio.sleep(0.2)
        await anyio.sleep(2.0)  # the candidate is loading or spinning by now
        pid: Any = (await anyio.to_thread.run_sync(lambda: client.run(os.getpid, workers=[address])))[address]
        os.kill(pid, signal.SIGKILL)
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
    # the nanny restarts the killed worker: both are back with the plugin
    with anyio.fail_after(60):
        while len(await anyio.to_thread.run_sync(lambda: client.scheduler_info(n_workers=-1)["workers"])) < 2:
            await anyio.sleep(0.5)
    assert len(served(client)) == 2


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
