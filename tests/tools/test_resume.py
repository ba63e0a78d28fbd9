"""A run survives SIGKILL at any point, and two writers on one run cannot corrupt it."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from adaexplore.domain import Kind
from adaexplore.store import open_store

DRIVER = Path(__file__).with_name("drive_run.py")
ROOT = Path(__file__).resolve().parents[2]
TASK = (ROOT / "tests" / "executor" / "data" / "scale_relu_task.py").read_text()


def new_run(path: Path, seed: int) -> tuple[str, str]:
    url = f"sqlite:///{path}"
    store = open_store(url)
    store.put_task("t", "scale_relu", TASK, "file")
    run = store.create_run("t", config='{"total_steps": 200}', mode="strict", backend="auto", model="test", seed=seed)
    store.close()
    return url, run.id


def drive(url: str, run_id: str, steps: int, pause: float = 0.0) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(DRIVER), url, run_id, str(steps), str(pause)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def tree(url: str, run_id: str) -> list[tuple]:
    store = open_store(url)
    try:
        return [
            (
                n.id,
                n.parent_id,
                n.kind,
                n.seq,
                n.code,
                n.status,
                n.visits,
                round(n.total_reward, 9),
                round(n.max_reward, 9),
                n.small_children,
                n.children,
            )
            for n in store.nodes(run_id)
        ]
    finally:
        store.close()


def test_killing_the_process_at_any_point_then_resuming_gives_the_same_tree(tmp_path: Path) -> None:
    steps = 150
    url_a, run_a = new_run(tmp_path / "a.db", seed=5)
    done = drive(url_a, run_a, steps)
    assert done.wait(120) == 0, done.stderr.read() if done.stderr else ""
    url_b, run_b = new_run(tmp_path / "b.db", seed=5)
    kills, rng = 0, random.Random(0)
    while True:
        # a pause between steps keeps the run going for several kill windows even on a fast machine
        process = drive(url_b, run_b, steps, pause=0.01)
        assert process.stdout is not None
        process.stdout.readline()  # the driver's imports are done (or it ended): its steps start now
        # the kill falls anywhere in the steps, however long the interpreter took to start
        time.sleep(rng.uniform(0.02, 0.4))
        if process.poll() is not None:
            assert process.returncode == 0, process.stderr.read() if process.stderr else ""
            break
        process.send_signal(signal.SIGKILL)
        process.wait()
        kills += 1
    assert kills >= 3, "the test killed the run too rarely to mean anything"
    assert tree(url_b, run_b) == tree(url_a, run_a)


def test_two_writers_on_one_run_keep_it_consistent(tmp_path: Path) -> None:
    url, run_id = new_run(tmp_path / "c.db", seed=9)
    writers = [drive(url, run_id, 50) for _ in range(2)]
    for writer in writers:
        assert writer.wait(180) == 0, writer.stderr.read() if writer.stderr else ""
    store = open_store(url)
    nodes = {n.id: n for n in store.nodes(run_id)}
    children: dict[int, list[int]] = {}
    for n in nodes.values():
        if n.parent_id is not None:
            children.setdefault(n.parent_id, []).append(n.id)
    for n in nodes.values():
        own = 0 if n.kind is Kind.root else 1
        assert n.visits == own + sum(nodes[c].visits for c in children.get(n.id, []))
        assert n.children == len(children.get(n.id, []))
    run = store.run(run_id)
    seqs = sorted(n.seq for n in nodes.values() if n.kind is not Kind.root)
    assert seqs == list(range(1, run.steps + 1)) and run.steps >= 50
