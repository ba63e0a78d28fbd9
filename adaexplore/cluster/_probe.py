"""A look at a Dask cluster without sending it any work: does its scheduler answer, and how many of its workers
evaluate for adaexplore (`adaexplore doctor`)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import anyio

from adaexplore.cluster._common import GPU, RESOURCE, require_distributed
from adaexplore.errors import ConfigError

__all__ = ["ClusterProbe", "bad_address", "probe_cluster", "scheduler_unanswered"]


@dataclass(frozen=True)
class ClusterProbe:
    """What a scheduler said of its workers."""

    address: str
    workers: int  # every worker it has
    adaexplore_workers: int  # those started with adaexplore's plugin, which alone are sent evaluations
    gpus: int  # the GPUs those declare


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip() or type(exc).__name__).splitlines()[0]


def bad_address(address: str, exc: BaseException) -> ConfigError:
    """The error for an address Dask cannot parse (a ValueError of its own)."""
    return ConfigError(f"{address!r} is not a Dask scheduler address ({_first_line(exc)}); write it as tcp://HOST:8786")


def scheduler_unanswered(address: str, timeout: float, exc: BaseException) -> ConfigError:
    """The error for a scheduler that did not answer: the address is a setting of the user's, as a database URL
    is, so this is a usage error (exit code 2), not a fault of adaexplore's."""
    text = _first_line(exc)
    return ConfigError(
        f"the Dask cluster at {address} did not answer within {timeout:g} s (executor.cluster_timeout_s): {text}; "
        "check the address given by --cluster, ADAEXPLORE_CLUSTER or executor.cluster, and that its scheduler "
        "runs (`dask scheduler`)"
    )


async def probe_cluster(address: str, timeout: float) -> ClusterProbe:
    """Connect to the scheduler at `address` and count its workers, sending no task.

    Raises:
        ConfigError: Dask distributed is not installed, or the scheduler did not answer within `timeout`.
    """
    distributed = require_distributed()
    try:
        if not address.startswith("inproc://"):  # an in-process cluster's address has no host or port
            distributed.comm.get_address_host_port(address)  # a malformed one, before a client is made of it
        with anyio.fail_after(timeout + 5):
            client = await distributed.Client(address, asynchronous=True, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise scheduler_unanswered(address, timeout, exc) from None
    except ValueError as exc:
        raise bad_address(address, exc) from None
    try:
        with anyio.fail_after(timeout):
            identity = await client.scheduler.identity(n_workers=-1)
    except (OSError, TimeoutError) as exc:
        raise scheduler_unanswered(address, timeout, exc) from None
    finally:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await client.close(timeout=5)
    workers = dict(identity.get("workers", {}))
    ours = [w.get("resources", {}) for w in workers.values() if w.get("resources", {}).get(RESOURCE, 0) >= 1]
    return ClusterProbe(
        address=address,
        workers=len(workers),
        adaexplore_workers=len(ours),
        gpus=int(sum(resources.get(GPU, 0) for resources in ours)),
    )
