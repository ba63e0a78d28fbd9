"""The README opens with the two commands that work on a fresh machine, and CI runs the second."""

from tests.conftest import ROOT


def first_commands() -> list[str]:
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index("```sh")
    end = lines.index("```", start)
    return [line for line in lines[start + 1 : end] if line and not line.startswith("#")]


def test_readme_opens_with_run_and_test_commands() -> None:
    run, test = first_commands()
    assert run.startswith("./install.sh && .venv/bin/adaexplore explore examples/")
    assert test == "./install.sh --dev && .venv/bin/python -m pytest -n 2 --dist loadscope"


def test_ci_runs_the_readme_test_command() -> None:
    assert first_commands()[1] in (ROOT / ".ci" / "run").read_text()


def test_ci_checks_the_fast_lane_from_the_full_runs_report() -> None:
    """Both lanes in one run: the full suite writes a JUnit report, and .ci/lanes times its fast lane."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    full = next(i for i, line in enumerate(lines) if line.startswith(first_commands()[1]))
    assert lines[full] == first_commands()[1] + ' --junitxml="$junit"'
    assert lines[full + 1] == '.venv/bin/python .ci/lanes "$junit"'


def _lanes(tmp_path, cases: str, *args: str):  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    report = tmp_path / "report.xml"
    report.write_text(f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
    return subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "lanes"), str(report), *args], capture_output=True, text=True
    )


def _case(name: str, seconds: float, lane: str | None) -> str:
    properties = f'<properties><property name="lane" value="{lane}"/></properties>' if lane else ""
    return f'<testcase classname="tests.t" name="{name}" time="{seconds}">{properties}</testcase>'


def test_the_lanes_check_fails_when_the_fast_lane_is_over_its_budget_or_a_test_has_no_lane(tmp_path) -> None:
    ok = _lanes(tmp_path, _case("a", 100, "fast") + _case("b", 900, "slow"))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == (
        "lanes: fast 1 tests, 100 s of test time (about 50 s on 2 workers); slow 1 tests, 900 s"
    )
    slow = _lanes(tmp_path, _case("a", 300, "fast") + _case("b", 100, "fast"))
    assert slow.returncode == 1 and "over its 180 s" in slow.stderr and "tests.t::a" in slow.stderr
    unlaned = _lanes(tmp_path, _case("a", 1, "fast") + _case("b", 1, None))
    assert unlaned.returncode == 1 and "carry no lane property, e.g. tests.t::b" in unlaned.stderr


def test_the_example_paths_in_the_run_command_exist() -> None:
    run = first_commands()[0]
    for word in run.split():
        if word.startswith("examples/"):
            assert (ROOT / word).is_file(), word


def test_the_python_examples_run_as_written(tmp_path) -> None:
    import os
    import re
    import subprocess
    import sys

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 2
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
            env=dict(os.environ, ADAEXPLORE_HOME=str(tmp_path)),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.startswith("ok "), done.stdout


def test_the_settings_examples_load(tmp_path) -> None:
    import re

    from adaexplore.config import Settings

    blocks = re.findall(r"```toml\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 3
    for index, block in enumerate(blocks):
        path = tmp_path / f"settings-{index}.toml"
        path.write_text(block)
        Settings.load(path)  # unknown keys and bad values raise


def readme_commands() -> list[tuple[int, str]]:
    """Every adaexplore command line of the README's shell and terminal blocks (continuations joined, comments
    and a `$ ` prompt dropped), with its line number."""
    import re

    lines = (ROOT / "README.md").read_text().splitlines()
    found, fence, index = [], None, 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
        elif fence in ("sh", "text"):
            number = index + 1
            while line.endswith("\\") and index + 1 < len(lines):
                index += 1
                line = line[:-1] + " " + lines[index].strip()
            for part in line.removeprefix("$ ").split(" | ")[0].split(" && "):
                part = re.sub(r"\s+#.*$", "", part.strip())
                if re.match(r"(\S*/)?adaexplore ", part):
                    found.append((number, part))
        index += 1
    return found


def test_every_command_the_readme_shows_takes_the_options_it_is_shown_with() -> None:
    import re
    import shlex

    from adaexplore.cli._main import _parser

    commands = readme_commands()
    assert len(commands) >= 25, commands
    for number, command in commands:
        argv = shlex.split(command)[1:]
        if "…" in command:
            continue  # an elided argument (`memory edit 12 "You cannot …"`)
        try:
            _parser().parse_args(argv)
        except SystemExit as exc:
            assert exc.code == 0, f"README.md line {number}: {command}"
        for word in argv:
            if re.match(r"(examples|adaexplore|benchmarks|tests)/", word):
                assert (ROOT / word).exists(), f"README.md line {number}: {word} is not in the repository"
