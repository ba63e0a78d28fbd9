"""The signal on which a worker writes every thread's Python stack to its stderr (`faulthandler`), which the
evaluator sends a worker that ran out of time before it kills it, to say where the candidate was.

Not SIGUSR1: LLVM, inside Triton's compiler, takes SIGUSR1 (and SIGUSR2) for itself at its first compile.
SIGWINCH is left alone by torch, Triton and LLVM, and a process that does not catch it ignores it, so sending
it to a worker that never asked for it changes nothing. A worker has no terminal whose size could change."""

from __future__ import annotations

import signal

__all__ = ["STACK_SIGNAL"]

STACK_SIGNAL = signal.SIGWINCH
