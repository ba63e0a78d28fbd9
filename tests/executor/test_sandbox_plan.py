"""Choosing the sandbox: what this machine offers, what is refused, and how a worker's view is laid out."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.errors import ConfigError
from adaexplore.executor.host import _sandbox, _view
from adaexplore.executor.host._sandbox import detect_sandbox

pytestmark = pytest.mark.anyio


def _settings(home: Path, **executor: object) -> Settings:
    return Settings(home=home, executor=ExecutorConfig(**executor))  # type: ignore[arg-type]


async def test_auto_takes_bubblewrap_where_it_works(tmp_path: Path) -> None:
    plan = await detect_sandbox(_settings(tmp_path))
    assert plan.kind == "bwrap", plan.unavailable
    assert plan.bwrap and plan.bwrap_version
    assert "namespaces" in plan.describe()


async def test_a_machine_without_any_sandbox_is_refused_with_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a bwrap that cannot make namespaces, and a kernel without Landlock
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    broken.chmod(broken.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(_sandbox, "_bwrap_path", lambda: (str(broken), ""))
    monkeypatch.setattr("adaexplore.executor.wire._landlock.abi_version", lambda: 0)
    with pytest.raises(ConfigError) as refused:
        await detect_sandbox(_settings(tmp_path))
    message = str(refused.value)
    assert "cannot make namespaces here: bwrap: No permissions to create a new namespace" in message
    assert "offers no Landlock" in message
    assert "executor.sandbox = 'none'" in message and "ADAEXPLORE_SANDBOX=none" in message


async def test_none_is_taken_only_when_asked_and_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plan = await detect_sandbox(_settings(tmp_path, sandbox="none"))
    assert plan.kind == "none"
    assert "candidate code runs with the rights of this process" in caplog.text


async def test_a_worker_sees_only_python_the_package_and_its_own_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    exchange = tmp_path / "exchange" / "worker"
    exchange.mkdir(parents=True)
    (exchange.parent / "tasks").mkdir()
    plan = await detect_sandbox(_settings(home))
    argv, env, _ = plan.command(
        ["/bin/sh", "-c", "ls -A /root /home 2>&1; echo written > $PWD/out; cat /etc/shadow; echo done"],
        dict(os.environ),
        role="candidate",
        gpu=False,
        exchange=exchange,
        exchange_root=exchange.parent,
        settings=_settings(home),
    )
    assert env["TRITON_CACHE_DIR"] == "/tmp/triton-cache"
    shown = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    assert shown.endswith("done\n")
    assert (exchange / "out").read_text() == "written\n"
    # /etc/shadow reads as empty, and the private places hold only what Python needs (a home's caches and
    # files are gone)
    assert "root:*" not in shown and "root:$" not in shown
    assert ".cache" not in shown and ".bashrc" not in shown


def test_the_directory_of_the_script_that_runs_the_evaluator_is_not_put_back(tmp_path: Path) -> None:
    # `python /some/dir/run.py` puts /some/dir first on the evaluator's path; a worker must not see it
    script = tmp_path / "run.py"
    script.write_text(
        "import os, json\nfrom adaexplore.executor.host._view import needed_paths\n"
        "print(json.dumps(needed_paths(dict(os.environ))))\n"
    )
    # the checkout first, and whatever the evaluator's own path already holds (a machine may carry packages there)
    checkout = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True)
    places = json.loads(done.stdout)
    assert str(tmp_path.resolve()) not in places
    assert any(p.endswith("adaexplore") for p in places)


async def test_an_installed_adaexplore_in_a_virtual_environment_under_home_is_read_not_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wheel puts adaexplore in site-packages, and a user's virtual environment is usually under their home,
    # which workers must not see: the environment is put back, and site-packages is not hidden inside it (bwrap
    # refused to start every worker so: "Can't remount readonly on .../site-packages").
    user = tmp_path / "user"
    site = user / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "adaexplore").mkdir(parents=True)
    (site / "adaexplore" / "marker.py").write_text("installed = True\n")
    (user / "secrets.txt").write_text("key\n")
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setattr(sys, "prefix", str(user / "venv"))  # the interpreter's environment, as a venv's python
    monkeypatch.setattr(_view, "package_root", lambda: site)
    exchange = tmp_path / "exchange" / "worker"
    exchange.mkdir(parents=True)
    (exchange.parent / "tasks").mkdir()
    settings = _settings(tmp_path / "state")
    plan = await detect_sandbox(settings)
    if plan.kind != "bwrap":
        pytest.skip(f"the layout is bubblewrap's; this machine's sandbox is {plan.kind}")
    argv, env, _ = plan.command(
        ["/bin/sh", "-c", f"cat {site / 'adaexplore' / 'marker.py'}; ls -A {user}"],
        {**os.environ, "PYTHONPATH": str(site)},
        role="candidate",
        gpu=False,
        exchange=exchange,
        exchange_root=exchange.parent,
        settings=settings,
    )
    shown = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["installed = True", "venv"]  # the home shows its environment alone
