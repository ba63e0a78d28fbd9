"""Data of the static policy: which modules a candidate may import and which names it may not use.

Pattern -> message tables only, no logic: the allowed imports, the builtins a candidate may not call, the
dotted names (and whole modules of functions) it may not reach, the packages whose modules and objects it
may hold, and the decorators and base classes the method-detour rules recognise.
"""

from __future__ import annotations

# Modules a candidate may import. Everything a Triton kernel needs, and nothing that reaches the
# process, the file system or the interpreter's internals.
ALLOWED_IMPORTS = frozenset(
    {
        "__future__",
        "abc",
        "collections",
        # the abstract classes collections holds as an attribute anyway (Iterable, Mapping, ...), now under the
        # import that plain models write (`import collections.abc`); it names nothing collections.abc did not
        "collections.abc",
        "functools",
        "itertools",
        "math",
        "numbers",
        "operator",
        "typing",
        "torch",
        "torch.nn",
        "torch.nn.functional",
        "torch.nn.init",
        "triton",
        "triton.language",
        "triton.language.extra",
        "triton.language.extra.libdevice",
        "triton.language.extra.cuda",
        "triton.language.extra.cuda.libdevice",
        "triton.language.math",
        # Triton's host-side TMA descriptor (`TensorDescriptor.from_tensor(x, block_shape)`), the way to feed
        # Hopper's bulk copy engine from the host; the rest of triton.tools stays banned (_BANNED_NAMES).
        # Reviewed for triton 3.6: the module imports dataclasses.dataclass, typing's List and Any, and
        # triton._utils.validate_block_shape (checks that a block shape is a list of powers of two), and defines
        # the dataclass TensorDescriptor(base, shape, strides, block_shape, padding), whose __post_init__ only
        # asserts on the base's data_ptr, dtype and the shapes, and whose from_tensor reads a tensor's shape and
        # strides. No file, process, network or interpreter API is reachable from it: the dataclass helper (which
        # builds code from strings) is banned by name and, in the worker, as an object from dataclasses; the
        # dataclass's own special attributes (__dataclass_fields__, ...) fall to the dunder rule. Importing it
        # imports the package triton.tools (whose __init__ imports only the C class LinearLayout); the worker's
        # __import__ lets that package hand out no other submodule. A kernel reads through a descriptor only what
        # its base tensor holds: the interpreter checks each access against the tensors it was given, the
        # descriptor's base included (_interpret_checks), as on a GPU the TMA unit clips to its shape.
        "triton.tools.tensor_descriptor",
    }
)

# Private names of the allowed modules that honest code uses as if public: the helpers with which nn.Linear and
# the convolutions initialize their parameters, which a candidate repeats to draw the same initial weights.
# They only compute from a tensor's shape.
_PRIVATE_BUT_PLAIN = frozenset(
    {
        "torch.nn.init._calculate_fan_in_and_fan_out",
        "torch.nn.init._calculate_correct_fan",
    }
)

_BANNED_CALLS = {
    "exec": "You cannot call exec; write the code directly.",
    "eval": "You cannot call eval; write the code directly.",
    "compile": "You cannot call the builtin compile.",
    "__import__": "You cannot call __import__; use a plain import of an allowed module.",
    "globals": "You cannot call globals().",
    "locals": "You cannot call locals().",
    "vars": "You cannot call vars().",
    "open": "You cannot open files in a candidate.",
    "breakpoint": "You cannot call breakpoint().",
    "input": "You cannot read input in a candidate.",
    "setattr": "You cannot call setattr; assign attributes of self directly.",
    "delattr": "You cannot call delattr.",
    "exit": "You cannot call exit.",
    "quit": "You cannot call quit.",
    "id": "You cannot use id(); object addresses belong to the evaluator.",
}

