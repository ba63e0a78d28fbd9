"""Signatures over a corpus of real failures from the evaluator (tests/memory/data/failure_corpus.json,
made by make_corpus.py): the same mistake in two tasks gives one key, different mistakes give different keys."""

from __future__ import annotations

import json
import re
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
