"""What a model's reply holds: a module in a fenced block, or numbered old/new edits to the current kernel.
A small step takes either (`read_step_reply`).

Nothing here is silent. Extraction says why it found no code; every edit that does not apply is reported by
number and reason, so the next prompt can tell the model.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

__all__ = [
    "Edit",
    "EditOutcome",
    "EditReport",
    "ExtractedCode",
    "StepReading",
    "apply_edits",
    "extract_code",
    "parse_edits",
    "read_step_reply",
    "syntax_problem",
]

# An opening fence (``` or more backticks, optional language tag), the body, and a closing fence of the same
# backticks on a line of its own. An unterminated block (a reply cut off mid-code) runs to the end of the text.
_FENCE = re.compile(
    r"^(?P<ticks>`{3,})[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n(?P<body>.*?)(?:(?P<close>^(?P=ticks)[ \t]*$)|\Z)", re.M | re.S
)
_PYTHON_TAGS = {"python", "py", "python3", ""}


@dataclass(frozen=True)
class ExtractedCode:
    code: str | None
    problem: str | None = None  # why no usable code was found, in words the model can act on
    unterminated: bool = False  # the block had no closing fence (the reply was probably cut off)


def extract_code(text: str) -> ExtractedCode:
    """The module in a reply: a fenced block tagged python or py, or an untagged one.

    With several blocks, the one that defines `ModelNew` wins (the last such one: models tend to show a
    sketch first and the answer last); failing that, the longest. A reply with no fence is not taken as code.
    """
    blocks: list[tuple[str, bool]] = []
    for match in _FENCE.finditer(text):
        if match.group("lang").lower() not in _PYTHON_TAGS:
            continue
        body = match.group("body")
        blocks.append((body.strip("\n"), match.group("close") is None))
    if not blocks:
        if not text.strip():
            return ExtractedCode(None, "the reply was empty")
        return ExtractedCode(None, "the reply has no fenced ```python block with the module")
    defining = [b for b in blocks if re.search(r"^class\s+ModelNew\b", b[0], re.M)]
    code, unterminated = defining[-1] if defining else max(blocks, key=lambda b: len(b[0]))
    if not code.strip():
        return ExtractedCode(None, "the ```python block is empty")
    return ExtractedCode(code + "\n", None, unterminated)


def syntax_problem(code: str) -> str | None:
    """Why the code does not parse, as the model should hear it; None when it parses."""
    try:
        ast.parse(code)
    except SyntaxError as exc:
        line = (exc.text or "").rstrip()
        return f"the code does not parse: {exc.msg} at line {exc.lineno}" + (f": `{line.strip()}`" if line else "")
    return None


@dataclass(frozen=True)
class Edit:
    number: int
    old: str
    new: str


_EDIT = re.compile(r"<old_str_(\d+)>\n?(.*?)\n?</old_str_\1>\s*<new_str_\1>\n?(.*?)\n?</new_str_\1>", re.S)


def parse_edits(text: str) -> list[Edit]:
    """The numbered `<old_str_N>…</old_str_N> <new_str_N>…</new_str_N>` pairs of a reply, in order."""
    return [Edit(int(m.group(1)), m.group(2), m.group(3)) for m in _EDIT.finditer(text)]


@dataclass(frozen=True)
class EditOutcome:
    number: int
    applied: bool
    problem: str | None = None


@dataclass
class EditReport:
    code: str
    outcomes: list[EditOutcome] = field(default_factory=list)

    @property
    def applied(self) -> int:
        return sum(o.applied for o in self.outcomes)

    def failures(self) -> list[EditOutcome]:
        return [o for o in self.outcomes if not o.applied]

    def describe_failures(self) -> str:
        return "; ".join(f"edit {o.number}: {o.problem}" for o in self.failures())


def _tolerant_pattern(old: str) -> re.Pattern[str]:
    """`old` line by line, ignoring trailing whitespace on each line."""
    lines = old.strip("\n").split("\n")
    return re.compile("\n".join(re.escape(line.rstrip()) + r"[ \t]*" for line in lines), re.M)


def apply_edits(code: str, edits: list[Edit]) -> EditReport:
    """Apply edits in order, each to the result of the ones before.

    An edit applies when its old text occurs exactly once: verbatim, or else line by line ignoring trailing
    whitespace and blank lines around it. Otherwise it is skipped and its outcome says why.
    """
    report = EditReport(code)
    for edit in edits:
        if not edit.old.strip():
            report.outcomes.append(EditOutcome(edit.number, False, "the old text is empty"))
            continue
        if edit.old == edit.new:
            report.outcomes.append(EditOutcome(edit.number, False, "the old and new text are the same"))
            continue
        current = report.code
        count = current.count(edit.old)
        if count == 1:
            report.code = current.replace(edit.old, edit.new, 1)
            report.outcomes.append(EditOutcome(edit.number, True))
            continue
        if count > 1:
            report.outcomes.append(
                EditOutcome(edit.number, False, f"the old text occurs {count} times; include more lines around it")
            )
            continue
        matches = list(_tolerant_pattern(edit.old).finditer(current))
        if len(matches) == 1:
            start, end = matches[0].span()
            report.code = current[:start] + edit.new.strip("\n") + current[end:]
            report.outcomes.append(EditOutcome(edit.number, True))
        elif matches:
            report.outcomes.append(
                EditOutcome(
                    edit.number, False, f"the old text occurs {len(matches)} times; include more lines around it"
                )
            )
        else:
            first = edit.old.strip("\n").split("\n")[0].strip()
            report.outcomes.append(
                EditOutcome(edit.number, False, f"the old text was not found in the kernel (it begins `{first[:80]}`)")
            )
    return report


@dataclass(frozen=True)
class StepReading:
    """The kernel a small step's reply makes, or why it makes none."""

    code: str | None
    problem: str | None = None  # why there is no kernel (code is None)
    partial: str | None = None  # what went partly wrong in a usable reply (edits that did not apply)
    form: str = ""  # "edits" or "module": how the reply was written


