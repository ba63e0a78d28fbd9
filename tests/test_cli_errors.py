"""The command line's errors: one line and a pointer to --help, settings errors in the settings' words,
global options after the subcommand, and the exit-code table."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adaexplore.cli import main


def cli(*args: str, home: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ADAEXPLORE_HOME": str(home / "env-home")}
    return subprocess.run(
        [sys.executable, "-m", "adaexplore", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_home_and_config_work_after_the_subcommand(tmp_path: Path) -> None:
    home = tmp_path / "mine"
    after = cli("runs", "list", "--home", str(home), home=tmp_path)
    before = cli("--home", str(home), "runs", "list", home=tmp_path)
    assert after.returncode == before.returncode == 0, after.stderr
    assert str(home / "adaexplore.db") in after.stdout and after.stdout == before.stdout
    settings = tmp_path / "s.toml"
    settings.write_text('[executor]\nbackend = "gpu"\n')
    bad = cli("memory", "list", "--config", str(settings), home=tmp_path)
    assert bad.returncode == 2 and str(settings) in bad.stderr


def test_an_argument_error_is_one_line_and_a_pointer_to_help(tmp_path: Path) -> None:
    run = cli("explore", "--steps", "0", home=tmp_path)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        "adaexplore explore: error: argument --steps: '0' is not a whole number of at least 1",
        "see `adaexplore explore --help`",
    ]
    nested = cli("runs", "show", home=tmp_path)
    assert nested.returncode == 2 and nested.stderr.splitlines()[-1] == "see `adaexplore runs show --help`"
    assert "usage:" not in nested.stderr


def test_an_unknown_argument_points_to_the_help_of_the_subcommand_it_follows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for args, command, extras in (
        (["explore", "task.py", "--bogus"], "adaexplore explore", "--bogus"),
        (["runs", "show", "run-x", "--bogus", "1"], "adaexplore runs show", "--bogus 1"),
        (["memory", "--bogus", "list"], "adaexplore memory", "--bogus"),
        (["--bogus", "runs", "list"], "adaexplore", "--bogus"),  # before any subcommand: the top's help
    ):
        with pytest.raises(SystemExit) as done:
            main(args)
        assert done.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            f"{command}: error: unrecognized arguments: {extras}",
            f"see `{command} --help`",
        ], args


def test_settings_errors_name_the_key_the_file_and_what_is_allowed(tmp_path: Path) -> None:
    settings = tmp_path / "settings.toml"
    settings.write_text('[executor]\nbackend = "gpu"\nmodee = "strict"\n[search]\ntotal_steps = 0\n')
    run = cli("--config", str(settings), "runs", "list", home=tmp_path)
    assert run.returncode == 2
    text = run.stderr
    assert f"settings file {settings}" in text
    assert "executor.backend = 'gpu' is not allowed; it must be one of 'auto', 'cuda', 'compile' or 'interpret'" in text
    assert "unknown key 'executor.modee'; the keys of [executor] are:" in text and "mode," in text
    assert "search.total_steps = 0 is out of range; it must be at least 1" in text
    assert "pydantic" not in text and "Input should" not in text


def test_a_settings_value_of_the_wrong_type_says_what_its_key_takes(tmp_path: Path) -> None:
    from adaexplore.config import Settings
    from adaexplore.errors import ConfigError

    settings = tmp_path / "types.toml"
    settings.write_text(
        "[executor]\ntrial_timeout_s = 'abc'\nenforce_policy = 'maybe'\ngpus = ['x']\nmax_concurrent = 1.5\n"
        "cluster = 5\n[agent]\ndistill_statuses = 'timeout'\n"
    )
    with pytest.raises(ConfigError) as refused:
        Settings.load(settings)
    lines = str(refused.value).splitlines()
    assert lines[0] == f"settings file {settings}:"
    assert sorted(line.strip() for line in lines[1:]) == [
        "agent.distill_statuses = 'timeout' is not allowed; it must be a list in brackets, each item text in "
        'quotes, such as ["first", "second"]',
        "executor.cluster = 5 is not allowed; it must be text in quotes (or leave the key out)",
        "executor.enforce_policy = 'maybe' is not allowed; it must be true or false",
        "executor.gpus[0] = 'x' is not allowed; it must be a whole number",
        "executor.max_concurrent = 1.5 is not allowed; it must be a whole number at least 1 and at most 64",
        "executor.trial_timeout_s = 'abc' is not allowed; it must be a number above 0",
    ]
    assert "Input should" not in str(refused.value) and "valid" not in str(refused.value)


def test_a_model_option_out_of_its_range_is_named_as_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["explore", "task.py", "--temperature", "3"])
    assert done.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "adaexplore: error: --temperature 3.0 is out of range; it must be at most 2.0"
    )


def test_runs_show_of_an_unknown_run_speaks_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    import sqlite3  # an empty store: the database exists, the run does not

    from adaexplore.store import open_store

    open_store(f"sqlite:///{home / 'adaexplore.db'}").close()
    assert sqlite3.connect(home / "adaexplore.db").execute("SELECT 1").fetchone() == (1,)
    run = cli("runs", "show", "run-nope", "--home", str(home), home=tmp_path)
    assert run.returncode == 2
    assert "`adaexplore runs list`" in run.stderr and "start_run" not in run.stderr


def test_serve_http_prints_the_url_to_give_the_client(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "ADAEXPLORE_HOME": str(tmp_path)}
    env.pop("ADAEXPLORE_TOKEN", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "adaexplore", "serve", "--http", "--port", str(port)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline and "MCP server" not in line:
            line = server.stderr.readline() if server.stderr else ""
            if not line and server.poll() is not None:
                break
        assert f"give your client the URL http://127.0.0.1:{port}/mcp" in line, line
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_gpus_are_a_list_of_indices_and_one_the_machine_lacks_is_a_usage_error(tmp_path: Path) -> None:
    bad = cli("runs", "list", "--gpus", "0,x", home=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[0] == (
        "adaexplore runs list: error: argument --gpus: '0,x' is not a list of GPU indices such as 0 or 0,2"
    )
    twice = cli("--gpus", "1,1", "runs", "list", home=tmp_path)
    assert twice.returncode == 2 and "'1,1' names a GPU twice" in twice.stderr
    examples = Path(__file__).resolve().parents[1] / "examples"
    task, kernel = examples / "tasks" / "row_softmax.py", examples / "kernels" / "row_softmax" / "correct.py"
    missing = cli("profile", str(task), str(kernel), "--gpus", "7", home=tmp_path)
    assert missing.returncode == 2, missing.stderr
    assert "--gpus / executor.gpus names GPU 7, but this machine shows" in missing.stderr


def test_a_target_gpu_the_table_lacks_is_refused_with_the_list(tmp_path: Path) -> None:
    bad = cli("runs", "list", "--target", "RTX 4090", home=tmp_path)
    assert bad.returncode == 2
    assert "unknown target GPU 'RTX 4090'" in bad.stderr and "H200, H100, H100 PCIe, A100, L40S, B200" in bad.stderr
    good = cli("--target", "h100", "runs", "list", home=tmp_path)
    assert good.returncode == 0, good.stderr
