"""Progress around a long tool call: the stages tools/ reports, and a heartbeat in between, so that clients with
an idle timeout keep waiting through long silent stretches (the evaluator's start, reference timing)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from mcp.server.mcpserver import Context

from adaexplore.executor import ProgressUpdate

__all__ = ["HEARTBEAT_S", "Report", "with_progress"]

HEARTBEAT_S = 4.0

Result = TypeVar("Result")
Report = Callable[[ProgressUpdate], Awaitable[None]]


async def with_progress(ctx: Context, work: Callable[[Report], Awaitable[Result]]) -> Result:
    """Run `work` with a progress callback for tools/, and a heartbeat that repeats the last message every few
    seconds. Errors of `work` come out as they are, not wrapped in a task group's exception group."""
    started = time.perf_counter()
    last = {"message": "queued"}

    def elapsed() -> float:
        return round(time.perf_counter() - started, 1)

    async def report(update: ProgressUpdate) -> None:
        last["message"] = f"{update.stage}: {update.message}"
        await ctx.report_progress(elapsed(), None, last["message"])

    async def heartbeat() -> None:
        while True:
            await anyio.sleep(HEARTBEAT_S)
            await ctx.report_progress(elapsed(), None, f"{last['message']} (working)")

    await ctx.report_progress(0.0, None, "queued")
    outcome: list[Result] = []
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        try:
            outcome.append(await work(report))
        except Exception as exc:
            failure = exc
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    await ctx.report_progress(elapsed(), None, "done")
    return outcome[0]
