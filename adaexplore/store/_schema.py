"""The database schema and its upgrades. The version lives in the `meta` table."""

from __future__ import annotations

SCHEMA_VERSION = 1

# Statements that take an empty database to version 1.
CREATE: list[str] = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        source TEXT NOT NULL,
        origin TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL REFERENCES tasks(id),
        config TEXT NOT NULL,
        mode TEXT NOT NULL,
        backend TEXT NOT NULL,
        model TEXT NOT NULL,
        seed INTEGER NOT NULL,
        status TEXT NOT NULL,
        steps INTEGER NOT NULL DEFAULT 0,
        root_id INTEGER,
        best_node_id INTEGER,
        final_node_id INTEGER,
        final_result TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    """CREATE TABLE evaluations (
        id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL REFERENCES tasks(id),
        code_hash TEXT NOT NULL,
        environment TEXT NOT NULL,
        mode TEXT NOT NULL,
        status TEXT NOT NULL,
        speedup REAL,
        result TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX evaluations_by_code ON evaluations (task_id, code_hash, environment, mode)",
    """CREATE TABLE nodes (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs(id),
        parent_id INTEGER REFERENCES nodes(id),
        kind TEXT NOT NULL CHECK (kind IN ('root', 'large', 'small')),
        depth INTEGER NOT NULL,
        segment INTEGER,
        seq INTEGER NOT NULL,
        code TEXT NOT NULL,
        code_hash TEXT NOT NULL,
        context_ids TEXT NOT NULL,
        evaluation_id INTEGER REFERENCES evaluations(id),
        status TEXT,
        speedup REAL,
        reward REAL,
        correct INTEGER NOT NULL DEFAULT 0,
        visits INTEGER NOT NULL DEFAULT 0,
        total_reward REAL NOT NULL DEFAULT 0,
        max_reward REAL NOT NULL DEFAULT 0,
        small_children INTEGER NOT NULL DEFAULT 0,
        children INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX nodes_by_parent ON nodes (parent_id, id)",
    "CREATE INDEX nodes_by_run ON nodes (run_id, id)",
    "CREATE INDEX nodes_by_segment ON nodes (segment, correct, speedup)",
    """CREATE TABLE expansions (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs(id),
        node_id INTEGER NOT NULL REFERENCES nodes(id),
        action TEXT NOT NULL CHECK (action IN ('large', 'small')),
        context_ids TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
]

# UPGRADES[v] takes a database at version v to v + 1.
UPGRADES: dict[int, list[str]] = {}
