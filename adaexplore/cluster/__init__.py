"""Evaluations on a Dask cluster: many hosts, each with adaexplore's evaluator, one process keeping the store.

On each host: `dask worker tcp://SCHEDULER:8786 --preload adaexplore.cluster` (this module is the preload: its
`dask_setup` registers `EvaluatorPlugin`). The process that searches is given `--cluster tcp://SCHEDULER:8786`
(or $ADAEXPLORE_CLUSTER, or `executor.cluster`) and sends each evaluation there as a Dask task.

Dask distributed is an optional dependency (`pip install 'adaexplore[cluster]'`), imported only when used.
"""

from __future__ import annotations

from typing import Any

from adaexplore.cluster._client import ClusterEvaluator, open_evaluator
from adaexplore.cluster._common import GPU, PLUGIN, RESOURCE, require_distributed, worker_command, worker_launch
from adaexplore.cluster._probe import ClusterProbe, probe_cluster
from adaexplore.errors import ConfigError

__all__ = [
    "GPU",
    "PLUGIN",
    "RESOURCE",
    "ClusterEvaluator",
    "ClusterProbe",
    "dask_setup",
    "open_evaluator",
    "probe_cluster",
    "require_distributed",
    "worker_command",
    "worker_launch",
]


async def dask_setup(worker: Any) -> None:
    """Dask's preload hook: start adaexplore's evaluator on this worker before it joins the cluster. A worker
    whose evaluator cannot start (no sandbox, torch missing) does not start either, and says why.

    Raises:
        ConfigError: this module was given as the scheduler's or a nanny's preload, not a worker's.
    """
    distributed = require_distributed()
    if not isinstance(worker, distributed.Worker):
        raise ConfigError(
            f"adaexplore.cluster is a worker's preload, not a {type(worker).__name__}'s: start workers with "
            "`dask worker ADDRESS --preload adaexplore.cluster`, and the scheduler without it"
        )
    from adaexplore.cluster._plugin import EvaluatorPlugin

    await worker.plugin_add(EvaluatorPlugin(), name=PLUGIN, catch_errors=False)
