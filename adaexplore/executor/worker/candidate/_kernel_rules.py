"""Rules on what a candidate's Triton kernels may build, enforced where Triton builds them.

Installed in every candidate worker before the candidate is imported. The same semantic layer serves the
GPU compiler and the interpreter, so one patch holds on every backend.
"""

from __future__ import annotations

from typing import Any

from triton.language import core as tl_core
from triton.language.semantic import TritonSemantic

from adaexplore.executor.worker.confine._faults import PointerFromInteger

__all__ = ["install"]


def install() -> None:
    """Refuse integer-to-pointer casts: a pointer must come from a tensor argument, plus offsets."""
    cast = TritonSemantic.cast

    def checked_cast(self: TritonSemantic, input: Any, dst_ty: Any, *args: Any, **kwargs: Any) -> Any:
        target = getattr(dst_ty, "scalar", dst_ty)
        source = getattr(getattr(input, "type", None), "scalar", None)
        if isinstance(target, tl_core.pointer_type) and source is not None and source.is_int():
            raise PointerFromInteger(
                "You cannot turn an integer into a pointer; index from a tensor argument's pointer (x_ptr + offsets)."
            )
        return cast(self, input, dst_ty, *args, **kwargs)

    TritonSemantic.cast = checked_cast
