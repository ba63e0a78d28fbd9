"""Stage 1: what the source alone shows, before any process runs it (size, syntax, the static policy)."""

from __future__ import annotations

import ast

from adaexplore.config import ExecutorConfig
from adaexplore.domain import AuditFlag, ErrorDetail, Status
from adaexplore.executor.pipeline.stages.context import Run, Verdict
from adaexplore.executor.policy import check_policy, defines_model_new, task_grants

__all__ = ["run"]


def run(ctx: Run, config: ExecutorConfig) -> None:
    """Raises:
    Verdict: the source is too large, empty, not Python, breaks the policy or defines no ModelNew.
    """
    size = len(ctx.code.encode())
    if size > config.max_source_bytes:
        raise Verdict(
            Status.rejected,
            f"the source is {size / 1e6:.1f} MB; the limit is "
            f"{config.max_source_bytes / 1e6:.1f} MB. Send only the module that defines ModelNew.",
        )
    if not ctx.code.strip():
        raise Verdict(Status.compile_error, "the source is empty; send a module that defines class ModelNew")
    try:
        tree = ast.parse(ctx.code, filename="candidate.py")
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        detail = ErrorDetail(
            type="SyntaxError",
            message=f"{exc.msg} ({where})",
            phase="parse",
            traceback=f"candidate.py, {where}: {exc.msg}\n{(exc.text or '').rstrip()}",
        )
        raise Verdict(Status.syntax_error, f"SyntaxError: {exc.msg} ({where})", detail) from exc
    grants = task_grants(ctx.task.source)  # what the task's own imports let its candidates use (numpy, einops)
    violations = check_policy(tree, source=ctx.code, grants=grants) if config.policy_on else []
    if violations:
        ctx.add_flags(
            [AuditFlag(code=v.code, severity="reject", message=f"line {v.line}: {v.message}") for v in violations]
        )
        raise Verdict(Status.rejected, f"line {violations[0].line}: {violations[0].message}")
    if not defines_model_new(tree):
        raise Verdict(
            Status.compile_error,
            "the module defines no ModelNew; define `class ModelNew(nn.Module)` "
            "with the same constructor arguments as Model",
        )
