"""The evaluator end to end on this machine's backends, with real worker processes and real Triton."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
import pytest

from adaexplore.errors import TaskError
from adaexplore.executor import (
    Backend,
    EvaluationOptions,
    Evaluator,
    Mode,
    ProgressUpdate,
    Status,
    load_task,
    task_from_source,
)
from tests.conftest import ON_GPU, fast_settings

DATA = Path(__file__).parent / "data"
TASK = load_task(DATA / "scale_relu_task.py")
KERNEL = (DATA / "scale_relu_kernel.py").read_text()
LAUNCH = "scale_relu_kernel[(triton.cdiv(n, 256),)](x, y, n, self.scale, BLOCK=256)\n        return y"

pytestmark = pytest.mark.anyio


def variant(old: str, new: str) -> str:
    assert old in KERNEL, old
    return KERNEL.replace(old, new)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class WorkerPids:
    """Collects the pids of the workers an evaluation used, from its progress messages."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self.in_trial = anyio.Event()

    async def __call__(self, update: ProgressUpdate) -> None:
        match = re.search(r"worker pid (\d+)", update.message)
        if match:
            self.pids.append(int(match.group(1)))
        if update.stage == "trial":
            self.in_trial.set()


def exchange_dirs() -> set[str]:
    """This process's exchange directories (other evaluators on the machine make their own)."""
    roots = [Path("/dev/shm"), Path(tempfile.gettempdir())]
    return {str(p) for root in roots if root.is_dir() for p in root.glob(f"adaexplore-{os.getpid()}-*")}


@pytest.mark.skipif(ON_GPU, reason="checks the path of machines without a GPU")
async def test_a_correct_kernel_is_ok_and_says_plainly_that_nothing_was_timed(evaluator: Evaluator) -> None:
    result = await evaluator.evaluate(TASK, KERNEL)
    assert result.status is Status.ok, result.message
    assert result.backends == [Backend.compile, Backend.interpret]
    assert result.timing is None and not result.timed
    assert "no GPU timed it here" in result.message
    # not timed, but estimated on the default target, and labelled so
    assert result.estimate is not None and result.estimate.gpu == "H200" and result.estimate.speedup > 0
    assert f"estimated {result.estimate.ms:.3g} ms on an H200, not measured" in result.message
    assert result.speed_of_light is not None and result.speed_of_light.bound == "launch"  # 0.5 MB: one launch
    assert result.speed_of_light.fraction is None  # nothing measured to compare with it
    assert result.correctness is not None and result.correctness.passed
    assert len(result.correctness.trials) == 5
    assert all(t.norm_rel_error is not None and t.norm_rel_error < 1e-6 for t in result.correctness.trials)
    assert result.correctness.tolerance.reference_dtype == "float64"
    assert result.audit.triton_kernels == ["scale_relu_kernel"]
    assert result.audit.triton_launches == 1
    assert result.provenance.sizes == "small"
    assert result.provenance.compile_target == "cuda:90"


@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")
async def test_a_correct_kernel_on_the_gpu_is_checked_timed_and_audited(evaluator: Evaluator) -> None:
    result = await evaluator.evaluate(TASK, KERNEL)
    assert result.status is Status.ok, result.message
    assert result.backends == [Backend.cuda]
    assert result.timing is not None and result.timing.speedup > 0
    assert result.correctness is not None and len(result.correctness.rechecks) == 44
    assert all(r.passed for r in result.correctness.rechecks)
    assert result.audit.triton_time_share is not None and 0 < result.audit.triton_time_share <= 1
    assert result.provenance.sizes == "full" and result.provenance.gpu
    # the GPU's own speed of light, and the measured kernel's share of it (and eager PyTorch's)
    sol = result.speed_of_light
    assert sol is not None and sol.fraction is not None and 0 < sol.fraction <= 1.05
    assert sol.reference_fraction is not None and sol.reference_fraction > 0
    assert result.estimate is None  # a measurement needs no estimate
    # strict mode draws the inputs and weights on the GPU itself, and says so
    assert result.provenance.seeds is not None and result.provenance.seeds.generator == "cuda"


