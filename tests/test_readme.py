"""The README opens with the two commands that work on a fresh machine, and CI runs the second; the README and
the pages of docs/ show only examples, commands and links that work."""

from pathlib import Path

from tests.conftest import ROOT


def documents() -> list[Path]:
    """The README, then every page of docs/ that it links."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


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

    blocks = [block for page in documents() for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)]
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

    blocks = [block for page in documents() for block in re.findall(r"```toml\n(.*?)```", page.read_text(), re.S)]
    assert len(blocks) >= 3
    for index, block in enumerate(blocks):
        path = tmp_path / f"settings-{index}.toml"
        path.write_text(block)
        Settings.load(path)  # unknown keys and bad values raise


def readme_commands() -> list[tuple[str, str]]:
    """Every adaexplore command line of the shell and terminal blocks of the README and the docs pages
    (continuations joined, comments and a `$ ` prompt dropped), with its file and line number."""
    return [command for page in documents() for command in page_commands(page)]


def page_commands(page: Path) -> list[tuple[str, str]]:
    import re

    lines = page.read_text().splitlines()
    where = page.relative_to(ROOT).as_posix()
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
                    found.append((f"{where} line {number}", part))
        index += 1
    return found


def test_every_command_the_readme_shows_takes_the_options_it_is_shown_with() -> None:
    import re
    import shlex

    from adaexplore.cli._main import _parser

    commands = readme_commands()
    assert len(commands) >= 25, commands
    for where, command in commands:
        argv = shlex.split(command)[1:]
        if "…" in command:
            continue  # an elided argument (`memory edit 12 "You cannot …"`)
        try:
            _parser().parse_args(argv)
        except SystemExit as exc:
            assert exc.code == 0, f"{where}: {command}"
        for word in argv:
            if re.match(r"(examples|adaexplore|benchmarks|tests)/", word):
                assert (ROOT / word).exists(), f"{where}: {word} is not in the repository"


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    import re

    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    headings = re.findall(r"^#+ (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_every_relative_link_of_the_readme_and_the_docs_leads_somewhere() -> None:
    import re

    checked = 0
    for page in documents():
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks hold no links
        text = re.sub(r"`[^`\n]*`(?!\])", "", text)  # nor do code spans, unless one is a link's text
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # https://, mailto: and the like
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: ({target})"
            assert linked.is_file() and linked.is_relative_to(ROOT), where
            if anchor and linked.suffix == ".md":
                assert anchor in _anchors(linked), where
            checked += 1
    assert checked >= 20, checked


def test_the_readme_links_every_docs_page_and_stays_short() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 260
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert pages
    for page in pages:
        assert f"](docs/{page.name})" in readme, page.name
