"""Verdicts as a step shows them: what every kernel's verdict would repeat is said once, and nothing else goes."""

from adaexplore.tools.steps._step_text import step_verdict

COST = "static cost k at full sizes: 240-255 registers, 40 B spilled, 73728 B shared over 2 configs"
ESTIMATE = (
    "estimated 1.38 ms on an H200, not measured (1.94x eager's estimated 2.68 ms): k 1.15 ms (tensor cores (tf32): "
    "412 GFLOP of dots, 638 MB)"
)
CPU = (
    "ok: correct in 5/5 trials in the interpreter at small sizes; compiles for sm_90 at the small sizes "
    f"(batch_size=2, in_features=17) and the task's full ones; {COST}; no GPU timed it here; {ESTIMATE}"
)


def test_the_kernel_to_edit_keeps_its_verdict_less_where_it_was_compiled() -> None:
    assert step_verdict(CPU) == (
        f"ok: correct in 5/5 trials in the interpreter at small sizes; {COST}; no GPU timed it here; {ESTIMATE}"
    )


def test_an_earlier_kernel_of_the_line_keeps_what_it_found() -> None:
    # its own estimate is what it found; that no GPU timed it, the kernel to edit says for all
    assert step_verdict(CPU, method=False) == f"ok: {COST}; {ESTIMATE}"
    timed = (
        f"ok: correct in 5/5 trials on GPU 0; {COST}; 1.84x the speed of eager PyTorch (median 0.5 ms vs 0.92 ms); "
        "warning: a launch writes out of bounds"
    )
    assert step_verdict(timed, method=False) == (
        f"ok: {COST}; 1.84x the speed of eager PyTorch (median 0.5 ms vs 0.92 ms); warning: a launch writes out of "
        "bounds"
    )
    untimed = "ok: correct in 5/5 trials in the interpreter at small sizes; no GPU timed it here"
    assert step_verdict(untimed, method=False) == "ok"


def test_what_the_static_cost_does_not_say_is_kept() -> None:
    compile_only = f"ok: compiles for sm_90 at the task's sizes (not executed); {COST}"
    assert step_verdict(compile_only, method=False) == compile_only
    no_cost = "ok: correct in 5/5 trials in the interpreter at small sizes; compiles for sm_90 at the task's sizes"
    assert step_verdict(no_cost) == no_cost
    failure = "mismatch: wrong result in trial 2: max |err| 0.3 at [0, 4]; compiles for sm_90 at the task's sizes"
    assert step_verdict(failure) == step_verdict(failure, method=False) == failure
    assert step_verdict("not evaluated") == "not evaluated"
