"""Suites, benches and their metrics, and the report pages. The bench command itself (`adaexplore.bench._command`,
which runs the search loop) loads only where it is used, so the report pages do not pull in the agent."""

from adaexplore.bench._metrics import CLAMP, FAST_AT, BenchSummary, ProblemScore, SpeedupSummary, summarize
from adaexplore.bench._suite import EXAMPLES, Problem, Suite, parse_ids, read_suite, replay_files
from adaexplore.bench._table import bench_document, bench_summary, render_bench

__all__ = [
    "CLAMP",
    "EXAMPLES",
    "FAST_AT",
    "BenchSummary",
    "Problem",
    "ProblemScore",
    "SpeedupSummary",
    "Suite",
    "bench_document",
    "bench_summary",
    "parse_ids",
    "read_suite",
    "render_bench",
    "replay_files",
    "summarize",
]
