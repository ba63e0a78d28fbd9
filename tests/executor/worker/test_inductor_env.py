"""torch.compile in the judge's sandbox: an nvcc on PATH that cannot be run must not fail inductor."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch._dynamo import debug_utils
from torch._dynamo.repro import after_aot

from adaexplore.executor.worker._inductor_env import tolerate_unrunnable_nvcc


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
