"""No sandbox outlives the evaluator that started it, whenever that evaluator dies (`host/_reaper.py`)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adaexplore.executor import Evaluator
from adaexplore.executor.host._reaper import SCRIPT
from adaexplore.executor.host._sandbox import _bwrap_path
from tests.conftest import DELIBERATE

pytestmark = pytest.mark.anyio

# The evaluator's stand-in: starts the sandbox, through the launcher as `WorkerProcess.start` does or straight,
# and waits on it, as an evaluator waits on its worker.
_EVALUATOR = """
import importlib.util, os, subprocess, sys
spec = importlib.util.spec_from_file_location("reaper", sys.argv[1])
reaper = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reaper)
argv = sys.argv[3:]
if sys.argv[2] == "launched":
    argv = reaper.reaped(argv, os.getpid())
fds = tuple(int(fd) for fd in os.environ["PASSED_FDS"].split(","))
subprocess.Popen(argv, pass_fds=fds).wait()
"""


def _child_pid(info: int) -> int:
    """The pid bubblewrap reports on its info pipe (the first process of the namespace), read until it is whole."""
    text = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if select.select([info], [], [], 0.5)[0]:
            chunk = os.read(info, 4096)
            if not chunk:
                break
            text += chunk
            with contextlib.suppress(ValueError):
                return int(json.loads(text)["child-pid"])
    raise AssertionError(f"bubblewrap reported no namespace: {text!r}")


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _orphan_after_the_evaluator_dies(mode: str) -> tuple[int, int]:
    """Start a sandbox whose namespace's first process is held (`--block-fd`) before it ties itself to its
    parent, SIGKILL the evaluator, then let the namespace go on. Returns a pidfd of that first process, and its
    parent a second later (0: it is gone)."""
    bwrap = _bwrap_path()[0]
    assert bwrap is not None
    block_read, block_write = os.pipe()
    info_read, info_write = os.pipe()
    user = [] if os.geteuid() == 0 else ["--unshare-user"]
    sandbox = [bwrap, *user, "--unshare-pid", "--die-with-parent", "--new-session"]
    sandbox += ["--info-fd", str(info_write), "--block-fd", str(block_read)]
    sandbox += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--setenv", *DELIBERATE]
    sandbox += ["--", "sleep", "600"]
    env = {**os.environ, "PASSED_FDS": f"{block_read},{info_write}"}
    evaluator = subprocess.Popen(
        [sys.executable, "-I", "-c", _EVALUATOR, str(SCRIPT), mode, *sandbox],
        pass_fds=(block_read, info_write),
        env=env,
        start_new_session=True,
    )
    os.close(block_read)
    os.close(info_write)
    inner = -1
    try:
        child = _child_pid(info_read)
        inner = os.pidfd_open(child)
        evaluator.kill()
        evaluator.wait(timeout=10)
        time.sleep(0.5)  # the outer process's end (its parent-death signal), and the launcher's work
        with contextlib.suppress(BrokenPipeError):  # no one left to read it: the namespace is gone already
            os.write(block_write, b"x")  # it goes on: its first process forks the command, ties itself to its parent
        time.sleep(1.0)
        gone = select.select([inner], [], [], 5.0)[0] if mode == "launched" else []
        return inner, 0 if gone else (_parent(child) or 0)
    except BaseException:
        if inner >= 0:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(inner, signal.SIGKILL)
            os.close(inner)
        raise
    finally:
        os.close(block_write)
        os.close(info_read)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(evaluator.pid, signal.SIGKILL)


async def test_a_sandbox_dies_with_its_evaluator_even_while_it_is_being_built(evaluator: Evaluator) -> None:
    if _bwrap_path()[0] is None:
        pytest.skip("no bubblewrap on this machine")
    # bubblewrap alone: the namespace's first process, reparented while it was being built, runs on
    inner, parent = _orphan_after_the_evaluator_dies("straight")
    try:
        assert parent > 0 and Path(f"/proc/{parent}/comm").read_text().strip() != "bwrap", (
            "bubblewrap no longer leaves the namespace running when its parent dies mid-start; the launcher still "
            f"ends it, but this test's reproduction of the cause no longer holds (parent {parent})"
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(inner, signal.SIGKILL)
        os.close(inner)
    # through the launcher every worker is started with: the whole tree goes with the evaluator
    inner, parent = _orphan_after_the_evaluator_dies("launched")
    os.close(inner)
    assert parent == 0, f"the namespace's first process outlived the evaluator (its parent now {parent})"
    # and the evaluator's own workers are started so
    await evaluator.wait_warm()
    assert evaluator.lanes is not None
    workers = [w for pool in evaluator.lanes.pools.values() for w in pool._spares]
    assert workers
    for worker in workers:
        argv = Path(f"/proc/{worker.pid}/cmdline").read_bytes().split(b"\0")
        assert str(SCRIPT).encode() in argv and argv[argv.index(str(SCRIPT).encode()) + 1] == str(os.getpid()).encode()


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "exit 3"])
def test_the_launcher_ends_as_its_command_did(how: str) -> None:
    """The evaluator reads a worker's end through the launcher: a signal (SIGKILL included, whose handler cannot be
    set) or an exit code comes back as the command's own."""
    from adaexplore.executor.host._reaper import reaped

    body = "raise SystemExit(3)" if how == "exit 3" else f"import os, signal; os.kill(os.getpid(), signal.{how})"
    ended = subprocess.run(reaped([sys.executable, "-c", body], os.getpid()), timeout=60)
    assert ended.returncode == (3 if how == "exit 3" else -getattr(signal, how))
