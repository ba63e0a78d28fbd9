"""Drive a run step by step as an MCP client would, with scripted verdicts (used by the resume tests).

python tests/tools/drive_run.py DATABASE_URL RUN_ID STEPS [PAUSE_S]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from adaexplore.config import Settings
from adaexplore.errors import ConflictError, StoreError
from adaexplore.store import open_store
from adaexplore.tools import (
    CompileAndProfileRequest,
    ExpandNodeRequest,
    SelectUctRequest,
    Services,
    compile_and_profile,
    expand_node,
    select_uct,
)
from tests.fakes import FakeEvaluator, by_hash


async def main(url: str, run_id: str, steps: int, pause: float) -> None:
    svc = Services(settings=Settings(), store=open_store(url), evaluator=FakeEvaluator(by_hash))
    print("ready", flush=True)  # imports done: a test that kills this process times its kill from here
    while svc.store.run(run_id).steps < steps:
        try:
            chosen = select_uct(svc, SelectUctRequest(run_id=run_id))
            context = expand_node(svc, ExpandNodeRequest(run_id=run_id, node_id=chosen.node_id, action=chosen.action))
            code = f"# kernel at step {chosen.steps_done} from node {chosen.node_id} ({chosen.action})\n"
            await compile_and_profile(svc, CompileAndProfileRequest(code=code, expansion_id=context.expansion_id))
        except StoreError:
            continue  # another writer holds the database; try the step again
        except ConflictError:
            continue  # another writer's step changed the node chosen; choose again, as a client would
        time.sleep(pause)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
