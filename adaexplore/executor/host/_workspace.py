"""The evaluator's footprint on the host: the exchange directories its workers write to, the task files its
judges read, the jobs it hands out, and the environment its workers start with."""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import secrets
import shutil
import signal
import tempfile
from pathlib import Path

import adaexplore
from adaexplore.config import Settings
from adaexplore.executor.tasks._task import Task

__all__ = [
    "exchange_root",
    "kill_orphaned_sandboxes",
    "not_dumpable",
    "remove_orphaned_exchanges",
    "task_file",
    "worker_env",
]

# What a worker's Python, torch, Triton, the C compiler and the CUDA driver read from the environment: the only
# variables of this process a worker gets. Anything else (a database's URL, a service's token under a name of
# its own) stays here, whatever its name says.
_PASSED = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TZ",
        "USER",
        "LOGNAME",
        "CC",
        "CXX",
        "LD_LIBRARY_PATH",
        "LIBRARY_PATH",
        "CPATH",
        "C_INCLUDE_PATH",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
        "PYTHONPATH",
        "PYTHONHASHSEED",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONNOUSERSITE",
        "PYTHONIOENCODING",
    }
)
_PASSED_PREFIXES = ("LC_", "CUDA_", "CUBLAS_", "CUDNN_", "TRITON_", "TORCH_", "PYTORCH_", "OMP_", "MKL_", "KMP_")
# even among those: names that say they hold a credential
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)


# the allocator setting that makes torch's page-locked host memory ordinary memory of the worker's
PINNED_AS_DATA = "pinned_use_cuda_host_register:True"


def _passed(name: str) -> bool:
    return (name in _PASSED or name.startswith(_PASSED_PREFIXES)) and not _SECRET_NAME.search(name)


def worker_env(settings: Settings) -> dict[str, str]:
    """What every worker starts with: the variables of this process's environment that the worker's own software
    reads (an allow-list), none that holds a credential, and the few the evaluator sets."""
    # Workers run untrusted code: they get no credentials (API keys, tokens, passwords, URLs with a password) of
    # this process, under whatever name.
    named = settings.model.api_key_env
    env = {k: v for k, v in os.environ.items() if _passed(k) and k != named}
    env.pop("TRITON_INTERPRET", None)
    package_root = str(Path(adaexplore.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    # Page-locked host memory counts against the worker's memory cap: torch takes it as ordinary memory that it
    # then registers with the driver, which the data limit sees. By default it asks the driver for it
    # (cudaHostAlloc), whose pages no limit of the process counts. Last, so that it wins over the user's value.
    name = "PYTORCH_ALLOC_CONF" if "PYTORCH_ALLOC_CONF" in env else "PYTORCH_CUDA_ALLOC_CONF"  # the one torch reads
    env[name] = ",".join(p for p in (env.get(name), PINNED_AS_DATA) if p)
    return env


def task_file(exchange: Path, task: Task) -> Path:
    """The task's source where the judges can read it."""
    path = exchange / "tasks" / f"{task.hash}.py"
    if not path.exists() or path.read_text() != task.source:
        temporary = path.with_suffix(f".{secrets.token_hex(4)}.tmp")
        temporary.write_text(task.source)
        temporary.chmod(0o644)  # whatever the umask: a worker of another user reads it (see `host/_worker_user.py`)
        temporary.replace(path)
    return path


def not_dumpable() -> None:
    """No process of this user may read this one's memory, environment or file descriptors (the server's keys
    and the store's connection are in them), and it leaves no core file."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0)  # PR_SET_DUMPABLE
    except (OSError, AttributeError):  # not Linux
        pass


def remove_orphaned_exchanges() -> None:
    """Delete exchange directories left by evaluator processes that died without cleaning up."""
    for root in {exchange_root(), tempfile.gettempdir()} - {None}:
        for directory in Path(root).glob("adaexplore-*-*"):  # type: ignore[arg-type]
            pid = directory.name.split("-")[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(directory, ignore_errors=True)


_EXCHANGE_OF = re.compile(r"/adaexplore-(\d+)-")


def kill_orphaned_sandboxes() -> list[int]:
    """SIGKILL the bubblewrap processes of this user whose command line names an exchange directory of an
    evaluator process that is gone, and return their pids. An evaluator killed outright (SIGKILL, the OOM killer)
    can leave the first process of a worker's PID namespace behind, reparented to init, with its worker running on
    (a kernel that never ends keeps spinning); its end takes every process of the namespace with it."""
    killed = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "bwrap" or entry.stat().st_uid != os.getuid():
                continue
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        owners = {int(m.group(1)) for arg in argv for m in _EXCHANGE_OF.finditer(arg)}
        if owners and not any(Path(f"/proc/{pid}").exists() for pid in owners):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
    return killed


def exchange_root() -> str | None:
    """Memory-backed /dev/shm when it is there with room for large outputs, else the temporary directory."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= 8 << 30:
        return str(shm)
    return None
