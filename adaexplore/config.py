"""Settings: one typed object built from per-part models, a TOML file and the environment."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adaexplore.errors import ConfigError

__all__ = ["ExecutorConfig", "Settings", "default_home"]

BackendChoice = Literal["auto", "cuda", "compile", "interpret"]
ModeName = Literal["strict", "kernelbench", "paper"]


def default_home() -> Path:
    """`$ADAEXPLORE_HOME`, or `~/.adaexplore`."""
    return Path(os.environ.get("ADAEXPLORE_HOME") or Path.home() / ".adaexplore")


class ExecutorConfig(BaseModel):
    """How candidates are evaluated: protocol, isolation limits and timing effort."""

    model_config = ConfigDict(extra="forbid")

    mode: ModeName = "strict"
    backend: BackendChoice = "auto"
    # The static rules that keep a candidate away from the measuring code (imports, introspection,
    # monkey-patching). Turn off only for trusted code: without them a candidate can forge its result.
    enforce_policy: bool = True
    # Larger sources are refused before any process starts; real kernels are a few kB.
    max_source_bytes: int = Field(default=1_000_000, gt=0)
    # Import, construction and Triton compilation of a candidate (autotuned kernels compile many configs).
    load_timeout_s: float = Field(default=180.0, gt=0)
    # One forward call. A hung kernel is killed after this long.
    trial_timeout_s: float = Field(default=60.0, gt=0)
    # The whole timing phase of one candidate.
    timing_timeout_s: float = Field(default=180.0, gt=0)
    # Pre-started candidate workers kept ready per backend (per GPU for `cuda`). Starting one costs seconds of
    # CPU (importing torch and triton, making the CUDA context), so more cores keep more ready.
    warm_workers: int = Field(default_factory=lambda: min(4, max(1, (os.cpu_count() or 1) // 4)), ge=0, le=16)
    # Evaluations that may hold a candidate worker at once, per backend (per GPU for `cuda`).
    max_concurrent: int = Field(default=4, ge=1, le=64)
    # Shared memory per block on the compile target (H100/H200: 227 KiB); `compile` rejects more.
    shared_memory_limit: int = Field(default=232448, gt=0)
    # Timing effort of the `strict` protocol: total measured time per model, and its bounds in repetitions.
    timing_budget_ms: float = Field(default=400.0, gt=0)
    min_reps: int = Field(default=30, ge=5)
    max_reps: int = Field(default=2000, ge=5)
    # Outputs of this many timed calls are checked again against the reference (`strict`).
    recheck_reps: int = Field(default=3, ge=0, le=16)
    # Time candidates on the CPU too (interpret backend). The numbers say nothing about a GPU; this exists
    # to exercise the timing pipeline where no GPU is present.
    time_on_cpu: bool = False
    # Captured stdout/stderr of a candidate kept in a result (head and tail).
    output_limit_bytes: int = Field(default=16384, ge=256)


class Settings(BaseModel):
    """All settings of adaexplore."""

    model_config = ConfigDict(extra="forbid")

    home: Path = Field(default_factory=default_home)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @classmethod
    def load(cls, path: Path | None = None) -> Settings:
        """Settings from a TOML file (when given) over the defaults.

        Raises:
            ConfigError: the file is missing, is not TOML, or holds an unknown or invalid setting.
        """
        if path is None:
            return cls()
        if not path.is_file():
            raise ConfigError(f"settings file {path} does not exist")
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"settings file {path} is not valid TOML: {exc}") from exc
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"settings file {path}: {exc}") from exc
