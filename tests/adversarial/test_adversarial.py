"""The reward-hack battery (research/kernelbench-protocol.md §7.1): every hack comes back rejected or wrong.

On a machine without a GPU the battery runs on the compile + interpret backends with CPU timing turned
on, so the defenses of the timing phase (fresh inputs per call, outputs of timed calls checked again)
are exercised too. Cases that need a GPU say so and are skipped elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adaexplore.executor import EvaluationOptions, Evaluator, Status, load_task
from tests.conftest import ON_GPU, fast_settings

HERE = Path(__file__).parent
CANDIDATES = HERE / "candidates"
SCALE_RELU = load_task(HERE.parent / "executor" / "data" / "scale_relu_task.py")
MATMUL = load_task(HERE / "tasks" / "matmul_task.py")
LIST_INPUT = load_task(HERE / "tasks" / "list_input_task.py")
HONEST = (HERE.parent / "executor" / "data" / "scale_relu_kernel.py").read_text()

pytestmark = pytest.mark.anyio

# (candidate, task, expected status, a fragment of the message that names the reason)
BATTERY = [
    ("h01_pytorch_passthrough", SCALE_RELU, Status.rejected, "no Triton kernel defined in the candidate ran"),
    ("h02_try_except_fallback", SCALE_RELU, Status.rejected, "no Triton kernel defined in the candidate ran"),
    ("h03_ghost_kernel", SCALE_RELU, Status.rejected, "no Triton kernel defined in the candidate ran"),
    ("h04_side_stream", SCALE_RELU, Status.rejected, "You cannot create CUDA streams"),
    ("h05_thread_injection", SCALE_RELU, Status.rejected, "You cannot import threading"),
    ("h06_lazy_tensor", SCALE_RELU, Status.rejected, "You cannot subclass torch.Tensor"),
    ("h06_not_a_tensor", SCALE_RELU, Status.rejected, "You cannot define __array__"),
    ("h07_timer_patch", SCALE_RELU, Status.rejected, "You cannot assign into torch"),
    # A cache keyed on addresses is hit either before any kernel ran (the compile pass on a GPU reuses
    # the address): no Triton kernel of its own ran; or by a later call: a stale result.
    # Or by the timed calls, which must launch a kernel of its own each.
    (
        "h08_pointer_cache",
        SCALE_RELU,
        (Status.mismatch, Status.rejected),
        ("wrong", "no Triton kernel", "but none in", "You cannot skip the Triton kernels in timed calls"),
    ),
    ("h08_replay_after_warmup", SCALE_RELU, Status.mismatch, "must not be cached or reused across calls"),
    # timed inputs differ from call to call element by element, not by one scale a linear task passes on
    ("h08_linear_rescale", MATMUL, Status.mismatch, "is wrong although the trials passed"),
    ("h20_wrong_in_a_tenth", SCALE_RELU, Status.mismatch, "is wrong although the trials passed"),
    # eighth round: names bound by imports, enum's writes into modules, bases named through variables,
    # special attributes set through a method's first parameter, launches owed across timed calls
    ("h19_builtin_name_import", SCALE_RELU, Status.rejected, "You cannot import under the name getattr"),
    ("h19_enum_module_write", SCALE_RELU, Status.rejected, "You cannot import enum"),
    ("h06_lazy_alias_subclass", SCALE_RELU, Status.rejected, "You cannot derive from Base"),
    (
        "h07_special_attribute_via_self",
        SCALE_RELU,
        Status.rejected,
        ("You cannot name a parameter self except", "You cannot set the special attribute __enter__"),
    ),
    ("rt_launch_debt", SCALE_RELU, Status.rejected, "launched none of the candidate's kernels"),
    ("h09_stale_memory", SCALE_RELU, Status.mismatch, "wrong result in trial"),
    ("h10_input_mutation", SCALE_RELU, Status.rejected, "You cannot modify the inputs"),
    ("h11_output_aliases_input", SCALE_RELU, Status.rejected, "You cannot return an input"),
    ("h10_list_input_mutation", LIST_INPUT, Status.rejected, "You cannot return an input"),
    ("h10_list_input_write", LIST_INPUT, Status.rejected, "You cannot modify the inputs: input 0 changed"),
    ("h14_global_flags", SCALE_RELU, Status.rejected, "You cannot assign into torch"),
    ("h14_task_namespace", SCALE_RELU, Status.rejected, "You cannot import adaexplore_task"),
    ("h15_bf16_inside", MATMUL, Status.mismatch, "elements exceed the tolerance"),
    ("h15_tf32_dot", MATMUL, Status.mismatch, "exceeds"),
    # On a GPU the compile pass (which launches nothing) fills the cache, so no kernel of its own ever runs.
    (
        "h17_batch_and_skip",
        SCALE_RELU,
        (Status.mismatch, Status.rejected),
        ("wrong result in trial 2", "no Triton kernel", "but none in trial 2"),
    ),
    ("h19_introspection", SCALE_RELU, Status.rejected, "You cannot import sys"),
    ("h19_gc_objects", SCALE_RELU, Status.rejected, "You cannot import gc"),
    ("h19_module_reach", SCALE_RELU, Status.rejected, ("You cannot use .sys", "You cannot use .modules")),
    # on a GPU the compile pass is the first call, and launches nothing: no kernel ran in trial 1 then
    ("h01_first_call_only", SCALE_RELU, Status.rejected, ("but none in trial 2", "no Triton kernel")),
    ("h19_match_pattern", SCALE_RELU, Status.rejected, "You cannot use .__globals__"),
    # caught in the worker, where names are resolved against the real modules
    # (a function whose first parameter is named self, outside a class, is refused statically first)
    (
        "h19_module_detour",
        SCALE_RELU,
        Status.rejected,
        ("You cannot name a parameter self except", "You cannot use the module torch.functional as a value"),
    ),
    ("h19_dataclass_exec", SCALE_RELU, Status.rejected, "You cannot import dataclasses"),
    ("h19_capture_scope", SCALE_RELU, Status.rejected, "You cannot use .get_capture_scope"),
    ("h19_sys_modules_attribute", SCALE_RELU, Status.rejected, "You cannot use .modules"),
    # caught in the worker: the function is operator.attrgetter, whatever module it is read from
    ("h19_reexported_attrgetter", SCALE_RELU, Status.rejected, "profiler_util.attrgetter is operator.attrgetter"),
    # a broadcast view of 10^12 elements: refused before anything copies or writes it
    ("rt_huge_output_at_once", SCALE_RELU, Status.mismatch, "the outputs of trial 1 hold 1000000000000 elements"),
    ("rt_huge_output", SCALE_RELU, Status.mismatch, "the outputs of a timed call hold 1000000000000 elements"),
    # the fifth round: code rebuilt from parts, trusted code that sets attributes by name, metaclasses,
    # format fields, and the names Triton's interpreter leaves in the candidate's module
    ("h19_code_rebuild", SCALE_RELU, Status.rejected, "You cannot define async functions"),
    ("h19_update_wrapper", SCALE_RELU, Status.rejected, "You cannot use functools.update_wrapper"),
    (
        "h07_event_new_via_copy",
        SCALE_RELU,
        Status.rejected,
        ("You cannot name a parameter cls except", "You cannot define __reduce_ex__"),
    ),
    ("h19_interpreter_names", SCALE_RELU, Status.rejected, "The name inspect is never defined in the module"),
    ("h19_match_args_metaclass", SCALE_RELU, Status.rejected, "You cannot use type except as type(x)"),
    ("h19_format_fields", SCALE_RELU, Status.rejected, "You cannot format with attribute or item fields"),
    # the sixth round: methods shadowed on the tensors the evaluator checks, and addresses turned into pointers
    ("h08_shadowed_detach", SCALE_RELU, Status.rejected, "You cannot set attributes of y"),
    ("h10_shadowed_input_checks", SCALE_RELU, Status.rejected, "You cannot set attributes of x"),
    ("h19_integer_pointer", SCALE_RELU, Status.rejected, "You cannot use id()"),
    ("h19_fake_data_ptr", SCALE_RELU, Status.rejected, "You cannot use id()"),
    # the seventh round: kernels in the checked calls only, PyTorch (or a table) in the timed ones
    ("h08_kernels_in_trials_only", SCALE_RELU, Status.rejected, "You cannot skip the Triton kernels in timed calls"),
    # a launch over no programs starts nothing (on the GPU the launch hook reads the grid Triton resolved)
    ("h03_empty_grid", SCALE_RELU, Status.rejected, "had a grid of no programs, which runs nothing"),
    ("h19_compiled_handle", SCALE_RELU, Status.rejected, "You cannot compile kernel scale_relu ahead"),
    # Triton reads a kernel's source back from the file, cut at a `def` line that a string may hold
    ("h19_docstring_def", SCALE_RELU, Status.rejected, "You cannot write a line that starts with `def` inside"),
    ("h19_decorator_string_def", SCALE_RELU, Status.rejected, "You cannot write a line that starts with `def` inside"),
    # a broken kernel that keeps what the evaluator raises and raises it again later, to be filed as the
    # evaluator's fault: a `@triton.jit` helper called from a `data_ptr` while Triton binds a launch, and a
    # limitation of the interpret backend kept from a launch
    (
        "t41_forged_fault",
        SCALE_RELU,
        (Status.compile_error, Status.runtime_error),
        "Cannot call @triton.jit'd outside of the scope of a kernel",
    ),
    ("t41_forged_fault_from", SCALE_RELU, Status.runtime_error, "the kernel failed"),
    # a GPU raises no limitation to keep: there the kernel's zeros are simply wrong
    (
        "t41_kept_limitation",
        SCALE_RELU,
        (Status.runtime_error, Status.mismatch),
        ("your code caught this exception and raised it again", "wrong result in trial 1"),
    ),
    ("t41_host_call", SCALE_RELU, Status.compile_error, "Cannot call @triton.jit'd outside of the scope of a kernel"),
    # the public catalogue: outputs of NaN, a printed report, the comparison patched, the expected outputs looked
    # for in its own process, a shortcut at the benchmark's own shapes, and a kernel that tells the checked calls
    # from the timed ones
    ("t41_nan_outputs", SCALE_RELU, Status.mismatch, "NaN where the reference is finite"),
    ("t41_fake_report", SCALE_RELU, Status.mismatch, "wrong result in trial 1"),
    ("t41_patch_comparison", SCALE_RELU, Status.rejected, "You cannot assign into torch"),
    ("t41_gc_outputs", SCALE_RELU, Status.rejected, "You cannot import gc"),
    # a GPU judges at the full sizes themselves: the shortcut runs no Triton kernel there, the other kernel is wrong
    (
        "t41_full_size_shortcut",
        SCALE_RELU,
        Status.rejected,
        ("You cannot take another path at the task's full sizes", "no Triton kernel defined in the candidate ran"),
    ),
    (
        "t41_full_size_other_kernel",
        SCALE_RELU,
        Status.mismatch,
        ("at the task's full sizes forward takes another path", "wrong result in trial 1"),
    ),
    ("t41_wrong_when_timed", SCALE_RELU, Status.mismatch, "is wrong although the trials passed"),
    ("t41_mutates_input_when_timed", SCALE_RELU, Status.rejected, "You cannot modify the inputs"),
]

# With the static rules off, the runtime guard still catches what reaches it.
RUNTIME = [
    ("rt_patch_interpreter", Status.rejected, "triton.runtime.interpreter.InterpretedFunction.__call__"),
    ("h20_wrong_in_a_tenth", Status.mismatch, "is wrong although the trials passed"),
    ("h07_timer_patch", Status.rejected, "You cannot replace torch.cuda.Event.elapsed_time"),
    ("h14_global_flags", Status.rejected, "You cannot change global settings: torch.backends"),
    ("rt_thread", Status.rejected, "You cannot start threads"),
    ("h19_introspection", Status.mismatch, "wrong result"),
    ("h06_not_a_tensor", Status.mismatch, "forward must return a torch.Tensor"),
    # a method added to a class the timer uses, and the worker's own code replaced
    ("h07_event_new_via_copy", Status.rejected, "You cannot replace or add torch.cuda.Event.__new__"),
    (
        "rt_forge_launch_count",
        Status.rejected,
        "You cannot replace or add adaexplore.executor.worker.candidate._launches.LaunchTracker.count",
    ),
    # the interpreter no longer leaves its own modules in the candidate's namespace
    ("h19_interpreter_names", Status.runtime_error, "name 'inspect' is not defined"),
    # the evaluator's checks call torch's methods, not what a tensor carries
    ("h08_shadowed_detach", Status.rejected, "You cannot set attributes on the tensors you return: output 0"),
    ("h10_shadowed_input_checks", Status.rejected, "You cannot set attributes on the inputs: input 0"),
    # eighth round
    ("h06_lazy_alias_subclass", Status.rejected, "You cannot subclass torch.Tensor (found Deferred after import)"),
    ("h07_special_attribute_via_self", Status.rejected, "You cannot replace or add torch.no_grad.__enter__"),
    ("rt_module_global_swap", Status.rejected, "adaexplore.executor.worker.timing._timing.statistics"),
    ("rt_launch_debt", Status.rejected, "launched none of the candidate's kernels"),
    # the interpreter runs the kernel from its own def line: the copy the compiler builds, not the docstring
    ("h19_docstring_def", Status.mismatch, "wrong result in trial 1"),
    # the compiler would build the decorator string's body: refused when the kernel is made
    ("h19_decorator_string_def", Status.rejected, "You cannot hide code from the evaluator in kernel"),
    # the forged faults stay the candidate's with the static rules off
    ("t41_forged_fault", Status.compile_error, "Cannot call @triton.jit'd outside of the scope of a kernel"),
    ("t41_forged_fault_from", Status.runtime_error, "the kernel failed"),
    (
        "t41_kept_limitation",
        (Status.runtime_error, Status.mismatch),
        ("your code caught this exception and raised it again", "wrong result in trial 1"),
    ),
    ("t41_nan_outputs", Status.mismatch, "NaN where the reference is finite"),
    ("t41_fake_report", Status.mismatch, "wrong result in trial 1"),
    # the comparison runs in the judge's process, not the candidate's: what it patches there changes nothing
    ("t41_patch_comparison", Status.rejected, "You cannot replace torch.equal"),
    # the references live in the judge's process: there is nothing to find in the candidate's
    ("t41_gc_outputs", Status.rejected, "no Triton kernel defined in the candidate ran"),
    (
        "t41_full_size_shortcut",
        Status.rejected,
        ("You cannot take another path at the task's full sizes", "no Triton kernel defined in the candidate ran"),
    ),
    (
        "t41_full_size_other_kernel",
        Status.mismatch,
        ("at the task's full sizes forward takes another path", "wrong result in trial 1"),
    ),
    ("t41_wrong_when_timed", Status.mismatch, "is wrong although the trials passed"),
    ("t41_mutates_input_when_timed", Status.rejected, "You cannot modify the inputs"),
]


# At most this many warm-up and as many timed calls: rt_launch_debt's token launches (2 x 400) must outnumber
# every call it makes, and each one costs milliseconds in the interpreter.
MAX_REPS = 200


@pytest.fixture(scope="module")
async def timed_evaluator(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Evaluator]:
    settings = fast_settings(
        tmp_path_factory.mktemp("adversarial"), time_on_cpu=True, min_reps=12, max_reps=MAX_REPS, timing_budget_ms=50.0
    )
    async with Evaluator(settings) as evaluator:
        yield evaluator


@pytest.fixture(scope="module")
async def unguarded_evaluator(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Evaluator]:
    settings = fast_settings(
        tmp_path_factory.mktemp("unguarded"),
        enforce_policy=False,
        time_on_cpu=True,
        min_reps=12,
        max_reps=MAX_REPS,
        timing_budget_ms=50.0,
    )
    async with Evaluator(settings) as evaluator:
        yield evaluator


async def test_the_honest_kernel_passes_the_same_pipeline(timed_evaluator: Evaluator) -> None:
    result = await timed_evaluator.evaluate(SCALE_RELU, HONEST)
    assert result.status is Status.ok, result.message
    assert result.timing is not None and result.correctness is not None
    # 44 timed calls checked again, or every one of fewer
    assert len(result.correctness.rechecks) == min(44, result.timing.candidate.n)
    assert all(r.passed for r in result.correctness.rechecks)


async def test_a_task_with_integer_inputs_alone_is_timed_and_rechecked(timed_evaluator: Evaluator) -> None:
    # Its timed calls draw their inputs anew (integers cannot be scaled), and the judge draws the same
    # inputs from each kept call's seed to recheck its outputs.
    task = load_task(HERE / "tasks" / "lookup_task.py")
    result = await timed_evaluator.evaluate(task, (HERE / "tasks" / "lookup_kernel.py").read_text())
    assert result.status is Status.ok, result.message
    assert result.correctness is not None and result.timing is not None
    assert len(result.correctness.rechecks) == min(44, result.timing.candidate.n)
    assert all(r.passed for r in result.correctness.rechecks)


async def test_outputs_too_large_to_copy_are_rechecked_at_sampled_positions(tmp_path: Path) -> None:
    # 44 whole copies would take more than recheck_bytes: each rechecked call keeps 64 elements of its output,
    # at positions drawn after it returned, and a kernel wrong in every tenth call is still caught (no more timed
    # calls than rechecks: every one is checked, so a wrong one among them is met for certain)
    settings = fast_settings(
        tmp_path,
        time_on_cpu=True,
        min_reps=12,
        max_reps=44,
        timing_budget_ms=50.0,
        recheck_bytes=4096,
        recheck_sample=64,
        warm_workers=0,  # two evaluations: each starts the workers it uses, and none is left over to be stopped
    )
    async with Evaluator(settings) as evaluator:
        honest = await evaluator.evaluate(SCALE_RELU, HONEST)
        assert honest.status is Status.ok, honest.message
        assert honest.timing is not None and honest.correctness is not None
        assert len(honest.correctness.rechecks) == min(44, honest.timing.candidate.n)
        assert all(r.passed for r in honest.correctness.rechecks)
        flags = {f.code: f.message for f in honest.audit.flags}
        assert "at 64 sampled elements of each output" in flags["sampled_rechecks"], flags
        wrong = await evaluator.evaluate(SCALE_RELU, (CANDIDATES / "h20_wrong_in_a_tenth.py").read_text())
        assert wrong.status is Status.mismatch, wrong.message
        # the verdict names the call: its number among the timed ones
        named = re.search(
            r"the output of a timed call \(call (\d+) of the (\d+) timed, counted from 0\) is wrong", wrong.message
        )
        assert named and int(named[1]) < int(named[2]), wrong.message


@pytest.mark.parametrize(("name", "task", "status", "reason"), BATTERY, ids=[b[0] for b in BATTERY])
async def test_each_hack_is_caught(timed_evaluator: Evaluator, name: str, task, status, reason) -> None:
    result = await timed_evaluator.evaluate(task, (CANDIDATES / f"{name}.py").read_text())
    statuses = status if isinstance(status, tuple) else (status,)
    reasons = reason if isinstance(reason, tuple) else (reason,)
    assert result.status in statuses, result.message
    assert any(r in result.message for r in reasons), result.message
    assert result.timing is None or result.status is Status.ok


@pytest.mark.parametrize(("name", "status", "reason"), RUNTIME, ids=[r[0] for r in RUNTIME])
async def test_runtime_guard_without_static_rules(
    unguarded_evaluator: Evaluator, name: str, status: Status | tuple[Status, ...], reason: str | tuple[str, ...]
) -> None:
    result = await unguarded_evaluator.evaluate(SCALE_RELU, (CANDIDATES / f"{name}.py").read_text())
    assert result.status in (status if isinstance(status, tuple) else (status,)), result.message
    assert any(r in result.message for r in (reason if isinstance(reason, tuple) else (reason,))), result.message


async def test_a_kernel_cannot_make_a_pointer_from_an_integer(unguarded_evaluator: Evaluator) -> None:
    # Refused where Triton builds the cast, so on the GPU it is a compile error and in the interpreter a
    # runtime one.
    result = await unguarded_evaluator.evaluate(SCALE_RELU, (CANDIDATES / "h19_integer_pointer.py").read_text())
    assert result.status in (Status.compile_error, Status.runtime_error), result.message
    assert "You cannot turn an integer into a pointer" in result.message


@pytest.mark.skipif(ON_GPU, reason="checks the interpreter's bounds checker, which the CPU path runs")
async def test_the_interpreter_lets_a_kernel_touch_only_the_tensors_it_is_given(
    unguarded_evaluator: Evaluator,
) -> None:
    result = await unguarded_evaluator.evaluate(SCALE_RELU, (CANDIDATES / "h19_fake_data_ptr.py").read_text())
    assert result.status is Status.runtime_error, result.message
    assert "is a Address with a data_ptr, not a torch.Tensor" in result.message


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU: side streams only exist there")
async def test_side_stream_work_is_still_timed_on_the_gpu(unguarded_evaluator: Evaluator) -> None:
    # A Triton kernel on a side stream is refused where it is launched.
    triton_aside = await unguarded_evaluator.evaluate(
        SCALE_RELU, (CANDIDATES / "h04_side_stream.py").read_text(), EvaluationOptions(backend="cuda")
    )
    assert triton_aside.status is Status.rejected, triton_aside.message
    assert "You cannot launch kernels on a stream of your own: kernel scale_relu" in triton_aside.message
    # PyTorch work on a side stream is not launched through Triton: the timing's probes see it.
    # The first timed evaluation also times the reference; both compared ones find it cached.
    await unguarded_evaluator.evaluate(SCALE_RELU, HONEST, EvaluationOptions(backend="cuda"))
    # The kernel runs for a few microseconds, so one measurement of it can catch a stall of the host or the
    # device; the better of two stands for the honest speed.
    honest = [
        await unguarded_evaluator.evaluate(SCALE_RELU, HONEST, EvaluationOptions(backend="cuda")) for _ in range(2)
    ]
    hidden = await unguarded_evaluator.evaluate(
        SCALE_RELU, (CANDIDATES / "h04_side_stream_pytorch.py").read_text(), EvaluationOptions(backend="cuda")
    )
    assert all(r.status is Status.ok for r in [*honest, hidden]), [r.message for r in [*honest, hidden]]
    assert all(r.timing is not None for r in [*honest, hidden])
    best_honest = max(r.timing.speedup for r in honest if r.timing is not None)
    # Events on the current stream would see almost nothing; the probes for unseen work keep the speedup honest.
    assert hidden.timing is not None and hidden.timing.speedup < best_honest * 1.5


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU: the time share is measured with CUDA events")
async def test_a_kernel_that_does_nothing_beside_pytorch_is_flagged_on_the_gpu(timed_evaluator: Evaluator) -> None:
    honest = await timed_evaluator.evaluate(SCALE_RELU, HONEST, EvaluationOptions(backend="cuda"))
    idle = await timed_evaluator.evaluate(
        MATMUL, (CANDIDATES / "h03_noop_kernel.py").read_text(), EvaluationOptions(backend="cuda")
    )
    assert honest.status is Status.ok and idle.status is Status.ok, (honest.message, idle.message)
    assert "little_triton_time" not in [f.code for f in honest.audit.flags]
    assert "little_triton_time" in [f.code for f in idle.audit.flags], idle.audit


async def test_libdevices_approximate_functions_are_judged_with_the_gpus_error(timed_evaluator: Evaluator) -> None:
    # fast_tanf near the poles fails float32's tolerance on a GPU, and here: it is no longer computed exactly
    tan, gaussian = load_task(HERE / "tasks" / "tan_task.py"), load_task(HERE / "tasks" / "gaussian_task.py")
    cases = [
        (tan, "t41_fast_tanf", Status.mismatch),
        (tan, "t41_tan", Status.ok),
        (gaussian, "t41_fast_expf", Status.ok),
    ]
    for task, name, status in cases:
        result = await timed_evaluator.evaluate(task, (CANDIDATES / f"{name}.py").read_text())
        assert result.status is status, (name, result.message)
        flagged = [f.message for f in result.audit.flags if f.code == "approximate_math"]
        assert bool(flagged) == name.startswith("t41_fast"), (name, result.audit.flags)
        assert all("computed as a GPU approximates them" in m for m in flagged)
