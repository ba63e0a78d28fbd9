"""`adaexplore memory …`: the skill memory on the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adaexplore.errors import RequestError
from adaexplore.listing import shorten
from adaexplore.tools import (
    RuleStatus,
    Services,
    describe_scope,
    edit_rule,
    export_memory,
    import_memory,
    injected,
    list_rules,
    rule_detail,
    running_triton,
    seed_starter_memory,
    set_rule_status,
)

__all__ = ["run_memory_command"]


def run_memory_command(svc: Services, args: argparse.Namespace) -> str:
    """Carry out one `memory` subcommand and return what to print.

    Raises:
        NotFoundError: the rule id is unknown.
        RequestError: an edit that is not a rule, an import file that is not one of the formats, or a file
            that cannot be read or written.
    """
    seeded = seed_starter_memory(svc)
    note = f"(added the {seeded} starter rules to this memory)\n" if seeded else ""
    command = args.memory_command
    if command == "list":
        return note + _list(svc, show_all=args.all)
    if command == "show":
        return _show(svc, args.rule)
    if command in ("retire", "pin", "activate"):
        statuses: dict[str, RuleStatus] = {"retire": "retired", "pin": "pinned", "activate": "active"}
        status = statuses[command]
        rule = set_rule_status(svc, args.rule, status)
        return f"rule {rule.id} is now {rule.status}"
    if command == "edit":
        rule = edit_rule(svc, args.rule, args.text)
        return f"rule {rule.id}: {rule.text}"
    if command == "export":
        text = export_memory(svc, args.format)
        if args.file == "-":
            return text.rstrip("\n")
        _write(Path(args.file), text)
        written, retired = len(list_rules(svc, ("active", "pinned"))), len(list_rules(svc, ("retired",)))
        if args.format != "paper":
            written, retired = written + retired, 0
        left_out = f"; {retired} retired rules left out, as this format cannot mark them" if retired else ""
        return f"wrote {written} rules to {args.file} ({args.format} format{left_out})"
    result = import_memory(svc, _read(args.file))
    notes = [
        f"{result.skipped} already present"
        + (f", {result.updated} of them updated with the file's evidence" if result.updated else "")
    ]
    if result.merged:
        notes.append(f"{result.merged} repeated in the file, merged into one rule each with their counts added up")
    if result.unpinned:
        notes.append(f"{result.unpinned} pinned in the file, added as active: pin them here if you trust them")
    return (
        f"imported {result.imported} rules ({'; '.join(notes)}); imported rules have an unknown scope until "
        "`adaexplore memory confirm` backs them with a reproducer"
        if result.imported
        else f"imported 0 rules ({'; '.join(notes)})"
    )


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except FileNotFoundError as exc:
        raise RequestError(f"cannot write {path}: the folder {path.parent} does not exist; create it first") from exc
    except IsADirectoryError as exc:
        raise RequestError(
            f"cannot write {path}: it is a folder; give a file name such as {path / 'memory.json'}"
        ) from exc
    except OSError as exc:
        raise RequestError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _read(file: str) -> str:
    """The import file's text ('-': standard input), or a RequestError saying why it cannot be read."""
    name = "standard input" if file == "-" else f"file {file}"
    try:
        if file == "-":
            return sys.stdin.buffer.read().decode("utf-8-sig")
        return Path(file).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RequestError(
            f"{name} is not UTF-8 text (byte {exc.start} cannot be decoded); import takes a JSON export of "
            "adaexplore or a text file of 'rule text||count' lines"
        ) from exc
    except FileNotFoundError as exc:
        raise RequestError(f"{name} does not exist") from exc
    except IsADirectoryError as exc:
        raise RequestError(f"{name} is a folder; give the file to import") from exc
    except OSError as exc:
        raise RequestError(f"cannot read {name}: {exc.strerror or exc}") from exc


def _list(svc: Services, *, show_all: bool) -> str:
    triton = running_triton()
    statuses: tuple[RuleStatus, ...] = ("active", "pinned", "retired") if show_all else ("active", "pinned")
    rules = list_rules(svc, statuses)
    if not rules:
        return "the memory has no rules"
    scopes = [describe_scope(rule) for rule in rules]
    # as wide as the widest scope, up to 30 characters; a longer one is cut with an ellipsis
    width = max(5, min(30, max(len(scope) for scope in scopes)))
    head = f"{'id':>5}  {'status':<8}{'source':<10}{'seen':>5}{'tasks':>6}  {'injected':<9}"
    lines = [f"{head}{'scope':<{width + 1}}rule"]
    for rule, scope in zip(rules, scopes, strict=True):
        on = "yes" if injected(rule, svc.settings.memory, triton) else "no"
        text, shown = shorten(rule.text, 90), shorten(scope, width)
        lines.append(
            f"{rule.id:>5}  {rule.status:<8}{rule.source:<10}{rule.occurrences:>5}{rule.tasks:>6}  {on:<9}"
            f"{shown:<{width + 1}}{text}"
        )
    lines.append(
        f"(injected: for triton {triton}, at {svc.settings.memory.min_occurrences} occurrences in "
        f"{svc.settings.memory.min_tasks} tasks; curated and pinned rules always)"
    )
    return "\n".join(lines)


def _show(svc: Services, rule_id: int) -> str:
    detail = rule_detail(svc, rule_id)
    rule = detail.rule
    lines = [
        f"rule {rule.id}: {rule.text}",
        f"status {rule.status}, source {rule.source}, scope {describe_scope(rule)}",
        f"seen {rule.occurrences} times in {rule.tasks} tasks; first {rule.first_seen or '-'}, "
        f"last {rule.last_seen or '-'}",
        "signatures:",
    ]
    lines += [f"  {sig}  {shorten(key, 150)}" for sig, key in detail.signatures] or ["  none"]
    failures = detail.failures
    older = f", the latest of {rule.occurrences} occurrences" if rule.occurrences > len(failures) else ""
    lines.append(f"recent failures ({len(failures)} shown{older}):")
    for failure in failures:
        text = failure.error_text if len(failure.error_text) <= 600 else failure.error_text[:600] + " …(trimmed)"
        lines.append(f"  #{failure.id} task {failure.task_id} {failure.status} {failure.created_at[:19]}")
        shown = text.splitlines()
        lines += [f"    {line}" for line in shown[:12]]
        if len(shown) > 12:
            lines.append(f"    … and {len(shown) - 12} more lines")
    return "\n".join(lines)
