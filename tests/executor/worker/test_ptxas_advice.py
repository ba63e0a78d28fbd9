"""The assembler's advisories read from `ptxas -v` logs: a real one (the C7515 of a GEMM whose accumulator starts
from tl.zeros, recorded by `tests/roofline/data/make_sass.py`) and each reason ptxas can give."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.domain import KernelCost
from adaexplore.executor.pipeline.stages.speed import advice_flags
from adaexplore.executor.worker.cost._ptxas_advice import parse_advisories
from adaexplore.executor.worker.cost._static_cost import parse_ptxas_log

REAL_LOG = (Path(__file__).parent / "data" / "ptxas_c7515.log").read_text()
SERIALIZED = "Potential Performance Loss: wgmma.mma_async instructions are serialized due to "


def test_the_real_c7515_advisory_is_read_with_its_fix() -> None:
    report = parse_ptxas_log(REAL_LOG)
    assert report.registers == 114 and report.warnings == []
    [advice] = report.advisories
    assert (advice.code, advice.function, advice.serializes) == ("C7515", "gemm", True)
    assert advice.text.endswith("between start and end of the pipeline stage")
    said = advice.said()
    assert said.startswith("ptxas C7515: the tensor-core MMAs (wgmma) run one after another")
    assert "tl.zeros" in said and "usually fixed by this: start the accumulator from the first product" in said


@pytest.mark.parametrize(
    ("reason", "fix"),
    [
        ("non wgmma instructions defining accumulator registers of a wgmma between start and end", "first product"),
        ("non wgmma instructions reading accumulator registers of  a wgmma between start and end", "after the loop"),
        ("non wgmma instructions defining input registers of a wgmma between start and end", "before the loop"),
        ("insufficient register resources for the wgmma pipeline", "num_warps=8"),
        ("insufficient register resources for the function", "smaller BLOCK_M"),
        ("the presence of Extern calls", "libdevice"),
        ("wgmma pipeline crossing function boundary at a function call", "inlined"),
        ("ill formed pipeline stage", "branches"),
        ("program dependence on compiler-inserted WG.DP in divergent path", "branches"),
    ],
)
def test_every_reason_for_serialized_mmas_says_what_fixes_it(reason: str, fix: str) -> None:
    log = f"ptxas info    : (C7510) {SERIALIZED}{reason} in the function 'k'\n"
    [advice] = parse_advisories(log)
    assert advice.code == "C7510" and advice.serializes and advice.function == "k"
    assert fix in advice.fix


def test_warnings_and_repeats_are_read_once_and_other_advisories_pass_through() -> None:
    line = f"{SERIALIZED}insufficient register resources for the wgmma pipeline in the function 'mm'"
    log = "\n".join(
        [
            f"ptxas warning : {line}",
            f"ptxas info    : (C7508) {line}",
            f"ptxas info    : (C7508) {line}",
            "ptxas info    : (C7520) Potential Performance Loss: 'setmaxnreg' ignored to maintain minimum register "
            "requirements.",
            "ptxas info    : Used 255 registers, used 1 barriers",
        ]
    )
    report = parse_ptxas_log(log)
    assert [a.code for a in report.advisories] == ["", "C7508", "C7520"]
    assert not report.advisories[2].serializes and "setmaxnreg" in report.advisories[2].said()
    assert report.warnings == []  # the advisory a warning line carries is not said twice


def test_the_verdict_warns_once_per_kernel_and_advisory_at_the_largest_sizes() -> None:
    said = parse_advisories(REAL_LOG)[0].said()

    def cost(sizes: str, config: str, advisories: list[str]) -> KernelCost:
        return KernelCost(kernel="gemm", sizes=sizes, config=config, advisories=advisories)  # type: ignore[arg-type]

    costs = [cost("full", "BK=64", [said]), cost("full", "BK=32", []), cost("small", "BK=64", [said, "other"])]
    [flag] = advice_flags(costs)
    assert flag.code == "ptxas_advisory" and flag.severity == "warn"
    assert flag.message == f"kernel gemm (1 of its 2 configs, full sizes): {said}"
    assert advice_flags([cost("full", "BK=64", [])]) == []


def test_a_grid_that_leaves_most_multiprocessors_idle_is_named_when_it_costs_time() -> None:
    from adaexplore.domain import Estimate, EstimatePart
    from adaexplore.executor.pipeline.stages.speed import idle_sm_flags
    from adaexplore.roofline import GPUS, ForwardWork, LaunchWork, estimate_forward
    from adaexplore.roofline._work import LaunchConfig

    h200 = GPUS["H200"]

    def forward(programs: int, copy_programs: int = 4096) -> tuple[ForwardWork, Estimate]:
        gemm = LaunchConfig(
            config="BM=128", programs=programs, num_warps=8, num_stages=3, dot_flops={"bf16": 2e11}, bytes_read=1e8
        )
        copy = LaunchConfig(config="B=1024", programs=copy_programs, num_warps=4, num_stages=2, bytes_read=4e3)
        work = ForwardWork(
            steps=[LaunchWork(kernel="_gemm", configs=[gemm]), LaunchWork(kernel="_tail", configs=[copy])]
        )
        made = estimate_forward(work, h200)
        parts = [EstimatePart(step=p.step, ms=p.ms, limit=p.limit, detail=p.detail) for p in made.parts]
        return work, Estimate(
            gpu=h200.name, ms=made.ms, reference_ms=1.0, speedup=1.0 / made.ms, summary="", parts=parts
        )

    # a persistent GEMM whose grid came from a CPU fallback of 12 programs: named, with the count
    [flag] = idle_sm_flags(*forward(12), h200)
    assert flag.code == "idle_sms" and flag.severity == "warn"
    assert "_gemm launches 12 programs" in flag.message and f"120 of the {h200.name}'s 132" in flag.message
    # a grid that fills the GPU is not, nor a small tail launch that takes little of the time
    assert idle_sm_flags(*forward(132 * 4, copy_programs=2), h200) == []
    # no estimate or no recorded forward: nothing to say
    work, estimate = forward(12)
    assert idle_sm_flags(None, estimate, h200) == [] and idle_sm_flags(work, None, h200) == []


def test_the_static_cost_table_names_an_advisory_by_its_code_and_leaves_its_words_to_the_warning() -> None:
    from adaexplore.executor.pipeline._render import static_cost_table

    advice = "ptxas C7515: the tensor-core MMAs (wgmma) run one after another; usually fixed by this: start from a dot"
    costs = [KernelCost(kernel="_gemm", sizes="full", config="BK=64", registers=106, advisories=[advice])]
    table = static_cost_table(costs)
    assert "    ptxas advisory C7515 (see the warnings)" in table.splitlines()
    assert "run one after another" not in table
    [flag] = advice_flags(costs)
    assert "run one after another" in flag.message and "usually fixed by this" in flag.message
