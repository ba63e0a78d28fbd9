"""Deriving small sizes: candidates from the module's text, checked by the size probe in its own process."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from typing import IO, Any

from adaexplore.executor._small_sizes import BUDGET_S, Attempt, Derivation, candidates, sequence_sizes

__all__ = ["SizeProber", "derive_small_sizes"]

_START_S = 120.0  # importing torch in a fresh process, on a loaded machine


class SizeProber:
    """One probe process, kept for many tasks (torch is imported once); restarted after a task that hangs or
    kills it. `threads`: torch's CPU threads in the probe (default: torch's own choice)."""

    def __init__(self, *, threads: int | None = None, budget_s: float = BUDGET_S) -> None:
        self.threads = threads
        self.budget_s = budget_s
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._buffer = b""

    def __enter__(self) -> SizeProber:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self.close()
        env = dict(os.environ)
        if self.threads is not None:
            env["ADAEXPLORE_PROBE_THREADS"] = str(self.threads)
        self._log = tempfile.TemporaryFile()
        self._buffer = b""
        self._process = subprocess.Popen(
            [sys.executable, "-m", "adaexplore.executor.worker._size_probe"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            start_new_session=True,
        )
        if self._read(time.monotonic() + _START_S) is None:
            detail = self._stderr_tail()
            self.close()
            raise RuntimeError(f"the size probe did not start{': ' + detail if detail else ''}")
        return self._process

    def _stderr_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace").strip()[-600:]

    def _read(self, deadline: float) -> dict[str, Any] | None:
        """The probe's next answer, or None if it died or sent nothing before the deadline."""
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def derive(self, source: str, *, timeout_s: float = 60.0) -> Derivation:
        """Small sizes for the module `source`, checked by running its reference; `timeout_s` bounds the
        probe's time on it (start-up excluded)."""
        began = time.monotonic()
        try:
            tried, reason = candidates(source)
        except SyntaxError as exc:
            return Derivation(sizes=None, reason=f"the module does not parse: {exc.msg}")
        if not tried:
            return Derivation(sizes=None, reason=reason, seconds=time.monotonic() - began)
        process = self._start()
        assert process.stdin is not None
        request = {"source": source, "budget_s": self.budget_s, "candidates": [vars(c) for c in tried]}
        process.stdin.write(json.dumps(request).encode() + b"\n")
        process.stdin.flush()
        deadline = time.monotonic() + timeout_s
        attempts: list[Attempt] = []
        while True:
            answer = self._read(deadline)
            if answer is None:
                return self._lost(source, tried, attempts, timeout_s, began)
            if answer.get("done"):
                break
            attempts.append(Attempt.model_validate(answer["attempt"]))
        chosen = next((a for a in attempts if a.ok), None)
        if chosen is not None:
            return Derivation(sizes=chosen.sizes, attempts=attempts, seconds=time.monotonic() - began)
        last = attempts[-1]
        reason = (
            f"the reference is too slow: {last.reason} ({last.how})"
            if (last.forward_s or 0.0) > self.budget_s
            else f"the reference fails at every candidate; the largest ({last.how}): {last.reason}"
        )
        return Derivation(
            sizes=None, reason=reason + _sequence_hint(source), attempts=attempts, seconds=time.monotonic() - began
        )

    def _lost(
        self, source: str, tried: list[Any], attempts: list[Attempt], timeout_s: float, began: float
    ) -> Derivation:
        process = self._process
        died = process is not None and process.poll() is not None
        code = process.returncode if process is not None else None
        detail = self._stderr_tail().splitlines()[-1:] if died else []
        if process is not None and not died:
            os.killpg(process.pid, 9)
            process.wait()
        self.close()
        at = tried[len(attempts)].how if len(attempts) < len(tried) else "the last candidate"
        reason = (
            f"the reference's process died (code {code}) at {at}{': ' + detail[0] if detail else ''}"
            if died
            else f"the reference took longer than {timeout_s:g} s at {at}"
        )
        return Derivation(
            sizes=None, reason=reason + _sequence_hint(source), attempts=attempts, seconds=time.monotonic() - began
        )


def _sequence_hint(source: str) -> str:
    fixed = sequence_sizes(source)
    if not fixed:
        return ""
    return (
        f"; its module-level {', '.join(fixed)} hold(s) a tuple or list of sizes, which SMALL_SIZES cannot "
        "replace: write them as separate numbers, or give small_sizes yourself"
    )


def derive_small_sizes(source: str, *, timeout_s: float = 60.0) -> Derivation:
    """`SizeProber.derive` in a probe process of its own, closed after."""
    with SizeProber() as prober:
        return prober.derive(source, timeout_s=timeout_s)
