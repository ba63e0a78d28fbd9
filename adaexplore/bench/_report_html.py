"""Report pages as single self-contained HTML files: the templates, style and script beside this module
(assets/), the page's data embedded as JSON, and the tree and the plots drawn here as plain SVG.

A page makes no network request: everything it shows is in the file, and its Content-Security-Policy
forbids loading anything else. The tree is laid out in one pass over the nodes (leaves side by side in
depth-first order, a parent centred over its children), so a page of thousands of nodes renders quickly.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from adaexplore.bench._metrics import FAST_AT

__all__ = ["render_bench_html", "render_run_html"]

_ASSETS = Path(__file__).with_name("assets")
_DX, _DY, _MARGIN = 30, 64, 28  # a leaf's width, a level's height, the margin around the tree
_PLOT_W, _PLOT_H = 640, 230
_PLOT_LEFT, _PLOT_RIGHT, _PLOT_TOP, _PLOT_BOTTOM = 56, 16, 14, 40
# Bins of the speedup distribution, each (exclusive low, inclusive high]: Fast@p counts speedups above p, so
# every p in FAST_AT is a bin edge.
_BINS = ((0.0, 0.5), (0.5, 0.8), (0.8, 1.0), (1.0, 1.2), (1.2, 2.0), (2.0, 5.0), (5.0, math.inf))
assert all(any(p == high for _, high in _BINS) for p in FAST_AT)


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_ASSETS),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(speedup=_speedup, share=_share, seconds=_seconds, number=_number, css=_css_word)
    return env


@cache
def _asset(name: str) -> Markup:
    """A style sheet or script of ours, put into the page as it is (it holds no `</`)."""
    text = (_ASSETS / name).read_text()
    if "</" in text:
        raise AssertionError(f"assets/{name} must not contain '</': it would end the tag it sits in")
    return Markup(text)


def render_run_html(data: dict[str, Any], *, refresh_every: int | None = None) -> str:
    """A run's page from `run_page_data`; `refresh_every`: reload every so many seconds while the run is running
    (for a page served over HTTP; a file never reloads)."""
    run = data["run"]
    return (
        _environment()
        .get_template("run.html.j2")
        .render(
            data_json=_embed(data),
            run=run,
            layout=_tree(run),
            plot=_progress_plot(run),
            refresh=refresh_every if refresh_every and run["status"] == "running" else None,
            css=_asset("report.css"),
            script=_asset("report.js"),
        )
    )


def render_bench_html(data: dict[str, Any], *, refresh_every: int | None = None) -> str:
    """A bench's page from `bench_page_data`, each problem's run tree in it; `refresh_every` as for a run."""
    bench = data["bench"]
    owners = {p["run_id"]: p["name"] for p in data["problems"] if p["run_id"]}
    return (
        _environment()
        .get_template("bench.html.j2")
        .render(
            data_json=_embed(data),
            bench=bench,
            summary=data["summary"],
            notes=data["notes"],
            provenance=data["provenance"],
            problems=data["problems"],
            runs=[(run, _tree(run), owners.get(run["id"], run["task_name"])) for run in data["runs"]],
            plot=_distribution_plot(data["problems"]),
            fast_at=[f"{p:g}" for p in FAST_AT],
            refresh=refresh_every if refresh_every and bench["status"] == "running" else None,
            css=_asset("report.css"),
            script=_asset("report.js"),
        )
    )


def _embed(data: dict[str, Any]) -> Markup:
    """The data as JSON that cannot end its <script> element: every `<` (so `</script>` and `<!--` too) is
    written as the JSON escape \\u003c, which parses back to the same text."""
    try:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:  # an infinite or NaN number, which JSON.parse would refuse: written as null
        text = json.dumps(_finite(data), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _speedup(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} s"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _css_word(text: str | None) -> str:
    return re.sub(r"[^a-z_]", "", (text or "none").lower()) or "none"


def _tree(run: dict[str, Any]) -> dict[str, Any]:
    """Positions of the nodes and edges of a run's tree, in one pass (O(n))."""
    nodes = {n["id"]: n for n in run["nodes"]}
    children: dict[int, list[int]] = {}
    for node in run["nodes"]:
        if node["parent"] is not None:
            children.setdefault(node["parent"], []).append(node["id"])
    x: dict[int, float] = {}
    leaves = 0
    stack: list[tuple[int, bool]] = [(run["root_id"], False)] if run["root_id"] in nodes else []
    while stack:
        node_id, placed_children = stack.pop()
        kids = children.get(node_id, [])
        if not kids:
            x[node_id] = leaves
            leaves += 1
        elif placed_children:
            x[node_id] = (x[kids[0]] + x[kids[-1]]) / 2
        else:
            stack.append((node_id, True))
            stack.extend((kid, False) for kid in reversed(kids))
    depth = max((nodes[i]["depth"] for i in x), default=0)
    drawn, edges = [], []
    for node_id in sorted(x):
        node = nodes[node_id]
        cx, cy = _MARGIN + x[node_id] * _DX + _DX / 2, _MARGIN + node["depth"] * _DY
        speedup = node["speedup"]
        root = node["parent"] is None
        classes = ["node", f"k-{_css_word(node['kind'])}", f"s-{_css_word(node['status'])}"]
        if node["best_path"]:
            classes.append("on-path")
        if node_id == run["best_node_id"]:
            classes.append("best")
        drawn.append(
            {
                "id": node_id,
                "x": round(cx, 1),
                "y": round(cy, 1),
                "r": 7 if root or speedup is None else round(min(max(7 + 3 * math.log2(max(speedup, 1e-3)), 4), 16), 1),
                "root": root,
                "cls": " ".join(classes),
                "label": "root" if root else (f"{speedup:.2f}×" if speedup is not None else f"#{node_id}"),
                "title": _node_title(node),
            }
        )
        parent = node["parent"]
        if parent is not None and parent in x:
            classes = ["edge", f"k-{_css_word(node['kind'])}"] + (["on-path"] if node["best_path"] else [])
            edges.append(
                {
                    "x1": round(_MARGIN + x[parent] * _DX + _DX / 2, 1),
                    "y1": round(_MARGIN + nodes[parent]["depth"] * _DY, 1),
                    "x2": round(cx, 1),
                    "y2": round(cy, 1),
                    "cls": " ".join(classes),
                }
            )
    return {
        "width": max(leaves, 1) * _DX + 2 * _MARGIN,
        "height": depth * _DY + 2 * _MARGIN + 14,
        "nodes": drawn,
        "edges": edges,
    }


