"""Suites as a user names them: a directory of numbered problems or `examples`, `--ids`, and replay folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore.bench import parse_ids, read_suite, replay_files
from adaexplore.errors import RequestError

ROOT = Path(__file__).resolve().parents[2]
LEVEL2 = ROOT.parent / "shared" / "data" / "kernelbench" / "level2"


def _suite(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_text(f"# {name}\n")
    return folder


def test_ids_take_numbers_and_ranges_and_refuse_anything_else() -> None:
    assert parse_ids("1-3,17") == {1, 2, 3, 17}
    assert parse_ids(" 5 ") == {5}
    with pytest.raises(RequestError, match="runs backwards; write 3-9"):
        parse_ids("9-3")
    with pytest.raises(RequestError, match="'x' is not a problem number"):
        parse_ids("1,x")


def test_a_directory_suite_takes_numbered_problems_in_order(tmp_path: Path) -> None:
    folder = _suite(tmp_path, "10_Gemm.py", "2_Conv.py", "notes.py", "_helper.py")
    suite = read_suite(str(folder))
    assert [(p.id, p.name) for p in suite.problems] == [(2, "2_Conv"), (10, "10_Gemm")]
    picked = read_suite(str(folder), "10")
    assert [p.id for p in picked.problems] == [10]
    assert picked.hash != suite.hash  # the hash names exactly the problems picked
    (folder / "2_Conv.py").write_text("# edited\n")
    assert read_suite(str(folder)).hash != suite.hash  # and their contents


def test_bad_suites_get_messages_that_say_what_a_suite_is(tmp_path: Path) -> None:
    with pytest.raises(RequestError, match="does not exist"):
        read_suite(str(tmp_path / "nowhere"))
    empty = _suite(tmp_path, "readme.py")
    with pytest.raises(RequestError, match=r"holds no problems: .* named by number, like 17_Conv2d_ReLU\.py"):
        read_suite(str(empty))
    with pytest.raises(RequestError, match=r"picks none of the problems .* numbered 1-2,5"):
        read_suite(str(_suite(tmp_path / "b", "1_a.py", "2_b.py", "5_c.py")), "7-9")
    with pytest.raises(RequestError, match="two problems numbered 3"):
        read_suite(str(_suite(tmp_path / "c", "3_a.py", "03_b.py")))


def test_the_examples_suite_numbers_our_tasks_by_name() -> None:
    suite = read_suite("examples")
    names = [p.name for p in suite.problems]
    assert names == sorted(names) and "row_softmax" in names
    assert [p.id for p in suite.problems] == list(range(1, len(names) + 1))


def test_replay_files_match_by_id_or_by_name_and_say_what_was_expected(tmp_path: Path) -> None:
    suite = read_suite(str(_suite(tmp_path, "1_A.py", "2_B.py", "3_C.py")))
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "1.py").write_text("x")
    (kernels / "3_C.py").write_text("y")
    assert {k: v.name for k, v in replay_files(kernels, suite).items()} == {1: "1.py", 3: "3_C.py"}
    other = tmp_path / "other"
    other.mkdir()
    (other / "kernel_17.py").write_text("z")
    with pytest.raises(RequestError, match=r"Name each kernel by its problem's id \(1.py, 2.py, 3.py\).*kernel_17.py"):
        replay_files(other, suite)
    with pytest.raises(RequestError, match="is not a directory"):
        replay_files(tmp_path / "missing", suite)


@pytest.mark.skipif(not LEVEL2.is_dir(), reason="the KernelBench data (../shared/data/kernelbench) is not here")
def test_kernelbench_level2_reads_as_a_suite_of_a_hundred() -> None:
    suite = read_suite(str(LEVEL2))
    assert len(suite.problems) == 100 and suite.problems[0].id == 1 and suite.problems[-1].id == 100
    assert [p.id for p in read_suite(str(LEVEL2), "1-10,17").problems] == [*range(1, 11), 17]
