"""What of the machine a sandboxed worker sees: the system's programs and libraries, of /etc and /proc the few
files its software reads, the Python installation with its packages, the adaexplore package, and the
toolchain wherever it is installed; and what stays hidden inside those (the user's state, a home). Both kinds
of sandbox use it: bubblewrap binds these places into an empty root, Landlock allows reading them."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import adaexplore
from adaexplore.config import Settings

__all__ = [
    "DEV_READABLE",
    "PROC_READABLE",
    "gpu_devices",
    "inside",
    "needed_paths",
    "package_root",
    "sensitive_paths",
    "system_view",
    "toolchain_paths",
]

# The system a worker reads besides Python and the package: programs and libraries, and the kernel's view of
# devices. Symbolic links among them (a merged /usr's /bin) stay links.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")
# Of /etc, what the dynamic loader, the C library, the C compiler's links and the CUDA driver read; no other
# file there (a service's configuration holds its passwords).
ETC = (
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
# `worker/confine/_confine.py`); never a process's mount table, which names the host's paths.
PROC_READABLE = (
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/filesystems",
    "/proc/sys/vm",
    "/proc/sys/kernel",
    "/proc/driver",
)
DEV_READABLE = ("/dev/urandom", "/dev/random", "/dev/zero", "/dev/full", "/dev/null")


def inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def gpu_devices(gpu: bool) -> list[str]:
    if not gpu:
        return []
    found = [str(p) for p in sorted(Path("/dev").glob("nvidia*")) if p.is_char_device()]
    if Path("/dev/nvidia-caps").is_dir():
        found.append("/dev/nvidia-caps")
    return found


def package_root() -> Path:
    return Path(adaexplore.__file__).resolve().parents[1]


def sensitive_paths(settings: Settings) -> list[str]:
    """This user's adaexplore state and home, wherever they are."""
    paths = {str(settings.home.resolve()), str(settings.cache_dir.resolve()), str(Path.home().resolve())}
    url = settings.database_url
    if url.startswith("sqlite:///"):
        paths.add(str(Path(url.removeprefix("sqlite:///")).resolve().parent))
    return sorted(paths)


def needed_paths(env: dict[str, str]) -> list[str]:
    """What a worker must read: the interpreter, its libraries and packages, and the adaexplore package."""
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    root = package_root()
    script = script_directory()
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
    return sorted(p for p in resolved if not any(p != q and inside(p, q) for q in resolved))


def toolchain_paths(env: dict[str, str]) -> list[str]:
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


def system_view(env: dict[str, str]) -> list[str]:
    """Everything of the machine a worker reads (the rest does not exist for it under bubblewrap, and Landlock
    refuses it otherwise): the system's programs and libraries, /etc's few files, Python with its packages and
    the adaexplore package, and the toolchain. Parents before children; none inside another."""
    links = [p for p in SYSTEM_DIRS if os.path.islink(p)]
    places = {p for p in SYSTEM_DIRS if os.path.isdir(p) and not os.path.islink(p)}
    places |= {os.path.realpath(p) for p in needed_paths(env) + toolchain_paths(env)}
    kept = [p for p in places if not any(p != q and inside(p, q) for q in places)]
    # /etc's files as they are named: the loader reads /etc/ld.so.cache, whatever a link there points to
    kept += [f"/etc/{name}" for name in ETC if os.path.exists(f"/etc/{name}")]
    return sorted([*links, *kept], key=lambda p: (p.count("/"), p))


def script_directory() -> Path | None:
    """The directory Python put on the path for the main script, if it did."""
    main = sys.argv[0] if sys.argv else ""
    if sys.flags.safe_path or not main or main in ("-c", "-m") or not os.path.isfile(main):
        return None
    return Path(main).resolve().parent
