"""The corpus of GPU truth (`benchmarks/gpu_truth/`) is what its generator writes: every generated kernel file holds
the text its template gives today (a template edited without regenerating, or a generated file edited by hand,
fails here), each says its family and parameters on its first line, and every kernel of the corpus, generated or
hand-written, opens with a line that says its design. No compile, no GPU: a second or two."""

from __future__ import annotations

import sys

from tests.conftest import ROOT

CORPUS = ROOT / "benchmarks" / "gpu_truth"
sys.path.insert(0, str(CORPUS))
import generate  # noqa: E402  (the generator's modules import each other by their plain names)


def test_every_generated_kernel_is_what_its_template_writes() -> None:
    generated = generate.everything()
    assert len(generated) >= 180
    stale = [rel for rel, text in generated if (CORPUS / rel).read_text() != text]
    assert not stale, f"regenerate with `python benchmarks/gpu_truth/generate.py`: {stale[:5]}"


def test_generated_kernels_name_their_family_and_parameters_on_their_first_line() -> None:
    for rel, text in generate.everything():
        first = text.splitlines()[0]
        assert first.startswith("# ") and "[family=" in first and first.endswith("]"), rel
        assert "class ModelNew(nn.Module)" in text, rel


def test_every_kernel_of_the_corpus_says_its_design_first() -> None:
    kernels = sorted(CORPUS.glob("level[123]/*/*.py"))
    assert len(kernels) >= 300
    for path in kernels:
        first = path.read_text().splitlines()[0]
        assert first.startswith("# ") and len(first) > 20, path
        assert path.parent.name.isdigit(), path
