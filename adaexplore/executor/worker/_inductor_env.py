"""What torch.compile needs to run inside the judge's sandbox.

Inductor writes a comment with `nvcc --version` into the debug repro it builds for every graph it compiles,
and it copes only with an nvcc that is missing. From the sandbox the search for nvcc can end in EACCES
instead (a directory on PATH, or nvcc itself, is closed to the judge), inductor raises, and every
`--compile` timing of a reference failed. The comment is debug text that nobody reads
here: a failure to run nvcc for it becomes a line saying so.
"""

from __future__ import annotations

__all__ = ["tolerate_unrunnable_nvcc"]

_NOTE = "# CUDA Info: nvcc could not be run here\n"


def tolerate_unrunnable_nvcc() -> None:
    """Make inductor's CUDA info comment survive an nvcc that cannot be run (idempotent)."""
    from torch._dynamo import debug_utils
    from torch._dynamo.repro import after_aot

    original = getattr(debug_utils, "_cuda_system_info_comment", None)
    if original is None or getattr(original, "_adaexplore_tolerant", False):
        return

    def comment() -> str:
        try:
            return str(original())
        except OSError:
            return _NOTE

    comment._adaexplore_tolerant = True  # type: ignore[attr-defined]
    debug_utils._cuda_system_info_comment = comment
    if getattr(after_aot, "_cuda_system_info_comment", None) is original:
        after_aot._cuda_system_info_comment = comment  # imported by name there
