"""Record the signature each starter reproducer fails with, for the Triton installed here.

    python tests/memory/refresh_starter_signatures.py

Run it when a reproducer is added or changed, or after moving to a new Triton once the stale rules
(named by tests/memory/test_starter.py) have been rewritten. It refuses to record a reproducer whose
status differs from its header.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from adaexplore.config import Settings  # noqa: E402
from adaexplore.executor import EvaluationOptions, Evaluator, load_task  # noqa: E402
from adaexplore.memory import STARTER_DIR, read_header, signature  # noqa: E402


async def main() -> None:
    signatures: dict[str, list[str]] = {}
    async with Evaluator(Settings(home=Path("/tmp/adaexplore-starter"))) as evaluator:
        for path in sorted((STARTER_DIR / "reproducers").glob("*.py")):
            header = read_header(path)
            code = path.read_text()
            result = await evaluator.evaluate(
                load_task(STARTER_DIR / "tasks" / f"{header['task']}.py"),
                code,
                EvaluationOptions(backend=header["backend"]),
            )
            if result.status.value != header["status"]:
                raise SystemExit(
                    f"{path.name}: status {result.status.value}, header says {header['status']}: {result.message[:300]}"
                )
            found = signature(result, code)
            signatures[path.name] = [found.id, found.key]
            print(f"{path.name:40s} {found.id} {found.key[:100]}")
    ids = [s[0] for s in signatures.values()]
    duplicates = {i for i in ids if ids.count(i) > 1}
    if duplicates:
        raise SystemExit(f"reproducers share signatures {sorted(duplicates)}: each rule needs its own mistake")
    (STARTER_DIR / "signatures.json").write_text(
        json.dumps({"triton": importlib.metadata.version("triton"), "signatures": signatures}, indent=1) + "\n"
    )


if __name__ == "__main__":
    anyio.run(main)
