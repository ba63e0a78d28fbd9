"""Triton's cache key of this installation, computed by a subprocess of ours (the evaluator's process never imports
Triton), kept in the cache directory for as long as Triton's files stay as they are, and handed to every worker
(see `wire/_triton_key.py`)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

import anyio

__all__ = ["installation", "triton_key"]

_lock = threading.Lock()
# in this process, by the installation's fingerprint (None: Triton not found): the key's JSON, or None where it could
# not be computed
_known: dict[str | None, str | None] = {}


def installation() -> tuple[Path, str] | None:
    """The folder of the Triton this interpreter imports (found, not imported), and a fingerprint of it: every file
    but compiled bytecode, by path, size and modification time. None where Triton is not found."""
    spec = importlib.util.find_spec("triton")
    if spec is None or spec.origin is None:
        return None
    root = Path(spec.origin).parent
    digest = hashlib.sha256(f"{sys.executable}\0{root}\n".encode())
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in sorted(files):
            path = os.path.join(folder, name)
            stat = os.stat(path)
            digest.update(f"{os.path.relpath(path, root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return root, digest.hexdigest()


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
        found = installation()  # looked at again at each start: a Triton upgraded meanwhile has another key
        fingerprint = found[1] if found is not None else None
        if fingerprint in _known:
            return _known[fingerprint]
        stored = cache_dir / "triton-key" / f"{fingerprint}.json" if found is not None else None
        value = None
        if stored is not None and stored.is_file():
            value = stored.read_text().strip() or None
        if value is None:
            # where it cannot be computed, each worker computes Triton's own as it always could (the same key): a
            # broken Triton is reported by the worker that needs it, in its own words
            value = _computed(env)
            # kept only where the Triton the workers import is the one fingerprinted
            if value is not None and found is not None and stored is not None:
                if Path(json.loads(value).get("file", "")).parent == found[0]:
                    stored.parent.mkdir(parents=True, exist_ok=True)
                    temporary = stored.with_suffix(f".{secrets.token_hex(4)}.tmp")
                    temporary.write_text(value)
                    temporary.replace(stored)
        _known[fingerprint] = value
        return value


async def triton_key(env: Mapping[str, str], cache_dir: Path) -> str | None:
    """The JSON that `python -m adaexplore.executor.worker._triton_key` prints with `env`: read from `cache_dir`
    where this Triton's files are as they were when it was computed, else computed now (the callers meanwhile wait
    for it), once per process and installation; None where it failed."""
    return await anyio.to_thread.run_sync(_compute, env, cache_dir)
