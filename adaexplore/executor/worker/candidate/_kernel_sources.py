"""Each kernel's source, recorded when the kernel is made and checked wherever Triton compiles or interprets it.

Triton cuts a kernel's source out of its file at the first line that starts with `def`: a kernel whose cut starts
elsewhere than its own def line (inside a string of a decorator) is refused when it is made. A source swapped
afterwards (`_unsafe_update_src`), or a function the interpreter runs that was not made from the recorded source,
is refused where Triton reads it. The launch tracker (`_launches`) installs these checks and keeps the refusals.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import re
import textwrap
from typing import Any

from triton.runtime.jit import JITCallable, JITFunction

from adaexplore.executor.worker.confine._compile_clock import compiling
from adaexplore.executor.worker.confine._faults import CANDIDATE_MODULE, Refused, SourceChanged

__all__ = ["KernelSources", "def_line_source", "of_candidate"]


def _digest(src: str) -> str:
    return hashlib.sha256(src.encode("utf-8")).hexdigest()


def _tritons_cut(raw_src: list[str]) -> str:
    """The source Triton's JITCallable takes from a function's lines: from the first line starting with `def`."""
    src = textwrap.dedent("".join(raw_src))
    found = re.search(r"^def\s+\w+\s*\(", src, re.MULTILINE)
    return src[found.start() :] if found else src


def def_line_source(raw_src: list[str]) -> str:
    """A function's source from its own `def` line on, dedented as Triton dedents it: what Triton should
    compile for `raw_src` (the function's lines, decorators included, as `inspect.getsourcelines` gives them).
    Raises SyntaxError when the lines are not one function definition."""
    src = textwrap.dedent("".join(raw_src))
    tree = ast.parse(src)
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
        raise SyntaxError("the source is not a function definition")
    return "".join(src.splitlines(keepends=True)[tree.body[0].lineno - 1 :])


def of_candidate(fn: Any) -> bool:
    """Whether `fn` (a Triton kernel or the interpreter's function) wraps a function of the candidate's module."""
    return getattr(getattr(fn, "fn", None), "__module__", None) == CANDIDATE_MODULE


class KernelSources:
    """The sources of the kernels made since `install`, and the checks of them; a refusal's message is added to
    `refusals` (the launch tracker's) before it is raised."""

    def __init__(self, refusals: list[str]) -> None:
        self.refusals = refusals
        # The source each kernel was made from, by the kernel object's id: (kernel, its source, its digest).
        self._sources: dict[int, tuple[Any, str, str]] = {}
        # interpret: the source of each function made into a kernel, by the function's id; the functions the
        # interpreter made from checked sources
        self._interpreted: dict[int, tuple[Any, str]] = {}
        self._rewritten: dict[int, Any] = {}

    def install(self) -> None:
        """Check each kernel as it is made, and its source wherever Triton's compiler reads it."""
        self._check_jit_sources()
        self._verify_compiled_sources()

    def install_interpreted(self) -> None:
        """Check the source the interpreter reads for a kernel, and the function it runs for it."""
        self._verify_interpreted_sources()

    def _check_jit_sources(self) -> None:
        """Triton cuts a kernel's source out of its file at the first line that starts with `def`, which may
        be inside a string of a decorator: it would compile code other than the function written. Each
        function made into a Triton kernel is checked when it is made (the static rules refuse such strings
        first)."""
        original = JITCallable.__init__
        sources = self

        def __init__(jit: JITCallable, fn: Any) -> None:
            original(jit, fn)
            try:
                own = def_line_source(jit.raw_src)
            except SyntaxError:
                own = None
            if jit._src != own:
                message = (
                    f"You cannot hide code from the evaluator in kernel {fn.__name__}: the source Triton reads "
                    "for it does not start at its own def line (a string holds a line that starts with `def`)."
                )
                sources.refusals.append(message)
                raise Refused(message)
            # what every later compile of this kernel must find (see `_verify_compiled_sources`)
            sources._sources[id(jit)] = (jit, jit._src, _digest(jit._src))

        JITCallable.__init__ = __init__

    def _source_changed(self, name: str) -> SourceChanged:
        message = (
            f"You cannot change the source of kernel {name} after it was made (with _unsafe_update_src or "
            "otherwise): the source Triton was about to compile or run is not the one written in the file. "
            "Write each kernel once, as a function in the file."
        )
        self.refusals.append(message)
        return SourceChanged(message)

    def _check_source(self, jit: Any) -> None:
        """The source Triton compiles for `jit` is the one recorded when it was made. A kernel made before the
        checks were installed (Triton's own) is compared with its file once, then recorded."""
        src = vars(jit).get("_src")
        name = getattr(jit, "__name__", "?")
        if "parse" in vars(jit) or not isinstance(src, str):
            raise self._source_changed(name)
        held = self._sources.get(id(jit))
        if held is None or held[0] is not jit:
            # every kernel of the candidate's was made after the checks were installed: this one is a copy
            if getattr(getattr(jit, "fn", None), "__module__", None) == CANDIDATE_MODULE:
                raise self._source_changed(name)
            try:
                from_file: str | None = _tritons_cut(inspect.getsourcelines(jit.fn)[0])
            except (OSError, TypeError):
                from_file = None  # made by Triton from no file: nothing to compare with
            if from_file is not None and src != from_file:
                raise self._source_changed(name)
            self._sources[id(jit)] = (jit, src, _digest(src))
            return
        if src is not held[1] and _digest(src) != held[2]:
            raise self._source_changed(name)

    def _verify_compiled_sources(self) -> None:
        """Triton's compiler reads a kernel's source (and each function it calls) through `parse`, and compiles
        a kernel anew in `_do_compile`: both check the source against the recorded one."""
        parse, do_compile = JITCallable.parse, JITFunction._do_compile
        sources = self

        def checked_parse(jit: JITCallable) -> Any:
            sources._check_source(jit)
            return parse(jit)

        def checked_compile(jit: JITFunction, *args: Any, **kwargs: Any) -> Any:
            sources._check_source(jit)
            with compiling(jit.__name__):  # the compiler's time, not the candidate's (see `_compile_clock`)
                return do_compile(jit, *args, **kwargs)

        JITCallable.parse = checked_parse
        JITFunction._do_compile = checked_compile

    def _verify_interpreted_sources(self) -> None:
        """The interpreter reads a kernel's source from its file when it first runs it, and keeps the function it
        made from it: the source must be the one the kernel was made from, and the function run one made so."""
        from triton.runtime.interpreter import FunctionRewriter, InterpretedFunction

        init, rewrite_ast, rewrite = (
            InterpretedFunction.__init__,
            FunctionRewriter.rewrite_ast,
            InterpretedFunction.rewrite,
        )
        sources = self

        def recorded_init(ifn: InterpretedFunction, fn: Any, **kwargs: Any) -> None:
            init(ifn, fn, **kwargs)
            if getattr(fn, "__module__", None) != CANDIDATE_MODULE:
                return
            try:
                src = def_line_source(inspect.getsourcelines(fn)[0])
            except (OSError, TypeError, SyntaxError):
                src = ""  # never matches a source read later: its first run is refused
            sources._interpreted[id(fn)] = (fn, _digest(src))

        def checked_rewrite_ast(rewriter: FunctionRewriter) -> Any:
            fn = rewriter.fn
            if getattr(fn, "__module__", None) == CANDIDATE_MODULE:
                held = sources._interpreted.get(id(fn))
                try:
                    src = def_line_source(inspect.getsourcelines(fn)[0])
                except (OSError, TypeError, SyntaxError):
                    src = None
                if held is None or held[0] is not fn or src is None or _digest(src) != held[1]:
                    raise sources._source_changed(getattr(fn, "__name__", "?"))
            made = rewrite_ast(rewriter)
            sources._rewritten[id(made)] = made
            return made

        def checked_rewrite(ifn: InterpretedFunction) -> Any:
            made = rewrite(ifn)
            if of_candidate(ifn) and (sources._rewritten.get(id(made)) is not made or ifn.rewriter.fn is not ifn.fn):
                raise sources._source_changed(ifn.fn.__name__)
            return made

        InterpretedFunction.__init__ = recorded_init
        FunctionRewriter.rewrite_ast = checked_rewrite_ast
        InterpretedFunction.rewrite = checked_rewrite
