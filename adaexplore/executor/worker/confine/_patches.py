"""Every patch the worker puts on Triton or torch, in one table, with the reason for it.

The worker replaces functions of Triton and torch where their own behaviour would let a candidate escape a check,
would make the CPU backends disagree with the GPU, or would cost time for nothing. Each entry names what is
replaced (as its own package names it: module, class, attribute; `*` for every public function of a module), the
module of ours that installs it, and when it holds: `worker` for the worker's whole life (installed before the
Guard notes Triton's and torch's classes as they are, so a candidate that put its own function there is caught),
or the context manager it holds inside. `tests/executor/worker/test_patches.py` installs them as a worker does
and checks this table against what changed. A patch added without an entry here fails that test.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PATCHES", "Patch"]


@dataclass(frozen=True)
class Patch:
    target: str
    by: str
    why: str
    holds: str = "worker"


_INTERP = "triton.runtime.interpreter"
_BUILDER = f"{_INTERP}.InterpreterBuilder"
_BF16 = "bf16 and tf32 as the GPU computes them: the interpreter's numpy has no bf16 and multiplies fp32 exactly"

PATCHES: tuple[Patch, ...] = (
    # what the candidate's launches are, and where they run (all backends)
    Patch(
        "triton.runtime.jit.JITFunction.run",
        "_launches",
        "count each launch of the candidate's kernels, refuse "
        "launches on streams of its own, record the grid and the static cost (compile and cuda backends)",
    ),
    Patch(
        "triton.runtime.autotuner.Autotuner.run",
        "_launches",
        "count an autotuned kernel's launches once, not once per config tried (compile and cuda backends)",
    ),
    Patch(
        "triton.knobs.runtime.jit_cache_hook",
        "_launches",
        "build a kernel's C launcher as it is compiled, before the candidate waits for the device (cuda backend)",
    ),
    Patch(
        f"{_INTERP}.InterpretedFunction.run",
        "_launches",
        "count the interpreter's launches and compile each "
        "for sm_90 once, so that a kernel the GPU refuses is refused here too",
    ),
    Patch(
        "triton.runtime.jit.JITCallable.__init__",
        "_kernel_sources",
        "note each kernel's source as it is made, "
        "cut at its own def line (a string holding a line that starts with `def` would move Triton's cut)",
    ),
    Patch(
        "triton.runtime.jit.JITCallable.parse",
        "_kernel_sources",
        "compile only the source noted when the kernel was made, not one the candidate wrote into the kernel later",
    ),
    Patch("triton.runtime.jit.JITFunction._do_compile", "_kernel_sources", "the same check where Triton compiles"),
    Patch(
        f"{_INTERP}.InterpretedFunction.__init__",
        "_kernel_sources",
        "note the source of each kernel the interpreter makes",
    ),
    Patch(
        f"{_INTERP}.FunctionRewriter.rewrite_ast",
        "_kernel_sources",
        "the interpreter reads the kernel's file again when it first runs it: refuse a source other than the one noted",
    ),
    Patch(
        f"{_INTERP}.InterpretedFunction.rewrite",
        "_kernel_sources",
        "run only a function the interpreter made from a noted source",
    ),
    Patch(
        "triton.language.semantic.TritonSemantic.cast",
        "_kernel_rules",
        "refuse pointers made from integers: a pointer must come from a tensor argument plus offsets",
    ),
    Patch(
        "triton.backends.nvidia.compiler.CUDABackend.make_cubin",
        "_static_cost",
        "keep ptxas's log of registers and spills for the static cost",
    ),
    Patch(
        "triton.runtime.driver.driver._active",
        "_compile_only",
        "Triton's active driver is one that compiles for the target GPU and launches nothing (compile backend)",
    ),
    # the compile pass beside the interpreter
    Patch(
        f"{_INTERP}.InterpretedFunction.__call__",
        "_compile_only",
        "a kernel called from host code while a launch is compiled (a candidate's `data_ptr`) raises, as on the GPU",
    ),
    Patch(
        "triton.compiler.code_generator.CodeGenerator.__init__",
        "_compile_only",
        "the compiler reads the interpreter's kernels as JIT functions of the same source (mirrors)",
    ),
    Patch("triton.compiler.code_generator.CodeGenerator.visit", "_compile_only", "the same, for each node"),
    Patch("triton.compiler.code_generator.CodeGenerator.get_Attribute", "_compile_only", "the same, for attributes"),
    Patch("triton.compiler.code_generator.CodeGenerator.call_Function", "_compile_only", "the same, for calls"),
    Patch(
        "triton.runtime.jit.DependenciesFinder.record_reference",
        "_compile_only",
        "the cache key of a kernel hashes the mirrors, not the interpreter's functions",
    ),
    Patch(
        "triton.runtime.driver.driver._active",
        "_compile_only",
        "compile for the target GPU inside the pass",
        holds="compiling_for",
    ),
    Patch(
        "triton.knobs.runtime.interpret",
        "_compile_only",
        "Triton's constexpr functions return plain values to the compiler inside the pass",
        holds="compiling_for",
    ),
    # the interpreter (interpret backend)
    Patch(
        "triton.runtime.autotuner.Autotuner.do_bench",
        "_interpret_shim",
        "autotuning times configs on the CPU with the host clock, not CUDA events",
    ),
    Patch(
        "triton.runtime.autotuner.Autotuner.prune_configs",
        "_interpret_shim",
        "after the first launch, an "
        "autotuned kernel runs its first config alone: timing the others in the interpreter costs minutes",
    ),
    Patch(
        f"{_INTERP}.FunctionRewriter._compile_and_exec",
        "_interpret_shim",
        "the rewritten kernel gets the one "
        "name it needs, not a copy of the interpreter module's globals in the candidate's module",
    ),
    Patch(f"{_INTERP}.FunctionRewriter._find_def", "_interpret_shim", "cut a kernel's source at its own def line"),
    Patch(f"{_INTERP}._patch_lang_tensor", "_interpret_shim", "tensors index with integers as on the GPU"),
    Patch(
        f"{_INTERP}.GridExecutor.__call__",
        "_interpret_libdevice",
        "know when a kernel runs, so that a stand-in called from host code is refused as on the GPU",
    ),
    Patch(
        f"{_INTERP}.GridExecutor._init_args_hst",
        "_interpret_checks",
        "note each tensor argument's memory, for the bounds checks, and refuse fake tensors",
    ),
    Patch(f"{_BUILDER}.create_masked_load", "_interpret_checks", "refuse loads outside the launch's tensors"),
    Patch(f"{_BUILDER}.create_masked_store", "_interpret_checks", "refuse stores outside the launch's tensors"),
    Patch(f"{_BUILDER}.create_atomic_rmw", "_interpret_checks", "refuse atomics outside the launch's tensors"),
    Patch(f"{_BUILDER}.create_atomic_cas", "_interpret_checks", "the same for compare-and-swap"),
    Patch(f"{_BUILDER}.create_assert", "_interpret_checks", "tl.device_assert fails the launch, as with debug on"),
    *(
        Patch(f"{_BUILDER}.{name}", "_interpret_bf16", _BF16)
        for name in (
            "binary_op",
            "unary_op",
            "ternary_op",
            "create_dot",
            "create_fma",
            "cast_impl",
            "create_fp_to_fp",
            "create_erf",
            "create_rsqrt",
            "create_si_to_fp",
            "create_ui_to_fp",
            "create_fp_to_si",
            "create_fp_to_ui",
            "create_fp_ext",
            "create_fp_trunc",
            "get_bf16",
        )
    ),
    Patch(f"{_INTERP}.ReduceOps.apply_impl", "_interpret_bf16", "reductions of bf16 run in fp32 and round back"),
    Patch(f"{_INTERP}.ScanOps.apply_impl", "_interpret_bf16", "scans of bf16 run in fp32 and round back"),
    Patch(
        "triton.language.extra.libdevice.*",
        "_interpret_libdevice",
        "libdevice in the interpreter, each "
        "function computed as the GPU computes it (its approximate `fast_*` ones with the GPU's error)",
    ),
    Patch(
        "triton.language.extra.cuda.libdevice.*",
        "_interpret_libdevice",
        "the CUDA builtins the libdevice stubs compile to, the same stand-ins",
    ),
    # torch on the CPU backends
    Patch(
        "torch.Tensor.is_cuda",
        "_cuda_on_cpu",
        "`assert x.is_cuda` in a candidate written for the GPU holds for the CPU tensors of the CPU backends",
    ),
    *(
        Patch(f"torch.cuda.{name}", "_cuda_on_cpu", "answers as the target GPU where torch without CUDA would raise")
        for name in (
            "get_device_properties",
            "get_device_capability",
            "get_device_name",
            "device_count",
            "current_device",
        )
    ),
    Patch("torch.cuda.synchronize", "_cuda_on_cpu", "returns at once on the CPU", holds="cuda_on_cpu"),
    Patch(
        "torch.nn.modules.module.Module.cuda",
        "_cuda_on_cpu",
        "`.cuda()` leaves a module on the CPU",
        holds="cuda_on_cpu",
    ),
    Patch(
        "torch.cuda.synchronize",
        "_full_size",
        "returns at once while a candidate's host side runs on meta tensors",
        holds="shape_only",
    ),
    Patch("torch.nn.modules.module.Module.cuda", "_full_size", "the same for `.cuda()`", holds="shape_only"),
    Patch("torch.Tensor.is_cuda", "_full_size", "true for meta tensors too", holds="shape_only"),
    # torch.compile in the judge
    Patch(
        "torch._dynamo.debug_utils._cuda_system_info_comment",
        "_inductor_env",
        "inductor's note of the CUDA version survives an nvcc the sandbox cannot run",
    ),
    Patch("torch._dynamo.repro.after_aot._cuda_system_info_comment", "_inductor_env", "the same name imported there"),
)