@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")
async def test_large_outputs_are_rechecked_at_sampled_positions_on_the_gpu(tmp_path: Path) -> None:
    # where 44 whole copies do not fit in recheck_bytes, each rechecked call of the strict timing keeps a
    # sample of its outputs (worker/timing/_kept.py) and the judge compares the reference's values there
    wrong_in_a_tenth = (DATA.parent.parent / "adversarial" / "candidates" / "h20_wrong_in_a_tenth.py").read_text()
    async with Evaluator(fast_settings(tmp_path, recheck_bytes=4096, recheck_sample=1000)) as evaluator:
        honest = await evaluator.evaluate(TASK, KERNEL)
        assert honest.status is Status.ok, honest.message
        assert honest.correctness is not None and len(honest.correctness.rechecks) == 44
        assert all(r.passed for r in honest.correctness.rechecks)
        assert "sampled_rechecks" in [f.code for f in honest.audit.flags]
        wrong = await evaluator.evaluate(TASK, wrong_in_a_tenth)
        assert wrong.status is Status.mismatch, wrong.message
        assert re.search(
            r"the output of a timed call \(call \d+ of the \d+ timed, counted from 0\) is wrong", wrong.message
        )


async def test_strict_mode_draws_fresh_seeds_and_paper_mode_fixed_ones(evaluator: Evaluator) -> None:
    first, second = [await evaluator.evaluate(TASK, KERNEL) for _ in range(2)]
    assert first.provenance.seeds and second.provenance.seeds
    assert first.provenance.seeds.trials != second.provenance.seeds.trials
    paper = [await evaluator.evaluate(TASK, KERNEL, EvaluationOptions(mode=Mode.paper)) for _ in range(2)]
    assert paper[0].status is Status.ok
    assert paper[0].provenance.seeds == paper[1].provenance.seeds
    assert paper[0].provenance.seeds is not None and paper[0].provenance.seeds.init == 42
    # KernelBench's protocols draw on the CPU everywhere; strict draws on the GPU where there is one
    assert paper[0].provenance.seeds.generator == "cpu"
    assert first.provenance.seeds.generator == ("cuda" if ON_GPU else "cpu")
    assert paper[0].correctness is not None and paper[0].correctness.tolerance.atol == 5e-2
    # a final re-measurement asks for fresh seeds in any mode; the protocol's other rules stay
    fresh = await evaluator.evaluate(TASK, KERNEL, EvaluationOptions(mode=Mode.paper, fresh_seeds=True))
    assert fresh.status is Status.ok and fresh.mode is Mode.paper and fresh.provenance.seeds is not None
    assert fresh.provenance.seeds.trials != paper[0].provenance.seeds.trials
    assert fresh.correctness is not None and fresh.correctness.tolerance.atol == 5e-2


# The loop reads memory on every turn, so no compiler may drop it; the value never changes. (Its bad-input case is
# test_after_a_timeout_no_worker_is_left_running, which waits out the timeout once for all it checks.)
NEVER_ENDS = variant(
    "    x = tl.load", "    while tl.load(x_ptr, volatile=True) < 1e30:\n        pass\n    x = tl.load"
)

