"""The starter memory shipped with adaexplore: rules each backed by a reproducer, a tiny kernel that fails
with exactly the rule's signature on the Triton version recorded beside them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["STARTER_DIR", "StarterRule", "load_starter", "read_header"]

STARTER_DIR = Path(__file__).parent / "starter"
_KEYS = ("rule", "task", "backend", "status")


@dataclass(frozen=True)
class StarterRule:
    reproducer: Path
    text: str
    task: Path
    backend: str
    status: str
    triton: str
    signature_id: str
    signature_key: str


def read_header(path: Path) -> dict[str, str]:
    """The `# key: value` lines at the top of a reproducer."""
    header: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        key, _, value = line[2:].partition(":")
        header[key.strip()] = value.strip()
    missing = [k for k in _KEYS if k not in header]
    if missing:
        raise ValueError(f"reproducer {path.name} lacks header lines: {', '.join(missing)}")
    return header


def load_starter() -> list[StarterRule]:
    recorded = json.loads((STARTER_DIR / "signatures.json").read_text())
    rules = []
    for path in sorted((STARTER_DIR / "reproducers").glob("*.py")):
        header = read_header(path)
        signature_id, signature_key = recorded["signatures"][path.name]
        rules.append(
            StarterRule(
                reproducer=path,
                text=header["rule"],
                task=STARTER_DIR / "tasks" / f"{header['task']}.py",
                backend=header["backend"],
                status=header["status"],
                triton=recorded["triton"],
                signature_id=signature_id,
                signature_key=signature_key,
            )
        )
    return rules
