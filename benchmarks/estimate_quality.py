"""How well estimates rank and time kernels that a GPU measured: the measures `estimate_corpus.py` reports.

Rows are the corpus's (`estimate_corpus.corpus`) with `est_ms` and `est_ref_ms` (the kernel's and its reference's
estimates) added: Spearman's rank correlation of estimated and measured speedups per problem, the median
|log(estimated / measured)| of times and speedups, and how fast the kernel with the best estimate runs against
the fastest of its problem.
"""

from __future__ import annotations

import math
from statistics import median


def status(row: dict) -> str:
    """The GPU's verdict on a row: the H200 corpus's `h200_status`, or `status` of rows `measure.py --out` wrote."""
    return row.get("h200_status") or row.get("status") or ""


def spearman(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3:
        return None

    def ranks(values: list[float]) -> list[float]:
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    vy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (vx * vy) if vx and vy else None


def quality(rows: list[dict]) -> dict:
    timed = [r for r in rows if status(r) == "ok" and r.get("kernel_ms")]
    by_problem: dict[str, list[dict]] = {}
    for r in timed:
        by_problem.setdefault(r["problem"], []).append(r)
    rhos, picks = {}, {}
    for problem, members in sorted(by_problem.items()):
        est = [m["est_ref_ms"] / m["est_ms"] for m in members]
        meas = [m["strict_speedup"] for m in members]
        rho = spearman(est, meas)
        if rho is not None:
            rhos[problem] = rho
        if len(members) > 1:  # a problem of one kernel has nothing to choose between
            pick = max(members, key=lambda m: m["est_ref_ms"] / m["est_ms"])
            picks[problem] = pick["strict_speedup"] / max(meas)
    time_err = [abs(math.log(r["est_ms"] / r["kernel_ms"])) for r in timed]
    speed_err = [abs(math.log((r["est_ref_ms"] / r["est_ms"]) / r["strict_speedup"])) for r in timed]
    eager = {r["problem"]: (r["est_ref_ms"], r["eager_ms"]) for r in timed}
    eager_err = [abs(math.log(a / b)) for a, b in eager.values()]
    return {
        "kernels": len(timed),
        "problems": len(by_problem),
        "spearman": rhos,
        "spearman_mean": sum(rhos.values()) / len(rhos) if rhos else None,
        "median_abs_log_time": median(time_err) if time_err else None,
        "median_abs_log_speedup": median(speed_err) if speed_err else None,
        "median_abs_log_eager": median(eager_err) if eager_err else None,
        "best_pick": picks,
        "best_pick_geomean": math.exp(sum(math.log(v) for v in picks.values()) / len(picks)) if picks else None,
    }


def show(q: dict, title: str) -> None:
    print(f"\n{title}: {q['kernels']} timed kernels over {q['problems']} problems")
    for problem, rho in q["spearman"].items():
        print(f"  {problem:55s} spearman {rho:+.2f}   untimed best / fastest {q['best_pick'].get(problem, 1):.2f}")
    for key in ("spearman_mean", "median_abs_log_time", "median_abs_log_speedup", "median_abs_log_eager"):
        value = q[key]
        print(f"  {key:28s} {value:.3f}" if value is not None else f"  {key:28s} -")
    print(f"  {'best_pick_geomean':28s} {q['best_pick_geomean']:.3f}")


def show_sol(result: dict) -> None:
    rows = result["kernels"]
    print(f"{'kernel':55s} {'SOL ms':>8} {'before':>8} {'meas.':>6} {'before':>6} {'est.':>6} {'before':>6}")

    def cell(value: float | None) -> str:
        return f"{value:6.3f}" if value is not None else f"{'-':>6}"

    for r in rows:
        print(
            f"{r['kernel']:55s} {r['sol_ms']:8.4f} {r['before_ms']:8.4f} {cell(r['measured'])} "
            f"{cell(r['measured_before'])} {cell(r['estimated'])} {cell(r['estimated_before'])}"
        )
    for key in ("measured", "measured_before", "estimated", "estimated_before"):
        values = [(r[key], r["kernel"]) for r in rows if r[key] is not None]
        top = max(values) if values else (None, "-")
        result[f"max_{key}"] = top[0]
        over = sum(1 for v, _ in values if v > 1)
        print(f"max sol_fraction {key:17s} {cell(top[0])} ({top[1]}); {over} of {len(values)} over 1")