BAD_INPUTS = [
    (
        "syntax error",
        variant("def forward(self, x):", "def forward(self, x)"),
        Status.syntax_error,
        "SyntaxError: expected ':'",
    ),
    ("no ModelNew", variant("class ModelNew", "class Other"), Status.compile_error, "defines no ModelNew"),
    (
        "another __init__ signature",
        variant("def __init__(self, scale):", "def __init__(self):").replace("self.scale = scale", "self.scale = 2.0"),
        Status.runtime_error,
        "same arguments as Model(scale)",
    ),
    (
        "a compile error",
        variant("    x = tl.load", "    for i in range(2):\n        break\n    x = tl.load"),
        Status.compile_error,
        "unsupported AST node type: Break",
    ),
    (
        # Far out of bounds: the interpreter's checker names it. A GPU faults only where nothing is mapped, and
        # a far read can also land in mapped memory and read garbage, which is a wrong result.
        "an out-of-bounds read",
        variant("tl.load(x_ptr + offsets, mask=mask)", "tl.load(x_ptr + offsets.to(tl.int64) + (1 << 36))"),
        (Status.runtime_error, Status.mismatch) if ON_GPU else Status.runtime_error,
        ("illegal memory access", "wrong result") if ON_GPU else "out-of-bounds load in kernel scale_relu_kernel",
    ),
    ("wrong shape", variant("return y", "return y[:1]"), Status.mismatch, "output 0 has shape (1, "),
    ("wrong dtype", variant("return y", "return y.double()"), Status.mismatch, "has dtype float64"),
    (
        "NaN output",
        variant("tl.maximum(x * scale + 1.0, 0.0)", "tl.maximum(x * scale + 1.0, 0.0) / 0.0 * 0.0"),
        Status.mismatch,
        "NaN where the reference is finite",
    ),
    ("a 5 MB source", KERNEL + "\n#" + "x" * 5_000_000, Status.rejected, "the limit is 1.0 MB"),
    ("an empty source", "", Status.compile_error, "the source is empty"),
    ("a forbidden import", "import os\n" + KERNEL, Status.rejected, "You cannot import os"),
    (
        "an exception in forward",
        variant("return y", "raise ValueError('boom')"),
        Status.runtime_error,
        "ValueError: boom",
    ),
]


