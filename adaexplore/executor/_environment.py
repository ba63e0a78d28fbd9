"""What machine the evaluator runs on: versions and GPUs, read once from a subprocess."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import anyio
from pydantic import BaseModel, ConfigDict

from adaexplore import __version__
from adaexplore.errors import EvaluatorError

__all__ = ["Environment", "probe_environment"]

# Bump when a change to timing or comparison makes cached reference timings (and stored verdicts, which
# identical code reuses) incomparable. 2: strict mode draws inputs on the GPU and warms up for 100 ms.
PROTOCOL_VERSION = 2


class Environment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    python: str
    torch: str
    triton: str
    numpy: str
    cuda: str | None
    driver: str | None
    gpus: list[str]

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)

    def fingerprint(self, device: int | None = None) -> str:
        """A short hash of what decides reference numbers: GPU, driver, CUDA, torch, triton, protocol."""
        gpu = self.gpus[device] if device is not None and self.gpus else "cpu"
        parts = [
            gpu,
            self.driver,
            self.cuda,
            self.torch,
            self.triton,
            self.python.rsplit(".", 1)[0],
            str(PROTOCOL_VERSION),
        ]
        return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:16]


async def probe_environment(env: dict[str, str]) -> Environment:
    """Run the probe in a subprocess (the evaluator's own process never imports torch).

    Raises:
        EvaluatorError: torch or triton cannot be imported.
    """
    result = await anyio.run_process(
        [sys.executable, "-m", "adaexplore.executor.worker._probe"], env=env, check=False, stderr=subprocess.PIPE
    )
    if result.returncode != 0:
        raise EvaluatorError(
            "cannot import torch and triton in a worker: " + result.stderr.decode(errors="replace")[-2000:]
        )
    lines = result.stdout.decode().strip().splitlines()
    return Environment.model_validate(json.loads(lines[-1]))


def adaexplore_version() -> str:
    return __version__
