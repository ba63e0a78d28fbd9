"""The part of the sandbox a worker applies to itself, after torch, triton and the device are set up and
before any candidate is imported: resource limits, a seccomp filter and a Landlock ruleset.

Under bubblewrap the namespaces already hide the machine; here the worker adds what namespaces cannot say
(which programs may be executed, which system calls may be made, how much memory and disk it may use).
Without bubblewrap (`landlock+seccomp`) Landlock also decides what may be read and written.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import subprocess
from typing import Literal

from adaexplore.executor.wire import _landlock
from adaexplore.executor.wire._confinement import Confinement

__all__ = ["confine", "executables"]

# System calls no kernel worker makes once it is set up: other processes' memory, kernel interfaces that
# widen what a process can reach (eBPF, io_uring, which bypasses this filter, keyrings, perf events), and
# changes to the mount and namespace layout.
_DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "open_by_handle_at",
    "name_to_handle_at",
    "fanotify_init",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "personality",
    # The worker talks to the evaluator through pipes; a socket of any family reaches the network, or a local
    # service through a Unix socket, which Landlock does not cover (socketpair stays allowed).
    "socket",
)
_CLONE_NEWUSER = 0x10000000
# Without a PID namespace, the process group is what the evaluator kills: nothing may leave it.
_SESSION_SYSCALLS = ("setsid", "setpgid")

# Of the worker's own /proc entry, what Python, torch, Triton and the CUDA driver read (open descriptors, the
# memory map, the status and limits): never mountinfo, mounts or mountstats, nor its threads' copies of them.
_OWN_PROC = ("fd", "fdinfo", "maps", "smaps", "status", "stat", "statm", "limits", "cmdline", "comm", "auxv", "io")

# Directories of every program on the machine: never allowed as a whole, whatever a compiler lists.
_GENERAL_BIN_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})
_LOADERS = ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/ld-linux-x86-64.so.2")


def _interpreter(path: str) -> str | None:
    """What the kernel starts to run the file at `path`: a script's `#!` program, or an ELF file's loader."""
    try:
        with open(path, "rb") as file:
            head = file.read(4096)
            if head.startswith(b"#!"):
                words = head[2:].split(b"\n", 1)[0].split()
                return words[0].decode() if words else None
            if not head.startswith(b"\x7fELF") or head[4] != 2:  # 64-bit ELF only
                return None
            order: Literal["little", "big"] = "little" if head[5] == 1 else "big"
            table = int.from_bytes(head[0x20:0x28], order)
            size, count = int.from_bytes(head[0x36:0x38], order), int.from_bytes(head[0x38:0x3A], order)
            for index in range(count):
                file.seek(table + index * size)
                entry = file.read(size)
                if int.from_bytes(entry[0:4], order) == 3:  # PT_INTERP
                    file.seek(int.from_bytes(entry[8:16], order))
                    return file.read(int.from_bytes(entry[32:40], order)).rstrip(b"\0").decode()
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    return None


def _with_interpreters(program: str, found: set[str]) -> None:
    """Add `program` and what starts it (a script's interpreter, the loader) to `found`."""
    while program and program not in found and os.path.exists(program):
        real = os.path.realpath(program)
        found.update({program, real})
        program = _interpreter(real) or ""


def _compiler_programs(compiler: str) -> set[str]:
    """The programs the C compiler runs (its own cc1 and collect2, the assembler, the linker), asked of it."""
    found: set[str] = set()
    try:
        listing = subprocess.run([compiler, "-print-search-dirs"], capture_output=True, text=True, timeout=20)
        for line in listing.stdout.splitlines():
            if line.startswith("programs: ="):
                dirs = (os.path.realpath(d) for d in line.removeprefix("programs: =").split(":") if os.path.isdir(d))
                found.update(d for d in dirs if d not in _GENERAL_BIN_DIRS)
        for tool in ("as", "ld", "collect2", "cc1"):
            named = subprocess.run([compiler, f"-print-prog-name={tool}"], capture_output=True, text=True, timeout=20)
            path = named.stdout.strip()
            path = path if os.path.isabs(path) else shutil.which(path) or ""
            if path:
                found.add(path)
    except (OSError, subprocess.SubprocessError):
        pass
    return found


def executables(extra: list[str]) -> list[str]:
    """What a worker may execute: Triton's ptxas, the C compiler that builds its launchers with the programs
    it runs (asked of the compiler, so a compiler installed anywhere works), what starts each of them (the
    dynamic loader, a wrapper script's interpreter), and `extra`."""
    from triton import knobs

    programs: set[str] = set(extra)
    for tool in (knobs.nvidia.ptxas, knobs.nvidia.ptxas_blackwell):
        try:
            programs.add(tool.path)
        except Exception:  # a tool Triton cannot find is one it will not run
            continue
    compiler = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
    if compiler:
        programs.add(compiler)
        programs |= _compiler_programs(compiler)
    programs.update(p for p in (shutil.which("as"), shutil.which("ld")) if p)
    found: set[str] = set()
    for program in programs:
        if os.path.isdir(program):
            found.add(program)
        else:
            _with_interpreters(program, found)
    found.update(os.path.realpath(p) for p in _LOADERS if os.path.exists(p))
    return sorted(found)


def _limit(kind: int, value: int) -> None:
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def _seccomp(deny_sessions: bool, deny_user_namespaces: bool) -> int:
    import pyseccomp

    rules = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    # every thread, including those torch and the CUDA driver started already
    rules.set_attr(pyseccomp.Attr.CTL_TSYNC, 1)
    refuse = pyseccomp.ERRNO(errno.EPERM)
    count = 0
    for name in (*_DENIED_SYSCALLS, *(_SESSION_SYSCALLS if deny_sessions else ())):
        try:
            rules.add_rule(refuse, name)
        except (OSError, ValueError):  # not a system call of this architecture
            continue
        count += 1
    if deny_user_namespaces:
        # a worker outside a user namespace of bubblewrap's (whose --disable-userns covers it) makes none: a
        # clone asking for one is refused, and clone3, whose flags a filter cannot read, reports itself missing
        # so that the C library falls back to clone
        rules.add_rule(refuse, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, _CLONE_NEWUSER, _CLONE_NEWUSER))
        rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
        count += 2
    rules.load()
    return count


