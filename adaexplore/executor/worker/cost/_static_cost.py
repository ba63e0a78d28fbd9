"""What a kernel compiled for the GPU target costs, read without a GPU: registers, spills, shared memory and
the assembler's warnings and advisories (`_ptxas_advice`), per compiled specialization (one per autotune config).

Without a GPU the driver cannot report registers or spills, so they come from the assembler itself: Triton runs
its bundled `ptxas` with `-v` when it builds a cubin and prints that log when `knobs.nvidia.dump_ptxas_log` is
set. `capture_ptxas_logs` keeps each log, by the hash of the PTX, and stores it beside the kernel in Triton's
cache; a kernel Triton loads from a cache that holds no log has its PTX assembled once more with `-v`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from adaexplore.domain import KernelCost
from adaexplore.executor.worker.cost._ptxas_advice import Advisory, parse_advisories

__all__ = ["PtxasReport", "capture_ptxas_logs", "config_label", "kernel_cost", "parse_ptxas_log", "plain_warning"]

_LOG_FILE = "adaexplore-ptxas-v.log"
_logs: dict[str, str] = {}
_installed = False


@dataclass
class PtxasReport:
    registers: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    warnings: list[str] = field(default_factory=list)
    # the `Potential Performance Loss` advisories (info lines or warnings)
    advisories: list[Advisory] = field(default_factory=list)


_REGISTERS = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_WARNING = re.compile(r"^ptxas\s+warning\s*:\s*(.*)$", re.MULTILINE)


def plain_warning(text: str) -> str:
    """An assembler warning in the words of someone writing the kernel (its performance advisories are read by
    `_ptxas_advice`)."""
    text = text.strip()
    if "Registers are spilled" in text or "spill" in text.lower():
        return f"{text} (registers spill to local memory: use a smaller tile or fewer live values)"
    return re.sub(r"^Potential Performance Loss:\s*", "possible slowdown: ", text)


def parse_ptxas_log(log: str) -> PtxasReport:
    report = PtxasReport()
    registers = _REGISTERS.findall(log)
    if registers:
        report.registers = max(int(r) for r in registers)
    for stores, loads in _SPILLS.findall(log):
        report.spill_stores = max(report.spill_stores, int(stores))
        report.spill_loads = max(report.spill_loads, int(loads))
    report.advisories = parse_advisories(log)
    report.warnings = [plain_warning(w) for w in _WARNING.findall(log) if "Potential Performance Loss" not in w]
    return report


def _digest(ptx: str) -> str:
    return hashlib.sha256(ptx.encode("utf-8")).hexdigest()


def capture_ptxas_logs() -> None:
    """Keep the `-v` log of every cubin Triton's NVIDIA backend assembles in this process (once installed)."""
    global _installed
    if _installed:
        return
    from triton import knobs
    from triton.backends.nvidia.compiler import CUDABackend

    make_cubin = CUDABackend.make_cubin

    def logged_make_cubin(backend: Any, src: str, metadata: Any, opt: Any, capability: Any) -> Any:
        printed = io.StringIO()
        try:
            with knobs.nvidia.scope(), contextlib.redirect_stdout(printed):
                knobs.nvidia.dump_ptxas_log = True
                return make_cubin(backend, src, metadata, opt, capability)
        finally:
            _logs[_digest(src)] = printed.getvalue()

    CUDABackend.make_cubin = logged_make_cubin
    _installed = True


def _cached_log(kernel: Any) -> str | None:
    """The log stored beside `kernel` in Triton's cache, storing the one captured now if there is none."""
    from triton.runtime.cache import get_cache_manager

    ptx = kernel.asm.get("ptx")
    if not isinstance(ptx, str):
        return None
    try:
        cache = get_cache_manager(kernel.hash)
        captured = _logs.get(_digest(ptx))
        if captured is not None:
            cache.put(captured, _LOG_FILE, binary=False)
            return captured
        stored = cache.get_file(_LOG_FILE)
        return Path(stored).read_text(encoding="utf-8") if stored else None
    except OSError:
        return _logs.get(_digest(ptx))


