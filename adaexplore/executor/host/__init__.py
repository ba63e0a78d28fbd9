"""This machine's side of a worker: starting it in its sandbox, talking to it, keeping a pool of them, and what
the machine offers (its GPUs, its sandbox, a lock per GPU for quiet timings).

It never imports torch or triton and knows no stage of an evaluation; it speaks to workers through the wire
(`executor.wire`) and starts them by module name (`python -m adaexplore.executor.worker`), never by import.

- `_process`: one worker process, its output, its death and its namespace;
- `_reaper`: the launcher each worker starts under, which ends the worker's tree when the evaluator dies first;
- `_spawn`: the channel to a worker and the spawner that starts one (a test's scripted spawner stands in);
- `_pool`: warm workers per backend and GPU, the judge's client, and the cores each may use;
- `_sandbox`, `_worker_user`: the sandbox chosen once per evaluator, and the user its workers run as;
- `_environment`, `_device_lock`, `_cgroup`: this machine's software and GPUs, the lock that keeps one timing on
  a GPU at a time, and the memory cgroup's record of out-of-memory kills.
"""

from adaexplore.executor.host._device_lock import DeviceLock
from adaexplore.executor.host._environment import Environment, probe_environment
from adaexplore.executor.host._pool import CorePlan, JudgeClient, JudgeLost, WorkerPool
from adaexplore.executor.host._process import WorkerDied, WorkerProcess, WorkerTimeout
from adaexplore.executor.host._sandbox import SandboxPlan, detect_sandbox
from adaexplore.executor.host._spawn import ProcessSpawner, SpawnRequest, WorkerChannel
from adaexplore.executor.host._watch import OutputCapture

__all__ = [
    "CorePlan",
    "DeviceLock",
    "Environment",
    "JudgeClient",
    "JudgeLost",
    "OutputCapture",
    "ProcessSpawner",
    "SandboxPlan",
    "SpawnRequest",
    "WorkerChannel",
    "WorkerDied",
    "WorkerPool",
    "WorkerProcess",
    "WorkerTimeout",
    "detect_sandbox",
    "probe_environment",
]
