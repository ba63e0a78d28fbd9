"""Landlock from Python: the three system calls, the rights of ABI 1 to 7, and a ruleset builder.

The `landlock` package on PyPI covers file-system rights of the first ABIs only; a worker also needs the
network rights (ABI 4) and the scopes (ABI 6) that keep it from signalling the evaluator, so the calls are
made here with ctypes. Landlock restricts the calling thread and the threads and processes it starts later.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "EXECUTE",
    "FS_ALL",
    "FS_READ",
    "FS_WRITE",
    "REFER",
    "LandlockUnavailable",
    "Ruleset",
    "abi_version",
]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same numbers on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
_WRITE_FILE = 1 << 1
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_CHAR = 1 << 6
_MAKE_DIR = 1 << 7
_MAKE_REG = 1 << 8
_MAKE_SOCK = 1 << 9
_MAKE_FIFO = 1 << 10
_MAKE_BLOCK = 1 << 11
_MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3

FS_READ = _READ_FILE | _READ_DIR
FS_WRITE = (
    FS_READ
    | _WRITE_FILE
    | _REMOVE_DIR
    | _REMOVE_FILE
    | _MAKE_DIR
    | _MAKE_REG
    | _MAKE_SYM
    | _MAKE_FIFO
    | _MAKE_SOCK
    | REFER
    | _TRUNCATE
)
FS_ALL = EXECUTE | FS_WRITE | _MAKE_CHAR | _MAKE_BLOCK
# rights that a rule on a file (not a directory) may carry
_FILE_RIGHTS = EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE

_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1


class LandlockUnavailable(OSError):
    """The kernel has no Landlock, or refused a ruleset."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The Landlock ABI the kernel offers; 0 when it has none (or it is disabled)."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


class Ruleset:
    """What a process may still do once `restrict()` is called: the rights named in `handled` are denied
    except beneath the paths given to `allow`; with `deny_tcp` every TCP bind and connect is refused (ABI 4);
    with `scoped` signals and abstract Unix sockets reach only processes of the same sandbox (ABI 6)."""

    def __init__(self, handled: int, *, deny_tcp: bool = False, scoped: bool = False) -> None:
        self.abi = abi_version()
        if self.abi < 1:
            raise LandlockUnavailable("this kernel offers no Landlock")
        supported = FS_ALL & ~((0 if self.abi >= 2 else REFER) | (0 if self.abi >= 3 else _TRUNCATE))
        self.handled = handled & supported
        attr = _RulesetAttr(
            self.handled,
            _NET_BIND_TCP | _NET_CONNECT_TCP if deny_tcp and self.abi >= 4 else 0,
            _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if scoped and self.abi >= 6 else 0,
        )
        size = 24 if self.abi >= 6 else 16 if self.abi >= 4 else 8
        self._libc = _libc()
        self._libc.syscall.restype = ctypes.c_long
        fd = self._libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            errno = ctypes.get_errno()
            raise LandlockUnavailable(errno, f"landlock_create_ruleset failed: {os.strerror(errno)}")
        self._fd = int(fd)
        self.rules: list[tuple[str, int]] = []

    def allow(self, paths: Iterable[str | Path], rights: int) -> None:
        """Grant `rights` beneath each path that exists (on a file, only the rights a file can carry)."""
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                granted = rights & self.handled
                if not Path(path).is_dir():
                    granted &= _FILE_RIGHTS
                if not granted:
                    continue
                rule = _PathBeneathAttr(granted, fd)
                result = self._libc.syscall(
                    _ADD_RULE, ctypes.c_int(self._fd), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), 0
                )
                if result != 0:
                    errno = ctypes.get_errno()
                    raise LandlockUnavailable(errno, f"landlock_add_rule({path}) failed: {os.strerror(errno)}")
                self.rules.append((str(path), granted))
            finally:
                os.close(fd)

    def restrict(self) -> None:
        """Apply the ruleset to this thread and everything it starts from now on; irreversible."""
        if self._libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            errno = ctypes.get_errno()
            raise LandlockUnavailable(errno, f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(errno)}")
        result = self._libc.syscall(_RESTRICT_SELF, ctypes.c_int(self._fd), ctypes.c_uint32(0))
        os.close(self._fd)
        if result != 0:
            errno = ctypes.get_errno()
            raise LandlockUnavailable(errno, f"landlock_restrict_self failed: {os.strerror(errno)}")
