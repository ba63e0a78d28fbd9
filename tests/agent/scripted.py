"""Helpers for driving `adaexplore` end to end against the fake OpenAI-compatible server: a model scripted by
prompt purpose, a settings file, and the CLI in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agent.fake_openai import Say
from tests.conftest import ON_GPU, ROOT

KEY = "sk-test-key"


def fenced(code: str) -> str:
    return f"Here is the module.\n```python\n{code}```\n"


def purpose(body: dict[str, Any]) -> str:
    first = body["messages"][0]["content"]
    if first.startswith("A Triton kernel failed"):
        return "distill"
    if first.startswith("A skill memory holds"):
        return "judge"
    if first.startswith("You review a Triton kernel"):
        return "review"
    if "Improve the current kernel" in first:  # a small step, after the skill memory's block
        return "tune"
    return "large"


class Scripted:
    """Answers by purpose: each purpose has a queue of replies, then a default."""

    def __init__(
        self, queues: dict[str, list[Say]], defaults: dict[str, Say | Callable[[dict[str, Any]], Say]]
    ) -> None:
        self.queues, self.defaults = queues, defaults
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.answers: list[Say] = []

    def __call__(self, body: dict[str, Any]) -> Say:
        kind = purpose(body)
        self.seen.append((kind, body))
        queue = self.queues.get(kind, [])
        default = self.defaults[kind]
        say = queue.pop(0) if queue else default(body) if callable(default) else default
        self.answers.append(say)
        return say


def current_kernel(body: dict[str, Any]) -> str:
    """The kernel a tune prompt asks to edit."""
    prompt = body["messages"][0]["content"]
    match = re.search(r"## The current kernel \(node \d+\).*?\n```python\n(.*?)\n```", prompt, re.S)
    assert match, prompt[-2000:]
    return match.group(1)


def rewrite_to(code: str) -> Callable[[dict[str, Any]], Say]:
    """A tuner that edits the whole current kernel into `code` (one edit, old text = the whole kernel)."""

    def answer(body: dict[str, Any]) -> Say:
        old = current_kernel(body)
        if old.strip() == code.strip():
            new = code.replace("x = x.contiguous()", "x = x.contiguous()  # same, once more")
        else:
            new = code
        return Say(f"<old_str_1>\n{old}\n</old_str_1>\n<new_str_1>\n{new}\n</new_str_1>")

    return answer


def write_config(path: Path, **agent: object) -> Path:
    lines = [
        "[executor]",
        "trial_timeout_s = 20.0",
        "[model]",
        "backoff_s = 0.01",
        "backoff_max_s = 0.05",
        "timeout_s = 1.5",
        "price_input_per_mtok = 1.0",
        "price_output_per_mtok = 2.0",
        "temperature = 0.7",
        "[agent]",
        *(f"{k} = {v!r}" if not isinstance(v, bool) else f"{k} = {str(v).lower()}" for k, v in agent.items()),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def cli_env(home: Path, key: str | None = KEY, backend: str | None = None) -> dict[str, str]:
    """The environment of a headless command in these tests. Without a GPU their kernels are checked by the
    interpreter alone (`backend`, default: auto on a GPU, else interpret): what they test is the loop, and the
    sm_90 compile check, which would double the CPU each step takes, is tested with the evaluator
    (tests/test_examples.py, tests/executor/)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["ADAEXPLORE_HOME"] = str(home)
    env["ADAEXPLORE_BACKEND"] = backend or ("auto" if ON_GPU else "interpret")
    if key is not None:
        env["OPENAI_API_KEY"] = key
    return env


def adaexplore(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adaexplore", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )
