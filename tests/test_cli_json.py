"""Every command's JSON option works one way (issue 40): `--json FILE` writes a file, `--json -` standard output, and
`--help` says so. `profile --json` alone, as it was before it took a FILE, is standard output; placed before the
task it would take the task as its FILE, which is refused with the form to use. A FILE is checked before anything
runs. (The outputs themselves, from real runs: tests/test_cli.py and tests/bench/test_bench_cli.py.)"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from adaexplore.cli import main
from adaexplore.cli._main import _parser

ROOT = Path(__file__).resolve().parents[1]
TASK = str(ROOT / "examples/tasks/row_softmax.py")
KERNEL = str(ROOT / "examples/kernels/row_softmax/correct.py")
DEFINITION = str(ROOT / "examples/flashinfer/definitions/rmsnorm/rmsnorm_h4096.json")


def _commands(parser: argparse.ArgumentParser, name: str = "adaexplore") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _commands(sub, f"{name} {sub_name}")
    return found


def test_every_json_option_takes_a_file_or_standard_output_and_its_help_says_which() -> None:
    having = []
    for name, parser in _commands(_parser()):
        for action in parser._actions:
            if "--json" in action.option_strings or "--csv" in action.option_strings:
                having.append(f"{name} {action.option_strings[0]}")
                assert action.metavar == "FILE", name
                assert "standard output" in (action.help or "") and "- " in (action.help or ""), name
                assert "standard output" in parser.format_help(), name
    assert sorted(having) == ["adaexplore bench --csv", "adaexplore bench --json", "adaexplore profile --json"]


@pytest.mark.parametrize(
    ("words", "json"),
    [
        ([TASK, KERNEL, "--json"], "-"),  # as before FILE: standard output
        ([TASK, KERNEL, "--json", "--mode", "paper"], "-"),
        ([TASK, KERNEL, "--json", "-"], "-"),
        (["--json", "-", TASK, KERNEL], "-"),
        ([TASK, KERNEL, "--json", "result.json"], "result.json"),
        ([TASK, KERNEL, "--json", "./-"], "./-"),  # a file named '-'
        ([TASK, KERNEL], None),
    ],
)
def test_profile_json_is_a_file_or_standard_output(words: list[str], json: str | None) -> None:
    assert _parser().parse_args(["profile", *words]).json == json


def _refused(argv: list[str], home: Path, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(["--home", str(home / "home"), *argv])
    assert exited.value.code == 2
    assert not (home / "home").exists()  # refused before anything ran
    return capsys.readouterr().err


def test_profile_json_before_the_task_is_refused_with_the_form_to_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(["profile", "--json", TASK, KERNEL], tmp_path, capsys)
    assert f"argument --json: {TASK} is a Python module, not the file to write the JSON to" in err
    assert "put --json after TASK and KERNEL, or give it a file (--json result.json) or - (standard output)" in err
    # a FlashInfer-Bench definition is not a module: what --json took leaves the kernel missing, and that is said
    err = _refused(["profile", "--json", DEFINITION, KERNEL], tmp_path, capsys)
    assert "the following arguments are required: kernel: --json took" in err and DEFINITION in err
    assert "write --json - for standard output" in err


def test_a_json_file_that_cannot_be_written_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere" / "result.json"
    err = _refused(["profile", TASK, KERNEL, "--json", str(missing)], tmp_path, capsys)
    assert f"argument --json: cannot write {missing}: the folder {missing.parent} does not exist" in err
    err = _refused(["bench", "examples", "--steps", "1", "--csv", str(tmp_path)], tmp_path, capsys)
    assert f"argument --csv: {tmp_path} is a folder: give a file to write, or - for standard output" in err
    err = _refused(["bench", "examples", "--steps", "1", "--json"], tmp_path, capsys)
    assert "argument --json: expected one argument: the file to write, or - for standard output" in err
    err = _refused(["bench", "show", "bench-1", "--json", "-", "--csv", "-"], tmp_path, capsys)
    assert "--json - and --csv - would both print on standard output: send one of them to a file" in err


def test_profile_json_does_not_write_over_the_task_or_the_kernel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    solution = tmp_path / "solution.json"
    solution.write_text("{}")
    err = _refused(["profile", DEFINITION, str(solution), "--json", str(solution)], tmp_path, capsys)
    assert f"--json {solution} would write over the task or the kernel; give another file" in err
    assert solution.read_text() == "{}"
