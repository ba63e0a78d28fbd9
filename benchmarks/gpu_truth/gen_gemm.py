"""The GEMM template of the corpus generator (`generate.py`): one Triton GEMM with a problem's epilogue fused, in
the variants an expert tells apart in compiled code.

A `Gemm` variant says how the operands reach the tensor cores and how the work is laid out:

- `prec`: `tf32x3`, `ieee` or `tf32` (one `tl.dot` on fp32 tiles with that input precision), `bf16x3` or
  `fp16x3` (the operands split into a high and a low half-precision part, three dots per K step into one fp32
  accumulator: lo*hi, hi*lo, hi*hi);
- `split_a`, `split_b` (split precisions): `pre` (a Triton pass splits the operand before the GEMM, which then
  loads two half-precision tiles), `loop` (the GEMM loads the fp32 tile and splits it in registers at every K
  step: float -> bf16 -> float conversions in the main loop), `loopint` (in registers by integer rounding:
  shifts, adds and masks on the fp32 bits in place of the conversion back to float);
- tiles, warps, stages, `group` (GROUP_M of the grouped program order; 1 is plain row-major order);
- `acc`: `zeros` (`tl.zeros` then `acc = tl.dot(a, b, acc)`), `two` (split precisions: the two small products
  summed in an accumulator of their own, added to the large one after the loop; the tensor cores cut each partial
  sum to 26 bits below the largest exponent in it, so small products chained onto a large accumulator lose their
  low bits) or `first` (the first K step peeled: the accumulator
  starts from its product);
- `persistent`: None (one program per output tile) or the grid of a persistent kernel that loops over tiles:
  `sms` (the SM count), `2sms`, `half` (half the SMs) or a fixed number (`12`: too small on purpose);
- `tma`: operands loaded through host-side TensorDescriptors (Hopper's bulk copies) instead of pointers;
- `autotune`: a list of (bm, bn, bk, warps, stages) configs that `triton.autotune` picks from.

`GemmProblem` holds what is problem-specific: the constructor, where the operands come from and the epilogue.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gen_split import SPLIT_KERNEL


@dataclass(frozen=True)
class GemmProblem:
    level: int
    number: int
    init_sig: str  # the constructor's parameters, after self
    init_body: tuple[str, ...]  # its lines, Model's parameters created in Model's order
    layout: str  # "linear": x (M,K) @ weight (N,K)^T; "matmul": A (M,K) @ B (K,N)
    forward_sig: str = "x"
    a_expr: str = "x"
    b_expr: str = "self.linear.weight"
    bias_expr: str | None = "self.linear.bias"  # added to every row before the epilogue
    epi_ptrs: tuple[tuple[str, str], ...] = ()  # (kernel parameter, host tensor): per-column vectors
    epi_scalars: tuple[tuple[str, str], ...] = ()  # (kernel parameter, host float)
    epi_code: tuple[str, ...] = ()  # Triton lines from `y` (acc + bias) to `y`; vectors load at offs_n_ld
    epi_words: str = "epilogue fused"
    fp16_scale_b: float = 256.0  # nn.Linear weights lie within 1/sqrt(K): scaled so their low parts stay normal
    # chains past the GEMM: buffers made before the launch (host lines naming tensors passed as epi_ptrs), lines
    # after it that finish the forward (a second kernel), the Triton kernels they launch, and whether the GEMM
    # stores its (M, N) tile at all (a row reduction's epilogue may keep only partials)
    host_pre: tuple[str, ...] = ()
    host_post: tuple[str, ...] = ()
    extra_kernels: str = ""
    store: bool = True
    returns: str = "out"


@dataclass(frozen=True)
class Gemm:
    name: str
    prec: str = "tf32x3"
    split_a: str = "pre"
    split_b: str = "pre"
    bm: int = 128
    bn: int = 128
    bk: int = 32
    warps: int = 8
    stages: int = 3
    group: int = 8
    acc: str = "zeros"
    persistent: str | None = None
    tma: bool = False
    autotune: tuple[tuple[int, int, int, int, int], ...] = field(default_factory=tuple)
    note: str = ""  # why this variant is in the corpus, for its first line

    @property
    def split(self) -> bool:
        return self.prec in ("bf16x3", "fp16x3")


def _half(v: Gemm) -> str:
    return "tl.bfloat16" if v.prec == "bf16x3" else "tl.float16"


def header(p: GemmProblem, v: Gemm) -> str:
    if v.split:
        how = {
            "pre": "split by a Triton pass before the GEMM",
            "loop": "split in registers at every K step",
            "loopint": "split in registers at every K step by integer rounding",
        }
        ops = f"x {how[v.split_a]}, the weight {how[v.split_b]}" if v.split_a != v.split_b else f"both {how[v.split_a]}"
        prec = f"{v.prec} ({ops}; 3 {v.prec[:4]} dots per K step, fp32 accumulation)"
    else:
        prec = f"{v.prec} dot on fp32 tiles"
    if v.autotune:
        tiles = "autotuned over " + ", ".join(f"{c[0]}x{c[1]}x{c[2]} w{c[3]} s{c[4]}" for c in v.autotune)
    else:
        tiles = f"{v.bm}x{v.bn}x{v.bk} w{v.warps} s{v.stages}"
    order = "plain order" if v.group == 1 else f"grouped order (GROUP_M {v.group})"
    sched = f"persistent (grid {v.persistent}, a loop over tiles)" if v.persistent else "one program per tile"
    acc = {
        "first": "accumulator from the first product",
        "two": "the small products in an accumulator of their own",
    }.get(v.acc, "accumulator from tl.zeros")
    loads = "TMA descriptor loads" if v.tma else "pointer loads"
    split = f"{v.split_a}/{v.split_b}" if v.split else "-"
    shape = (
        "bm=auto bn=auto bk=auto warps=auto stages=auto"
        if v.autotune
        else (f"bm={v.bm} bn={v.bn} bk={v.bk} warps={v.warps} stages={v.stages}")
    )
    params = (
        f"[family=gemm prec={v.prec} split={split} {shape} group={v.group} acc={v.acc} "
        f"persistent={v.persistent or '-'} tma={int(v.tma)} autotune={len(v.autotune)}]"
    )
    note = f"; {v.note}" if v.note else ""
    return f"# one Triton GEMM, {prec}, {tiles}, {order}, {sched}, {acc}, {loads}, {p.epi_words}{note} {params}"


def _operand_params(v: Gemm, side: str) -> list[str]:
    mode = v.split_a if side == "a" else v.split_b
    if v.tma:
        return [f"{side}_hi_desc", f"{side}_lo_desc"] if v.split else [f"{side}_desc"]
    if v.split and mode == "pre":
        return [f"{side}_hi_ptr", f"{side}_lo_ptr"]
    return [f"{side}_ptr"]


def _split_lines(v: Gemm, side: str, tile: str) -> list[str]:
    """Lines that make {side}_hi, {side}_lo from the fp32 tile `tile` in registers."""
    half = _half(v)
    mode = v.split_a if side == "a" else v.split_b
    if mode == "loop":
        return [f"{side}_hi = {tile}.to({half})", f"{side}_lo = ({tile} - {side}_hi.to(tl.float32)).to({half})"]
    # integer rounding to the nearest bf16 (ties to even) on the bits: the high part's bf16 is its top 16 bits,
    # no float conversion; only the low part is converted
    return [
        f"{side}_bits = {tile}.to(tl.uint32, bitcast=True)",
        f"{side}_bits = ({side}_bits + 0x7FFF + (({side}_bits >> 16) & 1)) & 0xFFFF0000",
        f"{side}_hi32 = {side}_bits.to(tl.float32, bitcast=True)",
        f"{side}_hi = ({side}_bits >> 16).to(tl.uint16).to({half}, bitcast=True)",
        f"{side}_lo = ({tile} - {side}_hi32).to({half})",
    ]


def _loads(p: GemmProblem, v: Gemm, k: str) -> list[str]:
    """Lines that load the K step at `k` into a/b (fp32) or a_hi.. b_lo (split)."""
    lines: list[str] = []
    if v.tma:
        b_idx = "[off_n, {k}]" if p.layout == "linear" else "[{k}, off_n]"
        b_t = ".T" if p.layout == "linear" else ""
        if v.split:
            lines += [f"a_hi = a_hi_desc.load([off_m, {k}])", f"a_lo = a_lo_desc.load([off_m, {k}])"]
            lines += [
                f"b_hi = b_hi_desc.load({b_idx.format(k=k)}){b_t}",
                f"b_lo = b_lo_desc.load({b_idx.format(k=k)}){b_t}",
            ]
        else:
            lines += [f"a = a_desc.load([off_m, {k}])", f"b = b_desc.load({b_idx.format(k=k)}){b_t}"]
        return lines
    lines.append(f"k_ok = offs_k < K - {k}")
    for side, off, mask in (("a", "a_off", "k_ok[None, :]"), ("b", "b_off", "k_ok[:, None]")):
        mode = v.split_a if side == "a" else v.split_b
        stride = "stride_ak" if side == "a" else "stride_bk"
        at = f"{off} + {k} * {stride}"
        if v.split and mode == "pre":
            lines.append(f"{side}_hi = tl.load({side}_hi_ptr + {at}, mask={mask}, other=0.0)")
            lines.append(f"{side}_lo = tl.load({side}_lo_ptr + {at}, mask={mask}, other=0.0)")
        else:
            lines.append(f"{side} = tl.load({side}_ptr + {at}, mask={mask}, other=0.0)")
            if v.split:
                lines += _split_lines(v, side, side)
    return lines


def _dots(v: Gemm, first: bool) -> list[str]:
    if v.split:
        if v.acc == "two":
            return [
                "acc_lo = tl.dot(a_lo, b_hi, acc_lo)",
                "acc_lo = tl.dot(a_hi, b_lo, acc_lo)",
                "acc = tl.dot(a_hi, b_hi, acc)",
            ]
        head = "acc = tl.dot(a_lo, b_hi)" if first else "acc = tl.dot(a_lo, b_hi, acc)"
        return [head, "acc = tl.dot(a_hi, b_lo, acc)", "acc = tl.dot(a_hi, b_hi, acc)"]
    if first:
        return [f'acc = tl.dot(a, b, input_precision="{v.prec}")']
    return [f'acc = tl.dot(a, b, acc, input_precision="{v.prec}")']


def _tile_body(p: GemmProblem, v: Gemm, pid: str) -> list[str]:
    """The lines that compute and store one output tile, numbered `pid` (indented by the caller)."""
    lines = ["num_pid_m = tl.cdiv(M, BLOCK_M)", "num_pid_n = tl.cdiv(N, BLOCK_N)"]
    if v.group == 1:
        lines += [f"pid_m = {pid} // num_pid_n", f"pid_n = {pid} % num_pid_n"]
    else:
        lines += [
            "# grouped order: GROUP_M row tiles walk the column tiles together (B tiles reused in L2)",
            "num_pid_in_group = GROUP_M * num_pid_n",
            f"first_pid_m = ({pid} // num_pid_in_group) * GROUP_M",
            "group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)",
            f"pid_m = first_pid_m + (({pid} % num_pid_in_group) % group_size_m)",
            f"pid_n = ({pid} % num_pid_in_group) // group_size_m",
        ]
    lines += [
        "offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
        "offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
        "# rows/cols past the edge are wrapped for the loads (always in bounds) and masked at the store",
        "offs_m_ld = offs_m % M",
        "offs_n_ld = offs_n % N",
    ]
    if v.tma:
        lines += ["off_m = pid_m * BLOCK_M", "off_n = pid_n * BLOCK_N"]
    else:
        lines += [
            "offs_k = tl.arange(0, BLOCK_K)",
            "a_off = offs_m_ld[:, None] * stride_am + offs_k[None, :] * stride_ak",
            "b_off = offs_k[:, None] * stride_bk + offs_n_ld[None, :] * stride_bn",
        ]
    if v.acc == "first":
        lines += ["# the first K step peeled: the accumulator starts from its product"]
        lines += _loads(p, v, "0") + _dots(v, True)
        start = "BLOCK_K"
    else:
        lines += ["acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)"]
        if v.acc == "two":
            lines += ["acc_lo = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)"]
        start = "0"
    lines.append(f"for k0 in range({start}, K, BLOCK_K):")
    lines += ["    " + line for line in _loads(p, v, "k0") + _dots(v, False)]
    if v.acc == "two":
        lines.append("acc = acc + acc_lo")
    if v.prec == "fp16x3":
        lines.append("acc = acc * unscale")
    if p.bias_expr is not None:
        lines += ["bias = tl.load(bias_ptr + offs_n_ld)", "y = acc + bias[None, :]"]
    else:
        lines.append("y = acc")
    lines.append("mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]")
    lines += list(p.epi_code)
    if p.store:
        lines.append("tl.store(out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :], y, mask=mask)")
    return lines


def _kernel(p: GemmProblem, v: Gemm) -> str:
    params = _operand_params(v, "a") + _operand_params(v, "b") + ["out_ptr"]
    if p.bias_expr is not None:
        params.append("bias_ptr")
    params += [name for name, _ in p.epi_ptrs]
    params += ["M", "N", "K"]
    if not v.tma:
        params += ["stride_am", "stride_ak", "stride_bk", "stride_bn"]
    params.append("stride_om")
    if v.prec == "fp16x3":
        params.append("unscale")
    params += [name for name, _ in p.epi_scalars]
    if v.persistent:
        params.append("NUM_PROGS")
    params += ["BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr", "GROUP_M: tl.constexpr"]
    out = []
    if v.autotune:
        out.append("@triton.autotune(")
        out.append("    configs=[")
        for bm, bn, bk, w, s in v.autotune:
            out.append(
                f'        triton.Config({{"BLOCK_M": {bm}, "BLOCK_N": {bn}, "BLOCK_K": {bk}}}, num_warps={w}, num_stages={s}),'
            )
        out.append("    ],")
        out.append('    key=["M", "N", "K"],')
        out.append(")")
    out.append("@triton.jit")
    out.append("def _gemm_kernel(")
    out += [f"    {prm}," for prm in params]
    out.append("):")
    if v.persistent:
        out += [
            "    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)",
            "    for tile in range(tl.program_id(0), num_tiles, NUM_PROGS):",
        ]
        out += ["        " + line for line in _tile_body(p, v, "tile")]
    else:
        out.append("    pid = tl.program_id(0)")
        out += ["    " + line for line in _tile_body(p, v, "pid")]
    return "\n".join(out) + "\n"


def _forward(p: GemmProblem, v: Gemm) -> list[str]:
    lines = [f"a = {p.a_expr}.contiguous()", f"b = {p.b_expr}.contiguous()"]
    if p.layout == "linear":
        lines += ["M, K = a.shape", "N = b.shape[0]"]
    else:
        lines += ["M, K = a.shape", "N = b.shape[1]"]
    args: list[str] = []
    if v.split:
        scale_b = p.fp16_scale_b if v.prec == "fp16x3" else 1.0
        for side, scale in (("a", 1.0), ("b", scale_b)):
            mode = v.split_a if side == "a" else v.split_b
            if mode == "pre":
                lines.append(f"{side}_hi, {side}_lo = _split({side}, {scale!r})")
                if scale != 1.0:
                    lines[-1] += f"  # scaled by {scale!r}, undone on the accumulator"
    if v.tma:
        if not v.split:
            lines += [
                "# TMA wants 16-byte aligned rows: a row length that is not a multiple of 4 floats (never at the",
                "# problem's own sizes) is padded with zeros",
                "if K % 4:",
                "    a = torch.nn.functional.pad(a, (0, 4 - K % 4))",
            ]
            if p.layout == "linear":
                lines.append("    b = torch.nn.functional.pad(b, (0, 4 - K % 4))")
        bm, bn, bk = ("BLOCK_M", "BLOCK_N", "BLOCK_K")
        b_block = f"[{bn}, {bk}]" if p.layout == "linear" else f"[{bk}, {bn}]"
        if p.layout == "matmul" and not v.split:
            raise ValueError("fp32 TMA of a (K, N) operand is not in the corpus")
        for side, block in (("a", f"[{bm}, {bk}]"), ("b", b_block)):
            if v.split:
                args += [
                    f"TensorDescriptor.from_tensor({side}_hi, {block})",
                    f"TensorDescriptor.from_tensor({side}_lo, {block})",
                ]
            else:
                args.append(f"TensorDescriptor.from_tensor({side}, {block})")
    else:
        for side in ("a", "b"):
            mode = v.split_a if side == "a" else v.split_b
            args += [f"{side}_hi", f"{side}_lo"] if v.split and mode == "pre" else [side]
    args.append("out")
    if p.bias_expr is not None:
        lines.append(f"bias = {p.bias_expr}.contiguous()")
        args.append("bias")
    args += [expr for _, expr in p.epi_ptrs]
    args += ["M", "N", "K"]
    if not v.tma:
        a_src = "a_hi" if v.split and v.split_a == "pre" else "a"
        b_src = "b_hi" if v.split and v.split_b == "pre" else "b"
        if p.layout == "linear":
            args += [f"{a_src}.stride(0)", f"{a_src}.stride(1)", f"{b_src}.stride(1)", f"{b_src}.stride(0)"]
        else:
            args += [f"{a_src}.stride(0)", f"{a_src}.stride(1)", f"{b_src}.stride(0)", f"{b_src}.stride(1)"]
    args.append("out.stride(0)")
    if v.prec == "fp16x3":
        args.append(repr(1.0 / p.fp16_scale_b))
    args += [expr for _, expr in p.epi_scalars]
    lines.append(
        "out = torch.empty((M, N), device=a.device, dtype=torch.float32)" if p.store else "out = a  # no (M, N) store"
    )
    if v.autotune:
        if v.tma or v.persistent:
            raise ValueError("autotuned variants are plain tiles")
        lines.append('grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)')
        consts = [f"GROUP_M={v.group}"]
    else:
        lines.append(f"BLOCK_M, BLOCK_N, BLOCK_K = {v.bm}, {v.bn}, {v.bk}")
        lines.append("num_tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)")
        if v.persistent:
            if v.persistent.isdigit():
                lines.append(f"programs = {v.persistent}  # fixed on purpose: most SMs idle on an H200")
            else:
                lines += [
                    "sms = torch.cuda.get_device_properties(a.device).multi_processor_count",
                    {"sms": "programs = sms", "2sms": "programs = 2 * sms", "half": "programs = max(sms // 2, 1)"}[
                        v.persistent
                    ],
                ]
            lines.append("programs = min(programs, num_tiles)")
            lines.append("grid = (programs,)")
            args.append("programs")
        else:
            lines.append("grid = (num_tiles,)")
        consts = ["BLOCK_M=BLOCK_M", "BLOCK_N=BLOCK_N", "BLOCK_K=BLOCK_K", f"GROUP_M={v.group}"]
        consts += [f"num_warps={v.warps}", f"num_stages={v.stages}"]
    lines += list(p.host_pre)
    lines.append("_gemm_kernel[grid](")
    lines += [f"    {arg}," for arg in args + consts]
    lines.append(")")
    lines += list(p.host_post)
    lines.append(f"return {p.returns}")
    return lines


def render(p: GemmProblem, v: Gemm) -> str:
    parts = [header(p, v), "import torch", "import torch.nn as nn", "import triton", "import triton.language as tl"]
    if v.tma:
        parts.append("from triton.tools.tensor_descriptor import TensorDescriptor")
    text = "\n".join(parts) + "\n"
    if v.split and "pre" in (v.split_a, v.split_b):
        half = "bf16" if v.prec == "bf16x3" else "fp16"
        torch_half = "torch.bfloat16" if v.prec == "bf16x3" else "torch.float16"
        text += SPLIT_KERNEL.format(half=half, tl_half=_half(v), torch_half=torch_half)
    text += p.extra_kernels
    text += "\n\n" + _kernel(p, v) + "\n\n"
    text += "class ModelNew(nn.Module):\n"
    text += f"    def __init__(self{', ' if p.init_sig else ''}{p.init_sig}):\n"
    text += "        super().__init__()\n"
    text += "".join(f"        {line}\n" for line in p.init_body)
    text += f"\n    def forward(self, {p.forward_sig}):\n"
    text += "".join(f"        {line}\n" for line in _forward(p, v))
    return text
