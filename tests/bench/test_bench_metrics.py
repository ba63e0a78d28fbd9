"""The bench's numbers as the paper counts them: clamp at 10, incorrect as 0, Fast@p strictly above p, over all."""

from __future__ import annotations

import math

import pytest

from adaexplore.bench import ProblemScore, summarize


def test_the_paper_mean_clamps_at_ten_and_counts_incorrect_problems_as_zero() -> None:
    scores = [
        ProblemScore("ok", 25.0),  # clamped to 10
        ProblemScore("ok", 2.0),
        ProblemScore("ok", 1.2),  # exactly 1.2: not Fast@1.2 (strictly above)
        ProblemScore("mismatch", None),
        ProblemScore("task_error", None),
    ]
    summary = summarize(scores)
    assert summary.problems == 5 and summary.correct == 3
    assert summary.correct_rate == pytest.approx(0.6)
    eager = summary.eager
    assert eager is not None and eager.timed == 3
    assert eager.mean == pytest.approx((10 + 2 + 1.2) / 5)
    assert eager.geomean == pytest.approx(math.exp((math.log(25) + math.log(2) + math.log(1.2)) / 3))
    assert eager.fast == {1.0: pytest.approx(3 / 5), 1.2: pytest.approx(2 / 5), 2.0: pytest.approx(1 / 5)}
    assert summary.compile is None  # torch.compile was not timed
    assert summary.by_status == {"ok": 3, "mismatch": 1, "task_error": 1}


def test_a_speedup_of_an_incorrect_kernel_never_counts() -> None:
    summary = summarize([ProblemScore("mismatch", 8.0, 8.0), ProblemScore("ok", 0.5, 0.25)])
    assert summary.eager is not None and summary.compile is not None
    assert summary.eager.mean == pytest.approx(0.25)
    assert summary.eager.fast[1.0] == 0
    assert summary.compile.geomean == pytest.approx(0.25)


def test_untimed_correct_kernels_give_a_correct_rate_and_no_speedup_numbers() -> None:
    summary = summarize([ProblemScore("ok"), ProblemScore("ok"), ProblemScore("compile_error")])
    assert summary.correct_rate == pytest.approx(2 / 3)
    assert summary.eager is None and summary.compile is None
    assert any("no measured speedup" in note for note in summary.notes)
    document = summary.as_dict()
    assert document["vs_eager"] is None and document["correct"] == 2


def test_pending_problems_count_as_not_correct_and_are_named() -> None:
    summary = summarize([ProblemScore("ok", 3.0), ProblemScore(None)])
    assert summary.done == 1 and summary.by_status == {"ok": 1, "pending": 1}
    assert summary.eager is not None and summary.eager.mean == pytest.approx(1.5)
    assert any("not evaluated yet" in note for note in summary.notes)


def test_a_problem_whose_reference_torch_compile_failed_is_named_and_not_faster_than_compile() -> None:
    summary = summarize([ProblemScore("ok", 2.0, 1.5), ProblemScore("ok", 3.0, None)])
    assert summary.compile is not None and summary.compile.timed == 1
    assert summary.compile.fast[1.0] == pytest.approx(1 / 2)
    assert any("no torch.compile timing" in note for note in summary.notes)
    assert not any("no torch.compile timing" in note for note in summarize([ProblemScore("ok", 2.0)]).notes)


def test_a_degenerate_problem_is_left_out_of_every_number_and_listed_apart() -> None:
    scores = [
        ProblemScore("ok", 2.0, name="gemm"),
        ProblemScore("mismatch", None, name="conv"),
        ProblemScore("ok", 250.0, degenerate=True, name="groups_of_one"),  # a kernel that writes 0
    ]
    summary = summarize(scores)
    assert summary.problems == 2 and summary.correct == 1 and summary.by_status == {"ok": 1, "mismatch": 1}
    assert summary.eager is not None and summary.eager.mean == pytest.approx(1.0) and summary.eager.timed == 1
    assert summary.degenerate == ["groups_of_one"] and summary.as_dict()["degenerate"] == ["groups_of_one"]
    assert any("left out" in note and "groups_of_one" in note for note in summary.notes)
