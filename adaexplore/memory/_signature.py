"""Failure signatures: one stable key per kind of mistake, whatever the task, names, sizes or paths.

The key keeps the status, the exception type and the error text with everything specific to one
kernel abstracted (identifiers the candidate defined, literals, shapes, dtypes, paths, addresses,
line numbers), plus the Triton construct where it can be told (the `tl.` call or statement the
compiler pointed at).
"""

from __future__ import annotations

import ast
import hashlib
import keyword
import re
import textwrap
from dataclasses import dataclass

from adaexplore.domain import Evaluation

__all__ = ["Signature", "signature", "signature_of_text"]

_CARET = re.compile(r"^\s*\^+\s*$", re.M)
_AT = re.compile(r"^at \d+:\d+:\s*$", re.M)
_REPR = re.compile(r"^(\w+(?:Error|Exception|Failure))\((['\"])(.*)\2\)$", re.S)
_WHOLLY_QUOTED = re.compile(r"^(\w+Error): (['\"])(.*)\2$", re.S)
_PATH = re.compile(r"(?:/[\w.\-]+)+(?:\.py)?|<string>|candidate\.py|task\.py")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`")
_BLOCK_TYPE = re.compile(r"<\[[^\]]*\],\s*\w+>")
_SHAPE = re.compile(r"\[\s*\d+(?:\s*,\s*\d+)*\s*\]|\(\s*\d+(?:\s*,\s*\d+)+\s*,?\s*\)")
_DTYPE = re.compile(
    r"\b(?:fp|bf|float|int|uint|i|u|f)(?:8|16|32|64)(?:e4nv|e5|e4b15|e4m3fn|e5m2)?\b|\bbfloat16\b|\bhalf\b|\bdouble\b"
)
_NUMBER = re.compile(r"(?<![\w<])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w>])")
_CALL_AT = re.compile(r"[A-Za-z_][\w.]*")
_CONSTRUCT_PREFIXES = ("tl.", "libdevice.", "triton.language.", "math.", "torch.")
# Names in known message templates, replaced before the generic pass.
_NAMED = [
    re.compile(r"(?<=Cannot access global variable )\w+"),
    re.compile(r"(?<=Loop-carried variable )\w+"),
    re.compile(r"\b\w+(?= is not defined)"),
    re.compile(r"(?<=Keyword argument )\w+(?= was specified)"),
    re.compile(r"(?<=<function )\w+"),
    re.compile(r"(?<=in kernel )\w+"),
    re.compile(r"(?<=byte offset <n> of )\w+"),
    re.compile(r"(?<=byte offset \d of )\w+"),
    re.compile(r"\b\w+(?=\(\) missing \d+ required)"),
]
_AST_NODE = re.compile(r"unsupported AST node type: (\w+)")
# A frame of a Python traceback, and the module path before an exception's class name.
_FRAME = re.compile(r'^[ \t]*File "[^"\n]*", line \d+.*$', re.M)
_QUALIFIED = re.compile(r"^(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_]\w*(?::|$))")  # on the exception's first line
_KILLED = re.compile(r"killed by (\w+)")
_SPACE = re.compile(r"\s+")
_MAX_TEXT = 400
_MAX_SCAN = 50 * _MAX_TEXT

# Mismatch verdicts carry no exception; their message says which check failed.
_MISMATCH_KINDS = [
    ("timed call", "replayed"),
    ("has shape", "shape"),
    ("has dtype", "dtype"),
    ("NaN where the reference is finite", "nan"),
    ("not a plain torch.Tensor", "not_a_tensor"),
    ("must return a torch.Tensor", "not_a_tensor"),
    ("the inputs are on", "device"),
    ("tensors; the reference returns", "output_count"),
]


# Verdicts that say a kernel failed but not how: many different mistakes share them, so they never merge
# rules by themselves. So do a bare status (a failure with no error text) and a crash.
_GENERIC = {"mismatch|values", "timeout"}


@dataclass(frozen=True)
class Signature:
    """`key` is readable; `id` is its short hash, the stable handle rules refer to."""

    key: str

    @property
    def id(self) -> str:
        return hashlib.sha1(self.key.encode()).hexdigest()[:12]

    @property
    def specific(self) -> bool:
        """True when the signature names one kind of mistake (so equal signatures mean the same rule)."""
        return "|" in self.key and self.key not in _GENERIC and not self.key.startswith("crashed|")


def _defined_names(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
    return {n for n in names if not keyword.iskeyword(n) and n not in {"tl", "triton", "torch", "nn", "F", "math"}}


def _error_part(text: str) -> tuple[str, int | None, str]:
    """Split a Triton compile error into (the source excerpt it quotes, the caret's column, the error)."""
    carets = list(_CARET.finditer(text))
    if carets:
        caret = carets[-1].group(0).strip("\n")
        return text[: carets[-1].start()], caret.index("^"), text[carets[-1].end() :]
    return "", None, text


def _construct(excerpt: str, caret_column: int | None, error: str) -> str:
    """The statement the compiler rejected, or the call its caret points at (`tl.dot`, `math.exp`)."""
    node = _AST_NODE.search(error)
    if node:
        return node.group(1).lower()
    lines = [line for line in excerpt.splitlines() if line.strip()]
    if not lines or caret_column is None:
        return ""
    call = _CALL_AT.match(lines[-1], caret_column)
    if call and call.group(0).startswith(_CONSTRUCT_PREFIXES):
        name = call.group(0)
        return "tl." + name.rsplit(".", 1)[1] if name.startswith(("tl.", "triton.language.")) else name
    return ""


def final_exception(text: str) -> str:
    """The last exception of a Python traceback (its type, without the module path, and its message), or the
    text as it is when it holds no traceback frames. The frames name the files, lines and functions of one
    run; left in, a long traceback would be nothing but frames by the time its key is cut to length."""
    frames = list(_FRAME.finditer(text))
    if not frames:
        return text
    header = frames[-1].group(0)
    indent = len(header) - len(header.lstrip())
    lines = text[frames[-1].end() :].split("\n")
    # The last frame's quoted source line and carets are indented deeper than its `File` line; the exception
    # starts at the next line that is indented less (a Triton message goes on with its own source excerpt,
    # which is kept). A traceback quoted inside an indented log is indented as a whole, and read the same.
    start = next((i for i, line in enumerate(lines) if line.strip() and len(line) - len(line.lstrip()) < indent), None)
    if start is None:
        return text
    first, _, rest = textwrap.dedent("\n".join(lines[start:])).strip().partition("\n")
    return f"{_QUALIFIED.sub('', first)}\n{rest}".rstrip("\n")


def normalize(text: str, names: set[str]) -> str:
    text = _AT.sub("", text).strip()
    wrapped = _REPR.match(text.split("\n")[-1].strip()) if text else None
    if wrapped:
        text = f"{wrapped.group(1)}: {wrapped.group(3)}"
    quoted = _WHOLLY_QUOTED.match(text)
    if quoted:  # KeyError quotes its whole message
        text = f"{quoted.group(1)}: {quoted.group(3)}"
    # The key keeps the first _MAX_TEXT characters: the rest of a huge text is not worth the regexes' time.
    text = _ADDRESS.sub("<addr>", text[:_MAX_SCAN])
    text = _PATH.sub("<path>", text)
    text = _QUOTED.sub("<q>", text)
    text = _BLOCK_TYPE.sub("<block>", text)
    text = _SHAPE.sub("<shape>", text)
    text = _DTYPE.sub("<dtype>", text)
    for pattern in _NAMED:
        text = pattern.sub("<id>", text)
    # Elsewhere only names that cannot be English words: a plain lowercase name such as `out` or `mask`, or
    # a single letter such as `K`, would also hide the same word or letter in the message's own text.
    coined = [n for n in names if len(n) > 1 and (not n.isalpha() or not n.islower())]
    if coined:
        text = re.sub(
            r"\b(?:" + "|".join(re.escape(n) for n in sorted(coined, key=len, reverse=True)) + r")\b", "<id>", text
        )
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()[:_MAX_TEXT]


# What the evaluator puts before the exception in an evaluation's message: the phase, not the mistake.
_PHASE = re.compile(
    r"^(?:forward raised (?:in trial \d+|while being timed)|the candidate module failed to import"
    r"|ModelNew\(\*get_init_inputs\(\)\) raised(?:; ModelNew must accept the same arguments as Model\([^)]*\))?): "
)
# An exception's "Type: message" line, as Python prints it and as the evaluator's messages carry it.
_EXCEPTION_HEAD = re.compile(r"^([A-Z][A-Za-z0-9_]*): ")


def signature_of_text(status: str, error_type: str, error_text: str, code: str = "") -> Signature:
    """The signature of a failure given as text: the status, the exception type and the error message (of a
    whole traceback, the last exception's). A timeout, a crash and a failure with no error text at all get
    generic signatures, which never merge rules by themselves."""
    if status == "timeout":
        return Signature("timeout")  # a kernel that never finishes says nothing of why
    if status == "mismatch":
        kind = next((k for marker, k in _MISMATCH_KINDS if marker in error_text), "values")
        return Signature(f"mismatch|{kind}")
    if status == "crashed" and not error_type.strip():
        killed = _KILLED.search(error_text)
        return Signature(f"crashed|{killed.group(1) if killed else 'exit'}")
    error_text = _PHASE.sub("", final_exception(error_text), count=1)
    head = _EXCEPTION_HEAD.match(error_text)
    if head and not error_type.strip():
        error_type = head.group(1)  # the type the evaluation would have named
    if not error_type.strip() and not error_text.strip():
        return Signature(status)  # nothing tells this failure from any other of its status
    if status == "syntax_error" and not error_type.strip():
        return Signature(f"{status}|{normalize(error_text, _defined_names(code))[:120]}")
    excerpt, column, error = _error_part(error_text)
    names = _defined_names(code)
    return Signature(f"{status}|{error_type}|{_construct(excerpt, column, error)}|{normalize(error, names)}")


def signature(evaluation: Evaluation, code: str) -> Signature:
    """The signature of a failed Evaluation."""
    status = evaluation.status.value
    error = evaluation.error
    if status == "rejected":
        flags = [f for f in evaluation.audit.flags if f.severity == "reject"]
        return Signature(f"rejected|{flags[0].code if flags else 'policy'}")
    if status == "mismatch" and evaluation.correctness is not None:
        failed = [t for t in evaluation.correctness.trials if not t.passed]
        # A wrong result close to the reference is a precision choice (TF32, a lower dtype), not a logic bug.
        if (
            failed
            and failed[0].norm_rel_error is not None
            and failed[0].norm_rel_error < 1e-2
            and "NaN" not in (failed[0].message or "")
        ):
            return Signature("mismatch|precision")
    if error is None:
        return signature_of_text(status, "", evaluation.message, code)
    return signature_of_text(status, error.type, error.message, code)
