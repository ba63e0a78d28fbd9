"""The candidate's worker and the judge's shared inputs: it holds one call's inputs at a time (a trial copies its
own as it begins, timing its own once the trials are done), and an out-of-memory error in that work of
adaexplore's own is adaexplore's failure, not the candidate's crash.

On a GPU the inputs lie in a device buffer the judge shares; here a CPU tensor stands for that buffer (a CPU
machine has no shared device memory), and the runner's channel is a list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from adaexplore.domain import Backend, Mode, Status
from adaexplore.executor.wire._protocol import Failed, Inputs, JobSpec, RunCandidate, SharedArg, SharedInputs
from adaexplore.executor.wire._protocol import TensorSlot as Slot
from adaexplore.executor.worker.candidate._candidate import CandidateRunner
from adaexplore.executor.worker.candidate._launches import LaunchTracker

TRIALS = 5
N = 1 << 16  # floats an input


class Buffer:
    """Stands for the judge's device buffer, mapped read-only: `view` as DeviceBuffer's, over host memory."""

    def __init__(self, nbytes: int) -> None:
        self.tensor = torch.arange(nbytes // 4, dtype=torch.float32).view(torch.uint8)
        self.nbytes = nbytes
        self.device = 0
        self.closed = False

    def view(self, offset: int, shape: list[int], dtype: torch.dtype) -> torch.Tensor:
        count = 1
        for n in shape:
            count *= n
        return self.tensor[offset : offset + count * dtype.itemsize].view(dtype).view(shape)

    def close(self) -> None:
        self.closed = True


class Channel:
    def __init__(self, *commands: Any) -> None:
        self.commands = list(commands)
        self.sent: list[Any] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)

    def receive(self) -> Any:
        return self.commands.pop(0) if self.commands else None


def layout() -> SharedInputs:
    row = [[SharedArg(tensor=Slot(offset=i * 4 * N, shape=[N], dtype="float32")), SharedArg(value=3)] for i in range(6)]
    return SharedInputs(nbytes=6 * 4 * N, trials=row[:TRIALS], timing=row[TRIALS])


def runner(channel: Channel, buffer: Buffer, monkeypatch: pytest.MonkeyPatch) -> CandidateRunner:
    made = CandidateRunner(channel, Backend.interpret, torch.device("cpu"), LaunchTracker(Backend.interpret))  # type: ignore[arg-type]
    monkeypatch.setattr(made, "_map", lambda nbytes, what, writable: buffer)
    return made


def test_the_worker_takes_the_trials_inputs_as_views_of_the_judges_buffer_and_copies_timings_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    buffer = Buffer(6 * 4 * N)
    made = runner(Channel(Inputs(shared=layout())), buffer, monkeypatch)
    made.shared = None
    trials = made._shared_inputs(None, list(range(TRIALS)), None, False)
    assert len(trials) == TRIALS and all(args[1] == 3 for args in trials)
    base = buffer.tensor.untyped_storage().data_ptr()
    for i, (tensor, _) in enumerate(trials):
        # no copy: the trial copies its own inputs as it begins, so one trial's are held at a time, never five
        assert tensor.untyped_storage().data_ptr() == base and tensor.data_ptr() == base + i * 4 * N
        assert torch.equal(tensor, torch.arange(i * N, (i + 1) * N, dtype=torch.float32))
    assert made.timing_base is None and made.shared is not None  # timing's are copied when timing begins
    timing = made.shared.timing()
    assert timing[0].untyped_storage().data_ptr() != base  # a copy of the worker's own
    assert torch.equal(timing[0], torch.arange(5 * N, 6 * N, dtype=torch.float32)) and timing[1] == 3


def test_running_out_of_memory_in_adaexplores_own_work_in_the_worker_is_infra_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    channel = Channel()
    made = runner(channel, Buffer(4), monkeypatch)

    def copying(*args: object) -> None:  # as copying a trial's inputs fails on a full GPU
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")

    monkeypatch.setattr(made, "_run", copying)
    job = JobSpec(job_id="j", task_path="t.py", exchange_dir=str(tmp_path), sizes="full", mode=Mode.strict, trials=5)
    made.run(RunCandidate(job=job, candidate_path="candidate.py"))  # before: the exception ended the process
    (failed,) = channel.sent
    assert isinstance(failed, Failed) and failed.status is Status.infra_error, failed
    assert "ran out of GPU memory in its own work" in failed.message and "not in the candidate's code" in failed.message
    assert "Tried to allocate 8.00 GiB" in failed.message
    assert failed.error is not None and failed.error.type == "OutOfMemoryError"  # the evaluator retries it alone
