"""Triton's cache key of this installation: printed by `python -m adaexplore.executor.worker._triton_key` (one JSON
line, see `wire/_triton_key.py`), and taken by a worker from its environment in place of hashing Triton's files
again (`install`)."""

from __future__ import annotations

import json

__all__ = ["install", "main"]


def install(value: str) -> bool:
    """Make `value` (the JSON the module's `main` prints) this process's Triton key, where it was computed for the
    Triton installed here (the same `triton.__file__`); else leave Triton to compute its own. True when taken."""
    import triton
    from triton.runtime import autotuner, cache

    given = json.loads(value)
    if given.get("file") != triton.__file__ or not isinstance(given.get("key"), str):
        return False
    key: str = given["key"]

    def triton_key() -> str:
        return key

    # the two modules that call it by name (Triton's cache key of a compile, and the autotuner's of its results)
    cache.triton_key = triton_key
    autotuner.triton_key = triton_key
    return True


def main() -> None:
    import triton
    from triton.runtime.cache import triton_key

    print(json.dumps({"file": triton.__file__, "key": triton_key()}))


if __name__ == "__main__":
    main()
