"""`adaexplore report RUN|BENCH --html FILE`: a run's or a bench's report as one self-contained HTML file."""

from __future__ import annotations

import argparse
from pathlib import Path

from adaexplore import tools
from adaexplore.cli._options import OneLineErrors
from adaexplore.cli._output import write_file
from adaexplore.config import Settings
from adaexplore.errors import NotFoundError, RequestError
from adaexplore.listing import first_of

__all__ = ["add_report_parser", "run_report"]

_LISTS = "`adaexplore runs list` and `adaexplore bench list` list them"


def add_report_parser(commands: argparse._SubParsersAction[OneLineErrors]) -> None:
    report = commands.add_parser(
        "report",
        help="write a run's or a bench's report as one HTML file (tree, verdicts, plots)",
        description="Write the report of a search run (its tree, each node's code, diff and verdict, the best "
        "speedup over the steps) or of a bench (its metrics, the problems' table, the speedup distribution and "
        "each problem's tree) as one self-contained HTML file that opens in any browser without a network. "
        "`adaexplore serve --http` serves the same pages at /runs/RUN and /benches/BENCH.",
    )
    report.add_argument("id", help="a run id (run-…, see `adaexplore runs list`) or a bench id (bench-…)")
    report.add_argument("--html", type=Path, required=True, metavar="FILE", help="the HTML file to write")


def run_report(args: argparse.Namespace, settings: Settings) -> int:
    """Write the report and print where it went.

    Raises:
        NotFoundError: the id names no run or bench (or there is no database).
        RequestError: the id is neither a run's nor a bench's, or the file cannot be written.
    """
    # here, not at the top: every command (`serve` among them) imports this module, and only this one needs them
    from adaexplore.bench._report_data import bench_page_data, run_page_data
    from adaexplore.bench._report_html import render_bench_html, render_run_html

    url = settings.database_url
    if not tools.database_exists(settings):  # a report creates no database
        raise NotFoundError(
            f"unknown id {args.id!r}: there is no database at {url.removeprefix('sqlite:///')}; set "
            "ADAEXPLORE_DB or ADAEXPLORE_HOME (or --home) to the one the run or bench was made in"
        )
    with tools.open_reader(settings) as svc:
        if args.id.startswith("run-"):
            data = run_page_data(svc, args.id)
            html = render_run_html(data)
            run = data["run"]
            what = f"run {run['id']} on task {run['task_name']}, {len(run['nodes'])} nodes"
        elif args.id.startswith("bench-"):
            data = bench_page_data(svc, args.id)
            html = render_bench_html(data)
            what = f"bench {data['bench']['id']} on {data['bench']['suite']}, {len(data['problems'])} problems"
        else:
            raise RequestError(_not_an_id(svc, args.id))
    write_file(args.html, html)
    print(f"wrote {args.html} ({_size(len(html.encode()))}): {what}; open it in a browser, no network needed")
    return 0


def _not_an_id(svc: tools.Services, given: str) -> str:
    runs = [r.id for r in tools.run_list(svc)]
    benches = [b.id for b in tools.bench_list(svc)]
    return (
        f"{given!r} is neither a run id (run-…) nor a bench id (bench-…); this store has "
        f"{_some(runs, 'run')} and {_some(benches, 'bench')}: {_LISTS}"
    )


def _some(ids: list[str], noun: str) -> str:
    plural = {"run": "runs", "bench": "benches"}[noun]
    if not ids:
        return f"no {plural}"
    shown = first_of(ids[::-1], 3)
    return f"{len(ids)} {noun if len(ids) == 1 else plural} ({shown})"


def _size(size: int) -> str:
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / 1024 / 1024:.1f} MiB"
