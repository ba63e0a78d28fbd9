"""A headless `explore` of one run, as the command runs it, with the replay writer and scripted verdicts (used by
the shared-run test): it prints how many of the run's steps it took itself.

python tests/tools/explore_run.py DATABASE_URL RUN_ID OUT_DIR (where the best kernel's file goes)
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from adaexplore.agent import Explorer, ReplayWriter
from adaexplore.config import Settings
from adaexplore.store import open_store
from adaexplore.tools import Services
from tests.fakes import FakeEvaluator, by_hash

# Sample "kernels": the verdicts come from their hashes (tests.fakes.by_hash), so any module will do.
SAMPLES = {name: f"import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass  # {name}\n" for name in "abcdef"}
SAMPLES["correct"] = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass  # correct\n"


async def main(url: str, run_id: str, out_dir: str) -> None:
    svc = Services(settings=Settings(), store=open_store(url), evaluator=FakeEvaluator(by_hash))
    task_id = svc.store.run(run_id).task_id
    writer = ReplayWriter(kernels={task_id: SAMPLES}, svc=svc)
    explorer = Explorer(svc, writer, out_dir=Path(out_dir), memory_updates=False)
    summary = await explorer.run(run_id)
    taken = sum(1 for record in summary.records if record.node_id is not None)
    print(f"{summary.status} taken={taken}", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
