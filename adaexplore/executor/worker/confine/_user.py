"""A worker started as root gives up root before it does anything else (DESIGN §5, Sandbox).

Under bubblewrap an evaluator that runs as root starts its workers without a user namespace of their own and
with two capabilities, to change user and group; the worker's first act is to become the unprivileged user
of `executor.worker_uid` (with the group of the same number), which clears every capability the kernel gave
it, and to forbid itself any gain of privilege through a set-user-ID program. A candidate then holds no more
rights on the machine than any user without a login; a task's reference code, run by the judge, neither.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["drop_privileges"]

_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38


def _effective_capabilities() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    raise OSError("/proc/self/status names no effective capabilities")


def drop_privileges(uid: int) -> None:
    """Become user and group `uid` for good, with no supplementary groups, no capabilities and no way back.

    Raises:
        OSError: the kernel refused a step, or a capability or an id survived it (the worker then exits: no
            candidate runs as root).
    """
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    # a change of user makes the process undumpable, which would give its own /proc files to root: torch and
    # the CUDA driver read them (the judge makes itself undumpable again later)
    if libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")
    ids = (*os.getresuid(), *os.getresgid())
    if set(ids) != {uid} or os.getgroups() or _effective_capabilities():
        raise OSError(f"still privileged after dropping to uid {uid}: ids {ids}, groups {os.getgroups()}")
