"""The MCP server over stdio: round trip of `select_uct` on a 1000-node run, and the server's memory idle
and after 500 calls.

    python benchmarks/server_bench.py
    python benchmarks/server_bench.py --nodes 1000 --calls 500
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from search_bench import grow  # noqa: E402

from adaexplore.config import Settings  # noqa: E402
from adaexplore.store import open_store  # noqa: E402
from adaexplore.tools import Services  # noqa: E402


def server_rss_mib() -> float:
    """Resident memory of the `adaexplore serve` process this benchmark started."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            parent = (entry / "stat").read_text().split(") ")[1].split()[1]
        except (OSError, IndexError):
            continue
        if "adaexplore serve" in cmdline and parent == me:
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    raise RuntimeError("the server process was not found")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="adaexplore-server-bench-"))
    settings = Settings(home=home)
    store = open_store(settings.database_url)
    run_id = grow(Services(settings=settings, store=store, evaluator=None), args.nodes, seed=1)  # type: ignore[arg-type]
    store.close()
    env = dict(os.environ, ADAEXPLORE_HOME=str(home))
    params = StdioServerParameters(command=sys.executable, args=["-m", "adaexplore", "serve"], env=env, cwd=str(ROOT))
    async with Client(params) as client:
        await client.list_tools()
        await anyio.sleep(5)  # let the evaluator's workers finish starting
        idle = server_rss_mib()
        latencies = []
        for index in range(args.calls):
            start = time.perf_counter()
            result = await client.call_tool("select_uct", {"run_id": run_id})
            latencies.append((time.perf_counter() - start) * 1e3)
            assert not result.is_error, result.content[0].text
            if index % 5 == 4:  # a mix, as a session has: run state and nodes too
                await client.call_tool("get_run", {"run_id": run_id})
                await client.call_tool("get_node", {"node_id": result.structured_content["node_id"]})
        after = server_rss_mib()
    latencies.sort()
    p99 = latencies[int(0.99 * (len(latencies) - 1))]
    print(
        f"select_uct over stdio, {args.nodes}-node run, {args.calls} calls: p50 {statistics.median(latencies):.2f} ms,"
        f" p99 {p99:.2f} ms, max {latencies[-1]:.2f} ms"
    )
    print(f"server memory: {idle:.1f} MiB idle, {after:.1f} MiB after {args.calls + 2 * (args.calls // 5)} calls")


if __name__ == "__main__":
    anyio.run(main)
