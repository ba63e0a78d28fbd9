"""The MCP server: the tools, resources and prompts over tools/, and nothing more.

Every tool takes flat, typed parameters and returns structured output with a short text summary. A
kernel that fails is a normal result with its status; a call that cannot be answered (an unknown id, a
bad argument) is a tool error whose message says how to fix it. The server never exits on a bad call.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp import MCPError
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, Field, ValidationError

from adaexplore import __version__, tools
from adaexplore._runs_view import render_run_tree
from adaexplore.config import Settings
from adaexplore.errors import AdaexploreError, EvaluatorError, NotFoundError, RequestError, TaskError
from adaexplore.executor import Evaluation, ProgressUpdate, Status
from adaexplore.prompts import DistillContext, render_distill_rule
from adaexplore.server._arguments import check_arguments, explain_validation, our_message, shown
from adaexplore.server._pages import add_report_routes
from adaexplore.server._schema import compact_input, compact_output, one_line
from adaexplore.server._trim import trim
from adaexplore.store import MAX_INTEGER

__all__ = ["build_server"]

Model = TypeVar("Model", bound=BaseModel)
Action = Literal["small", "large"]
ModeName = Literal["strict", "kernelbench", "paper"]
BackendName = Literal["auto", "cuda", "compile", "interpret"]

# A hint left out is the protocol's default (readOnlyHint and idempotentHint false); destructiveHint and
# openWorldHint default to true, so they are always said.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(destructive_hint=False, open_world_hint=False)
# Registering the same task twice gives the same id and changes nothing.
IDEMPOTENT_WRITE = ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_HEARTBEAT_S = 4.0
_SCOPES = ["adaexplore"]
_MAX_CODE = 1_000_000

INSTRUCTIONS = (
    "adaexplore runs the AdaExplore search for fast, correct Triton kernels: you write the kernels, the server "
    "owns the search tree, the skill memory and the GPU. One step: select_uct (which node, small or large step) → "
    "expand_node (the context and instructions) → write a module defining ModelNew → compile_and_profile (with "
    "the expansion_id; the result joins the tree) → if it failed, record_failure with a one-sentence rule "
    "'You cannot …'. Start with create_task and start_run; read get_skill_memory before writing kernels."
)


class _StaticToken:
    def __init__(self, token: str) -> None:
        self._token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        return AccessToken(token=token, client_id="adaexplore", scopes=["adaexplore"]) if token == self._token else None


class _StrictServer(MCPServer):
    """An MCP server whose tools and prompts refuse arguments they do not take: a misspelt name would otherwise
    be dropped without a word, and the call would do something other than what was asked."""

    _schemas: dict[str, dict[str, Any]] | None = None  # each tool's input schema, as clients see it

    async def list_tools(self) -> list[MCPTool]:
        listed = await super().list_tools()
        for tool in listed:
            tool.input_schema = {**compact_input(tool.input_schema), "additionalProperties": False}
            tool.output_schema = compact_output(tool.output_schema)
            tool.description = one_line(tool.description)
        return listed

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        schemas = self._schemas
        if schemas is None:  # the tools are all registered before the first call, and never change after
            schemas = self._schemas = {t.name: t.input_schema for t in await self.list_tools()}
        if name not in schemas:
            raise ToolError(f"there is no tool {shown(name)}; the tools are {', '.join(sorted(schemas))}")
        # A misspelt argument would otherwise be dropped without a word, and the SDK would convert what it
        # can (true to 1): both are refused here, so that a call does only what it says.
        try:
            checked = check_arguments(name, arguments, schemas[name])
        except ValueError as exc:
            raise ToolError(our_message(name, str(exc), arguments)) from None
        try:
            return await super().call_tool(name, checked, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(explain_validation(name, exc.__cause__, arguments, schemas[name])) from exc.__cause__
            raise ToolError(our_message(name, str(exc), arguments)) from exc

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> GetPromptResult | InputRequiredResult:
        """A prompt asked for by a name we do not have, or with arguments missing or unknown, is refused with a
        message that names them: the SDK answers those with a bare "Internal server error"."""
        prompts = {prompt.name: prompt for prompt in await self.list_prompts()}
        if name not in prompts:
            raise MCPError(INVALID_PARAMS, f"there is no prompt {name!r}; the prompts are {', '.join(sorted(prompts))}")
        declared = prompts[name].arguments or []
        given = set(arguments or {})
        missing = sorted(arg.name for arg in declared if arg.required and arg.name not in given)
        unknown = sorted(given - {arg.name for arg in declared})
        if missing or unknown:
            wrong = [
                f"{', '.join(missing)} missing" if missing else "",
                f"{', '.join(unknown)} unknown" if unknown else "",
            ]
            raise MCPError(
                INVALID_PARAMS,
                f"prompt {name} takes {', '.join(arg.name for arg in declared)}: "
                f"{'; '.join(part for part in wrong if part)}",
            )
        return await super().get_prompt(name, arguments, context)


def _services(ctx: Context) -> tools.Services:
    return ctx.request_context.lifespan_context  # type: ignore[no-any-return]


def _answer(
    result: BaseModel, summary: str, resources: dict[str, str] | None = None, last: tuple[str, ...] = ()
) -> CallToolResult:
    data = trim(json.loads(result.model_dump_json()), resources or {}, last=last)
    return CallToolResult(content=[TextContent(type="text", text=summary)], structured_content=data)


def _call(function: Callable[[], Model]) -> Model:
    try:
        return function()
    except AdaexploreError as exc:
        raise ToolError(str(exc)) from exc


async def _acall(function: Callable[[], Awaitable[Model]]) -> Model:
    try:
        return await function()
    except EvaluatorError as exc:
        raise ToolError(f"the evaluator failed (not your kernel): {exc}; try again") from exc
    except AdaexploreError as exc:
        raise ToolError(str(exc)) from exc


async def _with_progress(
    ctx: Context, work: Callable[[Callable[[ProgressUpdate], Awaitable[None]]], Awaitable[Model]]
) -> Model:
    """Run `work` with a progress callback for tools/, and a heartbeat that repeats the last message every few
    seconds, so that clients with idle timeouts keep waiting through long silent stretches (reference
    timing, say). Errors of `work` come out as they are, not wrapped in a task group's exception group."""
    started = time.perf_counter()
    last = {"message": "queued"}

    async def report(update: ProgressUpdate) -> None:
        last["message"] = f"{update.stage}: {update.message}"
        await ctx.report_progress(round(time.perf_counter() - started, 1), None, last["message"])

    async def heartbeat() -> None:
        while True:
            await anyio.sleep(_HEARTBEAT_S)
            await ctx.report_progress(round(time.perf_counter() - started, 1), None, f"{last['message']} (working)")

    await ctx.report_progress(0.0, None, "queued")
    outcome: Model | None = None
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        try:
            outcome = await work(report)
        except Exception as exc:
            failure = exc
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    await ctx.report_progress(round(time.perf_counter() - started, 1), None, "done")
    assert outcome is not None
    return outcome


