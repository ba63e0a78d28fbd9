"""Whether workers can run as an unprivileged user, and what of the exchange they then own (DESIGN §5).

Only an evaluator that runs as root has a choice: bubblewrap started by root maps the worker's user namespace
onto root itself, so the worker would be root on this machine as far as files, devices and the kernel are
concerned. Such an evaluator starts its workers without a user namespace instead, and each worker becomes
`executor.worker_uid` before anything else (`worker/confine/_user.py`). It can only where that user can run the
interpreter inside the sandbox's view of the machine (the file system is built from an allow-list, so a
private home around the interpreter is no obstacle) and open the GPU's device files; both are checked once,
when the sandbox is chosen, and on a GPU machine the check also starts CUDA as that user, undumpable as the
judge makes itself; the reason is named where they fail.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import anyio

from adaexplore.config import Settings
from adaexplore.executor.host._reaper import reaped
from adaexplore.executor.host._view import gpu_devices, inside

__all__ = ["bind", "hand_over", "system_binds", "unprivileged_user"]

_DROP = "from adaexplore.executor.worker.confine._user import drop_privileges; drop_privileges({uid})"
# on a GPU, also what the judge does next: make itself undumpable (its /proc files become root's), then use CUDA
_CUDA = "; import ctypes; ctypes.CDLL('libc.so.6').prctl(4, 0); import torch; torch.ones(1, device='cuda').sum().item()"
# what the check in a sandbox found, per bwrap, user, interpreter, module path and view of the machine
_PROBED: dict[tuple[str, int, str, str, tuple[str, ...]], str] = {}


def _closed_devices() -> list[str]:
    """The GPU's device files that a user other than their owner cannot both read and write."""
    both = stat.S_IROTH | stat.S_IWOTH
    devices = [Path(d) for d in gpu_devices(True)]
    return [str(d) for d in devices if d.is_char_device() and d.stat().st_mode & both != both]


async def unprivileged_user(
    bwrap: str, system: list[str], env: dict[str, str], settings: Settings
) -> tuple[int | None, str]:
    """(the user workers become, or None; why they stay as this process's user, where that is a choice).

    `env` is the workers' environment (`workspace.worker_env`): the check imports what a worker imports first,
    from where a worker finds it (packages installed to a folder on PYTHONPATH, say)."""
    uid = settings.executor.worker_uid
    if os.geteuid() != 0:
        return None, ""  # workers are this unprivileged user already, root only inside their own namespace
    if uid is None:
        return None, "executor.worker_uid is unset"
    closed = _closed_devices()
    if closed:
        return None, f"{', '.join(closed)} cannot be opened by other users"
    key = (bwrap, uid, sys.executable, env.get("PYTHONPATH", ""), tuple(system))
    if key not in _PROBED:  # the same in every evaluator of this process: asked once
        command = [bwrap, "--unshare-pid", "--unshare-net", "--die-with-parent", "--cap-drop", "ALL"]
        command += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--dev", "/dev", "--proc", "/proc"]
        devices = gpu_devices(True)
        for device in devices:
            command += ["--dev-bind", device, device]
        command += ["--perms", "1777", "--tmpfs", "/tmp", *system_binds(system, {}), "--remount-ro", "/", "--"]
        gpu = any(Path(d).name.removeprefix("nvidia").isdigit() for d in devices)
        command += [sys.executable, "-P", "-c", _DROP.format(uid=uid) + (_CUDA if gpu else "")]
        env = {**env, "HOME": "/tmp"}
        # through the launcher that ends the sandbox if this process dies while bubblewrap starts (`_reaper.py`)
        result = await anyio.run_process(reaped(command, os.getpid()), check=False, stderr=subprocess.PIPE, env=env)
        why = ""
        if result.returncode != 0:
            tail = result.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {result.returncode}"]
            what = "run this interpreter and use the GPU" if gpu else "run this interpreter"
            why = f"uid {uid} cannot {what} in the sandbox ({tail[0]})"
        _PROBED[key] = why
    why = _PROBED[key]
    return (None, why) if why else (uid, "")


def system_binds(system: list[str], made: dict[str, bool]) -> list[str]:
    """bubblewrap's arguments that put back `system` (see `_view.system_view`), read-only. `made` holds
    the folders that exist in the sandbox already (True: bound from the machine, with all inside them), and
    gains those made here."""
    args: list[str] = []
    for path in system:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]  # a merged /usr's /bin, /lib, ...
            made[path] = True
        else:
            args += bind("--ro-bind", path, made)
    return args


def bind(kind: str, path: str, made: dict[str, bool]) -> list[str]:
    """bubblewrap's arguments that bind `path` of the machine at the same place, after the folders above it
    that are not in `made` yet (nor inside a folder bound from the machine), open to every user: bubblewrap
    run by root makes them private to root, which would keep the worker's user out of, say, an interpreter
    under /root/.pyenv."""
    args: list[str] = []
    parts = Path(path).parts
    for depth in range(2, len(parts)):
        folder = str(Path(*parts[:depth]))
        if folder in made or any(whole and inside(folder, m) for m, whole in made.items()):
            continue
        args += ["--perms", "0755", "--dir", folder]
        made[folder] = False
    made[path] = True
    return [*args, kind, path, path]


def hand_over(uid: int, exchange_root: Path, exchange: Path) -> None:
    """Give user `uid` its worker's `exchange` directory, and let its group read the evaluator's root, where
    the judge reads every worker's outputs and each worker its task (nobody else may enter it)."""
    for folder in (exchange_root, exchange_root / "tasks"):
        info = folder.stat()
        if info.st_gid != uid or stat.S_IMODE(info.st_mode) != 0o750:
            os.chown(folder, -1, uid)
            folder.chmod(0o750)
    # root's group keeps its way in: bubblewrap enters the directory as root without the capabilities that
    # override its mode
    os.chown(exchange, uid, 0)
    exchange.chmod(0o770)
