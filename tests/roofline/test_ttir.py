"""Walking a kernel's Triton IR with a launch's arguments: the FLOPs of its dots by precision, and the bytes its
loads and stores ask for, by the tensor argument they address. The IR files are real sm_90 compiles
(`data/make_ttir.py`), read without Triton."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.roofline import count_launch, parse_ttir

DATA = Path(__file__).parent / "data"


def ir(name: str):  # type: ignore[no-untyped-def]
    return parse_ttir((DATA / f"{name}.ttir").read_text())


@pytest.mark.parametrize("precision", ["ieee", "tf32x3"])
def test_a_gemm_does_2mnk_flops_in_the_precision_it_names(precision: str) -> None:
    m = n = 256
    k = 1024
    counts = count_launch(ir(f"gemm_{precision}"), {"M": m, "N": n, "K": k}, (16, 1, 1))
    # an ieee dot is the attribute's default, which the IR leaves out: it is not a tf32 one
    assert counts.dot_flops == {precision: pytest.approx(2 * m * n * k)}
    assert counts.exact and counts.dot_tile == (64, 64, 32)
    # each of the 16 programs loads a 64x32 tile of A and a 32x64 tile of B at each of the K/32 steps
    assert counts.loads == {
        "a_ptr": pytest.approx(16 * 32 * 64 * 32 * 4),
        "b_ptr": pytest.approx(16 * 32 * 32 * 64 * 4),
    }
    assert counts.stores == {"c_ptr": pytest.approx(m * n * 4)}


def test_the_trip_count_follows_the_arguments() -> None:
    small = count_launch(ir("gemm_ieee"), {"M": 256, "N": 256, "K": 64}, (16, 1, 1))
    assert small.dot_flops["ieee"] == pytest.approx(2 * 256 * 256 * 64)


def test_a_persistent_loop_is_counted_over_the_programs_it_runs_on() -> None:
    rows, cols = 1000, 4096
    counts = count_launch(ir("persistent_sum"), {"n_rows": rows, "n_cols": cols}, (132, 1, 1))
    # row r is summed by program r % 132: a few programs are walked and scaled to the grid
    assert counts.loads["x_ptr"] == pytest.approx(rows * cols * 4, rel=0.02)
    assert counts.stores["out_ptr"] == pytest.approx(rows * 4, rel=0.02)
    assert counts.special == pytest.approx(rows * cols, rel=0.02)  # one exp an element
    assert counts.simt > counts.special and not counts.dot_flops


def test_a_bound_that_is_not_known_is_guessed_and_said() -> None:
    counts = count_launch(ir("gemm_ieee"), {"M": 256, "N": 256, "K": None}, (16, 1, 1))
    assert not counts.exact and "a loop whose trip count depends on data" in counts.guesses
    assert counts.dot_flops["ieee"] == pytest.approx(16 * 2 * 64 * 64 * 32)  # one trip


def test_an_empty_grid_does_nothing() -> None:
    counts = count_launch(ir("gemm_ieee"), {"M": 256, "N": 256, "K": 1024}, (0, 1, 1))
    assert not counts.dot_flops and not counts.loads


def test_text_without_a_function_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no tt\.func"):
        parse_ttir("module {\n}\n")
