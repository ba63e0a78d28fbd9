"""Suites, benches and their metrics, and the report pages."""

from adaexplore.bench._command import BenchOptions, list_benches, run_bench, show_bench
from adaexplore.bench._metrics import CLAMP, FAST_AT, BenchSummary, ProblemScore, SpeedupSummary, summarize
from adaexplore.bench._suite import EXAMPLES, Problem, Suite, parse_ids, read_suite, replay_files
from adaexplore.bench._table import bench_document, bench_summary, render_bench

__all__ = [
    "CLAMP",
    "EXAMPLES",
    "FAST_AT",
    "BenchOptions",
    "BenchSummary",
    "Problem",
    "ProblemScore",
    "SpeedupSummary",
    "Suite",
    "bench_document",
    "bench_summary",
    "list_benches",
    "parse_ids",
    "read_suite",
    "render_bench",
    "replay_files",
    "run_bench",
    "show_bench",
    "summarize",
]
