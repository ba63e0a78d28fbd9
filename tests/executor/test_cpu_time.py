"""The CPU time of a worker's processes, read from the system as the evaluator charges a candidate's budget with
it: its children's count too, a sleeping process's does not grow."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from adaexplore.executor.host._watch import process_tree_cpu_seconds, process_tree_resident_bytes

SPIN = "import time\nend = time.time() + 30\nwhile time.time() < end: pass"
# a parent that sleeps while its child spins: the child's CPU time is the tree's
SPIN_IN_A_CHILD = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {SPIN!r}])\ntime.sleep(30)\n"


def test_a_childs_cpu_time_counts_for_the_tree_and_sleeping_costs_nothing() -> None:
    spinning = subprocess.Popen([sys.executable, "-c", SPIN_IN_A_CHILD], start_new_session=True)
    sleeping = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        time.sleep(0.5)  # both have started; the interpreters' start is behind them
        spin0, sleep0 = process_tree_cpu_seconds(spinning.pid), process_tree_cpu_seconds(sleeping.pid)
        assert spin0 is not None and sleep0 is not None
        time.sleep(1.5)
        spun, slept = process_tree_cpu_seconds(spinning.pid), process_tree_cpu_seconds(sleeping.pid)
        assert spun is not None and slept is not None
        assert spun - spin0 > 0.5, (spin0, spun)  # the child's spinning, seen through its sleeping parent
        assert slept - sleep0 < 0.1
    finally:
        for process in (spinning, sleeping):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process_tree_cpu_seconds(spinning.pid) is None  # gone: nothing to read


# a parent whose child maps 256 MiB of shared anonymous memory and touches every page: the kind of mapping the CUDA
# driver makes for pinned pages, which VmData (and so the worker's RLIMIT_DATA on a GPU) does not count
HOLD_SHARED_IN_A_CHILD = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', "
    '\'import mmap, time\\nm = mmap.mmap(-1, 256 << 20)\\nm.write(b"x" * (256 << 20))\\nprint("held", flush=True)\\n'
    "time.sleep(30)'])\n"
    "time.sleep(30)\n"
)


def test_shared_pages_a_child_holds_count_for_the_tree() -> None:
    holding = subprocess.Popen(
        [sys.executable, "-c", HOLD_SHARED_IN_A_CHILD], start_new_session=True, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holding.stdout is not None and holding.stdout.readline().strip() == "held"
        # the parent maps nothing: what it holds is its child's, seen through it
        held = process_tree_resident_bytes(holding.pid)
        assert held is not None and held >= 256 << 20, held
    finally:
        os.killpg(holding.pid, signal.SIGKILL)
        holding.wait()
    assert process_tree_resident_bytes(holding.pid) is None
