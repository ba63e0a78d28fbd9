"""Compile-only mode runs the real Triton compiler for sm_90 without a GPU."""

import json
import subprocess
import sys
import textwrap

PRELUDE = """
import json
import torch, triton, triton.language as tl
from adaexplore.domain import Backend
from adaexplore.executor.worker.candidate._compile_only import activate_compile_only
from adaexplore.executor.worker.candidate._launches import LaunchTracker
activate_compile_only("cuda:90")
tracker = LaunchTracker(Backend.compile)
tracker.install()
"""


def compile_only(body: str, tmp_path) -> dict:
    # Triton's compiler reads kernel source from a real file.
    script = tmp_path / "script.py"
    # the collector off while the prelude imports torch and triton, then on past what they made, as in a worker
    script.write_text(f"import gc\ngc.disable()\n{PRELUDE}gc.freeze()\ngc.enable()\n{textwrap.dedent(body)}")
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"TRITON_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_compiles_to_a_hopper_cubin_and_reports_shared_memory(tmp_path) -> None:
    result = compile_only(
        """
        @triton.jit
        def matmul(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
            b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
            tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))

        x = torch.empty(64 * 64, dtype=torch.float16)
        kernel = matmul.warmup(x, x, x, BLOCK=64, grid=(1,))
        print(json.dumps({"arch": kernel.metadata.target.arch, "has_cubin": "cubin" in kernel.asm,
                          "wgmma": "wgmma" in kernel.asm["ptx"], "shared": kernel.metadata.shared}))
    """,
        tmp_path,
    )
    assert result["arch"] == 90 and result["has_cubin"] and result["wgmma"]
    assert result["shared"] > 0


def test_compile_errors_are_the_real_compiler_errors(tmp_path) -> None:
    result = compile_only(
        """
        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            for i in range(4):
                break
            tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)

        try:
            k[(1,)](torch.empty(16), BLOCK=16)
            print(json.dumps({"error": None}))
        except Exception as exc:
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
    """,
        tmp_path,
    )
    assert result["error"].startswith("UnsupportedLanguageConstruct")
    assert "unsupported AST node type: Break" in result["error"]


def test_launches_compile_without_running_and_are_counted(tmp_path) -> None:
    result = compile_only(
        """
        import sys
        sys.modules["adaexplore_candidate"] = sys.modules["__main__"]
        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), 7.0)
        k.fn.__module__ = "adaexplore_candidate"

        x = torch.zeros(16)
        _, launches = tracker.count(lambda: k[(1,)](x, BLOCK=16))
        print(json.dumps({"launches": launches, "untouched": bool((x == 0).all())}))
    """,
        tmp_path,
    )
    assert result == {"launches": ["k"], "untouched": True}
