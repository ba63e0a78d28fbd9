"""The tools, each a handler that calls its function in tools/ and answers with the result and a one-line
summary. Their parameters are the request models' fields (see `_requests`); what a handler adds here is the
title, the hints, the description a client reads, and progress around the calls that wait for the evaluator."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from adaexplore import tools
from adaexplore.executor import ProgressUpdate
from adaexplore.server._calls import acall, answer, call, evaluation_resources, lean_verdict, services
from adaexplore.server._progress import Report, with_progress
from adaexplore.server._requests import MAX_CODE, MAX_INTEGER, an_id, takes

__all__ = ["register_tools"]

# A hint left out is the protocol's default (readOnlyHint and idempotentHint false); destructiveHint and
# openWorldHint default to true, so they are always said.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(destructive_hint=False, open_world_hint=False)
# Registering the same task twice gives the same id and changes nothing.
IDEMPOTENT_WRITE = ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False)

BackendName = Literal["auto", "cuda", "compile", "interpret"]


def register_tools(mcp: MCPServer) -> None:
    _register_search(mcp)
    _register_memory(mcp)
    _register_reading(mcp)


def _register_search(mcp: MCPServer) -> None:
    @mcp.tool(title="Register a task", annotations=IDEMPOTENT_WRITE)
    @takes(source=Field(max_length=MAX_CODE), path=Field(), name=Field(max_length=100), small_sizes=Field())
    async def create_task(
        ctx: Context, request: tools.CreateTaskRequest
    ) -> Annotated[CallToolResult, tools.CreateTaskResult]:
        """Register a reference task (a PyTorch Model, KernelBench format); the same task gets the same task_id.
        A task that fails to load is refused with the reason. Next: start_run."""
        svc = services(ctx)

        async def check(report: Report) -> tools.CreateTaskResult:
            message = "loading the task in the evaluator's process"
            await report(ProgressUpdate(stage="loading", message=message, elapsed_s=0.0))
            return await acall(lambda: tools.create_checked_task(svc, request))

        # the task's own code runs here (a slow get_inputs, a big Model): progress keeps the client waiting
        result = await with_progress(ctx, check)
        degenerate = f"; {result.degenerate}" if result.degenerate else ""
        return answer(
            result,
            f"task {result.task_id} ({result.name}); Model({', '.join(result.init_params)}); {result.small_sizes_note}"
            + degenerate,
        )

    @mcp.tool(title="Start a search run", annotations=WRITES)
    @takes(
        task_id=Field(description="from create_task"),
        seed=Field(),
        total_steps=Field(le=100_000),
        preset=Field(),
        model=Field(max_length=200),
        mode=Field(description="evaluation protocol of every kernel of the run (default strict)"),
        backend=Field(description="where the run's kernels run (default auto)"),
    )
    async def start_run(
        ctx: Context, request: tools.StartRunRequest
    ) -> Annotated[CallToolResult, tools.StartRunResult]:
        """Open a search run on a task. It starts with an empty root; call select_uct next."""
        result = call(lambda: tools.start_run(services(ctx), request))
        return answer(result, f"run {result.run_id} on task {result.task_id}, root node {result.root_node_id}")

    @mcp.tool(title="Choose the next node (UCT)", annotations=READ_ONLY)
    @takes(run_id=Field(description="from start_run"))
    async def select_uct(
        ctx: Context, request: tools.SelectUctRequest
    ) -> Annotated[CallToolResult, tools.SelectUctResult]:
        """Pick the node to grow and the step (small: edit its kernel; large: write a new one) by UCT, with the
        scores that decided. Call expand_node next."""
        result = call(lambda: tools.select_uct(services(ctx), request))
        return answer(
            result,
            f"grow node {result.node_id} with a {result.action} step ({result.reason}); "
            f"step {result.steps_done + 1} of {result.steps_total}",
        )

    @mcp.tool(title="Get the context for a step", annotations=WRITES)
    @takes(
        run_id=Field(description="from start_run"),
        node_id=an_id("from select_uct"),
        action=Field(description="from select_uct: small or large"),
    )
    async def expand_node(
        ctx: Context, request: tools.ExpandNodeRequest
    ) -> Annotated[CallToolResult, tools.StepAnswer]:
        """What the next kernel needs, in `instructions`: the task, the kernel to edit and its history (small) or
        the best kernel of each line (large), the skill memory's rules when new to the run. Then call
        compile_and_profile with the expansion_id."""
        svc = services(ctx)
        result = call(lambda: tools.expand_node(svc, request))
        action, run_id, node_id = request.action, request.run_id, request.node_id
        kernels = f"{len(result.pool)} pool kernels" if action == "large" else "the kernel to edit"
        return answer(
            call(lambda: tools.step_answer(svc, result)),
            f"expansion {result.expansion_id}: a {action} step from node {node_id} ({kernels}); follow `instructions`",
            {"instructions": f"the {action}_step prompt with run_id={run_id!r}, node_id={node_id}"},
        )

    @mcp.tool(title="Compile, check and time a kernel", annotations=WRITES)
    @takes(
        code=Field(
            description="a Python module defining class ModelNew with Triton kernels", min_length=1, max_length=MAX_CODE
        ),
        expansion_id=an_id(),
        task_id=Field(),
        run_id=Field(description="or run, parent and action instead of expansion_id"),
        parent_id=an_id("the node grown (with run_id)"),
        action=Field(description="small or large (with run_id)"),
        mode=Field(description="protocol, for code evaluated with task_id alone (in a run: the run's, and no other)"),
        backend=Field(description="where to run, for code evaluated with task_id alone (in a run: the run's)"),
    )
    async def compile_and_profile(
        ctx: Context, request: tools.CompileAndProfileRequest
    ) -> Annotated[CallToolResult, tools.CompileAndProfileResult]:
        """Evaluate a kernel in an isolated worker: compile, check against the reference, time on the GPU (no GPU:
        check in Triton's interpreter, untimed). A failure is a normal result (`status`, `message`). With an
        expansion_id the result joins the run. After a failure, call record_failure."""
        svc = services(ctx)
        result = await with_progress(
            ctx, lambda progress: acall(lambda: tools.compile_and_profile(svc, request, progress=progress))
        )
        best = " (the new best)" if result.is_new_best else ""
        where = f"; added as node {result.node_id}{best}" if result.node_id is not None else ""
        if result.node_id is None and (request.run_id or request.expansion_id):
            where = "; not added to the tree: the evaluator failed, not the kernel; try again"
        whole = f"; the whole record: node://{result.node_id}/evaluation" if result.node_id is not None else ""
        # the verdict once, in `message`: not in this line, nor again in the evaluation
        return answer(
            lean_verdict(result),
            f"{result.status}{where}; the verdict is `message`{whole}",
            evaluation_resources("evaluation.", result.node_id),
        )


def _register_memory(mcp: MCPServer) -> None:
    @mcp.tool(title="Record a failure and its rule", annotations=WRITES)
    @takes(
        task_id=Field(description="the task the kernel was written for"),
        node_id=an_id(),
        rule=Field(max_length=400),
        status=Field(),
        error_text=Field(description="and its error message or traceback", max_length=MAX_CODE),
        code=Field(description="and the kernel's code", max_length=MAX_CODE),
    )
    async def record_failure(
        ctx: Context, request: tools.RecordFailureRequest
    ) -> Annotated[CallToolResult, tools.RecordFailureResult]:
        """Store a failure and count it toward the skill memory's rule for that mistake (matched by signature or
        by your rule's text). Returns the rule, its counts, and whether prompts now carry it."""
        svc = services(ctx)
        result = await acall(lambda: tools.record_failure(svc, request))
        return answer(result, result.message)

    @mcp.tool(title="Back a rule with a reproducer", annotations=WRITES)
    @takes(
        rule_id=an_id(),
        task_id=Field(),
        code=Field(min_length=1, max_length=MAX_CODE),
        backend=Annotated[BackendName | None, Field()],
    )
    async def confirm_rule(
        ctx: Context, request: tools.ConfirmRuleRequest
    ) -> Annotated[CallToolResult, tools.ConfirmRuleResult]:
        """Back an imported rule (scope unknown) with a small kernel that makes its mistake: if it fails in a way
        no other rule covers, the rule is scoped to this Triton and used in prompts."""
        svc = services(ctx)
        result = await with_progress(
            ctx, lambda progress: acall(lambda: tools.confirm_rule(svc, request, progress=progress))
        )
        return answer(result, result.message)

    @mcp.tool(title="Read the skill memory", annotations=READ_ONLY)
    @takes(
        format=Field(description="prompt: one block of text; data: the rules with their counts"),
        triton=Field(),
        min_occurrences=Field(description="occurrences a rule needs (default 3)", le=MAX_INTEGER),
        min_tasks=Field(description="distinct tasks a rule needs (default 2)", le=MAX_INTEGER),
        backend=Field(description="only rules that hold on this backend (default: any)"),
    )
    async def get_skill_memory(
        ctx: Context, request: tools.GetSkillMemoryRequest
    ) -> Annotated[CallToolResult, tools.GetSkillMemoryResult]:
        """The rules learned from earlier failures of Triton kernels ("You cannot …"), for the running Triton."""
        result = call(lambda: tools.get_skill_memory(services(ctx), request))
        count = f"{len(result.rules)} rules for Triton {result.triton}"
        if request.format == "data":
            return answer(result, count)
        # one copy of the text: the block, with the rules' counts left to format='data'; the summary says so, since
        # an empty `rules` beside "35 rules" reads as a memory that lists none
        return answer(
            result.model_copy(update={"rules": []}),
            f"{count} in `prompt`; format='data' lists the same rules with their ids and counts",
            {"prompt": "memory://current"},
        )


def _register_reading(mcp: MCPServer) -> None:
    @mcp.tool(title="Read a node", annotations=READ_ONLY)
    @takes(node_id=an_id("a node id"), include_code=Field(description="include the kernel's code"))
    async def get_node(ctx: Context, request: tools.GetNodeRequest) -> Annotated[CallToolResult, tools.NodeResult]:
        """A node of a run: its step, verdict, speedup, statistics, code and full evaluation."""
        result = call(lambda: tools.get_node(services(ctx), request))
        node_id = request.node_id
        speed = f", {result.speedup:.3f}x" if result.speedup is not None else ""
        resources = {"code": f"node://{node_id}/code"} | evaluation_resources("evaluation.", node_id)
        if result.kind == "root":
            return answer(result, f"node {node_id}: the root of run {result.run_id} (it has no kernel)", resources)
        return answer(result, f"node {node_id} ({result.kind} step {result.step}): {result.status}{speed}", resources)

    @mcp.tool(title="Read a run", annotations=READ_ONLY)
    @takes(run_id=Field())
    async def get_run(ctx: Context, request: tools.GetRunRequest) -> Annotated[CallToolResult, tools.RunResult]:
        """A run's progress: steps, counts by status, depth, best node. The tree is run://{run_id}/tree."""
        result = call(lambda: tools.get_run(services(ctx), request))
        best = f"best node {result.best_node_id}" if result.best_node_id is not None else "no correct kernel yet"
        stopped = f"; stopped: {result.stop_reason}" if result.status == "stopped" else ""
        text = f"run {result.run_id} ({result.status}): {result.steps_done}/{result.steps_total} steps, {best}{stopped}"
        return answer(result, text)

    @mcp.tool(title="Get the best kernel", annotations=READ_ONLY)
    @takes(run_id=Field())
    async def best_kernel(
        ctx: Context, request: tools.BestKernelRequest
    ) -> Annotated[CallToolResult, tools.BestKernelResult]:
        """The best correct kernel of a run: after finish_run, the winner of fresh re-measurements; before, the
        search's best (ties: the lowest static cost)."""
        result = call(lambda: tools.best_kernel(services(ctx), request))
        return answer(result, result.message, {"code": f"node://{result.node_id}/code"})

    @mcp.tool(title="Finish a run", annotations=WRITES)
    @takes(run_id=Field())
    async def finish_run(
        ctx: Context, request: tools.FinishRunRequest
    ) -> Annotated[CallToolResult, tools.FinishRunResult]:
        """End a run: evaluate its best few kernels again in fresh processes and choose the winner on those
        numbers. Call best_kernel afterwards."""
        svc = services(ctx)
        result = await with_progress(
            ctx, lambda progress: acall(lambda: tools.finish_run(svc, request, progress=progress))
        )
        return answer(result, result.message)
