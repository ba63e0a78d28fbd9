"""`adaexplore profile` as a user runs it: a real subprocess, text and JSON output, exit codes."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ON_GPU

DATA = Path(__file__).parent / "executor" / "data"


def profile(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ADAEXPLORE_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "adaexplore", "profile", *args], capture_output=True, text=True, env=env, timeout=600
    )


def test_a_correct_kernel_prints_a_readable_verdict_and_exits_0(tmp_path: Path) -> None:
    done = profile(
        str(EXAMPLES / "tasks/row_softmax.py"), str(EXAMPLES / "kernels/row_softmax/correct.py"), home=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].split() == ["status", "ok"]
    assert any(line.startswith("trials") for line in lines)
    assert any(line.startswith("environment") for line in lines)
    if not ON_GPU:
        assert "no GPU timed it here" in done.stdout
        # an estimate on the default target, and the task's speed of light, said as such
        (speed,) = [line for line in lines if line.startswith("speed")]
        assert "speed of light" in speed and "on an H200" in speed
        assert any("(not measured)" in line and line.lstrip().startswith("estimate") for line in lines)


def test_json_is_one_object_with_the_whole_result_in_a_file_beside_the_verdict_or_alone_on_standard_output(
    tmp_path: Path,
) -> None:
    task, kernel = str(DATA / "scale_relu_task.py"), str(EXAMPLES / "kernels/row_softmax/correct.py")
    written = tmp_path / "result.json"
    to_file = profile(task, kernel, "--json", str(written), "--mode", "paper", home=tmp_path)
    assert to_file.returncode == 1, to_file.stderr
    result = json.loads(written.read_text())
    assert result["mode"] == "paper"
    assert result["status"] in ("runtime_error", "mismatch", "compile_error") and result["provenance"]["task_hash"]
    assert to_file.stdout.splitlines()[1].split() == ["status", result["status"]]  # the verdict, as without --json
    alone = profile(task, kernel, "--json", "-", "--mode", "paper", home=tmp_path)
    assert alone.returncode == 1
    printed = json.loads(alone.stdout)  # standard output is the one object and nothing else
    assert printed["mode"] == "paper" and printed["status"] == result["status"] and printed["provenance"]["task_hash"]


def test_a_wrong_kernel_exits_1_and_says_where_it_is_wrong(tmp_path: Path) -> None:
    done = profile(
        str(EXAMPLES / "tasks/row_softmax.py"), str(EXAMPLES / "kernels/row_softmax/wrong_result.py"), home=tmp_path
    )
    assert done.returncode == 1
    assert "mismatch" in done.stdout and "wrong result in trial 1" in done.stdout


def test_caller_errors_exit_2_with_a_message(tmp_path: Path) -> None:
    missing = profile(str(tmp_path / "none.py"), str(DATA / "scale_relu_kernel.py"), home=tmp_path)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    task = tmp_path / "no_inputs.py"
    task.write_text((DATA / "scale_relu_task.py").read_text().replace("def get_inputs", "def other_inputs"))
    broken = profile(str(task), str(DATA / "scale_relu_kernel.py"), home=tmp_path)
    assert broken.returncode == 2 and "get_inputs" in broken.stderr
    bad_option = profile(str(task), str(DATA / "scale_relu_kernel.py"), "--mode", "fast", home=tmp_path)
    assert bad_option.returncode == 2 and "invalid choice" in bad_option.stderr


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["explore", "T.py", "--steps", "0"], "argument --steps: '0' is not a whole number of at least 1"),
        (["adapt", "--steps", "-1"], "argument --steps: '-1' is not a whole number of at least 1"),
        (["explore", "T.py", "--parallel", "0"], "argument --parallel"),
        (["adapt", "--tasks", "x"], "argument --tasks: 'x' is not a whole number"),
        (["explore", "T.py", "--budget-tokens", "-5"], "argument --budget-tokens"),
        (["explore", "T.py", "--budget-usd", "0"], "argument --budget-usd: '0' is not a number above 0"),
        (["explore", "T.py", "--timeout", "nan"], "argument --timeout"),
        (["explore", "T.py", "--price-input", "-1"], "argument --price-input"),
        (["serve", "--http", "--port", "99999"], "argument --port: '99999' is too large: the most is 65535"),
        (["explore", "T.py", "--seed", str(10**30)], "argument --seed: '1000000000000000000000000000000' is too large"),
        (["explore", "T.py", "--seed", "-1"], "argument --seed: '-1' is not a seed"),
        (["explore", "T.py", "--steps", str(2**63)], "is too large: the most is 9223372036854775807"),
        (["explore", "T.py", "--budget-usd", "2"], "--budget-usd needs the model's prices"),
    ],
)
def test_out_of_range_options_are_refused_before_anything_runs(
    argv: list[str], fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from adaexplore.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--home", str(tmp_path), *argv])
    assert exited.value.code == 2
    assert fragment in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no store, no cache: nothing ran


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    env = dict(os.environ, ADAEXPLORE_HOME=str(tmp_path))
    listing = subprocess.Popen(
        [sys.executable, "-m", "adaexplore", "memory", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert listing.stdout is not None and listing.stderr is not None
    listing.stdout.close()  # gone before the command has written anything (it is still importing)
    errors = listing.stderr.read()
    assert listing.wait(timeout=120) == 141, errors
    assert "Traceback" not in errors and "BrokenPipe" not in errors


@pytest.mark.anyio
async def test_runs_list_and_show_print_the_store(tmp_path: Path) -> None:
    from adaexplore.config import Settings
    from adaexplore.store import open_store
    from adaexplore.tools import (
        CompileAndProfileRequest,
        CreateTaskRequest,
        ExpandNodeRequest,
        SelectUctRequest,
        Services,
        StartRunRequest,
        compile_and_profile,
        create_task,
        expand_node,
        select_uct,
        start_run,
    )
    from tests.fakes import FakeEvaluator, by_hash

    settings = Settings(home=tmp_path)
    svc = Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))
    task = create_task(svc, CreateTaskRequest(path=str(DATA / "scale_relu_task.py")))
    run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=3, model="tester"))

    async def steps() -> None:
        for index in range(8):
            chosen = select_uct(svc, SelectUctRequest(run_id=run.run_id))
            context = expand_node(
                svc, ExpandNodeRequest(run_id=run.run_id, node_id=chosen.node_id, action=chosen.action)
            )
            await compile_and_profile(
                svc, CompileAndProfileRequest(code=f"k{index}", expansion_id=context.expansion_id)
            )

    await steps()
    best = svc.store.run(run.run_id).best_node_id
    env = dict(os.environ, ADAEXPLORE_HOME=str(tmp_path))
    listed = subprocess.run(
        [sys.executable, "-m", "adaexplore", "runs", "list"], capture_output=True, text=True, env=env, timeout=60
    )
    assert listed.returncode == 0 and run.run_id in listed.stdout and "tester" in listed.stdout
    shown = subprocess.run(
        [sys.executable, "-m", "adaexplore", "runs", "show", run.run_id],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert len(lines) == 3 + 9  # header, best, columns; the root and eight nodes
    marked = [line for line in lines[3:] if line.startswith("*")]
    assert marked[0].split()[1] == f"#{run.root_node_id}" and marked[-1].split()[1] == f"#{best}"
    missing = subprocess.run(
        [sys.executable, "-m", "adaexplore", "runs", "show", "run-nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert missing.returncode == 2 and "no run has id 'run-nope'" in missing.stderr


def test_runs_commands_read_without_creating_a_database(tmp_path: Path) -> None:
    env = dict(os.environ, ADAEXPLORE_HOME=str(tmp_path / "home"))
    listed = subprocess.run(
        [sys.executable, "-m", "adaexplore", "runs", "list"], capture_output=True, text=True, env=env, timeout=60
    )
    assert listed.returncode == 0 and "no runs yet: there is no database at" in listed.stdout
    shown = subprocess.run(
        [sys.executable, "-m", "adaexplore", "runs", "show", "run-1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert shown.returncode == 2 and "unknown run 'run-1': there is no database at" in shown.stderr
    assert not (tmp_path / "home").exists()


def memory_cli(*args: str, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adaexplore", "memory", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, ADAEXPLORE_HOME=str(home)),
        timeout=120,
        input=stdin,
    )


def test_memory_commands_list_show_retire_pin_edit_export_import(tmp_path: Path) -> None:
    from adaexplore.memory import load_starter

    starter = load_starter()
    listed = memory_cli("list", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert f"added the {len(starter)} starter rules" in listed.stdout
    rows = [line for line in listed.stdout.splitlines() if line[:5].strip().isdigit()]
    assert len(rows) == len(starter) and all(" curated " in row and " yes " in row for row in rows)
    # each row's scope whole (the starter's fit the column), then the rule
    assert all(re.search(r" yes +triton \d+\.\d+\.\d+ \((compile|interpret)\) +You cannot ", row) for row in rows)
    shown = memory_cli("show", "1", home=tmp_path)
    assert shown.returncode == 0 and shown.stdout.startswith(f"rule 1: {starter[0].text}")
    assert starter[0].signature_id in shown.stdout
    assert memory_cli("retire", "1", home=tmp_path).stdout.strip() == "rule 1 is now retired"
    assert not any(line.split()[0] == "1" for line in memory_cli("list", home=tmp_path).stdout.splitlines()[1:-1])
    assert "retired" in memory_cli("list", "--all", home=tmp_path).stdout
    assert memory_cli("pin", "2", home=tmp_path).stdout.strip() == "rule 2 is now pinned"
    edited = memory_cli("edit", "3", "You cannot do it that way; do it this way.", home=tmp_path)
    assert edited.returncode == 0 and "You cannot do it that way" in edited.stdout
    bad_edit = memory_cli("edit", "3", "Do it this way.", home=tmp_path)
    assert bad_edit.returncode == 2 and "starts with 'You cannot" in bad_edit.stderr
    twin = memory_cli("edit", "4", "You cannot do it that way; do it this way.", home=tmp_path)
    assert twin.returncode == 2 and "rule 3 has this text already" in twin.stderr
    assert memory_cli("show", "999", home=tmp_path).returncode == 2

    exported = tmp_path / "memory.json"
    assert memory_cli("export", str(exported), home=tmp_path).returncode == 0
    paper = memory_cli("export", "-", "--format", "paper", home=tmp_path)
    assert paper.returncode == 0 and len(paper.stdout.splitlines()) == len(starter) - 1  # the retired rule is left out
    other = tmp_path / "other"
    loaded = memory_cli("import", str(exported), home=other)
    # The other memory starts with the starter rules; of the export, only the edited rule is new there, and
    # the retirement of rule 1 comes along.
    assert loaded.returncode == 0, loaded.stderr
    assert f"imported 1 rules ({len(starter) - 1} already present, 1 of them updated" in loaded.stdout
    assert memory_cli("show", "1", home=other).stdout.splitlines()[1].startswith("status retired")
    broken = tmp_path / "broken.txt"
    broken.write_text("You cannot a.||2\nno separator here\n")
    refused = memory_cli("import", str(broken), home=tmp_path / "third")
    assert refused.returncode == 2 and "line 2 is not 'rule text||count'" in refused.stderr


def test_serve_refuses_a_taken_port_and_http_options_without_http(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    from adaexplore.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            main(["--home", str(tmp_path), "serve", "--http", "--port", str(port)])
    assert exited.value.code == 2
    assert f"adaexplore: error: cannot listen on 127.0.0.1:{port}: Address already in use" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["--home", str(tmp_path), "serve", "--port", "9000"])
    assert exited.value.code == 2
    assert "--host and --port apply to --http; without it the server speaks stdio" in capsys.readouterr().err
