"""Shared fixtures: one evaluator per test session (its workers are real processes), on anyio."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import torch

from adaexplore.config import ExecutorConfig, Settings
from adaexplore.executor import Evaluator

# Settings that exist for tests only (executor.disable_guards_for_tests) are accepted where this is set.
os.environ["ADAEXPLORE_TESTING"] = "1"

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
# With a GPU the evaluator's automatic backend is cuda; without one, compile + interpret.
ON_GPU = torch.cuda.is_available()


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("adaexplore-home")


def fast_settings(home: Path, **executor: object) -> Settings:
    """Settings for tests: short timeouts so a hanging kernel costs seconds, not a minute."""
    defaults: dict[str, object] = {"trial_timeout_s": 10.0, "load_timeout_s": 120.0, "timing_timeout_s": 60.0}
    defaults.update(executor)
    return Settings(home=home, executor=ExecutorConfig(**defaults))  # type: ignore[arg-type]


@pytest.fixture(scope="session")
async def evaluator(home: Path) -> AsyncIterator[Evaluator]:
    async with Evaluator(fast_settings(home)) as ev:
        yield ev
