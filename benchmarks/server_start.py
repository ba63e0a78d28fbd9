"""How fast `adaexplore serve` answers a client that connects: the time from spawning the server over stdio to
its answer to `initialize`, then to `tools/list`, beside the time a fresh interpreter takes to import what the
server imports (the part of a start no server can save). The target (issue 27): `initialize` within 1 s.

    .venv/bin/python benchmarks/server_start.py [--starts 7]

Runs on any machine; the evaluator's own start (a worker importing torch and triton) runs in the background
and is not waited for by either answer.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]


def import_time() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import adaexplore.cli, adaexplore.server"], check=True, cwd=ROOT)
    return time.perf_counter() - started


async def one_start(home: Path) -> tuple[float, float]:
    env = dict(os.environ, ADAEXPLORE_HOME=str(home))
    env.pop("ADAEXPLORE_DB", None)
    params = StdioServerParameters(command=sys.executable, args=["-m", "adaexplore", "serve"], env=env, cwd=str(ROOT))
    started = time.perf_counter()
    async with Client(params) as client:
        initialize_s = time.perf_counter() - started
        started = time.perf_counter()
        await client.list_tools()
        return initialize_s, time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=7)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as home:
        for _ in range(args.starts):
            imports_s = import_time()
            initialize_s, list_s = await one_start(Path(home))
            rows.append((imports_s, initialize_s, list_s))
    print(f"{'imports s':>10} {'initialize s':>13} {'tools/list s':>13}")
    for imports_s, initialize_s, list_s in rows:
        print(f"{imports_s:>10.2f} {initialize_s:>13.2f} {list_s:>13.3f}")
    medians = [statistics.median(column) for column in zip(*rows, strict=True)]
    print(f"median {medians[0]:>4.2f} {medians[1]:>13.2f} {medians[2]:>13.3f}")


if __name__ == "__main__":
    anyio.run(main)
