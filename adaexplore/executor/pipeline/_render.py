"""An Evaluation as text for people: the verdict first, then how it was reached."""

from __future__ import annotations

import re

from adaexplore.domain import Evaluation, KernelCost, Stats, Tolerance

__all__ = ["render_evaluation", "static_cost_line", "static_cost_table", "verdict_lines"]

# the clauses a verdict's message opens with (stages/result.py joins them with "; "); a piece of the message that
# opens none of them goes on with the clause before it (a second kernel's static cost, a third warning)
_CLAUSE = re.compile(
    r"(correct in |compiles for |static cost |no GPU timed|estimated |no estimate|\d[\d.]*x the speed of "
    r"|\d+% of the speed of light|eager PyTorch reaches|warning: )"
)
_ESTIMATE_SHOWN = 6


def _tolerance(tol: Tolerance) -> str:
    if tol.kind == "allclose":
        where = f"({tol.dtype}, reference in {tol.reference_dtype})"
        return f"|out-ref| <= {tol.atol:g} + {tol.rtol:g}*|ref| per element {where}"
    if tol.kind == "either":
        return (
            f"|out-ref| <= {tol.atol:g} or |out-ref| <= {tol.rtol:g}*|ref| per element, FlashInfer-Bench's rule "
            f"({tol.dtype}, reference in {tol.reference_dtype})"
        )
    return (
        f"|out-ref| <= {tol.atol:g}*rms(ref) + {tol.rtol:g}*|ref| per element and ||out-ref||/||ref|| <= "
        f"{tol.norm_rtol:g} ({tol.dtype}, reference in {tol.reference_dtype})"
    )


def _stats(stats: Stats, statistic: str) -> str:
    return (
        f"{statistic} {stats.value(statistic):.4g} ms  (p10 {stats.p10_ms:.4g}, p90 {stats.p90_ms:.4g}, "
        f"min {stats.min_ms:.4g}, n={stats.n})"
    )


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}"


def _cost(c: KernelCost) -> str:
    if c.skipped is not None:
        return f"skipped: {c.skipped}"
    regs = "? registers" if c.registers is None else f"{c.registers} registers"
    spills = "no spills" if not (c.spill_stores or c.spill_loads) else f"spills {c.spill_stores}/{c.spill_loads} B"
    return f"{regs}, {spills}, {c.shared_memory or 0} B shared"


def static_cost_table(costs: list[KernelCost]) -> str:
    """Each kernel per config and size: registers per thread, spilled bytes (stores/loads), shared memory, and
    the assembler's warnings."""
    order = sorted(costs, key=lambda c: (c.kernel, c.sizes != "full", c.skipped is not None))
    lines = ["sm_90 static cost, per kernel and config (compiled, not run):"]
    for c in order:
        lines.append(f"  {c.kernel} [{c.sizes}] {c.config}: {_cost(c)}")
        lines.extend(f"    ptxas warning: {w}" for w in c.warnings)
        # the advisory's words and its fix are in the verdict's warnings (ptxas_advisory): here its code alone
        lines.extend(
            f"    ptxas advisory {a.split(':', 1)[0].removeprefix('ptxas ')} (see the warnings)" for a in c.advisories
        )
    return "\n".join(lines)


def static_cost_line(costs: list[KernelCost]) -> str:
    """One clause for a verdict's message: each kernel's cost at the largest size compiled, the configs skipped,
    and the assembler's warnings."""
    parts = []
    for name in sorted({c.kernel for c in costs}):
        own = [c for c in costs if c.kernel == name]
        sizes = "full" if any(c.sizes == "full" for c in own) else "small"
        kept = [c for c in own if c.sizes == sizes and c.skipped is None]
        skipped = [c for c in own if c.sizes == sizes and c.skipped is not None]
        if kept:
            regs = sorted({c.registers for c in kept if c.registers is not None})
            reg_text = "-".join(str(r) for r in (regs[:1] + regs[-1:] if len(regs) > 1 else regs)) or "?"
            spills = max(c.spill_stores + c.spill_loads for c in kept)
            shared = max(c.shared_memory or 0 for c in kept)
            text = (
                f"{name} at {sizes} sizes: {reg_text} registers, "
                + ("no spills" if not spills else f"{spills} B spilled")
                + f", {shared} B shared"
            )
            if len(kept) > 1:
                text += f" over {len(kept)} configs"
        else:
            text = f"{name} at {sizes} sizes: no config compiled"
        if skipped:
            text += f" ({len(skipped)} autotune config{'s' if len(skipped) != 1 else ''} skipped)"
        warnings = sorted({w for c in kept for w in c.warnings})
        if warnings:
            text += "; ptxas warns: " + "; ".join(warnings)
        parts.append(text)
    return "; ".join(parts)


def verdict_lines(message: str) -> list[str]:
    """A verdict's message as lines a person reads: one clause a line, and what a clause lists (the kernels of a
    static cost, an estimate's largest steps, the warnings) each on a line of its own below it, indented."""
    lines: list[str] = []
    listing = False
    for piece in message.split("; "):
        opens = _CLAUSE.match(piece) is not None
        if opens or not lines:
            if piece.startswith("static cost "):  # then each kernel: "static cost k1 at full sizes: …; k2 at …"
                head, sep, first = "static cost", " ", piece.removeprefix("static cost ")
            else:  # an estimate names its largest steps after its colon, the warnings theirs after "warning: "
                head, sep, first = piece.partition(": ")
            listing = bool(sep) and piece.startswith(("static cost ", "estimated ", "warning: "))
            lines.extend([head + ":", "  " + first] if listing else [piece])
        else:
            lines.append(("  " + piece) if listing else piece)
    return lines


