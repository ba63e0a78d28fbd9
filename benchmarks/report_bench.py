"""How long `adaexplore report` takes on a large run: a synthetic run of --nodes nodes (default 1,000) grown
through the store's own API in a temporary store (each node's code an edit of its parent's, so that every
diff is real work; scripted verdicts with speedups and audit flags), then

  data     reading the run from the store (nodes, evaluations, diffs): run_page_data
  html     laying out the tree, drawing the plot and writing the page: render_run_html
  size     the HTML file
  load     headless Chromium opening the file until its load event (where /usr/bin/chromium and playwright are)
  click    clicking a node until its code shows in the details panel

Generation times are the median of --repeat runs.

    python benchmarks/report_bench.py
    python benchmarks/report_bench.py --nodes 1000 5000 --repeat 5
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adaexplore.bench._report_data import run_page_data  # noqa: E402
from adaexplore.bench._report_html import render_run_html  # noqa: E402
from adaexplore.config import SearchConfig  # noqa: E402
from adaexplore.domain import Kind  # noqa: E402
from adaexplore.executor import AuditFlag, Status, code_hash, task_from_source  # noqa: E402
from adaexplore.search import reward  # noqa: E402
from adaexplore.store import NewEvaluation, SqliteStore, open_store  # noqa: E402
from tests.fakes import make_evaluation, services_over  # noqa: E402

TASK = (ROOT / "examples" / "tasks" / "row_softmax.py").read_text()
KERNEL = (ROOT / "examples" / "kernels" / "row_softmax" / "correct.py").read_text()
VERDICTS = [("ok", 1.0), ("mismatch", 0.0), ("compile_error", 0.0), ("runtime_error", 0.0), ("timeout", 0.0)]
WEIGHTS = [5, 2, 2, 1, 0.2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def edit(code: str, rng: random.Random, step: int) -> str:
    """The code with one line changed, added or removed, as a small step would."""
    lines = code.splitlines()
    at = rng.randrange(1, len(lines))
    choice = rng.random()
    if choice < 0.4:
        lines.insert(at, f"# step {step}: try BLOCK_SIZE={rng.choice([64, 128, 256, 512, 1024])}")
    elif choice < 0.8 or len(lines) < 20:
        lines[at] = lines[at] + f"  # tuned at step {step}"
    else:
        del lines[at]
    return "\n".join(lines) + "\n"


def build_run(store: SqliteStore, nodes: int, seed: int = 0) -> str:
    """A run of `nodes` nodes (the root included) with small and large steps, verdicts and audit flags."""
    task = task_from_source(TASK, name="row_softmax")
    store.put_task(task.hash, "row_softmax", TASK, "benchmark")
    config = SearchConfig(total_steps=nodes - 1)
    run = store.create_run(
        task.hash, config=config.model_dump_json(), mode="strict", backend="cuda", model="bench", seed=seed
    )
    rng = random.Random(seed)
    codes = {run.root_id: ""}
    ids = [run.root_id]
    for step in range(1, nodes):
        parent = rng.choice(ids[-30:]) if rng.random() < 0.8 else rng.choice(ids)
        large = parent == run.root_id or rng.random() < 0.2
        code = edit(KERNEL if large else codes[parent], rng, step)
        status, _ = rng.choices(VERDICTS, WEIGHTS)[0]
        speedup = round(rng.lognormvariate(0.1, 0.5), 3) if status == "ok" else None
        evaluation = make_evaluation(task, code, Status(status), speedup)
        if rng.random() < 0.3:
            evaluation.audit.flags.append(
                AuditFlag(code="low_triton_share", severity="warn", message="most of the GPU time is outside Triton")
            )
        node = store.add_child(
            run.id,
            parent,
            Kind.large if large else Kind.small,
            code=code,
            code_hash=code_hash(code),
            context_ids=[],
            task_id=task.hash,
            evaluation=NewEvaluation(
                code_hash=code_hash(code),
                environment="bench",
                mode="strict",
                status=status,
                speedup=speedup,
                result=evaluation.model_dump_json(),
            ),
            reward=reward(status, speedup),
        )
        codes[node.id] = code
        ids.append(node.id)
    return run.id


def in_chromium(page_file: Path, node_id: int) -> tuple[float, float] | None:
    """Seconds to open the page and to show a clicked node's code; None where there is no browser."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path(CHROMIUM).exists():
        return None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            start = time.perf_counter()
            page.goto(page_file.as_uri(), wait_until="load")
            loaded = time.perf_counter() - start
            start = time.perf_counter()
            page.click(f'svg.tree [data-node-id="{node_id}"]')
            page.wait_for_function(
                f"document.querySelector('.details .node-title').textContent.startsWith('Node {node_id}:')"
            )
            clicked = time.perf_counter() - start
        finally:
            browser.close()
    return loaded, clicked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'nodes':>7} {'data s':>8} {'html s':>8} {'total s':>8} {'size MB':>8} {'load s':>8} {'click ms':>9}")
    for nodes in args.nodes:
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(f"sqlite:///{tmp}/bench.db")
            run_id = build_run(store, nodes)
            reads, renders = [], []
            for _ in range(args.repeat):
                start = time.perf_counter()
                data = run_page_data(services_over(store), run_id)
                middle = time.perf_counter()
                html = render_run_html(data)
                reads.append(middle - start)
                renders.append(time.perf_counter() - middle)
            page_file = Path(tmp) / "report.html"
            page_file.write_text(html)
            browser = in_chromium(page_file, data["run"]["nodes"][nodes // 2]["id"])
            store.close()
        read, render = statistics.median(reads), statistics.median(renders)
        load, click = (f"{browser[0]:.2f}", f"{browser[1] * 1000:.0f}") if browser else ("-", "-")
        print(
            f"{nodes:>7} {read:>8.3f} {render:>8.3f} {read + render:>8.3f} {len(html.encode()) / 1e6:>8.2f} "
            f"{load:>8} {click:>9}"
        )
    if browser is None:
        print("(no Chromium or no playwright here: the browser columns are empty)")


if __name__ == "__main__":
    main()