def _evaluation_resources(prefix: str, node_id: int | None) -> dict[str, str]:
    if node_id is None:
        return {}
    return {
        f"{prefix}error.traceback": f"node://{node_id}/evaluation",
        f"{prefix}output": f"node://{node_id}/evaluation",
    }


def build_server(
    settings: Settings,
    *,
    token: str | None = None,
    services: Callable[[Settings], contextlib.AbstractAsyncContextManager[tools.Services]] = tools.open_services,
    transport_security: TransportSecuritySettings | None = None,
) -> MCPServer:
    """The adaexplore MCP server. `token`: require this bearer token on HTTP. `services`: what the lifespan
    opens (tests pass services with a scripted evaluator). `transport_security`: the Host/Origin guard that
    HTTP is served with, which the report pages (`/runs/RUN`, `/benches/BENCH`) apply as `/mcp` does."""
    running: list[tools.Services] = []  # the lifespan's services while it is open, for the report pages

    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[tools.Services]:
        async with services(settings) as opened:
            running.append(opened)
            try:
                yield opened
            finally:
                running.remove(opened)

    auth = {}
    if token is not None:
        auth = {
            "token_verifier": _StaticToken(token),
            "auth": AuthSettings(
                issuer_url="http://127.0.0.1:9/",
                resource_server_url=None,  # type: ignore[arg-type]
                required_scopes=_SCOPES,
            ),
        }
    mcp = _StrictServer("adaexplore", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan, **auth)
    _register_tools(mcp)
    _register_resources(mcp)
    _register_prompts(mcp)
    add_report_routes(
        mcp,
        lambda: running[0].store if running else None,
        guard=transport_security,
        scopes=_SCOPES if token is not None else None,
    )
    return mcp