@pytest.mark.parametrize(("case", "code", "status", "fragment"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
async def test_bad_input_gets_its_status_and_an_actionable_message(
    evaluator: Evaluator, case: str, code: str, status, fragment
) -> None:
    before = exchange_dirs()
    result = await evaluator.evaluate(TASK, code)
    statuses = status if isinstance(status, tuple) else (status,)
    fragments = fragment if isinstance(fragment, tuple) else (fragment,)
    assert result.status in statuses, result.message
    assert any(f in result.message for f in fragments), result.message
    assert exchange_dirs() <= before, "a temporary directory was left behind"
    assert "/dev/shm" not in result.message and "adaexplore-" not in result.message


async def test_a_byte_order_mark_before_the_source_is_ignored_as_python_ignores_it(evaluator: Evaluator) -> None:
    result = await evaluator.evaluate(TASK, "\ufeff" + KERNEL)
    assert result.status is Status.ok, result.message


async def test_printing_to_stdout_is_captured_and_harmless(evaluator: Evaluator) -> None:
    code = variant(
        "        y = torch.empty_like(x)", "        print('hello from forward')\n        y = torch.empty_like(x)"
    )
    result = await evaluator.evaluate(TASK, code)
    assert result.status is Status.ok, result.message
    printed = result.output.count("hello from forward")
    # on the GPU once per trial and per timed call; on the CPU once compiling at the small sizes, once compiling at
    # the full sizes (on shape-only tensors) and once per trial
    assert printed > 6 if ON_GPU else printed == 7


async def test_after_a_timeout_no_worker_is_left_running(evaluator: Evaluator) -> None:
    pids = WorkerPids()
    before = exchange_dirs()
    result = await evaluator.evaluate(TASK, NEVER_ENDS, progress=pids)
    assert result.status is Status.timeout, result.message
    assert "did not finish within" in result.message, result.message
    assert exchange_dirs() <= before, "a temporary directory was left behind"
    assert "/dev/shm" not in result.message and "adaexplore-" not in result.message
    assert len(pids.pids) == len(result.backends)
    assert not any(alive(pid) for pid in pids.pids)
    assert (await evaluator.evaluate(TASK, KERNEL)).status is Status.ok


async def test_a_segfault_is_reported_as_crashed_and_the_next_evaluation_works(home: Path) -> None:
    # The static rules forbid ctypes; turning them off is how a crash can be provoked on purpose.
    code = "import ctypes\n" + variant(
        "        y = torch.empty_like(x)", "        ctypes.string_at(0)\n        y = torch.empty_like(x)"
    )
    async with Evaluator(fast_settings(home, enforce_policy=False, warm_workers=0)) as evaluator:
        result = await evaluator.evaluate(TASK, code)
        assert result.status is Status.crashed
        assert "SIGSEGV" in result.message
        assert (await evaluator.evaluate(TASK, KERNEL)).status is Status.ok


async def test_concurrent_evaluations_each_get_their_own_verdict(evaluator: Evaluator) -> None:
    wrong = variant("x * scale + 1.0", "x * scale + 2.0")
    codes = [KERNEL, wrong, KERNEL, wrong, KERNEL, wrong]
    results: list = [None] * len(codes)

    async def one(index: int) -> None:
        results[index] = await evaluator.evaluate(TASK, codes[index])

    with anyio.fail_after(300):
        async with anyio.create_task_group() as tg:
            for index in range(len(codes)):
                tg.start_soon(one, index)
    assert [r.status for r in results] == [Status.ok, Status.mismatch] * 3
    assert len({r.provenance.seeds.init for r in results}) == len(codes)


async def test_progress_names_each_stage(evaluator: Evaluator) -> None:
    stages: list[str] = []

    async def record(update: ProgressUpdate) -> None:
        stages.append(update.stage)

    await evaluator.evaluate(TASK, KERNEL, progress=record)
    for stage in ("queued", "compiling", "handover", "reference", "trial", "judging", "done"):
        assert stage in stages, stages


async def test_cancelling_an_evaluation_kills_its_worker(evaluator: Evaluator) -> None:
    pids = WorkerPids()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: evaluator.evaluate(TASK, NEVER_ENDS, progress=pids))
        with anyio.fail_after(60):
            await pids.in_trial.wait()
        hung = pids.pids[-1]
        assert alive(hung)
        tg.cancel_scope.cancel()
    assert not alive(hung)
    assert (await evaluator.evaluate(TASK, KERNEL)).status is Status.ok


async def test_a_task_whose_code_fails_is_the_callers_error(evaluator: Evaluator) -> None:
    broken = task_from_source(
        TASK.source.replace("return [torch.randn(rows, cols)]", "raise RuntimeError('no data')"), name="broken"
    )
    with pytest.raises(TaskError, match="get_inputs\\(\\) raised RuntimeError: no data"):
        await evaluator.evaluate(broken, KERNEL)
    assert (await evaluator.evaluate(TASK, KERNEL)).status is Status.ok


async def test_a_task_is_checked_before_any_candidate(evaluator: Evaluator) -> None:
    await evaluator.check_task(TASK)  # a good task passes
    missing = task_from_source("import no_such_module_xyz\n" + TASK.source, name="missing")
    with pytest.raises(TaskError, match=r"task 'missing'.*needs no_such_module_xyz, which is not installed"):
        await evaluator.check_task(missing)
    bad_init = task_from_source(TASK.source.replace("super().__init__()", "super().__init__(); 1 / 0"), name="init")
    with pytest.raises(TaskError, match="Model\\(\\*get_init_inputs\\(\\)\\) raised ZeroDivisionError"):
        await evaluator.check_task(bad_init)
    bad_forward = task_from_source(
        TASK.source.replace("return torch.relu(x * self.scale + 1.0)", "raise RuntimeError('no forward')"),
        name="forward",
    )
    with pytest.raises(TaskError, match="forward raised RuntimeError: no forward"):
        await evaluator.check_task(bad_forward)
    # a task that ends the judge's process is told how it ended
    exits = task_from_source(
        "import os\n" + TASK.source.replace("return torch.relu(x * self.scale + 1.0)", "os._exit(3)"), name="exits"
    )
    with pytest.raises(TaskError, match=r"task 'exits': the process running .* exited \(code 3\)"):
        await evaluator.check_task(exits)
    assert (await evaluator.evaluate(TASK, KERNEL)).status is Status.ok  # the judge still serves


async def test_cancelling_while_the_judge_starts_or_answers_leaves_the_evaluator_working(home: Path) -> None:
    # no spare workers: the one evaluation starts its own, and none is started after it only to be stopped
    async with Evaluator(fast_settings(home, warm_workers=0)) as ev:
        with anyio.move_on_after(0.5):  # the judge is still importing torch
            await ev.check_task(TASK)
        await ev.check_task(TASK)
        with anyio.move_on_after(0.05):  # the judge has a command in hand
            await ev.check_task(TASK)
        # the answer to the cancelled command is not taken for the answer to the next one
        result = await ev.evaluate(TASK, KERNEL)
        assert result.status is Status.ok, result.message


async def test_a_cancelled_judge_request_owes_its_answer_and_other_jobs_stay_loaded(home: Path) -> None:
    # Two evaluations share a judge; one's request is cancelled while the judge works on it (a client
    # gave up). The other's job must stay loaded, and its next answer must be its own.
    from adaexplore.domain import Backend, Mode
    from adaexplore.executor.pipeline._evaluator import _Run
    from adaexplore.executor.wire._protocol import Load, Prepare, Prepared

    slow_source = TASK.source.replace("import torch\n", "import time\nimport torch\n", 1).replace(
        "        return torch.relu(x * self.scale + 1.0)",
        "        time.sleep(0.5)\n        return torch.relu(x * self.scale + 1.0)",
    )
    slow = task_from_source(slow_source, name="slow")
    async with Evaluator(fast_settings(home, warm_workers=0)) as ev:  # the judge alone: no candidate runs
        backend = Backend.cuda if ON_GPU else Backend.interpret
        assert ev.lanes is not None
        judge = ev.lanes.judge(backend, 0)
        paths = {t.name: ev.lanes.task_file(t) for t in (slow, TASK)}
        jobs = {
            t.name: ev.lanes.job(_Run(t, "", Mode.strict, None), backend, paths[t.name].parent, paths[t.name])
            for t in (slow, TASK)
        }
        for job in jobs.values():
            await judge.request(Load(job=job), 60)
        with anyio.move_on_after(0.3):  # the judge is sleeping in the slow reference's forward
            await judge.request(Prepare(job_id=jobs["slow"].job_id), 60)
        prepared = await judge.request(Prepare(job_id=jobs[TASK.name].job_id), 60)
        assert isinstance(prepared, Prepared), prepared
        assert jobs[TASK.name].trial_seeds is not None  # strict mode draws fresh seeds for each job
        assert prepared.trial_seeds == jobs[TASK.name].trial_seeds != jobs["slow"].trial_seeds


async def test_a_task_that_hangs_while_loading_is_the_tasks_fault_not_the_evaluators(home: Path) -> None:
    hangs = task_from_source("import time\ntime.sleep(600)\n" + TASK.source, name="hangs")
    async with Evaluator(fast_settings(home, load_timeout_s=8.0, warm_workers=0)) as ev:  # no candidate runs
        with pytest.raises(TaskError, match=r"task 'hangs': importing its module.*took longer than 8 s"):
            await ev.check_task(hangs)
        await ev.check_task(TASK)  # a new judge serves the next task


async def test_exchange_directories_of_dead_evaluators_are_removed_at_start(home: Path) -> None:
    dead_pid = 4_194_303  # the largest pid Linux hands out; no process has it here
    assert not Path(f"/proc/{dead_pid}").exists()
    orphan = Path(tempfile.mkdtemp(prefix=f"adaexplore-{dead_pid}-"))
    mine = Path(tempfile.mkdtemp(prefix=f"adaexplore-{os.getpid()}-"))
    async with Evaluator(fast_settings(home, warm_workers=0)):
        pass
    assert not orphan.exists()
    assert mine.exists()
    mine.rmdir()


def test_sandboxes_of_dead_evaluators_are_ended(tmp_path: Path) -> None:
    # An evaluator killed while bubblewrap was starting a worker can leave the first process of its PID
    # namespace waiting with no parent of ours; the next evaluator's start ends every bubblewrap process whose
    # command line names an exchange directory of a process that is gone. A live evaluator's stay.
    from adaexplore.executor.host._sandbox import _bwrap_path
    from adaexplore.executor.host._workspace import kill_orphaned_sandboxes

    bwrap = _bwrap_path()[0]
    if bwrap is None:
        pytest.skip("no bubblewrap on this machine")
    dead = 4_194_303  # the largest pid Linux hands out; no process has it here
    assert not Path(f"/proc/{dead}").exists()

    def sandbox(owner: int) -> subprocess.Popen[bytes]:
        command = [bwrap, "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        command += ["--setenv", "EXCHANGE", f"/dev/shm/adaexplore-{owner}-test", "--", "sleep", "600"]
        return subprocess.Popen(command, start_new_session=True)

    orphan, alive = sandbox(dead), sandbox(os.getpid())
    try:
        deadline = time.monotonic() + 10
        while len(_namespace_inits(orphan.pid)) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        inner = _namespace_inits(orphan.pid)
        assert inner, "bubblewrap started no PID namespace"
        killed = kill_orphaned_sandboxes()
        assert orphan.pid in killed and set(inner) <= set(killed), (killed, orphan.pid, inner)
        assert orphan.wait(timeout=10) == -9
        assert alive.poll() is None and alive.pid not in killed
    finally:
        for process in (orphan, alive):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the outer and its namespace's first process
            process.wait(timeout=10)


def _namespace_inits(parent: int) -> list[int]:
    """The bubblewrap children of `parent` (the first processes of the PID namespaces it made)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == "bwrap":
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


async def test_wait_warm_returns_once_every_spare_worker_is_ready(evaluator: Evaluator) -> None:
    result = await evaluator.evaluate(TASK, KERNEL)  # takes a spare from each pool it uses
    assert result.status is Status.ok, result.message
    assert evaluator.lanes is not None
    pools = list(evaluator.lanes.pools.values())
    assert pools and any(pool._starting for pool in pools)  # the replacement starts after the evaluation
    with anyio.fail_after(60):
        await evaluator.wait_warm()
    for pool in pools:
        assert pool._starting == 0
        assert len(pool._spares) == pool._warm
        assert all(worker._ready is not None for worker in pool._spares)


async def test_filling_a_pool_twice_starts_each_missing_spare_once(evaluator: Evaluator) -> None:
    assert evaluator.lanes is not None
    pool = next(iter(evaluator.lanes.pools.values()))
    with anyio.fail_after(60):
        await evaluator.wait_warm()
    worker, _ = await pool.acquire()
    await worker.aclose()
    pool.fill()
    pool.fill()  # before the first replacement has even spawned
    assert pool._starting == 1
    with anyio.fail_after(60):
        await evaluator.wait_warm()
    assert len(pool._spares) == pool._warm


def test_workers_take_page_locked_memory_as_memory_their_cap_counts(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # torch's own cudaHostAlloc gives pages that no limit of the process sees (on the H200 a worker capped at
    # 6 GiB pinned 7); registered ordinary memory counts against its data limit. The user's settings stay, ours
    # last so that they win.
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True,pinned_use_cuda_host_register:False")
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    env = Evaluator(fast_settings(home))._worker_env
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == (
        "expandable_segments:True,pinned_use_cuda_host_register:False,pinned_use_cuda_host_register:True"
    )
    assert "PYTORCH_ALLOC_CONF" not in env
    # the newer name, where the user sets it, is the one torch reads
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True")
    env = Evaluator(fast_settings(home))._worker_env
    assert env["PYTORCH_ALLOC_CONF"] == "expandable_segments:True,pinned_use_cuda_host_register:True"


def test_workers_get_no_credentials_of_the_evaluators_process(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from adaexplore.config import ModelConfig

    # by names that say so, by names of their own (a database's URL with its password), and under prefixes that
    # are otherwise passed on
    secrets = ("OPENAI_API_KEY", "ADAEXPLORE_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "MY_LLM", "ORDERS_DSN")
    for name in (*secrets, "WAREHOUSE_URL", "TRITON_REMOTE_TOKEN", "CUDA_CREDENTIALS"):
        monkeypatch.setenv(name, "secret")
    for name, value in (("TRITON_PRINT_AUTOTUNING", "1"), ("CUDA_MODULE_LOADING", "LAZY"), ("LC_ALL", "C.UTF-8")):
        monkeypatch.setenv(name, value)
    settings = fast_settings(home).model_copy(update={"model": ModelConfig(api_key_env="MY_LLM")})
    env = Evaluator(settings)._worker_env  # what every worker, judge and candidate, starts with
    assert not {*secrets, "WAREHOUSE_URL", "TRITON_REMOTE_TOKEN", "CUDA_CREDENTIALS"} & set(env)
    assert "secret" not in env.values()
    # what Python, the compilers, Triton and the CUDA driver read stays
    assert env["PATH"] == os.environ["PATH"]
    assert env["TRITON_PRINT_AUTOTUNING"] == "1" and env["CUDA_MODULE_LOADING"] == "LAZY" and env["LC_ALL"] == "C.UTF-8"


async def test_a_worker_start_cancelled_at_any_moment_leaves_nothing_running(home: Path) -> None:
    # A worker taken from its pool and cancelled before it is ready (an evaluation cancelled while its worker
    # starts; a size probe's start cancelled), or a spare still starting when its pool closes, is ended with its
    # sandbox; before, only a garbage collector killed its launcher, which left the PID namespace's first process
    # running, reparented to init.
    from adaexplore.executor import detect_sandbox, worker_env
    from adaexplore.executor.host._pool import WorkerPool
    from adaexplore.executor.host._spawn import ProcessSpawner, SpawnRequest, WorkerChannel

    settings = fast_settings(home)
    plan = await detect_sandbox(settings)
    root = Path(tempfile.mkdtemp(prefix=f"adaexplore-{os.getpid()}-"))
    (root / "tasks").mkdir()
    count = iter(range(100))
    try:
        async with anyio.create_task_group() as group:
            spawner = ProcessSpawner(group, sandbox=plan, exchange_root=root, settings=settings)

            async def spawn() -> WorkerChannel:
                exchange = root / f"w{next(count)}"
                request = SpawnRequest(
                    role="sizes", backend="compile", device=0, env=worker_env(settings), exchange=exchange
                )
                return await spawner.spawn(request)

            pool = WorkerPool(group, spawn, warm=0, ready_timeout=60)
            # from the making of the process to the last moments of the worker's imports
            for delay in [0.0, 0.002, 0.01, 0.05, 0.2, 0.6, 1.2]:
                with anyio.move_on_after(delay):
                    worker, _ = await pool.acquire()
                    await worker.aclose()
            await pool.aclose()
            group.cancel_scope.cancel()
        # a pool closed, and its task group cancelled, while a spare starts (an evaluator closing as it refills)
        for delay in [0.0, 0.005, 0.05, 0.3, 1.0]:
            async with anyio.create_task_group() as group:
                spawner = ProcessSpawner(group, sandbox=plan, exchange_root=root, settings=settings)
                pool = WorkerPool(group, spawn, warm=1, ready_timeout=60)
                pool.fill()
                await anyio.sleep(delay)
                await pool.aclose()
                group.cancel_scope.cancel()
        deadline = time.monotonic() + 5
        while (left := _processes_naming(root)) and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        assert not left, f"processes of cancelled starts still run: {left}"
    finally:
        for pid in _processes_naming(root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)


def _processes_naming(path: Path) -> list[int]:
    """Processes whose command line names `path` (a worker's, its launcher's)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(path).encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def test_a_task_that_draws_random_numbers_in_forward_is_judged_on_seeded_forwards(evaluator: Evaluator) -> None:
    # as KernelBench Level 3 problem 35's LSTM draws its initial state: each trial's forward is seeded alike on
    # the judge's side and the candidate's, so a kernel that draws the same numbers matches (the judge's own test,
    # tests/executor/worker/test_reference_dtypes.py, shows the reference is the seeded draw)
    drawing = task_from_source(
        TASK.source.replace(
            "return torch.relu(x * self.scale + 1.0)", "return torch.relu(x * self.scale + 1.0) + torch.randn_like(x)"
        ),
        name="draws",
    )
    same = variant("        return y", "        return y + torch.randn_like(x)")
    result = await evaluator.evaluate(drawing, same)
    assert result.status is Status.ok, result.message
    assert any(f.code == "draws_in_forward" for f in result.audit.flags), result.audit.flags
