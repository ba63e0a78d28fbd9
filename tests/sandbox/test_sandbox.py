"""The sandbox battery: with the policy and the runtime guard off, every escape route fails, and the test checks
on the machine that its effect did not happen (no secret read, no file written, no process left, no connection
made, no signal delivered). With the policy on, the same candidates are refused before they run.

Each sandbox kind this machine offers is tried (bubblewrap; Landlock with seccomp); a kind it lacks is
skipped with the reason. On a GPU machine the candidates run on the cuda backend, inside the same walls.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from adaexplore.errors import ConfigError
from adaexplore.executor import Evaluator, Status, load_task
from adaexplore.executor.host._sandbox import _bwrap_path, detect_sandbox
from tests.conftest import ON_GPU, ROOT, fast_settings
from tests.sandbox.attacks import ATTACKS, candidate

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TASK = load_task(ROOT / "tests" / "executor" / "data" / "scale_relu_task.py")
CACHE_QUOTA = 64 << 20
MEMORY_CAP = 6 << 30


@dataclass
class Machine:
    """What the attacks aim at, set up on this machine for real."""

    token: str
    places: Path
    home: Path
    values: dict[str, object]
    victim: subprocess.Popen[bytes]
    connections: list[str] = field(default_factory=list)
    signals: list[int] = field(default_factory=list)
    listeners: list[socket.socket] = field(default_factory=list)


def _accept(listener: socket.socket, seen: list[str], what: str) -> None:
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        seen.append(what)
        connection.close()


@pytest.fixture(scope="module")
def machine() -> Iterator[Machine]:
    token = "adaexplore-secret-" + secrets.token_hex(12)
    # outside the temporary directory (which every sandbox replaces anyway), where a user's files are
    places = Path.home() / ".cache" / f"adaexplore-sandbox-test-{secrets.token_hex(4)}"
    home = places / "home"
    (home / "cache").mkdir(parents=True)
    for path in (home / "adaexplore.db", home / "cache" / "secret.json", places / "secret.txt"):
        path.write_text(token)
    home_file = Path.home() / f".adaexplore-sandbox-secret-{secrets.token_hex(4)}"
    home_file.write_text(token)
    # beside the checkout, where no list of private places looks (a sibling project's keys, say)
    beside_file = ROOT.parent / f".adaexplore-sandbox-secret-{secrets.token_hex(4)}"
    beside_file.write_text(token)
    (places / "cwd").mkdir()
    (places / "cwd" / "secret.txt").write_text(token)
    # a process of this user with the secret in its environment, on its stack and in an open file
    victim = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; f = open(sys.argv[1]); time.sleep(600)", str(places / "secret.txt")],
        env={**os.environ, "VICTIM_VALUE": token},
    )
    tcp, udp = socket.create_server(("127.0.0.1", 0)), socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(places / "sock"))
    unix.listen()
    abstract_name = f"adaexplore-test-{secrets.token_hex(4)}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + abstract_name)
    abstract.listen()
    values = {
        "victim_pid": victim.pid,
        "evaluator_pid": os.getpid(),
        "store_file": home / "adaexplore.db",
        "cache_file": home / "cache" / "secret.json",
        "home_file": home_file,
        "cwd_file": places / "cwd" / "secret.txt",
        "outside_file": places / "escaped.txt",
        "host_tmp_file": Path("/tmp") / f"adaexplore-escaped-{secrets.token_hex(4)}",
        "tcp_port": tcp.getsockname()[1],
        "udp_port": udp.getsockname()[1],
        "unix_path": places / "sock",
        "abstract_name": abstract_name,
        "marker": f"adxesc{secrets.token_hex(3)}",
        "allocation": MEMORY_CAP + (1 << 30),
        "cache_files": 3 * CACHE_QUOTA >> 20,
        "beside_file": beside_file,
        "host_paths": [str(ROOT), str(home), str(places)],
    }
    found = Machine(token=token, places=places, home=home, values=values, victim=victim)
    found.listeners = [tcp, unix, abstract, udp]
    for listener, what in ((tcp, "tcp"), (unix, "unix"), (abstract, "abstract")):
        threading.Thread(target=_accept, args=(listener, found.connections, what), daemon=True).start()
    # a credential under a name no filter of names knows, in the evaluator's environment
    os.environ["ORDERS_DSN"] = f"postgresql://orders:{token}@db.internal/orders"
    previous = signal.signal(signal.SIGUSR1, lambda number, frame: found.signals.append(number))
    cwd = os.getcwd()
    os.chdir(places / "cwd")  # the directory the evaluator is started from is hidden too
    try:
        yield found
    finally:
        os.chdir(cwd)
        os.environ.pop("ORDERS_DSN", None)
        signal.signal(signal.SIGUSR1, previous)
        victim.kill()
        victim.wait()
        for listener in found.listeners:
            listener.close()
        shutil.rmtree(places, ignore_errors=True)
        home_file.unlink(missing_ok=True)
        beside_file.unlink(missing_ok=True)
        Path(str(values["host_tmp_file"])).unlink(missing_ok=True)


@pytest.fixture(scope="module", params=["bwrap", "landlock"])
async def walled(request: pytest.FixtureRequest, machine: Machine) -> AsyncIterator[Evaluator]:
    settings = fast_settings(
        machine.home,
        sandbox=request.param,
        disable_guards_for_tests=True,
        worker_cache_bytes=CACHE_QUOTA,
        worker_disk_bytes=CACHE_QUOTA,
        worker_memory_bytes=MEMORY_CAP,
        warm_workers=1,
    )
    try:
        async with Evaluator(settings) as evaluator:
            yield evaluator
    except ConfigError as exc:
        pytest.skip(f"no {request.param} sandbox on this machine: {exc}")


def _processes_named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == name:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _effects(machine: Machine, name: str) -> list[str]:
    """What the attack changed on this machine; empty when the sandbox held."""
    seen = []
    if machine.connections:
        seen.append(f"connections accepted: {machine.connections}")
    try:
        datagram = machine.listeners[3].recv(64)
        seen.append(f"a datagram arrived: {datagram!r}")
    except BlockingIOError:
        pass
    if machine.signals:
        seen.append(f"the evaluator received signals {machine.signals}")
    if machine.victim.poll() is not None:
        seen.append("the other process was killed")
    for key in ("outside_file", "host_tmp_file"):
        if Path(str(machine.values[key])).exists():
            seen.append(f"{machine.values[key]} was written")
    deadline = time.monotonic() + 5
    while (left := _processes_named(str(machine.values["marker"]))) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        seen.append(f"processes outlived the worker: {left}")
    return seen


# attack -> statuses it may end with (each refusal raises in the constructor: a runtime error), and words
# the message holds; None: the attack may pass unnoticed inside the walls as long as nothing happened outside
EXPECTED: dict[str, tuple[tuple[Status, ...], tuple[str, ...]] | None] = {
    name: ((Status.runtime_error,), ()) for name in ATTACKS
}
EXPECTED.update(
    {
        # a private /tmp inside bubblewrap takes the file; Landlock refuses it
        "write_host_tmp": None,
        # a fork is allowed; what matters is that nothing of it is left once the worker is gone
        "fork_and_outlive": None,
        # 100 MB of output: the kernel is fine, and only the head and tail of what it wrote are kept
        "flood_the_output": ((Status.ok,), ()),
        "allocate_past_the_cap": ((Status.runtime_error,), ("MemoryError",)),
        # on a GPU the pinning fails at the cap: with torch 2.11 on the H200 the worker died by SIGSEGV there, inside
        # torch's allocation of registered memory, rather than raising; elsewhere there is nothing to pin with
        "pin_host_memory_past_the_cap": (
            (Status.runtime_error, Status.crashed),
            ("memory", "CUDA", "accelerator", "SIGSEGV"),
        ),
        "fill_the_triton_cache": ((Status.runtime_error,), ("No space left", "MiB to its directory")),
        # its environment holds no credential of the evaluator's; reading it is no escape
        "environ_credential": ((Status.ok,), ()),
        # Landlock keeps the mount table unreadable (this machine's kernel has it)
        "read_the_mount_table": ((Status.runtime_error,), ("Permission denied",)),
        # a root evaluator's worker under bubblewrap is refused (see the test below); elsewhere it is this
        # process's user, which the sandbox walls in whoever it is
        "become_root": None,
        # the candidate's own doing, not a kill from outside: no retry, no infra_error
        "kill_itself": ((Status.crashed,), ("a signal adaexplore did not send",)),
    }
)


@pytest.mark.parametrize("name", sorted(ATTACKS))
async def test_the_sandbox_holds_without_the_policy(walled: Evaluator, machine: Machine, name: str) -> None:
    result = await walled.evaluate(TASK, candidate(name, **machine.values))
    told = f"{result.status.value}: {result.message}\n{result.output}"
    assert machine.token not in told + str(result.error), f"the secret leaked:\n{told}"
    assert "42xyzzy" not in result.output, f"a program ran:\n{told}"
    assert not _effects(machine, name), told
    expected = EXPECTED[name]
    if expected is not None:
        statuses, words = expected
        assert result.status in statuses, told
        assert not words or any(w in result.message for w in words), told
    assert result.provenance.sandbox == ("bwrap" if walled.config.sandbox == "bwrap" else "landlock+seccomp")
    assert len(result.output) <= 4 * walled.config.output_limit_bytes


@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU: the driver's own page-locked memory")
async def test_pages_the_driver_pins_count_against_the_cap(walled: Evaluator, machine: Machine) -> None:
    # no rlimit of the worker counts them (benchmarks/pinned_probe.py); the evaluator's watch of its resident memory
    # does, and stops it
    result = await walled.evaluate(TASK, candidate("pin_through_the_driver_past_the_cap", **machine.values))
    told = f"{result.status.value}: {result.message}\n{result.output}"
    assert result.status is Status.runtime_error, told
    assert "of host memory (page-locked pages included), past its share" in result.message, told


async def test_a_root_evaluator_runs_its_workers_as_nobody(walled: Evaluator, machine: Machine) -> None:
    if walled.config.sandbox != "bwrap" or os.geteuid() != 0:
        pytest.skip("only an evaluator that runs as root under bubblewrap changes its workers' user")
    assert walled.sandbox is not None and walled.sandbox.user == 65534, walled.sandbox
    result = await walled.evaluate(TASK, candidate("become_root", **machine.values))
    assert result.status is Status.runtime_error, result.message
    assert "Operation not permitted" in result.message, result.message
    assert "((65534, 65534, 65534), (65534, 65534, 65534), [])" in result.output, result.output
    assert result.provenance.sandbox_detail and "as uid 65534" in result.provenance.sandbox_detail


async def test_workers_under_landlock_stay_the_evaluators_user_and_say_so(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only an evaluator that runs as root has the choice")
    try:
        plan = await detect_sandbox(fast_settings(tmp_path, sandbox="landlock"))
    except ConfigError as exc:
        pytest.skip(f"no Landlock sandbox on this machine: {exc}")
    assert plan.user is None
    assert "unprivileged workers unavailable: only under bubblewrap; workers run as root" in plan.describe()


async def test_workers_stay_root_when_told_and_say_so(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only an evaluator that runs as root has the choice")
    settings = fast_settings(tmp_path, sandbox="bwrap", worker_uid=None)
    try:
        plan = await detect_sandbox(settings)
    except ConfigError as exc:
        pytest.skip(f"no bwrap sandbox on this machine: {exc}")
    assert plan.user is None
    assert "unprivileged workers unavailable: executor.worker_uid is unset" in plan.describe()


def test_workers_become_nobody_where_the_packages_are_on_pythonpath(tmp_path: Path) -> None:
    # as on a GPU machine whose packages were installed with `pip install --target DIR` and found through
    # PYTHONPATH: the check must import from where a worker does, not only from the interpreter's own path
    if os.geteuid() != 0 or _bwrap_path()[0] is None:
        pytest.skip("only an evaluator that runs as root under bubblewrap changes its workers' user")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "bare"], check=True)
    base = tmp_path / "bare" / "bin" / "python"
    bare = subprocess.run([base, "-c", "import pydantic"], capture_output=True, check=False, env={"PATH": "/bin"})
    if sys.prefix == sys.base_prefix or bare.returncode == 0:
        pytest.skip("needs a virtual environment to take the packages from")
    site = next(p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ADAEXPLORE_HOME": str(tmp_path / "home")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), site, os.environ.get("PYTHONPATH")) if p)
    script = (
        "import anyio\n"
        "from adaexplore.config import Settings\n"
        "from adaexplore.executor.host._sandbox import detect_sandbox\n"
        "plan = anyio.run(detect_sandbox, Settings.load())\n"
        "print(plan.user, plan.unavailable)\n"
    )
    done = subprocess.run([base, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("65534 {}"), done.stdout + done.stderr[-2000:]


async def test_an_honest_kernel_still_passes_and_nothing_is_left(walled: Evaluator, machine: Machine) -> None:
    honest = (ROOT / "tests" / "executor" / "data" / "scale_relu_kernel.py").read_text()
    result = await walled.evaluate(TASK, honest)
    assert result.status is Status.ok, result.message
    assert result.provenance.sandbox_detail and "landlock" in result.provenance.sandbox_detail
    # the host's Triton cache never grows from a worker: each writes to its own
    assert not (machine.home / "cache" / "triton").exists()


@pytest.fixture(scope="module")
async def guarded(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Evaluator]:
    async with Evaluator(fast_settings(tmp_path_factory.mktemp("guarded"), warm_workers=0)) as evaluator:
        yield evaluator


@pytest.mark.parametrize("name", sorted(ATTACKS))
async def test_the_policy_refuses_the_same_candidates(guarded: Evaluator, machine: Machine, name: str) -> None:
    result = await guarded.evaluate(TASK, candidate(name, **machine.values))
    assert result.status is Status.rejected, result.message
    assert result.message.startswith("line ") and "You cannot" in result.message
    assert not _effects(machine, name)