def _assemble(kernel: Any) -> str:
    """Run the bundled ptxas with `-v` on the kernel's PTX (a kernel loaded from a cache without its log)."""
    from triton import knobs

    ptx = kernel.asm["ptx"]
    arch = f"sm_{kernel.metadata.target.arch}a" if kernel.metadata.target.arch >= 90 else None
    arch = arch or f"sm_{kernel.metadata.target.arch}"
    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "kernel.ptx"
        src.write_text(ptx, encoding="utf-8")
        done = subprocess.run(
            [knobs.nvidia.ptxas.path, "-v", "-lineinfo", f"--gpu-name={arch}", str(src), "-o", str(src) + ".o"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    _logs[_digest(ptx)] = done.stderr
    return done.stderr


def ptxas_report(kernel: Any) -> PtxasReport:
    log = _cached_log(kernel)
    if log is None or "Used" not in log:
        log = _assemble(kernel)
    return parse_ptxas_log(log)


def config_label(jit: Any, kwargs: dict[str, Any], kernel: Any) -> str:
    """The constexprs given to a launch and the launch options the compiled kernel used."""
    constexprs = {p.name for p in getattr(jit, "params", []) if getattr(p, "is_constexpr", False)}
    given = [f"{k}={v!r}" for k, v in kwargs.items() if k in constexprs and isinstance(v, int | float | bool | str)]
    md = kernel.metadata
    options = [f"num_warps={md.num_warps}", f"num_stages={md.num_stages}"]
    if getattr(md, "maxnreg", None):
        options.append(f"maxnreg={md.maxnreg}")
    return ", ".join(given + options)


def kernel_cost(name: str, sizes: Literal["full", "small"], label: str, kernel: Any, *, autotuned: bool) -> KernelCost:
    report = ptxas_report(kernel)
    return KernelCost(
        kernel=name,
        sizes=sizes,
        config=label,
        autotuned=autotuned,
        registers=report.registers,
        spill_stores=report.spill_stores,
        spill_loads=report.spill_loads,
        shared_memory=int(getattr(kernel.metadata, "shared", 0) or 0),
        warnings=report.warnings,
        advisories=[a.said() for a in report.advisories],
    )


# ---- recording, for the compile-only launch tracker (`_launches.LaunchTracker`) --------------------------
def record_cost(tracker: Any, jit: Any, kwargs: dict[str, Any], kernel: Any) -> None:
    """Add what `kernel`, just compiled for a launch of `jit`, costs at the tracker's sizes (once per binary)."""
    key = (str(kernel.hash), tracker.sizes)
    if key in tracker._costed:
        return
    tracker._costed.add(key)
    label = config_label(jit, kwargs, kernel)
    tracker.costs.append(kernel_cost(jit.__name__, tracker.sizes, label, kernel, autotuned=tracker._tuning))


def compile_configs(tracker: Any, tuner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Compile every config of an autotuned kernel. A config that does not compile, or needs more shared memory
    than the GPU has, is reported and skipped, as a GPU's autotuner skips it; the kernel fails only when no config
    is left (raising the first config's compile error, or leaving the kernel's own shared-memory check to fail).

    Raises:
        whatever a config's compile raised, when no config compiled; anything that is not a compile error at once.
    """
    from adaexplore.domain import Status
    from adaexplore.executor.worker.confine._errors import classify
    from adaexplore.executor.worker.confine._faults import CANDIDATE_MODULE, Refused

    name = getattr(tuner.base_fn, "__name__", "?")
    own = getattr(tuner.base_fn, "__module__", None) == CANDIDATE_MODULE
    limit = tracker.shared_memory_limit
    first_error: BaseException | None = None
    fitting: list[int] = []
    least: int | None = None
    tracker._tuning = True
    if tracker.work is not None:
        from adaexplore.roofline import LaunchWork

        tracker.tune_group = LaunchWork(kernel=name, configs=[], autotuned=True)
    try:
        for config in tuner.prune_configs(kwargs):
            done = len(tracker.costs)
            try:
                tuner.fn.run(*args, **kwargs, **config.all_kwargs())
            except Exception as exc:
                if isinstance(exc, Refused) or not own or classify(exc) is not Status.compile_error:
                    raise
                first_error = first_error or exc
                tracker.costs.append(
                    KernelCost(
                        kernel=name,
                        sizes=tracker.sizes,
                        config=str(config),
                        autotuned=True,
                        skipped=f"does not compile: {type(exc).__name__}: {str(exc).strip()[:300]}",
                    )
                )
                continue
            for cost in tracker.costs[done:]:
                used = cost.shared_memory or 0
                least = used if least is None else min(least, used)
                if limit is not None and used > limit:
                    cost.skipped = f"needs {used} B of shared memory, more than the GPU's {limit} B"
                else:
                    fitting.append(used)
    finally:
        tracker._tuning = False
        group, tracker.tune_group = tracker.tune_group, None
        if group is not None and tracker.work is not None:
            # what a GPU's autotuner would choose from: the configs that fit its shared memory
            group.configs = [c for c in group.configs if limit is None or c.shared_memory <= limit]
            if group.configs:
                tracker.work.append(group)
    if fitting:
        tracker.shared_memory[name] = max(max(fitting), tracker.shared_memory.get(name, 0))
    elif first_error is not None:
        raise first_error
    elif least is not None:
        tracker.shared_memory[name] = max(least, tracker.shared_memory.get(name, 0))
