"""Signatures over a corpus of real failures from the evaluator (tests/memory/data/failure_corpus.json,
made by make_corpus.py): the same mistake in two tasks gives one key, different mistakes give different keys."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from adaexplore.executor import Evaluation
from adaexplore.memory import signature, signature_of_text

CORPUS = json.loads((Path(__file__).parent / "data" / "failure_corpus.json").read_text())


def signatures_by_case() -> dict[str, object]:
    return {c["case"]: signature(Evaluation.model_validate(c["evaluation"]), c["code"]) for c in CORPUS}


def test_the_corpus_covers_examples_hacks_and_mistakes_in_two_tasks() -> None:
    kinds = {c["case"].split("/")[0] for c in CORPUS}
    assert kinds == {"example", "adversarial", "mistake"}
    assert len(CORPUS) >= 50


def test_the_same_mistake_in_two_tasks_has_one_signature() -> None:
    found = signatures_by_case()
    mistakes = {c["case"].split("/")[1] for c in CORPUS if c["case"].startswith("mistake/")}
    for mistake in mistakes:
        a, b = found[f"mistake/{mistake}/scale_relu"], found[f"mistake/{mistake}/elementwise_chain"]
        assert a == b, (mistake, a, b)


def test_distinct_mistakes_have_distinct_signatures() -> None:
    found = signatures_by_case()
    per_mistake = {
        found[f"mistake/{m}/scale_relu"].id
        for m in {c["case"].split("/")[1] for c in CORPUS if c["case"].startswith("mistake/")}
    }
    assert len(per_mistake) == len({c["case"].split("/")[1] for c in CORPUS if c["case"].startswith("mistake/")})


@pytest.mark.parametrize(
    ("same", "cases"),
    [
        (True, ["example/sum_reduction/compile_error", "mistake/break/scale_relu"]),
        (True, ["example/mlp/compile_error", "mistake/loop_carried_type_change/scale_relu"]),
        (True, ["example/row_softmax/compile_error", "mistake/lambda/elementwise_chain"]),
        (
            True,
            [
                "example/row_softmax/out_of_bounds",
                "example/sum_reduction/out_of_bounds",
                "example/elementwise_chain/out_of_bounds",
            ],
        ),
        (True, ["adversarial/h15_bf16_inside", "adversarial/h15_tf32_dot"]),
        (True, ["adversarial/h01_pytorch_passthrough", "adversarial/h03_ghost_kernel"]),
        (False, ["mistake/break/scale_relu", "mistake/continue/scale_relu"]),
        (False, ["example/layernorm/compile_error", "example/elementwise_chain/compile_error"]),
        (False, ["adversarial/h15_tf32_dot", "example/mlp/wrong_result"]),
        (False, ["adversarial/h10_input_mutation", "adversarial/h11_output_aliases_input"]),
    ],
)
def test_pairs_known_to_be_the_same_or_different(same: bool, cases: list[str]) -> None:
    found = signatures_by_case()
    keys = {found[c].key for c in cases}
    assert (len(keys) == 1) is same, keys


def test_signatures_abstract_names_numbers_paths_and_addresses() -> None:
    for c in CORPUS:
        key = signature(Evaluation.model_validate(c["evaluation"]), c["code"]).key
        for fragment in (".py", "site-packages", "<repo>", "0x"):
            assert fragment not in key, (fragment, key)
        assert not re.search(r"(?:^|[\s(])/[\w.-]+/", key), key
        for name in ("scale_relu_kernel", "_softmax_kernel", "x_ptr", "BLOCK_SIZE", "_SQRT1_2"):
            assert name not in key, (name, key)


def test_generic_verdicts_never_merge_rules_by_themselves() -> None:
    found = signatures_by_case()
    assert not found["example/mlp/wrong_result"].specific
    assert not found["example/layernorm/hang"].specific
    assert found["mistake/break/scale_relu"].specific


def test_a_failure_given_as_text_gets_the_signature_of_the_same_failure_as_an_evaluation() -> None:
    case = next(c for c in CORPUS if c["case"] == "mistake/arange_not_power_of_two/scale_relu")
    evaluation = Evaluation.model_validate(case["evaluation"])
    from_text = signature_of_text(
        evaluation.status.value, evaluation.error.type, evaluation.error.message, case["code"]
    )
    assert from_text == signature(evaluation, case["code"])


def test_a_whole_traceback_given_as_text_gets_the_signature_of_the_evaluation() -> None:
    """The caller may pass the traceback rather than the message: the frames (files, lines, functions of one
    run) are dropped, and the last exception, without its module path, is what the key is made of."""
    with_traceback = [c for c in CORPUS if c["evaluation"].get("error") and c["evaluation"]["error"]["traceback"]]
    assert len(with_traceback) >= 20
    for case in with_traceback:
        evaluation = Evaluation.model_validate(case["evaluation"])
        assert evaluation.error is not None
        expected = signature(evaluation, case["code"])
        for text in (evaluation.error.traceback, f"{evaluation.message}\n{evaluation.error.traceback}"):
            found = signature_of_text(evaluation.status.value, evaluation.error.type, text, case["code"])
            assert found == expected, (case["case"], found.key, expected.key)


def test_the_evaluations_own_message_given_as_text_gets_the_signature_of_the_evaluation() -> None:
    """A caller may pass the evaluation's message ("forward raised in trial 2: KernelOOBError: …") as the error
    text, with or without the exception type: the phase before the exception is not part of the mistake."""
    with_error = [c for c in CORPUS if c["evaluation"].get("error")]
    assert len(with_error) >= 20
    for case in with_error:
        evaluation = Evaluation.model_validate(case["evaluation"])
        assert evaluation.error is not None
        expected = signature(evaluation, case["code"])
        for error_type in (evaluation.error.type, ""):
            found = signature_of_text(evaluation.status.value, error_type, evaluation.message, case["code"])
            assert found == expected, (case["case"], error_type, found.key, expected.key)


def _long_traceback(final: str, root: str, kernel: str, line: int, carets: bool = False) -> str:
    """A traceback of 15 frames through a candidate, torch's module calls and Triton's launcher, ending in
    `final`; `root`, `kernel` and `line` vary as they do between two tasks. Python prints no carets under a
    frame whose failing expression is its whole line (nor did any Python before 3.11)."""
    frames = [(f"{root}/candidate.py", line, "forward", f"{kernel}[grid](x, y, n, BLOCK=1024)")]
    for depth in range(7):
        frames.append(
            (f"{root}/torch/nn/modules/module.py", 1736 + depth, "_call_impl", "return forward_call(*args, **kwargs)")
        )
    for depth in range(7):
        frames.append(
            (f"{root}/triton/runtime/jit.py", 330 + 17 * depth, "run", "kernel.run(grid_0, grid_1, grid_2, *args)")
        )
    body = "".join(
        f'  File "{path}", line {n}, in {fn}\n    {src}\n' + (f"    {'^' * len(src)}\n" if carets else "")
        for path, n, fn, src in frames
    )
    return f"Traceback (most recent call last):\n{body}{final}\n"


_ILLEGAL_ACCESS = (
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
    "be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
)
_WRONG_DEVICE = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
)


def test_long_tracebacks_keep_their_exception_in_the_key() -> None:
    # 15 frames of paths and source are well past the key's length: the frames must not be what is kept.
    for final in (_ILLEGAL_ACCESS, _WRONG_DEVICE):
        assert len(_long_traceback(final, "/home/a/proj", "_k", 12)) > 1500
    illegal = [
        signature_of_text("runtime_error", "", _long_traceback(_ILLEGAL_ACCESS, root, kernel, line, carets), code)
        for root, kernel, line, carets, code in [
            ("/home/a/proj", "scale_relu_kernel", 26, False, "def scale_relu_kernel(x): pass"),
            ("/srv/b/.venv/lib/python3.12/site-packages", "_chain_kernel", 113, False, "def _chain_kernel(x): pass"),
            ("/home/a/proj", "scale_relu_kernel", 26, True, "def scale_relu_kernel(x): pass"),
        ]
    ]
    device = signature_of_text("runtime_error", "", _long_traceback(_WRONG_DEVICE, "/home/a/proj", "k", 26))
    # one mistake in two tasks, printed with or without carets: one key
    assert illegal[0] == illegal[1] == illegal[2], [s.key for s in illegal]
    assert illegal[0] != device, illegal[0].key  # two mistakes: two keys
    quoted = textwrap.indent(_long_traceback(_ILLEGAL_ACCESS, "/x", "k", 3), "    ")  # inside an indented log
    assert signature_of_text("runtime_error", "", quoted) == illegal[0]
    assert "illegal memory access" in illegal[0].key and "same device" in device.key
    assert all(s.specific for s in (*illegal, device))
    assert "File" not in illegal[0].key and "torch." not in illegal[0].key.split("|")[-1][:20]


def test_a_timeout_or_a_crash_given_as_text_gets_the_signature_of_the_evaluation() -> None:
    for case in ("example/layernorm/hang", "example/elementwise_chain/hang"):
        entry = next(c for c in CORPUS if c["case"] == case)
        evaluation = Evaluation.model_validate(entry["evaluation"])
        from_text = signature_of_text("timeout", "", evaluation.message, entry["code"])
        assert from_text == signature(evaluation, entry["code"]) and from_text.key == "timeout"
        assert not from_text.specific
    assert signature_of_text("timeout", "TimeoutError", "trial 2 of 5 did not finish within 8 s").key == "timeout"
    killed = (
        "the process running the candidate was killed by SIGSEGV during trial 1; look for out-of-bounds memory access"
    )
    assert signature_of_text("crashed", "", killed).key == "crashed|SIGSEGV"
    assert not signature_of_text("crashed", "", "the process running the candidate exited (code 3)").specific


def test_a_failure_with_no_error_text_has_a_signature_that_names_no_mistake() -> None:
    entry = next(c for c in CORPUS if c["case"] == "example/elementwise_chain/out_of_bounds")
    for status in ("runtime_error", "compile_error", "syntax_error"):
        empty = Evaluation.model_validate({**entry["evaluation"], "status": status, "message": " ", "error": None})
        assert signature(empty, entry["code"]).key == status
        assert not signature(empty, entry["code"]).specific
        assert not signature_of_text(status, "", "\n").specific
    assert signature_of_text("runtime_error", "AssertionError", "").specific  # the type alone still names one


@pytest.mark.parametrize(
    "message",
    [
        "bad " + "Z" * 100_000,  # one long word: the patterns that look ahead of a name backtracked over it
        "Z" * 100_000 + " is not defined",
        "Z" * 100_000 + "() missing 1 required positional argument",
        "[" + "1," * 50_000,
    ],
)
def test_a_pathological_message_is_keyed_in_linear_time(message: str) -> None:
    # Quadratic matching took minutes on these (a server answers nothing while it runs); linear takes
    # milliseconds. The bound is far from both.
    import time

    started = time.perf_counter()
    key = signature_of_text("runtime_error", "", f"ValueError: {message}").key
    assert time.perf_counter() - started < 5.0
    assert key.startswith("runtime_error|ValueError|")