# Dotted names (after resolving import aliases) that a candidate may not use.
_BANNED_NAMES = {
    "torch.compile": "You cannot use torch.compile; write the Triton kernels yourself.",
    "torch.cuda.Stream": "You cannot create CUDA streams; launch on the current stream.",
    "torch.cuda.stream": "You cannot switch CUDA streams; launch on the current stream.",
    "torch.cuda.set_stream": "You cannot switch CUDA streams; launch on the current stream.",
    "torch.cuda.ExternalStream": "You cannot use other CUDA streams; launch on the current stream.",
    "torch.cuda.streams": "You cannot create CUDA streams; launch on the current stream.",
    "torch.cuda.StreamContext": "You cannot switch CUDA streams; launch on the current stream.",
    "torch.accelerator": "You cannot switch streams or devices; launch on the current stream.",
    "torch.get_device_module": "You cannot fetch device modules; use torch.cuda's public functions directly.",
    "torch.mtia": "You cannot use other devices' modules; launch on the current CUDA stream.",
    "torch.xpu": "You cannot use other devices' modules; launch on the current CUDA stream.",
    "torch.cuda.tunable": "You cannot use torch.cuda.tunable (it writes files and changes global settings).",
    "torch.cuda.gds": "You cannot open files in a candidate.",
    "torch.cuda.set_sync_debug_mode": "You cannot change global torch settings.",
    "torch.Stream": "You cannot create streams; launch on the current stream.",
    "torch.backends": "You cannot use torch.backends settings (TF32, cuDNN); the evaluator fixes them.",
    "torch.set_float32_matmul_precision": "You cannot change the float32 matmul precision.",
    "torch.set_default_dtype": "You cannot change the default dtype.",
    "torch.set_default_device": "You cannot change the default device.",
    "torch.use_deterministic_algorithms": "You cannot change global torch settings.",
    "torch.set_num_threads": "You cannot change global torch settings.",
    "torch.set_flush_denormal": "You cannot change global torch settings.",
    "torch.set_grad_enabled": "You cannot change global torch settings.",
    "torch.library": "You cannot register torch operators.",
    "torch.utils.cpp_extension": "You cannot build C++/CUDA extensions; write Triton kernels.",
    "torch.multiprocessing": "You cannot start processes; do all work inside forward.",
    "torch.jit": "You cannot use torch.jit (fork runs work on other threads); write Triton kernels.",
    "torch.futures": "You cannot run work asynchronously; do all work inside forward.",
    "torch.distributed": "You cannot use torch.distributed in a candidate.",
    "torch.utils": "You cannot use torch.utils in a candidate.",
    "torch.ops": "You cannot call torch.ops directly; use public torch functions.",
    "triton.testing": "You cannot use triton.testing in a candidate.",
    "triton.runtime": "You cannot use triton.runtime internals; use @triton.jit and @triton.autotune.",
    "triton.knobs": "You cannot change Triton's settings.",
    "triton.backends": "You cannot use Triton's backend internals; use @triton.jit.",
    "triton.compiler": "You cannot call Triton's compiler directly; use @triton.jit.",
    "triton.compile": "You cannot call Triton's compiler directly; use @triton.jit.",
    "torch.CompilationUnit": "You cannot compile TorchScript from strings; write Triton kernels.",
    "triton.tools": (
        "You cannot use triton.tools in a candidate, apart from its tensor descriptor, imported as `from "
        "triton.tools.tensor_descriptor import TensorDescriptor`."
    ),
    # what the tensor descriptor's module imports for itself
    "triton.tools.tensor_descriptor.dataclass": "You cannot use dataclasses' dataclass (it builds code from strings).",
    "torch.load": "You cannot read files in a candidate.",
    "torch.save": "You cannot write files in a candidate.",
    "torch.from_file": "You cannot read files in a candidate.",
    "torch.hub": "You cannot use torch.hub in a candidate.",
    "torch.package": "You cannot use torch.package in a candidate.",
    "torch.serialization": "You cannot use torch.serialization in a candidate.",
    "torch.classes": "You cannot use torch.classes in a candidate.",
    "torch.overrides": "You cannot intercept torch functions; return plain tensors computed in forward.",
    "torch.profiler": "You cannot use the profiler; the evaluator measures.",
    "torch.autograd.profiler": "You cannot use the profiler; the evaluator measures.",
    "torch.cuda.profiler": "You cannot use the profiler; the evaluator measures.",
    "torch.cuda.cudart": "You cannot call the CUDA runtime directly.",
    "operator.attrgetter": "You cannot use operator.attrgetter; use the attribute directly.",
    # these evaluate annotation strings as code
    "typing.get_type_hints": "You cannot evaluate annotations (typing.get_type_hints).",
    "typing.ForwardRef": "You cannot evaluate annotations (typing.ForwardRef).",
    "typing.evaluate_forward_ref": "You cannot evaluate annotations.",
    "functools.singledispatch": "You cannot use functools.singledispatch; call the function you mean.",
    "functools.singledispatchmethod": "You cannot use functools.singledispatchmethod; call the method you mean.",
    "torch.fx": "You cannot use torch.fx in a candidate; write Triton kernels.",
    "torch.export": "You cannot use torch.export in a candidate; write Triton kernels.",
    "torch.compiler": "You cannot use torch.compiler; write the Triton kernels yourself.",
    "dataclasses.make_dataclass": "You cannot make classes from strings; write the class.",
    "operator.methodcaller": "You cannot use operator.methodcaller; call the method directly.",
    # these read and set attributes whose names they are given as strings
    "functools.update_wrapper": "You cannot use functools.update_wrapper; write the function you mean.",
    "functools.wraps": "You cannot use functools.wraps; write the function you mean.",
    # classes made by calling a metaclass with a namespace of strings
    "abc.ABCMeta": "You cannot use abc.ABCMeta; subclass abc.ABC if you need an abstract class.",
    "enum.EnumMeta": "You cannot use enum's metaclass; write a plain class.",
    "enum.EnumType": "You cannot use enum's metaclass; write a plain class.",
    # enum is not importable; these write an enum's members into the module its `module=` argument names,
    # should another path reach them
    "enum.global_enum": "You cannot use enum.global_enum (it writes into other modules).",
    "enum.global_enum_repr": "You cannot use enum.global_enum_repr.",
    "enum.global_flag_repr": "You cannot use enum.global_flag_repr.",
    "enum.global_str": "You cannot use enum.global_str.",
    # files, and shared libraries loaded by path
    "torch.onnx": "You cannot use torch.onnx in a candidate (it writes files).",
    "torch.cuda.memory": "You cannot use torch.cuda.memory (allocators load shared libraries); allocate with torch.",
    "torch.cuda.CUDAPluggableAllocator": "You cannot load an allocator; allocate with torch.",
    "torch.cuda.change_current_allocator": "You cannot change the allocator; allocate with torch.",
    # graphs are captured on a side stream and replayed out of sight of the launch counter
    "torch.cuda.graphs": "You cannot capture CUDA graphs; launch your kernels in forward.",
    "torch.cuda.graph": "You cannot capture CUDA graphs; launch your kernels in forward.",
    "torch.cuda.CUDAGraph": "You cannot capture CUDA graphs; launch your kernels in forward.",
    "torch.cuda.graph_pool_handle": "You cannot capture CUDA graphs; launch your kernels in forward.",
    "torch.cuda.make_graphed_callables": "You cannot capture CUDA graphs; launch your kernels in forward.",
    # assembly reads and writes any address
    "triton.language.inline_asm_elementwise": "You cannot use inline assembly; write the kernel in Triton.",
    "triton.language.core.inline_asm_elementwise": "You cannot use inline assembly; write the kernel in Triton.",
}
# Modules whose every function is banned under any name: torch.cuda re-exports most of them
# (torch.cuda.caching_allocator_delete is torch.cuda.memory.caching_allocator_delete).
_BANNED_FUNCTION_MODULES = ("torch.cuda.memory", "torch.cuda.graphs")