def _module_reading(text: str, truncated: bool) -> StepReading:
    extracted = extract_code(text)
    if extracted.code is None:
        problem = extracted.problem or "no code"
        if text.strip() and "no fenced" in problem:
            problem = "the reply holds neither a fenced ```python module nor numbered <old_str_N>/<new_str_N> edits"
        return StepReading(None, problem + (" (the reply was cut off at the token limit)" if truncated else ""))
    if truncated and extracted.unterminated:
        return StepReading(None, "the reply was cut off at the token limit in the middle of the module")
    if (bad := syntax_problem(extracted.code)) is not None:
        return StepReading(None, bad)
    return StepReading(extracted.code, form="module")


def read_step_reply(current: str, text: str, *, truncated: bool = False) -> StepReading:
    """The kernel a reply to a small step makes from `current`: its numbered edits applied, or the complete
    module it holds. Edits come first; a reply whose edits all fail but that also holds a module defining
    `ModelNew` is taken as that module."""
    edits = parse_edits(text)
    if not edits:
        return _module_reading(text, truncated)
    report = apply_edits(current, edits)
    if report.applied == 0:
        module = _module_reading(text, truncated)
        if module.code is not None and re.search(r"^class\s+ModelNew\b", module.code, re.M):
            return module
        return StepReading(None, "no edit applied: " + report.describe_failures())
    if (bad := syntax_problem(report.code)) is not None:
        return StepReading(None, f"after the edits, {bad}")
    partial = None
    if report.failures():
        partial = (
            f"{len(report.failures())} of {len(edits)} edits of the step that made this kernel did not apply "
            f"({report.describe_failures()})"
        )
    return StepReading(report.code, partial=partial, form="edits")
