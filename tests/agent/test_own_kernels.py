"""A search on one's own task without an API key (`explore TASK --kernels DIR`, the offline generator serving one's
own kernels), a first Ctrl-C during a step that hangs (the run stops at once, with its summary and the command
that resumes it), and that command, typed as printed from anywhere, resuming the run with the same folder."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adaexplore.store import open_store
from tests.agent.scripted import cli_env
from tests.conftest import EXAMPLES

HANGS = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        while x.numel() > 0:
            pass
        return x
"""


def _in_flight(db: Path) -> bool:
    """Whether a step of the run is being evaluated (its claim is held)."""
    if not db.exists():
        return False
    store = open_store(f"sqlite:///{db}")
    try:
        return store._db.execute("SELECT count(*) FROM claims").fetchone()[0] > 0
    finally:
        store.close()


@pytest.mark.slow
def test_a_first_ctrl_c_stops_a_hanging_step_at_once_and_the_printed_resume_runs(tmp_path: Path) -> None:
    home, work, elsewhere = tmp_path / "home", tmp_path / "work", tmp_path / "elsewhere"
    (work / "mine").mkdir(parents=True)
    elsewhere.mkdir()
    (work / "my_softmax.py").write_text((EXAMPLES / "tasks" / "row_softmax.py").read_text())
    (work / "mine" / "spins.py").write_text(HANGS)
    env = cli_env(home, key=None)
    command = [sys.executable, "-m", "adaexplore", "explore", "my_softmax.py", "--kernels", "mine", "--steps", "1"]
    process = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        while not _in_flight(home / "adaexplore.db") and process.poll() is None:
            assert time.monotonic() < deadline, "the step did not start"
            time.sleep(0.2)
        time.sleep(1.0)  # the candidate is in its loop
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 4, out + err[-3000:]
    assert took <= 2.0, f"the first Ctrl-C took {took:.1f} s to stop the run"
    assert "replay: the offline generator" in out and str((work / "mine").resolve()) in out
    assert re.search(r"my_softmax\s+run-\S+\s+stopped\s+0/1", out), out  # the summary
    resume = re.search(r"Resume with: (adaexplore explore --resume run-\S+)", out)
    assert resume is not None, out

    # the folder now holds a kernel that works; the resume, typed elsewhere, serves it
    (work / "mine" / "spins.py").unlink()
    (work / "mine" / "correct.py").write_text((EXAMPLES / "kernels" / "row_softmax" / "correct.py").read_text())
    words = shlex.split(resume.group(1))
    resumed = subprocess.run(
        [sys.executable, "-m", *words], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr[-3000:]
    assert re.search(r"my_softmax\s+run-\S+\s+finished\s+1/1\s+1/1", resumed.stdout), resumed.stdout