# The packages whose modules a candidate may reach through attributes (torch.linalg, triton.language.math,
# functools through torch.nn.modules.module): the allowed imports' own, and modules that only compute.
_REACHABLE_ROOTS = frozenset({name.split(".")[0] for name in ALLOWED_IMPORTS} | {"cmath", "re"})

# Packages whose objects a candidate may hold, beyond _REACHABLE_ROOTS: the interpreter's own types and the
# C halves of the allowed standard modules.
_OBJECT_ROOTS = frozenset({"builtins", "_operator", "_functools", "_collections", "_abc", "typing_extensions"})

# A method's first parameter is trusted only while the method is called on an instance of the candidate's
# class. Read through the class (Helper.go, getattr(Helper, "go"), type(x).go, super() in a classmethod) the
# method is a plain function, and any object (a JITFunction, Triton's interpreter) could be passed as self.
_DETOUR_ADVICE = "call the method on an instance of your class (obj.{name}(...), or super().{name}(...) in a method)"
# Decorators a method with a trusted first parameter may carry: each binds the method to the instance it is
# read from. A decorator of the candidate's own would receive the bare function and could call it with any
# object as self.
_METHOD_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "functools.cache",
        "functools.lru_cache",
        "functools.cached_property",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.enable_grad",
        "torch.amp.custom_fwd",
        "torch.amp.custom_bwd",
        "torch.cuda.amp.custom_fwd",
        "torch.cuda.amp.custom_bwd",
        "torch.autograd.function.once_differentiable",
        "abc.abstractmethod",
        "typing.final",
        "typing.override",
        "typing.overload",
        "typing.no_type_check",
    }
)
_PROPERTY_PARTS = frozenset({"setter", "getter", "deleter"})
# The static methods torch calls with an autograd context as first argument, through Function.apply.
_AUTOGRAD_METHODS = frozenset({"forward", "backward", "setup_context", "jvp", "vjp", "vmap"})
_AUTOGRAD_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