def render_evaluation(ev: Evaluation, *, title: str = "") -> str:
    lines: list[str] = []

    def row(label: str, text: str) -> None:
        first, *rest = text.splitlines() or [""]
        lines.append(f"{label:<12}{first}")
        lines.extend(f"{'':<12}{line}" for line in rest)

    if title:
        lines.append(title)
    row("status", ev.status.value)
    row("verdict", "\n".join(verdict_lines(ev.message)))
    row(
        "mode",
        f"{ev.mode.value} on {' + '.join(b.value for b in ev.backends) or 'no backend'} ({ev.provenance.sizes} sizes)",
    )
    if ev.error is not None and ev.error.traceback:
        row("error", ev.error.traceback.rstrip()[-2500:])
    if ev.correctness is not None:
        c = ev.correctness
        row("tolerance", _tolerance(c.tolerance))
        table = ["#  seed          result  max|err|  err/tol  ||err||/||ref||"]
        labelled = [(f"{t.index + 1:<2}", t) for t in c.trials] + [("t ", t) for t in c.rechecks]
        for label, t in labelled:
            table.append(
                f"{label} {t.seed:<13} {'pass' if t.passed else 'FAIL':<7} {_num(t.max_abs_error):<9} "
                f"{_num(t.max_scaled_error):<8} {_num(t.norm_rel_error)}"
            )
        if c.rechecks:
            table.append("(t: outputs of timed calls, checked again)")
        row("trials", "\n".join(table))
    if ev.timing is not None:
        tm = ev.timing
        text = [
            f"method: {tm.method}",
            f"candidate  {_stats(tm.candidate, tm.statistic)}",
            f"reference  {_stats(tm.reference, tm.statistic)}{'  [cached]' if tm.reference_cached else ''}",
            f"speedup    {tm.speedup:.3f}x vs eager PyTorch",
        ]
        if tm.reference_compile is not None and tm.speedup_vs_compile is not None:
            text.insert(3, f"compiled   {_stats(tm.reference_compile, tm.statistic)}")
            text.append(f"           {tm.speedup_vs_compile:.3f}x vs torch.compile")
        elif tm.compile_error is not None:
            text.append(f"compiled   none: {tm.compile_error}")
        row("timing", "\n".join(text))
    elif ev.status.value == "ok":
        row("timing", "none: " + ("no GPU here, speed was not measured" if "cuda" not in ev.backends else "not timed"))
    speed = []
    if ev.speed_of_light is not None:
        sol = ev.speed_of_light
        paths = sorted(set((sol.matmul_paths or {"float32": sol.fp32_matmuls}).values()))
        taken = f" taken by {', '.join(paths)}" if sol.flops else ""
        speed.append(
            f"speed of light {sol.ms:.4g} ms on an {sol.gpu} ({sol.bound}-bound: {sol.bytes / 1e6:.4g} MB at least, "
            f"{sol.flops / 1e9:.4g} GFLOP of matrix products{taken})"
        )
        if sol.fraction is not None:
            speed.append(f"this kernel reaches {sol.fraction:.1%} of it, eager PyTorch {sol.reference_fraction:.1%}")
    if ev.estimate is not None:
        e = ev.estimate
        speed.append(f"estimate   {e.ms:.4g} ms vs eager's {e.reference_ms:.4g} ms: {e.speedup:.2f}x (not measured)")
        speed.extend(f"           {p.step} {p.ms:.4g} ms, {p.limit}: {p.detail}" for p in e.parts[:_ESTIMATE_SHOWN])
        if len(e.parts) > _ESTIMATE_SHOWN:
            left = e.parts[_ESTIMATE_SHOWN:]
            speed.append(f"           and {len(left)} more, {sum(p.ms for p in left):.4g} ms together")
    if speed:
        row("speed", "\n".join(speed))
    audit = []
    if ev.audit.triton_kernels:
        launches = f" ({ev.audit.triton_launches} launched per forward)" if ev.audit.triton_launches is not None else ""
        audit.append(f"Triton kernels: {', '.join(ev.audit.triton_kernels)}{launches}")
    if ev.audit.triton_time_share is not None:
        audit.append(f"{ev.audit.triton_time_share:.0%} of the GPU time of a forward is in these kernels")
    if ev.audit.shared_memory:
        audit.append("shared memory: " + ", ".join(f"{k} {v} B" for k, v in sorted(ev.audit.shared_memory.items())))
    if ev.audit.static_cost:
        audit.append(static_cost_table(ev.audit.static_cost))
    audit.extend(f"[{f.severity}] {f.code}: {f.message}" for f in ev.audit.flags)
    row("audit", "\n".join(audit) or "no flags")
    p = ev.provenance
    env = [
        p.gpu or "no GPU",
        f"driver {p.driver}" if p.driver else "",
        f"CUDA {p.cuda}" if p.cuda else "",
        f"torch {p.torch}",
        f"triton {p.triton}",
        f"python {p.python}",
    ]
    row("environment", ", ".join(e for e in env if e) + f"  [{p.environment}]")
    if p.seeds is not None:
        where = "GPU" if p.seeds.generator == "cuda" else "CPU"
        row("seeds", f"init {p.seeds.init}, timing {p.seeds.timing}, drawn on the {where}")
    row("phases", ", ".join(f"{k} {v:.3g} s" for k, v in ev.phases.items()))
    if ev.output.strip():
        row("output", ev.output.strip()[-1500:])
    return "\n".join(lines)
