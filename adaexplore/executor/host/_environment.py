"""What machine the evaluator runs on: versions and GPUs, read once from a subprocess (or, on a machine with no GPU
device at all, from the installed packages' metadata, without importing torch)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import anyio
from pydantic import BaseModel, ConfigDict

from adaexplore import __version__
from adaexplore.errors import ConfigError, EvaluatorError

__all__ = ["Environment", "check_gpus", "environment_without_gpus", "gpu_device_present", "probe_environment"]

# Bump when a change to timing or comparison makes cached reference timings (and stored verdicts, which
# identical code reuses) incomparable. 2: strict mode draws inputs on the GPU and warms up for 100 ms. 3: a CPU
# verdict is `ok` only where the forward writes every element of its outputs at the task's full sizes.
PROTOCOL_VERSION = 3


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


# Where a GPU's driver shows itself: NVIDIA's (CUDA) and AMD's (ROCm builds of torch answer torch.cuda too).
_GPU_DEVICE_FILES = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/kfd")


async def probe_environment(env: dict[str, str], *, quick: bool = True) -> Environment:
    """This machine's environment as workers started with `env` see it. With `quick`, on a machine that shows no
    GPU device at all, it is read from the packages' metadata (the same answer, without the 2-3 s of CPU a
    process importing torch costs); otherwise, or where the metadata cannot say, the probe runs in a subprocess
    (the evaluator's own process never imports torch).

    Raises:
        EvaluatorError: torch or triton cannot be imported.
    """
    if quick and (known := environment_without_gpus(env)) is not None:
        return known
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


def gpu_device_present() -> bool:
    """Whether this machine shows a GPU's device files (whether or not torch can use the GPU)."""
    return any(Path(path).exists() for path in _GPU_DEVICE_FILES)


def environment_without_gpus(env: dict[str, str]) -> Environment | None:
    """The environment of a machine with no GPU device, from the installed packages' metadata; None where a GPU
    device is present (only CUDA can name the GPUs) or where the workers (started with `env`) would import a
    package from another folder than the one its metadata is in."""
    if gpu_device_present():
        return None
    # where the workers look for a module: their PYTHONPATH, then this interpreter's own path (the same
    # interpreter, started with -P: no script folder); each package must come from the folder its metadata is in
    ours = {p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    search = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    search += [p for p in sys.path[1:] if p and p not in ours]
    versions: dict[str, str] = {}
    for name in ("torch", "triton", "numpy"):
        try:
            found = importlib.metadata.distribution(name)  # reads the installed metadata; imports nothing
        except importlib.metadata.PackageNotFoundError:
            return None
        versions[name] = found.version
        first = next((Path(folder) for folder in search if _holds(Path(folder), name)), None)
        if first is None or first.resolve() != Path(str(found.locate_file(""))).resolve():
            return None  # the workers would import another copy than the one the metadata describes
    try:
        facts = Path(str(importlib.metadata.distribution("torch").locate_file("torch/version.py"))).read_text(
            encoding="utf-8"
        )
    except OSError:
        return None
    # torch/version.py, as torch's build writes it: `__version__ = '2.13.0+cpu'`, `cuda: Optional[str] = None`
    version = re.search(r"^__version__\s*=\s*'([^']*)'\s*$", facts, re.MULTILINE)
    cuda = re.search(r"^cuda(?:\s*:[^=]*)?\s*=\s*(None|'[^']*')\s*$", facts, re.MULTILINE)
    if version is None or version.group(1) != versions["torch"] or cuda is None:
        return None
    return Environment(
        python=platform.python_version(),
        torch=versions["torch"],
        triton=versions["triton"],
        numpy=versions["numpy"],
        cuda=None if cuda.group(1) == "None" else cuda.group(1).strip("'"),
        driver=None,
        gpus=[],
    )


def _holds(folder: Path, name: str) -> bool:
    """Whether importing `name` from `folder` would find a module there."""
    return (folder / name).exists() or (folder / f"{name}.py").exists()


def check_gpus(chosen: list[int] | None, environment: Environment) -> None:
    """Raises: ConfigError: `executor.gpus` (`chosen`) names a GPU this machine does not show."""
    visible = len(environment.gpus)
    if chosen is None or all(g < visible for g in chosen):
        return
    where = os.environ.get("CUDA_VISIBLE_DEVICES")
    through = f" (CUDA_VISIBLE_DEVICES={where})" if where is not None else ""
    if not visible:
        raise ConfigError(
            f"--gpus / executor.gpus names GPU {max(chosen)}, but this machine shows no GPU{through}; drop it to "
            "check kernels on the CPU (compile and interpret backends, untimed)"
        )
    shown = f"GPUs 0-{visible - 1}" if visible > 1 else "GPU 0"
    raise ConfigError(
        f"--gpus / executor.gpus names GPU {max(chosen)}, but this machine shows {shown}{through}; "
        "name GPUs by their index among the visible ones"
    )
