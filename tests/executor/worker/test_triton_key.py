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


def as_a_new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module's memory of keys emptied, as in a process that has computed none yet (restored after the test)."""
    for name in ("_known", "_last", "_by_reach"):
        monkeypatch.setattr(host_key, name, {})


# the tests run their own event loop (anyio.run), not the session's, where the session's evaluator starts workers
# that read and write the same module state
def test_a_worker_takes_the_key_triton_computes_for_its_installation(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_a_new_process(monkeypatch)
    given = anyio.run(host_key.triton_key, worker_env(fast_settings(home)), tmp_path)
    assert given is not None
    own = cache.triton_key()  # Triton's own, in this process
    assert json.loads(given) == {"file": triton.__file__, "key": own}
    # kept for the next process, with the fingerprint of the installation, and read from there
    mark = host_key.fingerprint(Path(triton.__file__).parent)
    assert json.loads((tmp_path / "triton-key.json").read_text()) == {"fingerprint": mark, "value": given}
    as_a_new_process(monkeypatch)
    computed: list[object] = []
    monkeypatch.setattr(host_key, "_computed", lambda env: computed.append(env) or given)
    assert anyio.run(host_key.triton_key, {}, tmp_path) == given
    assert computed == [], "computed again"
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


def test_a_key_kept_for_an_installation_since_changed_is_computed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "triton"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "compiler.py").write_text("A = 1\n")
    first = host_key.fingerprint(package)
    (package / "__pycache__" / "compiler.cpython-311.pyc").write_bytes(b"bytecode")  # not a change of Triton
    assert host_key.fingerprint(package) == first
    value = json.dumps({"file": str(package / "__init__.py"), "key": "k1"})
    (tmp_path / "triton-key.json").write_text(json.dumps({"fingerprint": first, "value": value}))
    as_a_new_process(monkeypatch)
    computed: list[str] = []
    monkeypatch.setattr(host_key, "_computed", lambda env: computed.append("k2") or value.replace("k1", "k2"))
    assert host_key._compute({}, tmp_path) == value  # kept, and the installation is as it was
    (package / "compiler.py").write_text("A = 22\n")
    assert host_key._compute({}, tmp_path) == value.replace("k1", "k2") and computed == ["k2"]
    assert host_key._compute({}, tmp_path) == value.replace("k1", "k2") and computed == ["k2"]  # known now


@pytest.mark.slow  # a real worker process (stopped as soon as it is made)
def test_every_worker_started_gets_the_key(home: Path) -> None:
    anyio.run(_every_worker_started_gets_the_key, home)


async def _every_worker_started_gets_the_key(home: Path) -> None:
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


@pytest.mark.parametrize("kept", ["", "{", '{"fingerprint": 1}', '{"fingerprint": "f", "value": "{}"}'])
def test_a_kept_key_that_does_not_read_is_computed_again(
    kept: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "triton-key.json").write_text(kept)
    as_a_new_process(monkeypatch)
    value = json.dumps({"file": triton.__file__, "key": "k"})
    monkeypatch.setattr(host_key, "_computed", lambda env: value)
    assert host_key._compute({}, tmp_path) == value
    assert json.loads((tmp_path / "triton-key.json").read_text())["value"] == value


def test_a_new_cache_directory_takes_the_key_this_process_computed_for_the_same_reach(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_a_new_process(monkeypatch)
    real = host_key._computed
    computed: list[str | None] = []
    monkeypatch.setattr(host_key, "_computed", lambda env: computed.append(env.get("PYTHONPATH")) or real(env))
    env = worker_env(fast_settings(home))
    first = host_key._compute(env, tmp_path / "a")
    assert first is not None and len(computed) == 1
    # another evaluator's directory, the same places to find Triton: no subprocess, the same key, kept there too
    assert host_key._compute({**env, "HOME": str(tmp_path)}, tmp_path / "b") == first and len(computed) == 1
    assert json.loads((tmp_path / "b" / "triton-key.json").read_text())["value"] == first
    # a PYTHONPATH that may reach another Triton: computed for it
    elsewhere = {**env, "PYTHONPATH": os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])}
    assert host_key._compute(elsewhere, tmp_path / "c") == first and len(computed) == 2
    # the installation changed since (its fingerprint no longer the one known): computed again
    monkeypatch.setattr(host_key, "_known", {})
    assert host_key._compute(env, tmp_path / "d") == first and len(computed) == 3