def confine(spec: Confinement, *, on_gpu: bool) -> str:
    """Apply `spec` to this process for good; return what was applied, in words, for the provenance.

    Raises:
        OSError: the kernel refused a part of it (the worker then exits: no candidate runs unconfined).
    """
    if spec.kind == "none":
        return "none"
    applied: list[str] = []
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if spec.memory_bytes:
        # CUDA reserves address space far beyond what it uses, so on a GPU the cap counts written memory only
        _limit(resource.RLIMIT_DATA if on_gpu else resource.RLIMIT_AS, spec.memory_bytes)
        applied.append(f"{'data' if on_gpu else 'address space'} <= {spec.memory_bytes / 2**30:.1f} GiB")
    if spec.file_bytes:
        _limit(resource.RLIMIT_FSIZE, spec.file_bytes)
    _limit(resource.RLIMIT_NOFILE, 4096)
    full = spec.kind == "landlock+seccomp"
    reads = full or spec.restrict_reads
    if spec.seccomp:
        count = _seccomp(deny_sessions=full, deny_user_namespaces=full or spec.user is not None)
        applied.append(f"seccomp ({count} rules)")
    # Landlock refuses to move a file between directories unless the ruleset grants it (REFER): under
    # bubblewrap, where the namespaces decide what may be written, it is granted everywhere.
    handled = _landlock.FS_ALL if full else _landlock.EXECUTE | _landlock.REFER
    if reads:
        handled |= _landlock.FS_READ
    ruleset = _landlock.Ruleset(handled, deny_tcp=full, scoped=True)
    ruleset.allow(executables(spec.executable), _landlock.EXECUTE | _landlock.FS_READ)
    if not full:
        ruleset.allow(["/"], _landlock.REFER)
    if reads:
        # spec.readable holds the interpreter and its packages (the evaluator runs the same one), and of its own
        # process's files those its libraries read: not its mount table, which names the host's paths
        own = [f"/proc/{os.getpid()}/{name}" for name in _OWN_PROC]
        ruleset.allow([*spec.readable, *own], _landlock.FS_READ)
    if full:
        ruleset.allow(spec.writable, _landlock.FS_WRITE)
    ruleset.restrict()
    what = "files, network, " if full else "reads, " if reads else ""
    applied.append(f"landlock ABI {ruleset.abi} ({what}programs, signals)")
    if spec.user is not None:
        applied.append(f"as uid {spec.user}")
    return f"{spec.kind}: " + ", ".join(applied)
