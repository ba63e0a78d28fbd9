"""Triton's cache key of this installation: computed by a subprocess of the evaluator, kept in the cache directory
while Triton's files stay as they are, handed to every worker it starts, and taken by a worker of the same
installation in place of hashing Triton's files again."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import anyio
import pytest
import triton
from triton.runtime import autotuner, cache

from adaexplore.executor import detect_sandbox, worker_env
from adaexplore.executor.host import _triton_key as host_key
from adaexplore.executor.host._spawn import ProcessSpawner, SpawnRequest
from adaexplore.executor.wire._triton_key import TRITON_KEY_ENV
from adaexplore.executor.worker._triton_key import install
from tests.conftest import fast_settings

pytestmark = pytest.mark.anyio


async def test_a_worker_takes_the_key_triton_computes_for_its_installation(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host_key, "_known", {})  # as in a process that has not computed it yet
    given = await host_key.triton_key(worker_env(fast_settings(home)), tmp_path)
    assert given is not None
    own = cache.triton_key()  # Triton's own, in this process
    assert json.loads(given) == {"file": triton.__file__, "key": own}
    # kept for the next process, under this installation's fingerprint, and read from there
    found = host_key.installation()
    assert found is not None and found[0] == Path(triton.__file__).parent
    assert (tmp_path / "triton-key" / f"{found[1]}.json").read_text() == given
    monkeypatch.setattr(host_key, "_known", {})
    monkeypatch.setattr(host_key, "_computed", lambda env: pytest.fail("computed again"))
    assert await host_key.triton_key({}, tmp_path) == given
    # restored after the test: the two names a worker replaces
    monkeypatch.setattr(cache, "triton_key", cache.triton_key)
    monkeypatch.setattr(autotuner, "triton_key", autotuner.triton_key)
    # computed for another installation: not taken
    assert not install(json.dumps({"file": "/elsewhere/triton/__init__.py", "key": "another"}))
    assert cache.triton_key() == own
    assert install(given)
    assert cache.triton_key() == autotuner.triton_key() == own
    # what a compile's cache key is made of: the key taken, not Triton's files hashed again
    assert cache.get_cache_key.__globals__["triton_key"] is cache.triton_key
    assert not hasattr(cache.triton_key, "cache_info")  # Triton's own is an lru_cache


def test_the_fingerprint_changes_with_a_file_of_the_installation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "triton"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "compiler.py").write_text("A = 1\n")
    spec = type("Spec", (), {"origin": str(package / "__init__.py")})()
    monkeypatch.setattr(host_key.importlib.util, "find_spec", lambda name: spec)
    first = host_key.installation()
    (package / "__pycache__" / "compiler.cpython-311.pyc").write_bytes(b"bytecode")  # not a change of Triton
    assert host_key.installation() == first
    (package / "compiler.py").write_text("A = 22\n")
    assert host_key.installation() != first


@pytest.mark.slow  # a real worker process (stopped as soon as it is made)
async def test_every_worker_started_gets_the_key(home: Path) -> None:
    settings = fast_settings(home)
    plan = await detect_sandbox(settings)
    root = Path(tempfile.mkdtemp(prefix=f"adaexplore-{os.getpid()}-"))
    (root / "tasks").mkdir()
    try:
        async with anyio.create_task_group() as group:
            spawner = ProcessSpawner(group, sandbox=plan, exchange_root=root, settings=settings)
            env = worker_env(settings)
            request = SpawnRequest(role="sizes", backend="compile", device=0, env=env, exchange=root / "w")
            worker = await spawner.spawn(request)
            try:
                environ = Path(f"/proc/{worker.pid}/environ").read_bytes().split(b"\0")
            finally:
                await worker.aclose()
            group.cancel_scope.cancel()
        assert f"{TRITON_KEY_ENV}={await host_key.triton_key(env, settings.cache_dir)}".encode() in environ
    finally:
        shutil.rmtree(root, ignore_errors=True)