def _register_tools(mcp: MCPServer) -> None:
    @mcp.tool(title="Register a task", annotations=IDEMPOTENT_WRITE)
    async def create_task(
        ctx: Context,
        source: Annotated[
            str | None,
            Field(
                description="the task module's text: class Model, get_inputs(), get_init_inputs() (KernelBench format)",
                max_length=_MAX_CODE,
            ),
        ] = None,
        path: Annotated[str | None, Field(description="or the path of a task file on the server's machine")] = None,
        name: Annotated[str | None, Field(description="a short name for the task", max_length=100)] = None,
        small_sizes: Annotated[
            dict[str, int | float] | None,
            Field(description="sizes for CPU checks (module-level names to numbers); {}: none; default: derived"),
        ] = None,
    ) -> Annotated[CallToolResult, tools.CreateTaskResult]:
        """Register a reference task (a PyTorch Model, KernelBench format) and get its task_id; the same task
        always gets the same id. The task is loaded once in the evaluator, so code that fails is refused with the
        reason. Next: start_run, or compile_and_profile with the task_id for one kernel."""
        request = tools.CreateTaskRequest(source=source, path=path, name=name, small_sizes=small_sizes)

        async def check(report: Callable[[ProgressUpdate], Awaitable[None]]) -> tools.CreateTaskResult:
            await report(
                ProgressUpdate(stage="loading", message="loading the task in the evaluator's process", elapsed_s=0.0)
            )
            return await _acall(lambda: tools.create_checked_task(_services(ctx), request))

        # the task's own code runs here (a slow get_inputs, a big Model): progress keeps the client waiting
        result = await _with_progress(ctx, check)
        return _answer(
            result,
            f"task {result.task_id} ({result.name}); Model({', '.join(result.init_params)}); {result.small_sizes_note}",
        )

    @mcp.tool(title="Start a search run", annotations=WRITES)
    async def start_run(
        ctx: Context,
        task_id: Annotated[str, Field(description="from create_task")],
        seed: Annotated[int | None, Field(description="random seed (default: drawn)", ge=0, le=MAX_INTEGER)] = None,
        total_steps: Annotated[int | None, Field(description="evaluations in the run", ge=1, le=100_000)] = None,
        preset: Annotated[
            Literal["default", "paper"] | None, Field(description="'paper': the authors' exact behaviour")
        ] = None,
        model: Annotated[
            str, Field(description="who writes the kernels (for the record)", max_length=200)
        ] = "external",
        mode: Annotated[
            ModeName | None, Field(description="evaluation protocol of every kernel of the run (default strict)")
        ] = None,
        backend: Annotated[BackendName | None, Field(description="where the run's kernels run (default auto)")] = None,
    ) -> Annotated[CallToolResult, tools.StartRunResult]:
        """Open a search run on a task. It starts with an empty root; call select_uct next."""
        result = _call(
            lambda: tools.start_run(
                _services(ctx),
                tools.StartRunRequest(
                    task_id=task_id,
                    seed=seed,
                    total_steps=total_steps,
                    preset=preset,
                    model=model,
                    mode=mode,
                    backend=backend,
                ),
            )
        )
        return _answer(result, f"run {result.run_id} on task {result.task_id}, root node {result.root_node_id}")

    @mcp.tool(title="Choose the next node (UCT)", annotations=READ_ONLY)
    async def select_uct(
        ctx: Context,
        run_id: Annotated[str, Field(description="from start_run")],
    ) -> Annotated[CallToolResult, tools.SelectUctResult]:
        """Pick the node to grow and the step (small: edit its kernel; large: write a new one) by UCT; the trail
        shows the scores that decided. Call expand_node next."""
        result = _call(lambda: tools.select_uct(_services(ctx), tools.SelectUctRequest(run_id=run_id)))
        return _answer(
            result,
            f"grow node {result.node_id} with a {result.action} step ({result.reason}); "
            f"step {result.steps_done + 1} of {result.steps_total}",
        )

    @mcp.tool(title="Get the context for a step", annotations=WRITES)
    async def expand_node(
        ctx: Context,
        run_id: Annotated[str, Field(description="from start_run")],
        node_id: Annotated[int, Field(description="from select_uct", ge=1, le=MAX_INTEGER)],
        action: Annotated[Action, Field(description="from select_uct: small or large")],
    ) -> Annotated[CallToolResult, tools.StepAnswer]:
        """What you need to write the next kernel, in `instructions`: the task, the skill memory's rules, for a
        small step the kernel to edit and its recent history, for a large step the best kernel of each earlier
        line of search. Write the module, then call compile_and_profile with the returned expansion_id."""
        result = _call(
            lambda: tools.expand_node(
                _services(ctx), tools.ExpandNodeRequest(run_id=run_id, node_id=node_id, action=action)
            )
        )
        kernels = f"{len(result.pool)} pool kernels" if action == "large" else "the kernel to edit"
        return _answer(
            tools.StepAnswer.of(result),
            f"expansion {result.expansion_id}: a {action} step from node {node_id}; the instructions hold the task, "
            f"{kernels} and the skill memory's rules. Follow `instructions`.",
            {"instructions": f"the {action}_step prompt with run_id={run_id!r}, node_id={node_id}"},
        )

    @mcp.tool(title="Compile, check and time a kernel", annotations=WRITES)
    async def compile_and_profile(
        ctx: Context,
        code: Annotated[
            str,
            Field(
                description="a Python module defining class ModelNew with Triton kernels",
                min_length=1,
                max_length=_MAX_CODE,
            ),
        ],
        expansion_id: Annotated[
            int | None, Field(description="from expand_node: the result joins the tree", ge=1, le=MAX_INTEGER)
        ] = None,
        task_id: Annotated[str | None, Field(description="or a task id alone: evaluate without a tree")] = None,
        run_id: Annotated[str | None, Field(description="or run, parent and action instead of expansion_id")] = None,
        parent_id: Annotated[
            int | None, Field(description="the node grown (with run_id)", ge=1, le=MAX_INTEGER)
        ] = None,
        action: Annotated[Action | None, Field(description="small or large (with run_id)")] = None,
        mode: Annotated[
            ModeName | None,
            Field(description="protocol, for code evaluated with task_id alone (in a run: the run's, and no other)"),
        ] = None,
        backend: Annotated[
            BackendName | None,
            Field(description="where to run, for code evaluated with task_id alone (in a run: the run's)"),
        ] = None,
    ) -> Annotated[CallToolResult, tools.CompileAndProfileResult]:
        """Evaluate a kernel in an isolated worker: compile, check against the reference on fresh inputs, time on
        the GPU (without a GPU: check in Triton's interpreter, untimed). A failing kernel is a normal result:
        `status` and `message` say what went wrong. With an expansion_id the result joins the run as a node.
        After a failure, call record_failure."""
        svc = _services(ctx)
        request = tools.CompileAndProfileRequest(
            code=code,
            expansion_id=expansion_id,
            task_id=task_id,
            run_id=run_id,
            parent_id=parent_id,
            action=action,
            mode=mode,
            backend=backend,
        )
        result = await _with_progress(
            ctx, lambda progress: _acall(lambda: tools.compile_and_profile(svc, request, progress=progress))
        )
        best = " (the new best)" if result.is_new_best else ""
        where = f"; added as node {result.node_id}{best}" if result.node_id is not None else ""
        return _answer(
            result,
            f"{result.status}: {result.message}{where}",
            _evaluation_resources("evaluation.", result.node_id),
        )

    @mcp.tool(title="Record a failure and its rule", annotations=WRITES)
    async def record_failure(
        ctx: Context,
        task_id: Annotated[str, Field(description="the task the kernel was written for")],
        node_id: Annotated[
            int | None, Field(description="the failed node (from compile_and_profile)", ge=1, le=MAX_INTEGER)
        ] = None,
        rule: Annotated[
            str | None,
            Field(
                description="one sentence 'You cannot …' that would have prevented it, or 'no guidance'", max_length=400
            ),
        ] = None,
        status: Annotated[str | None, Field(description="or, without a node: the failure's status")] = None,
        error_text: Annotated[
            str | None, Field(description="and its error message or traceback", max_length=_MAX_CODE)
        ] = None,
        code: Annotated[str | None, Field(description="and the kernel's code", max_length=_MAX_CODE)] = None,
    ) -> Annotated[CallToolResult, tools.RecordFailureResult]:
        """Store a failure and count it toward the skill memory's rule for that mistake (matched by signature or
        by your rule's text). Returns the rule, its counts, and whether it is now put into prompts."""
        request = tools.RecordFailureRequest(
            task_id=task_id, node_id=node_id, rule=rule, status=status, error_text=error_text, code=code
        )
        result = await _acall(lambda: tools.record_failure(_services(ctx), request))
        return _answer(result, result.message)

    @mcp.tool(title="Back a rule with a reproducer", annotations=WRITES)
    async def confirm_rule(
        ctx: Context,
        rule_id: Annotated[
            int,
            Field(
                description="from get_skill_memory(format='data'), its `unconfirmed` list",
                ge=1,
                le=MAX_INTEGER,
            ),
        ],
        task_id: Annotated[str, Field(description="the task the reproducer is written for (from create_task)")],
        code: Annotated[
            str,
            Field(
                description="a module defining ModelNew whose kernel makes the rule's mistake",
                min_length=1,
                max_length=_MAX_CODE,
            ),
        ],
        backend: Annotated[BackendName | None, Field(description="where to run (default: auto)")] = None,
    ) -> Annotated[CallToolResult, tools.ConfirmRuleResult]:
        """Back an imported rule (scope unknown) with evidence: evaluate a small kernel that makes its mistake.
        If it fails in a way no other rule covers, the rule becomes curated, scoped to the server's Triton, and is
        put into prompts. A reproducer that passes, or shows another rule's mistake, changes nothing."""
        svc = _services(ctx)
        request = tools.ConfirmRuleRequest(rule_id=rule_id, task_id=task_id, code=code, backend=backend)
        result = await _with_progress(
            ctx, lambda progress: _acall(lambda: tools.confirm_rule(svc, request, progress=progress))
        )
        return _answer(result, result.message)

    @mcp.tool(title="Read the skill memory", annotations=READ_ONLY)
    async def get_skill_memory(
        ctx: Context,
        format: Annotated[
            Literal["prompt", "data"],
            Field(description="prompt: one block of text; data: the rules with their counts"),
        ] = "prompt",
        triton: Annotated[str | None, Field(description="Triton version to scope to (default: the server's)")] = None,
        min_occurrences: Annotated[
            int | None,
            Field(description="occurrences a rule needs (default 3)", ge=1, le=MAX_INTEGER),
        ] = None,
        min_tasks: Annotated[
            int | None,
            Field(description="distinct tasks a rule needs (default 2)", ge=1, le=MAX_INTEGER),
        ] = None,
        backend: Annotated[
            Literal["cuda", "compile", "interpret"] | None,
            Field(description="only rules that hold on this backend (default: any)"),
        ] = None,
    ) -> Annotated[CallToolResult, tools.GetSkillMemoryResult]:
        """The rules learned from earlier failures of Triton kernels ("You cannot …"), for the running Triton.
        Read them before writing a kernel."""
        result = _call(
            lambda: tools.get_skill_memory(
                _services(ctx),
                tools.GetSkillMemoryRequest(
                    format=format,
                    triton=triton,
                    min_occurrences=min_occurrences,
                    min_tasks=min_tasks,
                    backend=backend,
                ),
            )
        )
        count = f"{len(result.rules)} rules for Triton {result.triton}"
        if format == "data":
            return _answer(result, count)
        # one copy of the text: the block, with the rules' counts left to format='data'
        return _answer(result.model_copy(update={"rules": []}), f"{count}: `prompt`", {"prompt": "memory://current"})

    @mcp.tool(title="Read a node", annotations=READ_ONLY)
    async def get_node(
        ctx: Context,
        node_id: Annotated[int, Field(description="a node id", ge=1, le=MAX_INTEGER)],
        include_code: Annotated[bool, Field(description="include the kernel's code")] = True,
    ) -> Annotated[CallToolResult, tools.NodeResult]:
        """A node of a run: its step, verdict, speedup, statistics, code and full evaluation."""
        result = _call(
            lambda: tools.get_node(_services(ctx), tools.GetNodeRequest(node_id=node_id, include_code=include_code))
        )
        speed = f", {result.speedup:.3f}x" if result.speedup is not None else ""
        resources = {"code": f"node://{node_id}/code"} | _evaluation_resources("evaluation.", node_id)
        if result.kind == "root":
            return _answer(result, f"node {node_id}: the root of run {result.run_id} (it has no kernel)", resources)
        return _answer(result, f"node {node_id} ({result.kind} step {result.step}): {result.status}{speed}", resources)

    @mcp.tool(title="Read a run", annotations=READ_ONLY)
    async def get_run(
        ctx: Context,
        run_id: Annotated[str, Field(description="a run id")],
    ) -> Annotated[CallToolResult, tools.RunResult]:
        """A run's progress: steps, counts by status, depth, best node. The tree is run://{run_id}/tree."""
        result = _call(lambda: tools.get_run(_services(ctx), tools.GetRunRequest(run_id=run_id)))
        best = f"best node {result.best_node_id}" if result.best_node_id is not None else "no correct kernel yet"
        stopped = f"; stopped: {result.stop_reason}" if result.status == "stopped" else ""
        text = f"run {run_id} ({result.status}): {result.steps_done}/{result.steps_total} steps, {best}{stopped}"
        return _answer(result, text)

    @mcp.tool(title="Get the best kernel", annotations=READ_ONLY)
    async def best_kernel(
        ctx: Context,
        run_id: Annotated[str, Field(description="a run id")],
    ) -> Annotated[CallToolResult, tools.BestKernelResult]:
        """The best correct kernel of a run: after finish_run, the winner of fresh re-measurements; before, the
        best measured during the search."""
        result = _call(lambda: tools.best_kernel(_services(ctx), tools.BestKernelRequest(run_id=run_id)))
        return _answer(result, result.message, {"code": f"node://{result.node_id}/code"})

    @mcp.tool(title="Finish a run", annotations=WRITES)
    async def finish_run(
        ctx: Context,
        run_id: Annotated[str, Field(description="a run id")],
    ) -> Annotated[CallToolResult, tools.FinishRunResult]:
        """End a run: evaluate its best few kernels again in fresh processes and choose the winner on those
        numbers. Call best_kernel afterwards."""
        svc = _services(ctx)
        request = tools.FinishRunRequest(run_id=run_id)
        result = await _with_progress(
            ctx, lambda progress: _acall(lambda: tools.finish_run(svc, request, progress=progress))
        )
        return _answer(result, result.message)


