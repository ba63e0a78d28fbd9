"""The database schema and its upgrades. The version lives in the `meta` table."""

from __future__ import annotations

SCHEMA_VERSION = 14

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

# UPGRADES[v] takes a database at version v to v + 1. A new database is created at version 1 and upgraded,
# so every database goes through the same statements.
UPGRADES: dict[int, list[str]] = {
    # 2: the skill memory.
    1: [
        """CREATE TABLE rules (
            id INTEGER PRIMARY KEY,
            text TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'retired', 'pinned')),
            source TEXT NOT NULL CHECK (source IN ('distilled', 'imported', 'curated')),
            triton_min TEXT,
            triton_max TEXT,
            backends TEXT NOT NULL,
            occurrences INTEGER NOT NULL DEFAULT 0,
            tasks INTEGER NOT NULL DEFAULT 0,
            token_count INTEGER NOT NULL,
            first_seen TEXT,
            last_seen TEXT,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX rules_by_rank ON rules (status, occurrences DESC, id)",
        "CREATE TABLE rule_signatures (signature TEXT PRIMARY KEY, rule_id INTEGER NOT NULL REFERENCES rules(id), "
        "key TEXT NOT NULL)",
        "CREATE INDEX rule_signatures_by_rule ON rule_signatures (rule_id)",
        "CREATE TABLE rule_tasks (rule_id INTEGER NOT NULL REFERENCES rules(id), task_id TEXT NOT NULL, "
        "PRIMARY KEY (rule_id, task_id))",
        "CREATE TABLE rule_tokens (token TEXT NOT NULL, rule_id INTEGER NOT NULL REFERENCES rules(id), "
        "PRIMARY KEY (token, rule_id))",
        """CREATE TABLE failures (
            id INTEGER PRIMARY KEY,
            task_id TEXT NOT NULL,
            signature TEXT NOT NULL,
            signature_key TEXT NOT NULL,
            status TEXT NOT NULL,
            error_type TEXT NOT NULL,
            error_text TEXT NOT NULL,
            code TEXT NOT NULL,
            rule_id INTEGER REFERENCES rules(id),
            triton TEXT,
            backend TEXT,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX failures_by_signature ON failures (signature)",
    ],
    # 3: the headless agent: its model calls (tokens and cost per run and task) and notes on nodes that the
    # next prompt must carry (edits of a small step that did not apply); an index for a run's shape.
    2: [
        """CREATE TABLE model_calls (
            id INTEGER PRIMARY KEY,
            run_id TEXT REFERENCES runs(id),
            task_id TEXT,
            purpose TEXT NOT NULL,
            model TEXT NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cost_usd REAL NOT NULL,
            seconds REAL NOT NULL,
            attempts INTEGER NOT NULL,
            finish_reason TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX model_calls_by_run ON model_calls (run_id)",
        "CREATE INDEX model_calls_by_task ON model_calls (task_id)",
        "CREATE TABLE node_notes (node_id INTEGER PRIMARY KEY REFERENCES nodes(id), text TEXT NOT NULL)",
        # get_run's counts by status and depth, read from the index alone
        "CREATE INDEX nodes_by_run_status ON nodes (run_id, status, depth)",
    ],
    # 4: why a run stopped short of its steps (status 'stopped'), until a step is added to it again.
    3: ["ALTER TABLE runs ADD COLUMN stop_reason TEXT"],
    # 5: a rule found by its exact sentence (one sentence is one rule).
    4: ["CREATE INDEX rules_by_text ON rules (text)"],
    # 6: the node a failure was recorded from: a node's failure counts once, however often it is sent.
    5: [
        "ALTER TABLE failures ADD COLUMN node_id INTEGER REFERENCES nodes(id)",
        "CREATE UNIQUE INDEX failures_by_node ON failures (node_id) WHERE node_id IS NOT NULL",
    ],
    # 7: the nodes made from each expansion, so that the same code sent again for it is known as a retry.
    6: ["ALTER TABLE expansions ADD COLUMN children TEXT NOT NULL DEFAULT '[]'"],
    # 8: the steps under way, seen by every process on the database (a server's own count let two servers
    # on one run overshoot its steps together).
    7: [
        """CREATE TABLE claims (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(id),
            parent_id INTEGER REFERENCES nodes(id),
            kind TEXT NOT NULL CHECK (kind IN ('large', 'small', 'finish')),
            expansion_id INTEGER REFERENCES expansions(id),
            code_hash TEXT,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX claims_by_run ON claims (run_id)",
    ],
    # 9: benches (a suite's problems, each with its task, run and verdict), and runs that time torch.compile
    # of the reference too.
    8: [
        """CREATE TABLE benches (
            id TEXT PRIMARY KEY,
            suite TEXT NOT NULL,
            suite_hash TEXT NOT NULL,
            mode TEXT NOT NULL,
            backend TEXT NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('replay', 'search')),
            options TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('running', 'stopped', 'finished')),
            stop_reason TEXT,
            provenance TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
        """CREATE TABLE bench_problems (
            bench_id TEXT NOT NULL REFERENCES benches(id),
            problem_id INTEGER NOT NULL,
            name TEXT NOT NULL,
            file_hash TEXT NOT NULL,
            task_id TEXT REFERENCES tasks(id),
            run_id TEXT REFERENCES runs(id),
            node_id INTEGER REFERENCES nodes(id),
            status TEXT,
            message TEXT NOT NULL DEFAULT '',
            speedup REAL,
            compile_speedup REAL,
            triton_share REAL,
            flags TEXT NOT NULL DEFAULT '[]',
            seconds REAL,
            PRIMARY KEY (bench_id, problem_id)
        )""",
        "ALTER TABLE runs ADD COLUMN with_compile INTEGER NOT NULL DEFAULT 0",
    ],
    # 10: speeds where nothing was timed: a kernel's estimated speedup (nodes, evaluations, benches), a bench
    # problem's share of the speed of light, and what a task's reference does at full size (its speed of light)
    9: [
        "ALTER TABLE nodes ADD COLUMN estimated_speedup REAL",
        "ALTER TABLE evaluations ADD COLUMN estimated_speedup REAL",
        "ALTER TABLE bench_problems ADD COLUMN estimated_speedup REAL",
        "ALTER TABLE bench_problems ADD COLUMN sol_fraction REAL",
        "ALTER TABLE tasks ADD COLUMN work TEXT",
    ],
    # 11: the version of the run's brief (the task, its precision, the rules and the skill memory) last given to
    # its client, so that the step answers send the brief again only when it changed
    10: ["ALTER TABLE runs ADD COLUMN brief_version TEXT"],
    # 12: the folder the offline generator (replay) served a run's kernels from, so that a resume and `runs show`
    # name it
    11: ["ALTER TABLE runs ADD COLUMN kernels TEXT"],
    # 13: whether a task is degenerate (its reference's output a constant, rounding noise or blind to its inputs: any
    # kernel that writes that passes), as the check of the task found it, and at which sizes it decided
    12: [
        "ALTER TABLE tasks ADD COLUMN degenerate TEXT",
        "ALTER TABLE tasks ADD COLUMN degeneracy_checked TEXT",
    ],
    # 14: what a kernel a GPU timed launches at full size (the estimate's input), and the calibrations of the
    # estimate that `adaexplore calibrate` fits to those verdicts, per GPU model (roofline.GpuCalibration as JSON)
    13: [
        "ALTER TABLE evaluations ADD COLUMN work TEXT",
        """CREATE TABLE calibrations (
            id INTEGER PRIMARY KEY,
            gpu TEXT NOT NULL,
            record TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX calibrations_by_gpu ON calibrations (gpu, id)",
    ],
}
