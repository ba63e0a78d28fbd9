"""The variable in which the evaluator hands every worker Triton's cache key of this installation.

Triton keys each compiled kernel with a hash of its own installation (`triton.runtime.cache.triton_key`: its
compiler's, backends' and language's sources and its 400 MB native library), computed at a process's first
compile: about 0.3 s of CPU, paid again by every worker that compiles a kernel. One process of ours computes it
once with Triton's own function (`python -m adaexplore.executor.worker._triton_key`), and each worker of the
same installation takes that value instead of hashing the files again: the same key, so the same cache entries.
"""

from __future__ import annotations

__all__ = ["TRITON_KEY_ENV"]

# its value: JSON {"file": triton.__file__ where it was computed, "key": the key}
TRITON_KEY_ENV = "ADAEXPLORE_TRITON_HASH"  # not named KEY: no credential
