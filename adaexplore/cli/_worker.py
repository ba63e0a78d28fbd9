"""`adaexplore worker`: how to start a Dask worker that evaluates for adaexplore, or start one."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from adaexplore.cli._options import EXIT_OK, POSITIVE_INT
from adaexplore.cluster import require_distributed, worker_command, worker_launch
from adaexplore.config import Settings
from adaexplore.errors import ConfigError

__all__ = ["add_worker_parser", "run_worker_command"]

_DESCRIPTION = """\
Print the command that starts a Dask worker with adaexplore's plugin on this host, or (--run) run it.

The plugin (`--preload adaexplore.cluster`) starts adaexplore's evaluator in the worker: it probes torch,
triton, the GPUs and the sandbox once, and the worker does not start where the evaluator could not. It
declares the resource `adaexplore` (one evaluation per worker thread), and `GPU=N` on a host with N GPUs
(CUDA_VISIBLE_DEVICES respected). A worker started without the plugin is sent no evaluation.

The search (`adaexplore --cluster ADDRESS explore ...`, `bench`, `serve`) keeps the store and every
decision; only evaluations travel, and candidates run in the evaluator's sandboxed processes on the worker.
"""


def add_worker_parser(commands: Any) -> None:
    worker = commands.add_parser(
        "worker",
        help="start a Dask worker that evaluates for adaexplore (or print the command that does)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    worker.add_argument(
        "address",
        nargs="?",
        help="the Dask scheduler, e.g. tcp://HOST:8786 (default: --cluster or $ADAEXPLORE_CLUSTER)",
    )
    worker.add_argument(
        "--nthreads",
        type=POSITIVE_INT,
        help="evaluations this worker runs at once (default: Dask's, one per core); on a GPU host the GPU "
        "resource bounds the cuda ones to one per GPU",
    )
    worker.add_argument("--run", action="store_true", help="start the worker here instead of printing the command")


def run_worker_command(args: argparse.Namespace, settings: Settings) -> int:
    address = args.address or settings.executor.cluster
    if address is None:
        raise ConfigError(
            "say which Dask scheduler the worker joins: `adaexplore worker tcp://HOST:8786` (start the scheduler "
            "with `dask scheduler`; it listens on port 8786)"
        )
    options: dict[str, Any] = {
        "gpus": args.gpus,
        "nthreads": args.nthreads,
        "settings_file": str(args.config.resolve()) if args.config is not None else None,
        "home": str(args.home.resolve()) if args.home is not None else None,
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    if args.run:
        require_distributed()  # said in the user's words, before the worker's own traceback could
        env, words = worker_launch(address, **options)
        print(f"adaexplore: starting `{worker_command(address, **options)}`", flush=True)
        # the same worker as `dask worker`, from this interpreter (whose environment has adaexplore)
        argv = [sys.executable, "-m", "distributed.cli.dask_worker", *words[2:]]
        os.execve(sys.executable, argv, os.environ | env)
    command = worker_command(address, **options)
    print(
        f"""Start one on each host that evaluates (with adaexplore[cluster] installed there, the same version):

  {command}

The scheduler, if it is not running yet, on a host every worker and this machine reach:

  dask scheduler            # listens on 8786, its dashboard on 8787

Then search from the machine that keeps the store:

  adaexplore --cluster {address} explore TASK.py

Network: the workers and the searching machine connect to the scheduler (8786; 8787 for the dashboard);
the scheduler and the searching machine connect to each worker on the port it listens on (random; fix it
with `--worker-port`, and `--nanny-port` for its nanny). Dask's traffic is neither encrypted nor
authenticated unless TLS is configured: keep these ports to the cluster's hosts.
The worker's own settings (sandbox, GPUs, memory) come from ADAEXPLORE_WORKER_CONFIG (a settings file) and
ADAEXPLORE_HOME; the timeouts and the protocol come with each evaluation from the searching machine."""
    )
    return EXIT_OK
