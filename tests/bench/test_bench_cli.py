"""`adaexplore bench` as a user runs it: real subprocesses, the real evaluator (compile + interpret here), the
store read back, Ctrl-C and --resume."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "examples" / "kernels"
TASKS = ROOT / "examples" / "tasks"


def bench(*args: str, home: Path, config: Path | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    settings = ["--config", str(config)] if config is not None else []
    return subprocess.run(
        [sys.executable, "-m", "adaexplore", *settings, "--home", str(home), "bench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def _db(home: Path) -> sqlite3.Connection:
    return sqlite3.connect(home / "adaexplore.db")


def _bench_id(text: str) -> str:
    return next(w for w in text.split() if w.startswith("bench-")).rstrip(":.,")


def test_a_replay_bench_evaluates_each_kernel_once_and_reports_every_problem(tmp_path: Path) -> None:
    # examples, numbered by name: 2 elementwise_chain, 4 layernorm, 7 row_softmax, 8 sum_reduction
    replay = tmp_path / "kernels"
    replay.mkdir()
    (replay / "7.py").write_text((KERNELS / "row_softmax" / "correct.py").read_text())
    (replay / "layernorm.py").write_text((KERNELS / "layernorm" / "compile_error.py").read_text())
    home = tmp_path / "home"
    out = bench(
        "examples", "--ids", "4,7-8", "--replay", str(replay), "--json", str(tmp_path / "b.json"),
        "--csv", str(tmp_path / "b.csv"), home=home,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    bench_id = _bench_id(out.stdout)
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()[:1].isdigit()}
    assert "compile_error" in lines["4"] and "ok" in lines["7"] and "no_kernel" in lines["8"]
    assert "correct: 1 of 3 (33%)" in out.stdout
    assert "vs eager: not timed (no GPU timing)" in out.stdout  # no GPU here: no speedup is made up
    assert "[3/3]" in out.stderr  # plain progress lines where stderr is not a terminal

    document = json.loads((tmp_path / "b.json").read_text())
    assert document["bench"]["id"] == bench_id and document["bench"]["status"] == "finished"
    assert document["summary"]["correct"] == 1 and document["summary"]["problems"] == 3
    assert [p["status"] for p in document["problems"]] == ["compile_error", "ok", "no_kernel"]
    assert document["bench"]["provenance"]["triton"]
    rows = list(csv.reader(io.StringIO((tmp_path / "b.csv").read_text())))
    assert rows[0][:3] == ["problem_id", "name", "status"] and rows[2][2] == "ok"
    assert ["correct", "1"] in rows

    with _db(home) as db:
        # one run of one step per kernel, its verdict standing: one evaluation each, none repeated
        assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
        assert db.execute("SELECT count(*) FROM evaluations").fetchone()[0] == 2
        assert db.execute("SELECT count(*) FROM nodes WHERE kind != 'root'").fetchone()[0] == 2
        origins = sorted(r[0] for r in db.execute("SELECT origin FROM tasks"))
        assert origins[0].startswith("bench:examples:4:") and origins[1].startswith("bench:examples:7:")

    shown = bench("show", bench_id, home=home)
    assert shown.returncode == 0 and "correct: 1 of 3" in shown.stdout
    # `-`: standard output carries the JSON (or the CSV) alone, the table goes to standard error
    as_json = bench("show", bench_id, "--json", "-", home=home)
    assert as_json.returncode == 0 and "correct: 1 of 3" in as_json.stderr
    assert json.loads(as_json.stdout)["summary"] == document["summary"]
    as_csv = bench("show", bench_id, "--csv", "-", home=home)
    assert as_csv.returncode == 0 and list(csv.reader(io.StringIO(as_csv.stdout)))[2][2] == "ok"
    listed = bench("list", home=home)
    assert bench_id in listed.stdout and "examples" in listed.stdout
    missing = bench("show", "bench-nothere", home=home)
    assert missing.returncode == 2 and "`adaexplore bench list` lists the benches" in missing.stderr


def test_a_problem_whose_own_code_fails_is_a_task_error_row_and_the_bench_goes_on(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    source = (TASKS / "row_softmax.py").read_text()
    (suite / "1_softmax.py").write_text(source)
    broken = source.replace("def get_inputs():", "def get_inputs():\n    raise ValueError('no data')")
    (suite / "2_broken.py").write_text(broken)
    # passes the task check (made in the judge's process), then fails in its evaluation (where the candidate's
    # process builds the model too), as a task too large for the GPU at its full sizes does: a row of its own
    # too, and the problem after it still runs
    in_candidate = "'adaexplore.executor.worker.candidate._candidate' in sys.modules"
    guard = f"if {in_candidate}:\n        raise RuntimeError('the data source went away')"
    flaky = "import sys\n" + source.replace("def get_init_inputs():", f"def get_init_inputs():\n    {guard}", 1)
    assert guard in flaky
    (suite / "3_flaky.py").write_text(flaky)
    (suite / "4_softmax.py").write_text(source)
    replay = tmp_path / "kernels"
    replay.mkdir()
    for pid in (1, 2, 3, 4):
        (replay / f"{pid}.py").write_text((KERNELS / "row_softmax" / "correct.py").read_text())
    config = tmp_path / "settings.toml"
    config.write_text('[executor]\nbackend = "interpret"\n')  # the rows are under test, not the sm_90 compile check
    out = bench(str(suite), "--replay", str(replay), home=tmp_path / "home", config=config)
    assert out.returncode == 0, out.stderr
    broken = next(line for line in out.stderr.splitlines() if "2_broken" in line)
    assert "task_error" in broken and "no data" in broken
    failed = next(line for line in out.stderr.splitlines() if "3_flaky" in line)
    assert "task_error" in failed and "the data source went away" in failed, out.stderr
    assert "correct: 2 of 4" in out.stdout and "stopped" not in out.stdout, out.stdout


def test_bad_input_is_refused_before_anything_runs(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = bench(str(empty), "--replay", str(tmp_path), home=tmp_path / "home")
    assert out.returncode == 2 and "holds no problems" in out.stderr
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "kernel.py").write_text("x = 1\n")
    out = bench("examples", "--replay", str(stray), home=tmp_path / "home")
    assert out.returncode == 2 and "Name each kernel by its problem's id (1.py, 2.py, 3.py, and 5 more)" in out.stderr
    out = bench("examples", home=tmp_path / "home")
    assert out.returncode == 2 and "--replay DIR" in out.stderr and "--steps N" in out.stderr
    assert (
        not (tmp_path / "home" / "adaexplore.db").exists()
        or not _db(tmp_path / "home").execute("SELECT count(*) FROM benches").fetchone()[0]
    )


@pytest.mark.slow
def test_ctrl_c_leaves_a_bench_that_resumes_without_evaluating_any_problem_twice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = tmp_path / "settings.toml"
    # the steps are what is under test, not the finish; nor the sm_90 compile check (the replay bench above has it),
    # which would double the CPU each step takes: the interpreter alone checks the kernels
    config.write_text('[search]\nfinal_reevaluation = 0\n[executor]\nbackend = "interpret"\n')
    args = ["examples", "--ids", "4,7", "--steps", "2", "--seed", "3"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "adaexplore", "--config", str(config), "--home", str(home), "bench", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 240
    seen = []
    for line in process.stderr:  # the first problem's verdict, then Ctrl-C during the second
        seen.append(line)
        if line.startswith("[1/2]"):
            process.send_signal(signal.SIGINT)
            break
        assert time.monotonic() < deadline, "".join(seen)
    stdout, stderr = process.communicate(timeout=240)
    assert process.returncode == 4, "".join(seen) + stderr
    assert "Resume with: adaexplore bench --resume bench-" in stdout
    bench_id = _bench_id(stdout.split("Resume with:")[1])
    with _db(home) as db:
        first = db.execute(
            "SELECT problem_id, run_id, status FROM bench_problems WHERE bench_id=? AND status IS NOT NULL", (bench_id,)
        ).fetchall()
        assert len(first) == 1
        done_run = first[0][1]
        done_nodes = db.execute("SELECT count(*) FROM nodes WHERE run_id=?", (done_run,)).fetchone()[0]
        evaluations_before = db.execute("SELECT count(*) FROM evaluations").fetchone()[0]

    resumed = bench("--resume", bench_id, home=home, config=config)
    assert resumed.returncode == 0, resumed.stderr
    assert "2 of 2 problems done, status finished" in resumed.stdout
    assert "1 done before" in resumed.stderr
    with _db(home) as db:
        runs = db.execute("SELECT problem_id, run_id FROM bench_problems WHERE bench_id=?", (bench_id,)).fetchall()
        assert len({run for _, run in runs}) == 2  # one run per problem, the interrupted one continued
        assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
        # the finished problem was not touched again
        assert db.execute("SELECT count(*) FROM nodes WHERE run_id=?", (done_run,)).fetchone()[0] == done_nodes
        other = next(run for _, run in runs if run != done_run)
        steps = db.execute("SELECT steps, status FROM runs WHERE id=?", (other,)).fetchone()
        assert steps == (2, "finished")  # its steps add up to the bench's two, not two more
        assert db.execute("SELECT count(*) FROM evaluations").fetchone()[0] > evaluations_before
    again = bench("--resume", bench_id, home=home)
    assert again.returncode == 2 and "is finished" in again.stderr
