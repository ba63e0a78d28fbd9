"""Which way a dot's K x N operand lies in memory, read from recorded TritonGPU IR (`data/*.ttgir`, written by
`data/make_ttir.py`), and what it costs in the estimate (no torch, no GPU)."""

from __future__ import annotations

import dataclasses

import pytest

from adaexplore.roofline import CALIBRATION, GPUS, ForwardWork, LaunchConfig, LaunchWork, b_tile_k_major
from adaexplore.roofline import estimate_forward as estimate
from tests.conftest import ROOT

DATA = ROOT / "tests" / "roofline" / "data"
TILE = (64, 64, 32)  # the recorded GEMMs' BM, BN, BK


def test_a_row_major_right_hand_matrix_lies_along_n_and_a_weight_along_k() -> None:
    assert b_tile_k_major((DATA / "gemm_tf32x3.ttgir").read_text(), TILE) is False  # a @ b
    assert b_tile_k_major((DATA / "gemm_wt_ieee.ttgir").read_text(), TILE) is True  # x @ w.T


def test_no_answer_where_the_code_does_not_say() -> None:
    text = (DATA / "gemm_wt_ieee.ttgir").read_text()
    assert b_tile_k_major(text, None) is None  # no dot
    assert b_tile_k_major(text, (32, 32, 32)) is None  # A and B tiles of one shape: not told apart
    assert b_tile_k_major(text, (64, 128, 32)) is None  # no load of the operand's shape (TMA, made in registers)
    assert b_tile_k_major("", TILE) is None


def _launch(precision: str, b_k_major: bool | None) -> LaunchConfig:
    return LaunchConfig(
        config="c",
        programs=512,
        num_warps=8,
        num_stages=4,
        registers=200,
        shared_memory=131072,
        dot_flops={precision: 137e9},
        dot_tile=(128, 128, 32),
        b_k_major=b_k_major,
        bytes_read=302e6,
        bytes_written=34e6,
        requested_bytes=4.3e9,
    )


def _ms(config: LaunchConfig, cal=CALIBRATION) -> tuple[float, str]:
    work = ForwardWork(steps=[LaunchWork(kernel="k", configs=[config])])
    part = estimate(work, GPUS["H200"], calibration=cal).parts[0]
    return part.ms, part.detail


@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
def test_a_tf32_operand_along_n_costs_the_tensor_cores_their_layout_factor(precision: str) -> None:
    cal = dataclasses.replace(CALIBRATION, tf32_n_major=0.5)
    k_major, _ = _ms(_launch(precision, True), cal)
    unknown, _ = _ms(_launch(precision, None), cal)
    n_major, said = _ms(_launch(precision, False), cal)
    assert k_major == unknown  # not read from the code: no charge
    assert n_major > 1.5 * k_major  # the dot's time doubles, the launch's fixed costs do not
    assert "along N" in said
    # a bf16 dot reads either layout natively
    assert _ms(_launch("bf16", False), cal)[0] == _ms(_launch("bf16", True), cal)[0]


def test_an_fp32_dot_with_its_operand_along_k_is_slower_on_the_cuda_cores() -> None:
    cal = dataclasses.replace(CALIBRATION, fma_k_major=0.5)
    n_major, _ = _ms(_launch("ieee", False), cal)
    k_major, said = _ms(_launch("ieee", True), cal)
    assert k_major > 1.8 * n_major and "along K" in said


def test_the_shipped_factors_charge_both_layouts() -> None:
    # fitted to the H200's times and an H100's relative ones (benchmarks/estimate_corpus.py fit --fit-relative)
    assert CALIBRATION.tf32_n_major < 1 and CALIBRATION.fma_k_major < 1
    assert _ms(_launch("tf32x3", False))[0] > _ms(_launch("tf32x3", True))[0]
    assert _ms(_launch("ieee", True))[0] > _ms(_launch("ieee", False))[0]
