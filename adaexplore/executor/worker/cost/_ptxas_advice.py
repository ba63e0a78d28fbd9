"""The assembler's advisories: the `ptxas info : (C7515) Potential Performance Loss: ...` lines (C7508 to C7515 and
their kin) that `ptxas -v` prints beside its register counts, each said in a kernel author's words with what
usually fixes it.

Most say that the tensor cores' warp-group MMAs (wgmma) of a function were serialized: the assembler waits for
each MMA to finish before the next starts, which costs much of a dot's speed on Hopper. The reason it gives
names what to change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Advisory", "parse_advisories"]

_LINE = re.compile(
    r"^ptxas\s+(?:info|warning)\s*:\s*(?:\((C\d{4})\)\s*)?Potential Performance Loss:\s*(.*?)\s*$", re.MULTILINE
)
_FUNCTION = re.compile(r"\s+in the function '([^']*)'\.?$")
_SERIALIZED = re.compile(r"^wgmma\.mma_async instructions are serialized due to (.*)$")

# what each reason for serialized MMAs means, and what usually fixes it
_REASONS: tuple[tuple[str, str, str], ...] = (
    (
        "defining accumulator registers",
        "other instructions write the accumulator inside the MMA pipeline (an accumulator started with tl.zeros "
        "and chained through the dots, or changed between them)",
        "start the accumulator from the first product (acc = tl.dot(a, b) before the loop, which then starts at "
        "the second K step) and change it only through tl.dot's acc argument",
    ),
    (
        "reading accumulator registers",
        "other instructions read the accumulator between MMAs (a rescale, a maximum or a store inside the loop)",
        "read the accumulator only after the loop, or keep what the loop needs in a value of its own",
    ),
    (
        "defining input registers",
        "an operand is computed in registers inside the MMA pipeline (a split or a conversion feeding the dot)",
        "prepare the operands before the loop (in a pass of their own) so the dot reads them from shared memory",
    ),
    (
        "insufficient register resources",
        "the accumulators do not fit the registers the MMA pipeline needs",
        "use a smaller BLOCK_M or BLOCK_N, or num_warps=8 to share the accumulator between two warp groups",
    ),
    (
        "Extern calls",
        "a call to an external function (libdevice) sits among the MMAs",
        "move the libdevice call out of the loop, or use a tl builtin in its place",
    ),
    (
        "crossing function boundary",
        "a function call that is not inlined sits among the MMAs",
        "let the @triton.jit helper be inlined (no noinline=True), or call it outside the loop",
    ),
    (
        "ill formed pipeline stage",
        "control flow among the MMAs leaves their pipeline ill-formed",
        "keep tl.dot out of branches inside the loop (mask the operands instead)",
    ),
    (
        "divergent path",
        "the MMAs depend on a branch that threads of a warp group take differently",
        "keep tl.dot out of branches inside the loop (mask the operands instead)",
    ),
)


@dataclass(frozen=True)
class Advisory:
    code: str  # "C7515"; "" where the line carries none
    function: str  # the kernel function it is about ("" where it names none)
    text: str  # the assembler's words after "Potential Performance Loss:"
    serializes: bool  # it says the wgmma MMAs were serialized
    meaning: str  # in a kernel author's words
    fix: str  # what usually fixes it ("" where nothing is known)

    def said(self) -> str:
        """One line: "ptxas C7515: the tensor-core MMAs (wgmma) run one after another: <why>; usually fixed by
        <fix>"."""
        head = f"ptxas {self.code}" if self.code else "ptxas"
        line = f"{head}: {self.meaning}"
        return f"{line}; usually fixed by this: {self.fix}" if self.fix else line


def _explain(text: str) -> tuple[bool, str, str]:
    serialized = _SERIALIZED.match(text)
    if serialized:
        reason = serialized.group(1)
        for key, meaning, fix in _REASONS:
            if key in reason:
                return True, f"the tensor-core MMAs (wgmma) run one after another, not overlapped: {meaning}", fix
        return True, f"the tensor-core MMAs (wgmma) run one after another, not overlapped, due to {reason}", ""
    if "setmaxnreg" in text:
        return False, f"{text} (the register limit per warp group it asked for does not apply)", ""
    return False, text, ""


def parse_advisories(log: str) -> list[Advisory]:
    """Every advisory of a `ptxas -v` log, in order, each once."""
    found: list[Advisory] = []
    for code, rest in _LINE.findall(log):
        function = _FUNCTION.search(rest)
        text = _FUNCTION.sub("", rest).rstrip(".")
        serializes, meaning, fix = _explain(text)
        advisory = Advisory(code, function.group(1) if function else "", text, serializes, meaning, fix)
        if advisory not in found:
            found.append(advisory)
    return found