def _register_resources(mcp: MCPServer) -> None:
    def services(ctx: Context) -> tools.Services:
        return _services(ctx)

    def resolved(function: Callable[[], str]) -> str:
        # An id that names nothing is the -32602 "not found" answer; any other refusal keeps its message too.
        try:
            return function()
        except NotFoundError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except AdaexploreError as exc:
            raise ResourceError(str(exc)) from exc

    def node_number(node_id: str, what: str) -> int:
        try:
            return int(node_id)
        except ValueError:
            raise ResourceNotFoundError(
                f"node://{node_id}/{what} names no node: a node id is a whole number (compile_and_profile and "
                f"get_run give them), as in node://12/{what}"
            ) from None

    @mcp.resource("task://{task_id}", mime_type="text/x-python", description="a task's source")
    def task_source(task_id: str, ctx: Context) -> str:
        return resolved(lambda: services(ctx).store.task(task_id).source)

    @mcp.resource("node://{node_id}/code", mime_type="text/x-python", description="a node's kernel")
    def node_code(node_id: str, ctx: Context) -> str:
        number = node_number(node_id, "code")

        def read() -> str:
            node = services(ctx).store.node(number)
            if node.parent_id is None:
                raise ResourceNotFoundError(f"node {number} is a run's root: it holds the task, not a kernel")
            return node.code

        return resolved(read)

    @mcp.resource(
        "node://{node_id}/evaluation", mime_type="application/json", description="a node's whole evaluation, untrimmed"
    )
    def node_evaluation(node_id: str, ctx: Context) -> str:
        number = node_number(node_id, "evaluation")

        def read() -> str:
            store = services(ctx).store
            node = store.node(number)
            if node.evaluation_id is None:
                raise ResourceNotFoundError(
                    f"node {number} has no evaluation: only the nodes compile_and_profile made have one, "
                    "not a run's root"
                )
            return store.evaluation(node.evaluation_id).result

        return resolved(read)

    @mcp.resource("run://{run_id}/tree", mime_type="text/plain", description="a run as an indented tree")
    def run_tree(run_id: str, ctx: Context) -> str:
        return resolved(lambda: render_run_tree(services(ctx).store, run_id))

    @mcp.resource(
        "memory://{scope}",
        mime_type="text/plain",
        description="the skill memory as a prompt block; scope: 'current' (the running Triton) or a version",
    )
    def memory_rules(scope: str, ctx: Context) -> str:
        if not scope.strip():
            raise ResourceNotFoundError(
                "memory:// needs a scope: memory://current (the running Triton) or a version, as in memory://3.6.0"
            )
        request = tools.GetSkillMemoryRequest(triton=None if scope == "current" else scope)
        return resolved(lambda: tools.get_skill_memory(services(ctx), request).prompt or "")


