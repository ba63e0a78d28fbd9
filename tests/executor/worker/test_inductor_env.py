"""torch.compile in the judge's sandbox: an nvcc that cannot be run, and torch's own ptxas, must not fail inductor."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch._dynamo import debug_utils
from torch._dynamo.repro import after_aot

from adaexplore.executor.worker.confine._inductor_env import (
    compile_failure,
    pin_triton_ptxas,
    prepare_inductor,
    tolerate_unrunnable_nvcc,
)


def test_an_nvcc_that_cannot_be_run_becomes_a_note_in_inductors_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nvcc = tmp_path / "nvcc"
    nvcc.write_text("#!/bin/sh\necho never\n")
    nvcc.chmod(0o644)  # present, not executable: what the sandbox leaves of a CUDA toolkit's nvcc
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    original = debug_utils._cuda_system_info_comment
    monkeypatch.setattr(debug_utils, "_cuda_system_info_comment", original)
    monkeypatch.setattr(after_aot, "_cuda_system_info_comment", original)
    with pytest.raises(PermissionError):  # torch as installed: only a missing nvcc is handled
        after_aot._cuda_system_info_comment()
    tolerate_unrunnable_nvcc()
    tolerate_unrunnable_nvcc()  # a second call keeps one wrapper
    assert after_aot._cuda_system_info_comment is debug_utils._cuda_system_info_comment
    assert "nvcc could not be run here" in after_aot._cuda_system_info_comment()
    (tmp_path / "nvcc").unlink()  # and a missing nvcc is still torch's own case
    assert "nvcc not found" in after_aot._cuda_system_info_comment()


def test_inductor_keeps_the_ptxas_that_triton_resolved_and_the_sandbox_allows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torch._inductor.runtime import compile_tasks
    from triton import knobs

    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    allowed = knobs.nvidia.ptxas.path  # what the confinement lists among a worker's executables
    pin_triton_ptxas()
    assert os.environ["TRITON_PTXAS_PATH"] == allowed
    compile_tasks._set_triton_ptxas_path.__wrapped__()  # inductor's own switch to torch's ptxas
    assert os.environ["TRITON_PTXAS_PATH"] == allowed
    assert knobs.nvidia.ptxas.path == allowed
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/opt/chosen/ptxas")
    pin_triton_ptxas()  # a user's own choice stands
    assert os.environ["TRITON_PTXAS_PATH"] == "/opt/chosen/ptxas"


def test_a_compile_failure_is_one_line_without_inductors_debugging_advice() -> None:
    exc = RuntimeError(
        "PermissionError: [Errno 13] Permission denied: '/x/torch/bin/ptxas'\n\n"
        "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if ...)"
    )
    text = compile_failure(exc)
    assert text == (
        "torch.compile of the reference failed: RuntimeError: PermissionError: [Errno 13] Permission denied: "
        "'/x/torch/bin/ptxas'"
    )
    assert len(compile_failure(RuntimeError("x" * 5000))) < 700
    assert compile_failure(RuntimeError()) == "torch.compile of the reference failed: RuntimeError"
    nested = RuntimeError(
        "SubprocException: An exception occurred in a subprocess:\nName=triton_poi_fused_0\n"
        'Traceback (most recent call last):\n  File "x.py", line 1, in f\n    g()\nOSError: [Errno 1] refused\n'
    )
    assert compile_failure(nested).endswith(
        "RuntimeError: SubprocException: An exception occurred in a subprocess: OSError: [Errno 1] refused"
    )


def test_the_judge_compiles_in_its_own_process() -> None:
    import torch._inductor.config

    prepare_inductor()
    assert torch._inductor.config.compile_threads == 1
