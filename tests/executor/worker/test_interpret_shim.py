"""The interpreter with our patches judges like the GPU: each test runs kernels in a fresh interpreter process."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy
import pytest

PRELUDE = """
import json, os
import torch, triton, triton.language as tl
from adaexplore.executor.worker.cpu import _interpret_shim
_interpret_shim.install()
from triton.language.extra import libdevice
"""


def run_interpreted(body: str, prelude: str = PRELUDE, path: Path | None = None) -> dict:
    # the collector off while the prelude imports torch and triton (it would look through their objects again and
    # again as they come), then on for the body, past what the imports made, as in a worker
    script = "import gc\ngc.disable()\n" + prelude + "gc.freeze()\ngc.enable()\n" + textwrap.dedent(body)
    env = dict(os.environ, TRITON_INTERPRET="1")
    if path is not None:  # first on the path: what the script imports from there wins
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(path), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_bf16_arithmetic_rounds_like_the_gpu() -> None:
    result = run_interpreted("""
        @triton.jit
        def k(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            x = tl.load(x_ptr + offs, mask=m)
            y = tl.load(y_ptr + offs, mask=m)
            z = tl.maximum(x * y + x, -0.25)
            tl.store(o_ptr + offs, z, mask=m)

        @triton.jit
        def cast(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m).to(tl.bfloat16), mask=m)

        n = 4099
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(n, generator=g).bfloat16(), torch.randn(n, generator=g).bfloat16()
        o = torch.empty_like(x)
        k[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
        ref = torch.maximum(x * y + x, torch.tensor(-0.25, dtype=torch.bfloat16))
        f = torch.randn(n, generator=g)
        c = torch.empty(n, dtype=torch.bfloat16)
        cast[(triton.cdiv(n, 1024),)](f, c, n, BLOCK=1024)
        arith, casts = int((o != ref).sum()), int((c != f.bfloat16()).sum())
        print(json.dumps({"arith_mismatches": arith, "cast_mismatches": casts}))
    """)
    assert result == {"arith_mismatches": 0, "cast_mismatches": 0}


def test_libdevice_functions_compute_and_unknown_ones_say_so() -> None:
    result = run_interpreted("""
        @triton.jit
        def k(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            x = tl.load(x_ptr + offs, mask=m)
            tl.store(o_ptr + offs, libdevice.tanh(x) + libdevice.erf(x) + libdevice.log1p(tl.abs(x)), mask=m)

        @triton.jit
        def j(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, libdevice.popc(tl.load(x_ptr + offs)))

        x = torch.randn(1000)
        o = torch.empty_like(x)
        k[(4,)](x, o, 1000, BLOCK=256)
        err = float((o - (torch.tanh(x) + torch.erf(x) + torch.log1p(x.abs()))).abs().max())
        try:
            j[(1,)](torch.zeros(16, dtype=torch.int32), 16, BLOCK=16)
            limitation = ""
        except Exception as exc:
            limitation = type(exc.__cause__).__name__ + ": " + str(exc.__cause__)
        print(json.dumps({"err": err, "limitation": limitation}))
    """)
    assert result["err"] < 1e-5
    assert result["limitation"].startswith("BackendLimitation: libdevice.popc is not available")


def test_libdevice_called_from_host_code_fails_as_on_the_gpu_not_as_a_backend_limitation() -> None:
    # On a GPU, Triton refuses a libdevice call outside a kernel; that is the candidate's mistake.
    result = run_interpreted("""
        x = torch.randn(8)
        errors = {}
        for name in ("tanh", "brev"):  # one the shim computes, one it does not
            try:
                getattr(libdevice, name)(x)
                errors[name] = ""
            except Exception as exc:
                errors[name] = f"{type(exc).__name__}: {exc}"
        print(json.dumps(errors))
    """)
    for name in ("tanh", "brev"):
        assert result[name].startswith(f"ValueError: libdevice.{name} was called outside a Triton kernel")


def test_out_of_bounds_access_is_reported_with_kernel_argument_and_offset() -> None:
    result = run_interpreted("""
        @triton.jit
        def k(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(o_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)

        try:
            k[(4,)](torch.randn(1000), torch.empty(1000), 1000, BLOCK=256)
            print(json.dumps({"error": None}))
        except Exception as exc:
            print(json.dumps({"error": str(exc.__cause__)}))
    """)
    assert "out-of-bounds load in kernel k, program (3, 0, 0): 24 active lanes" in result["error"]
    assert "byte offset 4000 of x_ptr (1000,) float32" in result["error"]


def test_autotune_runs_every_config_without_a_driver() -> None:
    result = run_interpreted("""
        @triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"])
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)

        x = torch.zeros(300)
        k[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, 300)
        # Benchmarking ran the kernel once per config before the real launch: 2 + 1 increments.
        print(json.dumps({"values": sorted(set(x.tolist())), "timed": len(k.configs_timings)}))
    """)
    assert result == {"values": [3.0], "timed": 2}


def test_fp32_dot_uses_tf32_unless_ieee_is_asked_for() -> None:
    result = run_interpreted("""
        @triton.jit
        def k(a_ptr, b_ptr, c_ptr, N: tl.constexpr, P: tl.constexpr):
            r = tl.arange(0, N)
            a = tl.load(a_ptr + r[:, None] * N + r[None, :])
            b = tl.load(b_ptr + r[:, None] * N + r[None, :])
            tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b, input_precision=P))

        a, b, c = torch.randn(64, 64), torch.randn(64, 64), torch.empty(64, 64)
        ref = a.double() @ b.double()
        errors = {}
        for precision in ("ieee", "tf32"):
            k[(1,)](a, b, c, N=64, P=precision)
            errors[precision] = float((c.double() - ref).norm() / ref.norm())
        print(json.dumps(errors))
    """)
    assert result["ieee"] < 1e-6
    assert 1e-4 < result["tf32"] < 2e-3


def test_device_assert_is_enforced() -> None:
    result = run_interpreted("""
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.device_assert(offs < n, "index past n")
            tl.store(x_ptr + offs, tl.zeros([BLOCK], tl.float32), mask=offs < n)

        try:
            k[(1,)](torch.empty(64), 10, BLOCK=64)
            print(json.dumps({"error": None}))
        except Exception as exc:
            print(json.dumps({"error": str(exc.__cause__)}))
    """)
    assert result["error"] == "device_assert failed in program (0, 0, 0) (54 lanes): index past n"


def _from_2_4(version: str) -> bool:
    return tuple(int(p) for p in version.split(".")[:2]) >= (2, 4)


@pytest.fixture(scope="module")
def numpy_2_4(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A folder holding numpy 2.4 to put first on the path, or None when the installed numpy is already that new
    (as on GPU machines with a recent torch). The test suite pins numpy < 2.4, so it is fetched for this test."""
    if _from_2_4(numpy.__version__):
        return None
    target = tmp_path_factory.mktemp("numpy-2.4")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--only-binary=:all:", "--target"]
    done = subprocess.run([*pip, str(target), "numpy==2.4.6"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"could not install numpy 2.4.6 for this test: {done.stderr[-2000:]}"
    return target


LOOP_TO_A_RUNTIME_SIZE = """
    @triton.jit
    def rowsum(x_ptr, o_ptr, K, BK: tl.constexpr):
        acc = tl.zeros((BK,), tl.float32)
        for k0 in range(0, K, BK):  # the bound is a scalar argument: Python asks the interpreter for an int
            offs = k0 + tl.arange(0, BK)
            acc += tl.load(x_ptr + offs, mask=offs < K, other=0.0)
        tl.store(o_ptr, tl.sum(acc, axis=0))

    x, o = torch.randn(1000), torch.empty(1)
    try:
        rowsum[(1,)](x, o, x.numel(), BK=128)
        outcome = {"error": None, "close": bool(torch.allclose(o[0], x.sum(), atol=1e-4))}
    except Exception as exc:
        outcome = {"error": repr(exc.__cause__ or exc)}
    import numpy
    print(json.dumps({"numpy": numpy.__version__, **outcome}))
"""


def test_a_loop_up_to_a_runtime_size_runs_with_numpy_2_4(numpy_2_4: Path | None) -> None:
    # Triton 3.6's own interpreter turns the bound into an int in a way that numpy 2.4 refused ...
    plain = run_interpreted(
        LOOP_TO_A_RUNTIME_SIZE, prelude="import json, torch, triton, triton.language as tl\n", path=numpy_2_4
    )
    assert _from_2_4(plain["numpy"]), plain
    assert "only 0-dimensional arrays can be converted to Python scalars" in str(plain["error"]), (
        f"the plain interpreter no longer fails here ({plain}): patch 7 of the shim may no longer be needed"
    )
    # ... and with the shim it runs and sums right
    patched = run_interpreted(LOOP_TO_A_RUNTIME_SIZE, path=numpy_2_4)
    assert patched == {"numpy": plain["numpy"], "error": None, "close": True}


def test_tensor_descriptors_and_cache_hints_run_bounds_checked() -> None:
    # The interpreter passes the hints by keyword to the loads the bounds checker wraps.
    result = run_interpreted("""
        @triton.jit
        def k(x_ptr, y_ptr, z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
            xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
            yd = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
            yd.store([0, 0], xd.load([0, 0]) * 2.0)
            offs = tl.arange(0, BM * BN)
            v = tl.load(x_ptr + offs, cache_modifier=".cg", eviction_policy="evict_first")
            tl.store(z_ptr + offs, v + 1.0, cache_modifier=".cs")

        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
        x = torch.randn(16, 16)
        y, z = torch.empty_like(x), torch.empty_like(x)
        k[(1,)](x, y, z, 16, 16, BM=16, BN=16)
        print(json.dumps({"desc": bool(torch.equal(y, x * 2)), "hints": bool(torch.equal(z, x + 1))}))
    """)
    assert result == {"desc": True, "hints": True}


def test_libdevice_stand_ins_are_libdevice_to_the_policy() -> None:
    # The policy refuses objects from modules a candidate may not reach; the stand-ins are libdevice's functions.
    result = run_interpreted("""
        import triton.language.extra.cuda.libdevice as cuda
        from adaexplore.executor.policy._check import _origin
        names = [(cuda.erf, "erf"), (libdevice.erf, "erf"), (cuda.popc, "popc")]
        print(json.dumps([[f.__module__, f.__name__ == n, _origin(f)] for f, n in names]))
    """)
    assert result == [
        ["triton.language.extra.cuda.libdevice", True, None],
        ["triton.language.extra.libdevice", True, None],
        ["triton.language.extra.cuda.libdevice", True, None],
    ]


def test_a_device_functions_patches_of_the_language_are_undone() -> None:
    # The interpreter patches tl for each device function call; left in place, they met Triton's compiler later.
    result = run_interpreted("""
        original = tl.program_id

        @triton.jit
        def twice(x):
            return x * 2.0

        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, twice(tl.load(x_ptr + offs)))

        x = torch.ones(16)
        k[(1,)](x, BLOCK=16)
        print(json.dumps({"restored": tl.program_id is original, "ran": bool((x == 2).all())}))
    """)
    assert result == {"restored": True, "ran": True}


def test_host_tensor_descriptors_read_only_their_base() -> None:
    # Triton's host-side TMA descriptors (triton.tools.tensor_descriptor): a kernel reads through one what its base
    # tensor holds, and no more; a descriptor over an object that only claims to be a tensor is refused up front.
    result = run_interpreted("""
        from triton.tools.tensor_descriptor import TensorDescriptor

        @triton.jit
        def k(x_desc, y_desc, ROW, BM: tl.constexpr, BN: tl.constexpr):
            y_desc.store([0, 0], x_desc.load([ROW, 0]) * 2.0)

        def run(x_desc, row):
            try:
                k[(1,)](x_desc, TensorDescriptor.from_tensor(y, [16, 16]), row, BM=16, BN=16)
                return None
            except Exception as exc:
                return f"{type(exc).__name__}: {exc}"

        class Claims:
            dtype = torch.float32
            shape = (64, 16)

            def __init__(self, x):
                self.x = x

            def data_ptr(self):
                return self.x.data_ptr()

            def stride(self):
                return (16, 1)

        x, y = torch.randn(16, 16), torch.empty(16, 16)
        honest = run(TensorDescriptor.from_tensor(x, [16, 16]), 0)
        doubled = bool(torch.equal(y, x * 2))
        past = run(TensorDescriptor(x, [64, 16], [16, 1], [16, 16]), 32)
        fake = run(TensorDescriptor.from_tensor(Claims(x), [16, 16]), 0)
        print(json.dumps({"honest": honest, "doubled": doubled, "past": past, "fake": fake}))
    """)
    assert result["honest"] is None and result["doubled"], result
    assert "KernelOOBError('out-of-bounds load in kernel k" in result["past"], result
    assert "of x_desc (16, 16) float32" in result["past"], result
    assert result["fake"] == (
        "FakeTensorArgument: kernel argument x_desc.base is a Claims with a data_ptr, not a torch.Tensor; pass tensors"
    ), result