def _register_prompts(mcp: MCPServer) -> None:
    @mcp.prompt(title="One small step", description="the instructions to edit a node's kernel (a small step)")
    def small_step(run_id: str, node_id: str, ctx: Context) -> str:
        return _step_prompt(ctx, run_id, node_id, "small")

    @mcp.prompt(title="One large step", description="the instructions to write a new kernel from the pool")
    def large_step(run_id: str, node_id: str, ctx: Context) -> str:
        return _step_prompt(ctx, run_id, node_id, "large")

    @mcp.prompt(title="Distill a failure", description="turn a failed node into a one-sentence 'You cannot …' rule")
    def distill_failure(node_id: str, ctx: Context) -> str:
        number = _prompt_node_id(node_id)

        def render() -> str:
            store = _services(ctx).store
            node = store.node(number)
            if node.evaluation_id is None:
                raise MCPError(
                    INVALID_PARAMS,
                    f"node {number} has no evaluation to learn from (a run's root is never evaluated); "
                    "pass the node_id of a kernel that failed in compile_and_profile",
                )
            evaluation = Evaluation.model_validate_json(store.evaluation(node.evaluation_id).result)
            if evaluation.status is Status.ok:
                raise MCPError(
                    INVALID_PARAMS,
                    f"node {number} passed (status ok): nothing failed, so there is no rule to learn from it; pass "
                    "the node_id of a kernel that failed",
                )
            error = (
                evaluation.error.traceback if evaluation.error and evaluation.error.traceback else evaluation.message
            )
            return render_distill_rule(
                DistillContext(code=node.code, status=evaluation.status.value, error=error[-6000:])
            )

        return _prompt_call(render)


