"""What this machine gives the evaluator: the versions and GPUs a fresh worker finds, and the sandbox that would
confine candidates (`adaexplore doctor`, the headless loop's note on timing, a bench's provenance)."""

from __future__ import annotations

import os

from adaexplore.cluster import ClusterProbe
from adaexplore.cluster import probe_cluster as _probe_cluster
from adaexplore.config import Settings
from adaexplore.executor import Environment, SandboxPlan, detect_sandbox, probe_environment
from adaexplore.tools._service import Services

__all__ = [
    "ClusterProbe",
    "Environment",
    "SandboxPlan",
    "has_gpu",
    "machine",
    "probe_cluster",
    "probe_machine",
    "probe_sandbox",
]


def machine(svc: Services) -> Environment | None:
    """What the running evaluator found on this machine (versions, GPUs, driver); None for services opened to
    read."""
    return getattr(svc.evaluator, "environment", None)


def has_gpu(svc: Services) -> bool:
    """Whether the running evaluator found a GPU to time kernels on (False for services opened only to read)."""
    environment = machine(svc)
    return environment is not None and environment.has_gpu


async def probe_machine() -> Environment:
    """Ask a fresh process what it finds: torch, triton, numpy, the GPUs and the driver.

    Raises:
        EvaluatorError: torch or triton cannot be imported there.
    """
    return await probe_environment(dict(os.environ), quick=False)  # the doctor asks: really import them


async def probe_sandbox(settings: Settings) -> SandboxPlan:
    """The sandbox the settings ask for, as this machine can give it.

    Raises:
        ConfigError: the sandbox asked for is not available here, with what is missing.
    """
    return await detect_sandbox(settings)


async def probe_cluster(settings: Settings) -> ClusterProbe | None:
    """Whether the Dask scheduler of `executor.cluster` answers, within `executor.cluster_timeout_s`, and how
    many of its workers evaluate for adaexplore; nothing is sent to them. None when no cluster is set.

    Raises:
        ConfigError: Dask distributed is not installed, the address is malformed, or the scheduler did not
            answer in time.
    """
    address = settings.executor.cluster
    if address is None:
        return None
    return await _probe_cluster(address, settings.executor.cluster_timeout_s)
