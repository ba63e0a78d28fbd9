"""What the client side and the workers of a Dask cluster share: the names they agree on, the request an
evaluation travels as, and the command that starts a proper worker."""

from __future__ import annotations

import shlex
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ConfigDict

from adaexplore.config import ExecutorConfig
from adaexplore.errors import ConfigError
from adaexplore.executor import EvaluationOptions, Task

__all__ = [
    "GPU",
    "PLUGIN",
    "RESOURCE",
    "Request",
    "protocol_of",
    "require_distributed",
    "worker_command",
    "worker_launch",
]

# The worker plugin's name, and the resource it declares: every adaexplore task requires one unit of it, so
# a worker started without the plugin (which lacks the resource) is never sent one.
PLUGIN = "adaexplore"
RESOURCE = "adaexplore"
# The resource of a worker with GPUs, one unit per GPU its evaluator uses; an evaluation on `cuda` takes one.
GPU = "GPU"

# The executor settings that decide a verdict (how long a phase may take, what the policy enforces, how much
# is timed), sent with each evaluation so that the client's settings judge its kernels wherever they run. The
# others describe the worker's machine (its sandbox, GPUs, memory, pools) and are the worker's own.
_PROTOCOL = (
    "enforce_policy",
    "disable_guards_for_tests",
    "max_source_bytes",
    "load_timeout_s",
    "trial_timeout_s",
    "timing_timeout_s",
    "shared_memory_limit",
    "timing_budget_ms",
    "min_reps",
    "max_reps",
    "recheck_reps",
    "time_on_cpu",
    "output_limit_bytes",
)


def protocol_of(config: ExecutorConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in _PROTOCOL}


class Request(BaseModel):
    """One evaluation (or, with `check`, one task check), as a Dask task carries it to a worker."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: Task
    code: str = ""
    check: bool = False
    # the evaluation's options, with its mode and backend chosen by the client (a backend for the resources)
    options: EvaluationOptions
    protocol: dict[str, Any]
    # where the worker reports progress: a topic of the client's, and this evaluation's id in it
    progress_topic: str | None = None
    progress_id: str = ""


def require_distributed() -> ModuleType:
    """`distributed`, imported where it is needed only.

    Raises:
        ConfigError: it is not installed, with the command that installs it.
    """
    try:
        import distributed
    except ImportError:
        raise ConfigError(
            "evaluating on a Dask cluster needs Dask distributed, which is not installed; install it with "
            "`pip install 'adaexplore[cluster]'` (on this machine and on every worker)"
        ) from None
    return distributed


def worker_launch(
    address: str,
    *,
    gpus: list[int] | None = None,
    nthreads: int | None = None,
    settings_file: str | None = None,
    home: str | None = None,
    visible: str | None = None,
) -> tuple[dict[str, str], list[str]]:
    """What starts a Dask worker with adaexplore's plugin for `address`: the environment variables to set,
    and the command's words. `gpus` are indices among the visible GPUs (`visible`: this machine's
    CUDA_VISIBLE_DEVICES, if set), said to the worker as its own CUDA_VISIBLE_DEVICES.

    Raises:
        ConfigError: `gpus` names a GPU that CUDA_VISIBLE_DEVICES does not show.
    """
    env: dict[str, str] = {}
    if gpus is not None:
        shown = [part.strip() for part in visible.split(",")] if visible else None
        if shown is not None and max(gpus) >= len(shown):
            raise ConfigError(
                f"--gpus names GPU {max(gpus)}, but CUDA_VISIBLE_DEVICES={visible} shows {len(shown)}; name GPUs by "
                "their index among the visible ones"
            )
        env["CUDA_VISIBLE_DEVICES"] = ",".join(shown[g] if shown else str(g) for g in gpus)
    if home is not None:
        env["ADAEXPLORE_HOME"] = home
    if settings_file is not None:
        env["ADAEXPLORE_WORKER_CONFIG"] = settings_file
    words = ["dask", "worker", address, "--preload", "adaexplore.cluster"]
    if nthreads is not None:
        words += ["--nthreads", str(nthreads)]
    return env, words


def worker_command(address: str, **options: Any) -> str:
    """`worker_launch` as one shell command line."""
    env, words = worker_launch(address, **options)
    return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), *map(shlex.quote, words)])
