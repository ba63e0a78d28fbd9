"""The worker's end of the protocol: commands on stdin, events on a private copy of the original stdout.

Anything the candidate prints goes to fd 1, which is pointed at stderr, so it can never be taken for
a protocol message.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from adaexplore.executor.wire._protocol import Command, Msg, decode_command, encode

__all__ = ["Channel"]


class Channel:
    def __init__(self) -> None:
        self._out: BinaryIO = os.fdopen(os.dup(1), "wb", buffering=0)
        os.dup2(2, 1)
        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        self._in: BinaryIO = sys.stdin.buffer

    def send(self, message: Msg) -> None:
        self._out.write(encode(message))

    def receive(self) -> Command | None:
        """The next command, or None when the evaluator has gone (end of input)."""
        line = self._in.readline()
        if not line:
            return None
        return decode_command(line)