def _node_title(node: dict[str, Any]) -> str:
    if node["parent"] is None:
        return f"node {node['id']}: the root (no kernel)"
    measured = f", {node['speedup']:.2f}× vs eager" if node["speedup"] is not None else ""
    return (
        f"node {node['id']}: {node['kind']} step {node['step']} from node {node['parent']}, {node['status']}{measured}"
    )


def _ticks(high: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `high`."""
    raw = max(high, 1e-9) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [round(i * step, 10) for i in range(math.ceil(high / step - 1e-9) + 1)]


def _tick_label(value: float) -> str:
    return f"{value:g}"


def _axes(x_max: float, y_max: float, *, integer_x: bool) -> dict[str, Any]:
    """Scales and ticks of a plot with x in [0 or 1, x_max] and y in [0, y_max]."""
    inner_w = _PLOT_W - _PLOT_LEFT - _PLOT_RIGHT
    inner_h = _PLOT_H - _PLOT_TOP - _PLOT_BOTTOM
    y_ticks = _ticks(y_max)
    top = y_ticks[-1] or 1.0
    x_low = 1.0 if integer_x else 0.0
    span = max(x_max - x_low, 1.0)

    def sx(v: float) -> float:
        return round(_PLOT_LEFT + (v - x_low) / span * inner_w, 1)

    def sy(v: float) -> float:
        return round(_PLOT_TOP + inner_h - v / top * inner_h, 1)

    x_ticks = sorted({x_low, *(t for t in _ticks(x_max, 6) if t >= x_low)}) if integer_x else []
    return {
        "sx": sx,
        "sy": sy,
        "y_ticks": [{"y": sy(t), "label": _tick_label(t)} for t in y_ticks],
        "x_ticks": [{"x": sx(t), "label": _tick_label(t)} for t in x_ticks if float(t).is_integer()],
        "left": _PLOT_LEFT,
        "right": _PLOT_W - _PLOT_RIGHT,
        "top": _PLOT_TOP,
        "bottom": _PLOT_H - _PLOT_BOTTOM,
        "width": _PLOT_W,
        "height": _PLOT_H,
    }


def _progress_plot(run: dict[str, Any]) -> dict[str, Any]:
    """Best speedup after each step; where no speedup was measured, the number of correct kernels so far."""
    series = run["progress"]
    timed = run["timed"]
    label = (
        "Best speedup vs eager PyTorch after each step"
        if timed
        else "Correct kernels found after each step (speedups were not measured: no GPU timing on the machine "
        "that ran this search, so there is no speedup curve)"
    )
    values = [p["best_speedup"] if timed else p["correct"] for p in series]
    known = [v for v in values if v is not None]
    y_max = max([*known, 1.0]) * (1.1 if timed else 1.0)
    axes = _axes(max(len(series), 1), y_max, integer_x=True)
    sx, sy = axes.pop("sx"), axes.pop("sy")
    path, marks, last = [], [], None
    for index, value in enumerate(values, start=1):
        if value is None:
            continue
        x, y = sx(index), sy(value)
        if last is None:
            path.append(f"M{x},{y}")
        else:
            path.append(f"H{x}V{y}")
        if value != last:
            marks.append({"x": x, "y": y, "title": f"step {index}: {_speedup(value) if timed else value}"})
        last = value
    if last is not None:
        path.append(f"H{axes['right']}")
    return {
        **axes,
        "label": label,
        "y_label": "best speedup (×)" if timed else "correct kernels",
        "x_label": "step",
        "timed": timed,
        "path": "".join(path),
        "marks": marks,
        "baseline": sy(1.0) if timed else None,
        "empty": "no steps yet" if not series else ("no correct kernel yet" if not known else None),
    }


def _distribution_plot(problems: list[dict[str, Any]]) -> dict[str, Any]:
    """How many problems fall in each speedup bin, against eager PyTorch and against torch.compile."""
    labels = ["not correct", "not timed"] + [
        f"≤{high:g}×" if low == 0 else (f">{low:g}×" if high == math.inf else f"{low:g}–{high:g}×")
        for low, high in _BINS
    ]
    series: list[dict[str, Any]] = []
    for key, name in (("speedup", "vs eager PyTorch"), ("compile_speedup", "vs torch.compile")):
        counts = [0] * len(labels)
        for problem in problems:
            value = problem[key]
            if problem["status"] != "ok":
                counts[0] += 1
            elif value is None:
                counts[1] += 1
            else:
                counts[2 + next(i for i, (_, high) in enumerate(_BINS) if value <= high)] += 1
        series.append({"key": key, "name": name, "counts": counts, "timed": sum(counts[2:])})
    timed = any(s["timed"] for s in series)
    untimed = [s["name"] for s in series if not s["timed"]]
    # a baseline that was never timed would only repeat the eager bars' "not correct" and "not timed"
    series = [s for s in series if s["timed"]] or series[:1]
    axes = _axes(len(labels), max([1, *(c for s in series for c in s["counts"])]), integer_x=False)
    axes.pop("sx")
    sy = axes.pop("sy")
    slot = (axes["right"] - axes["left"]) / len(labels)
    width = slot * 0.72 / len(series)
    bars, categories = [], []
    for index, label in enumerate(labels):
        left = axes["left"] + index * slot
        categories.append({"x": round(left + slot / 2, 1), "label": label})
        for number, s in enumerate(series):
            count = s["counts"][index]
            y = sy(count)
            bars.append(
                {
                    "x": round(left + slot * 0.14 + number * width, 1),
                    "y": y,
                    "w": round(width * 0.94, 1),
                    "h": round(axes["bottom"] - y, 1),
                    "cls": f"bar {s['key']}",
                    "title": f"{label} {s['name']}: {count} problem{'' if count == 1 else 's'}",
                }
            )
    note = (
        "No speedup was measured (no GPU timing): every correct problem is in 'not timed'."
        if not timed
        else (f"No speedup was measured {untimed[0]}, so it has no bars." if untimed else None)
    )
    return {
        **axes,
        "label": "Speedups of the problems' kernels, vs eager PyTorch and vs torch.compile",
        "series": series,
        "bars": bars,
        "categories": categories,
        "note": note,
        "empty": "no problems" if not problems else None,
    }
