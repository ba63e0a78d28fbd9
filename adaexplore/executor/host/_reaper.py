"""The launcher between the evaluator and a worker's sandbox: nothing the worker started outlives the evaluator.

bubblewrap's `--die-with-parent` ties its outer process to the evaluator, and the first process of the worker's
PID namespace to the outer one, but the latter only once that process has finished building the namespace's file
system: if the evaluator dies meanwhile (killed outright, or its server stopped with SIGKILL), the outer process
dies with it, the namespace's first process is reparented to init, then ties itself to init and runs the worker
on with no one left to end it.

So every worker is started through this script, run by the evaluator's interpreter (`-I -S`: the standard library
alone, a few milliseconds and megabytes). It marks itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so that
any process under it whose parent ends is reparented to it rather than to init; runs the worker's command as its
child; and watches two pidfds, the evaluator's and the child's. When the child ends it ends whatever of the tree
is left and exits as the child did (its code, or the same signal). When the evaluator ends first, it SIGKILLs
every child it has, again and again as orphans arrive, until it has none, and exits. It holds none of the
worker's pipes or descriptors, so the evaluator sees the worker's end as before.

Usage: python -I -S _reaper.py PARENT_PID -- COMMAND...
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import time
from pathlib import Path

__all__ = ["SCRIPT", "reaped"]

SCRIPT = Path(__file__).resolve()
_PR_SET_CHILD_SUBREAPER = 36
_GONE = 125  # the evaluator was gone before the command could start


def reaped(argv: list[str], parent: int) -> list[str]:
    """The command line that runs `argv` under this launcher, for the evaluator process `parent`."""
    return [sys.executable, "-I", "-S", str(SCRIPT), str(parent), "--", *argv]


def _children() -> list[int]:
    found: list[int] = []
    try:
        for task in Path("/proc/self/task").iterdir():
            try:
                found += [int(pid) for pid in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
    except OSError:
        pass
    return found


def _end_all() -> None:
    """SIGKILL every child (those reparented here meanwhile too) until none is left, reaping each."""
    while True:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.005)


def _exit_as(status: int) -> None:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # their handlers cannot be set, nor need to be
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def main(args: list[str]) -> None:
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: _reaper.py PARENT_PID -- COMMAND...\n")
        os._exit(2)
    parent = int(args[0])
    command = args[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.stderr.write(f"adaexplore launcher: PR_SET_CHILD_SUBREAPER failed (errno {ctypes.get_errno()})\n")
        os._exit(2)
    if os.getppid() != parent:
        os._exit(_GONE)
    # the evaluator's pidfd, opened while it is still this process's parent: it is that process, not a reuse of its pid
    watched = os.pidfd_open(parent)
    if os.getppid() != parent:
        os._exit(_GONE)
    child = os.fork()
    if child == 0:
        os.close(watched)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            sys.stderr.write(f"adaexplore launcher: cannot run {command[0]}: {exc}\n")
        os._exit(127)
    # hold none of the worker's pipes or descriptors: its end is seen by their other ends alone
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.closerange(3, watched)
    os.closerange(watched + 1, os.sysconf("SC_OPEN_MAX"))
    mine = os.pidfd_open(child)
    poll = select.poll()
    poll.register(watched, select.POLLIN)
    poll.register(mine, select.POLLIN)
    while True:
        ready = {fd for fd, _ in poll.poll()}
        if mine in ready:
            _, status = os.waitpid(child, 0)
            _end_all()
            _exit_as(status)
        if watched in ready:
            _end_all()
            os._exit(_GONE)


if __name__ == "__main__":
    main(sys.argv[1:])