def _step_prompt(ctx: Context, run_id: str, node_id: str, action: Action) -> str:
    """The step's instructions, read without storing an expansion, and how to hand the kernel back."""
    number = _prompt_node_id(node_id)
    request = tools.ExpandNodeRequest(run_id=run_id, node_id=number, action=action)
    instructions = _prompt_call(lambda: tools.step_instructions(_services(ctx), request))
    return (
        f"{instructions}\n\nWhen the module is written, evaluate it with the adaexplore tool compile_and_profile "
        f"(code=<the module>, run_id={run_id!r}, parent_id={number}, action={action!r}): it joins run {run_id} "
        f"as a child of node {number}."
    )


def _prompt_node_id(node_id: str) -> int:
    try:
        return int(node_id)
    except ValueError:
        raise MCPError(
            INVALID_PARAMS,
            f"node_id must be a node's number (select_uct, compile_and_profile and get_run give them), not {node_id!r}",
        ) from None


def _prompt_call(function: Callable[[], str]) -> str:
    """A prompt's refusal as a JSON-RPC error that carries our message: the SDK turns any other exception
    from a prompt into a bare "Internal server error"."""
    try:
        return function()
    except (RequestError, TaskError) as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
    except AdaexploreError as exc:
        raise MCPError(INTERNAL_ERROR, str(exc)) from exc
