"""Triton's cache key of this installation, computed by a subprocess of ours (the evaluator's process never imports
Triton, nor asks the import system where it is), kept in the cache directory for as long as Triton's files stay as
they are, and handed to every worker (see `wire/_triton_key.py`)."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

import anyio

__all__ = ["fingerprint", "triton_key"]

_lock = threading.Lock()
# in this process: the key's JSON by the fingerprint of the installation it was computed for
_known: dict[str, str] = {}
# the key last given for each cache directory (None: it failed there); apart per directory, so that one evaluator's
# starts do not answer for another's directory
_last: dict[str, str | None] = {}
# the key's JSON computed in this process, by the variables that decide where a process of ours finds Triton: a
# cache directory new to this process takes it, while that installation is as it was, rather than start the
# subprocess again (a worker whose Triton lies elsewhere refuses a key computed for another file and hashes its own:
# `worker/_triton_key.install`)
_by_reach: dict[tuple[str | None, ...], str] = {}
_REACH = ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONSAFEPATH")


def fingerprint(root: Path) -> str:
    """A fingerprint of the Triton installed in `root` as workers run it: every file but compiled bytecode, by path,
    size and modification time."""
    digest = hashlib.sha256(f"{sys.executable}\0{root}\n".encode())
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in sorted(files):
            path = os.path.join(folder, name)
            stat = os.stat(path)
            digest.update(f"{os.path.relpath(path, root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _root(value: str) -> Path:
    """The folder of the Triton a key's JSON was computed for."""
    return Path(json.loads(value)["file"]).parent


def _mark(value: str | None) -> str | None:
    """The fingerprint of the installation `value` was computed for, where it is still as it was then; else None."""
    if value is None:
        return None
    root = _root(value)
    if not root.is_dir():
        return None
    mark = fingerprint(root)
    return mark if _known.get(mark) == value else None


def _kept(stored: Path) -> tuple[str, str] | None:
    """The fingerprint and the key's JSON kept in `stored`; None where there is none, or none that reads as one (it
    is computed again, and written anew)."""
    try:
        entry = json.loads(stored.read_text())
        found = (entry["fingerprint"], entry["value"])
        _root(found[1])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if all(isinstance(part, str) for part in found) else None


def _computed(env: Mapping[str, str]) -> str | None:
    done = subprocess.run(
        [sys.executable, "-m", "adaexplore.executor.worker._triton_key"],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    return lines[-1] if done.returncode == 0 and lines else None


def _compute(env: Mapping[str, str], cache_dir: Path) -> str | None:
    with _lock:
        # looked at again at each start: a Triton upgraded meanwhile has another key
        where = str(cache_dir)
        if where in _last and (_last[where] is None or _mark(_last[where]) is not None):
            return _last[where]
        stored = cache_dir / "triton-key.json"
        entry = _kept(stored)
        if entry is not None:
            _known[entry[0]] = entry[1]
            if _mark(entry[1]) is not None:
                _last[where] = entry[1]
                return entry[1]
        # where it cannot be computed, each worker computes Triton's own as it always could (the same key): a broken
        # Triton is reported by the worker that needs it, in its own words
        reach = tuple(env.get(name) for name in _REACH)
        value = _by_reach.get(reach)
        mark = _mark(value)
        if mark is None:
            value = _computed(env)
            mark = fingerprint(_root(value)) if value is not None else None
        if value is not None and mark is not None:
            _by_reach[reach] = value
            _known[mark] = value
            stored.parent.mkdir(parents=True, exist_ok=True)
            temporary = stored.with_suffix(f".{secrets.token_hex(4)}.tmp")
            temporary.write_text(json.dumps({"fingerprint": mark, "value": value}))
            temporary.replace(stored)
        _last[where] = value
        return value


async def triton_key(env: Mapping[str, str], cache_dir: Path) -> str | None:
    """The JSON that `python -m adaexplore.executor.worker._triton_key` prints with `env`: the one known in this
    process or kept in `cache_dir`, where the Triton it was computed for is as it was then, else computed now (the
    callers meanwhile wait for it); None where it failed."""
    return await anyio.to_thread.run_sync(_compute, env, cache_dir)
