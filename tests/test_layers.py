"""The caller's process never imports torch, triton or candidate code; the search and memory layers import no torch."""

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "triton", "numpy"}:
            raise ImportError(f"{name} must not be imported in the caller's process")
        return None
sys.meta_path.insert(0, Block())
"""


def run(body: str) -> subprocess.CompletedProcess[str]:
    script = BLOCK + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_an_evaluation_runs_with_torch_unimportable_in_the_callers_process(tmp_path) -> None:
    done = run(f"""
        import anyio
        from pathlib import Path
        from adaexplore.config import Settings
        from adaexplore.executor import Evaluator, load_task

        async def main():
            data = Path("tests/executor/data")
            async with Evaluator(Settings(home=Path({str(tmp_path)!r}))) as evaluator:
                result = await evaluator.evaluate(load_task(data / "scale_relu_task.py"),
                                                  (data / "scale_relu_kernel.py").read_text())
            assert not any(m.split(".")[0] in ("torch", "triton") for m in sys.modules), "torch leaked in"
            assert "adaexplore_candidate" not in sys.modules
            print(result.status.value)

        anyio.run(main)
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "ok"


def test_the_cli_search_store_tools_and_every_parent_side_module_import_without_torch() -> None:
    done = run("""
        import adaexplore.cli, adaexplore.config, adaexplore.errors
        import adaexplore.executor, adaexplore.executor.pipeline._render
        import adaexplore.search, adaexplore.store, adaexplore.tools, adaexplore.prompts, adaexplore.memory
        import adaexplore.agent, adaexplore.executor.probes._synth, adaexplore.server
        import adaexplore.bench, adaexplore.bench._command, adaexplore.cli._bench
        print("imported")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
