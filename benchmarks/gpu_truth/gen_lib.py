"""The library-plus-epilogue template of the corpus generator: cuBLAS's fp32 GEMM (`torch.mm`), then the
problem's bias and epilogue in Triton, fused in one elementwise pass or one kernel per operation."""

from __future__ import annotations

from gen_gemm import GemmProblem


def _ops(p: GemmProblem) -> str:
    words = p.epi_words.removesuffix(" fused")
    return words if words.startswith("bias") else f"bias, {words}"


def render_lib(p: GemmProblem, fused: bool, block: int = 1024, warps: int = 4) -> str:
    if p.layout != "linear" or any("offs_n_ld" in line for line in p.epi_code):
        raise ValueError("the library template takes a linear layer whose epilogue loads no per-column vector")
    scalars = [name for name, _ in p.epi_ptrs + p.epi_scalars]
    steps = ["y = y + tl.load(bias_ptr + offs % N)", *p.epi_code]
    if fused:
        head = (
            f"# cuBLAS GEMM (fp32, torch.mm) + one fused Triton epilogue pass ({_ops(p)}), "
            f"BLOCK {block}, {warps} warps [family=lib_epilogue fused=1 block={block} warps={warps}]"
        )
    else:
        head = (
            f"# cuBLAS GEMM (fp32, torch.mm) + one Triton kernel per epilogue operation ({len(steps)} passes over the "
            f"output), BLOCK {block}, {warps} warps [family=lib_epilogue fused=0 block={block} warps={warps}]"
        )
    out = [head, "import torch", "import torch.nn as nn", "import triton", "import triton.language as tl", "", ""]
    groups = [steps] if fused else [[s] for s in steps]
    for i, lines in enumerate(groups):
        params = ["y_ptr", "out_ptr", "bias_ptr", "n_elements", "N", *scalars, "BLOCK: tl.constexpr"]
        out += ["@triton.jit", f"def _epilogue_{i}({', '.join(params)}):"]
        out += [
            "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
            "    inside = offs < n_elements",
            "    y = tl.load(y_ptr + offs, mask=inside, other=0.0)",
        ]
        out += [f"    {line}" for line in lines]
        out += ["    tl.store(out_ptr + offs, y, mask=inside)", "", ""]
    out += ["class ModelNew(nn.Module):", f"    def __init__(self, {p.init_sig}):", "        super().__init__()"]
    out += [f"        {line}" for line in p.init_body]
    out += ["", f"    def forward(self, {p.forward_sig}):"]
    body = [
        f"a = {p.a_expr}.contiguous()",
        f"b = {p.b_expr}",
        f"bias = {p.bias_expr}.contiguous()",
        "y = torch.mm(a, b.t())",
        "n = y.numel()",
        "N = y.shape[1]",
        f"grid = (triton.cdiv(n, {block}),)",
    ]
    scalar_args = "".join(f", {expr}" for _, expr in p.epi_ptrs + p.epi_scalars)
    for i in range(len(groups)):
        body.append("out = torch.empty_like(y)")
        body.append(f"_epilogue_{i}[grid](y, out, bias, n, N{scalar_args}, BLOCK={block}, num_warps={warps})")
        body.append("y = out")
    body.append("return y")
    out += [f"        {line}" for line in body]
    return "\n".join(out) + "\n"
