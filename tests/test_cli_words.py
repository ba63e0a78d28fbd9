"""The command line speaks its own words (`runs list`, `runs show RUN`, `explore --resume RUN`), never the MCP
tools' names, while the tools' own errors keep theirs; in process, on a real store with scripted verdicts."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from adaexplore.cli import main
from adaexplore.errors import AdaexploreError, ConflictError
from adaexplore.store import ClaimSpec, open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    CreateTaskRequest,
    ExpandNodeRequest,
    FinishRunRequest,
    SelectUctRequest,
    Services,
    StartRunRequest,
    compile_and_profile,
    create_task,
    expand_node,
    finish_run,
    select_uct,
    start_run,
)
from tests.conftest import fast_settings
from tests.fakes import FakeEvaluator, by_hash

TASK_FILE = Path(__file__).parent / "executor" / "data" / "scale_relu_task.py"
TOOLS = re.compile(
    r"\b(create_task|start_run|select_uct|expand_node|compile_and_profile|record_failure|confirm_rule|"
    r"get_skill_memory|get_node|get_run|best_kernel|finish_run)\b"
)


def run_cli(*args: str, home: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main([*args, "--home", str(home)])
    return int(done.value.code or 0), capsys.readouterr().err


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ADAEXPLORE_DB", "ADAEXPLORE_CLUSTER"):
        monkeypatch.delenv(name, raising=False)


def test_resuming_an_unknown_run_names_the_database_and_runs_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    code, err = run_cli("explore", "--resume", "run-nope", home=tmp_path, capsys=capsys)
    assert code == 2, err
    assert err.strip() == (
        f"adaexplore: error: no run has id 'run-nope' in {tmp_path / 'adaexplore.db'}; "
        "`adaexplore runs list` lists the runs"
    )


def test_an_unknown_rule_points_to_memory_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    code, err = run_cli("memory", "retire", "999", home=tmp_path, capsys=capsys)
    assert code == 2, err
    assert "no rule has id 999; `adaexplore memory list --all` lists the rules" in err
    assert not TOOLS.search(err), err


def _services(home: Path) -> Services:
    settings = fast_settings(home)
    return Services(settings=settings, store=open_store(settings.database_url), evaluator=FakeEvaluator(by_hash))


async def _one_step(svc: Services, run_id: str) -> None:
    chosen = select_uct(svc, SelectUctRequest(run_id=run_id))
    context = expand_node(svc, ExpandNodeRequest(run_id=run_id, node_id=chosen.node_id, action=chosen.action))
    await compile_and_profile(svc, CompileAndProfileRequest(code="# a kernel\n", expansion_id=context.expansion_id))


def _hold(svc: Services, run_id: str, kind: str) -> None:
    """A claim of another command on the run: a step being evaluated (large) or the run being finished."""
    root = svc.store.run(run_id).root_id
    svc.store.claim(lambda: ClaimSpec(run_id=run_id, parent_id=None if kind == "finish" else root, kind=kind))


async def _raised(attempt: Callable[[], object]) -> ConflictError:
    try:
        result = attempt()
        if hasattr(result, "__await__"):
            await result  # type: ignore[misc]
    except ConflictError as exc:
        return exc
    raise AssertionError("no conflict")


# each way another command can get to a run first, as the tools layer refuses it
RACES = {
    "finished": ("", "select"),
    "being finished": ("finish", "select"),
    "finish while finishing": ("finish", "finish"),
    "steps being evaluated": ("large", "select"),
    "finish while steps are evaluated": ("large", "finish"),
}


@pytest.mark.parametrize("race", sorted(RACES))
def test_a_lost_race_on_resume_exits_4_in_the_cli_words(
    race: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cli_env: None
) -> None:
    held, call = RACES[race]

    async def conflict() -> tuple[str, ConflictError]:
        svc = _services(tmp_path)
        task = create_task(svc, CreateTaskRequest(path=str(TASK_FILE)))
        run = start_run(svc, StartRunRequest(task_id=task.task_id, seed=1, total_steps=1))
        if race == "finished":
            await _one_step(svc, run.run_id)
            await finish_run(svc, FinishRunRequest(run_id=run.run_id))
        else:
            _hold(svc, run.run_id, held)
        if call == "select":
            exc = await _raised(lambda: select_uct(svc, SelectUctRequest(run_id=run.run_id)))
        else:
            exc = await _raised(lambda: finish_run(svc, FinishRunRequest(run_id=run.run_id)))
        svc.store.close()
        return run.run_id, exc

    run_id, exc = anyio.run(conflict)
    assert TOOLS.search(str(exc)), str(exc)  # an MCP client is told which tool to call

    async def explore(*_: object) -> int:
        raise exc

    monkeypatch.setattr("adaexplore.agent.explore", explore)
    code, err = run_cli("explore", "--resume", run_id, home=tmp_path, capsys=capsys)
    assert code == 4, err
    assert not TOOLS.search(err), err
    assert err.startswith(f"adaexplore: error: run {run_id} "), err
    assert f"`adaexplore runs show {run_id}`" in err and f"`adaexplore explore --resume {run_id}`" in err


def test_every_conflict_the_tools_raise_has_words_for_the_cli() -> None:
    """Every ConflictError of the tools layer that a command can meet carries a `cli=` text, which the command
    line prints, so that a new refusal cannot reach the terminal in the tools' words."""
    import ast

    raises: list[tuple[str, ast.Call]] = []
    for module in sorted((Path(__file__).parents[1] / "adaexplore" / "tools").rglob("*.py")):
        source = module.read_text()
        raises += [
            (source, node.exc)
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Raise)
            and isinstance(node.exc, ast.Call)
            and getattr(node.exc.func, "id", None) == "ConflictError"
        ]
    assert len(raises) >= 8
    # the one about an expansion's code sent twice concerns an MCP client alone: explore sends each code once
    reachable = [(s, call) for s, call in raises if "expansion" not in (ast.get_source_segment(s, call) or "")]
    missing = [ast.get_source_segment(s, c) for s, c in reachable if not any(k.arg == "cli" for k in c.keywords)]
    assert not missing, missing


def test_an_error_without_cli_words_is_shown_as_it_is() -> None:
    assert AdaexploreError("plain").in_cli_words() == "plain"
    assert AdaexploreError("for MCP", cli="for the CLI").in_cli_words() == "for the CLI"
    assert str(AdaexploreError("for MCP", cli="for the CLI")) == "for MCP"
