"""Write the paged GQA decode workloads of this example TraceSet.

Produces, relative to this folder:

* ``workloads/gqa_paged/gqa_paged_decode_h32_kv8_d128_ps16.jsonl``: one workload Trace per line;
* ``blob/workloads/gqa_paged/gqa_paged_decode_h32_kv8_d128_ps16_<uuid>.safetensors``: the page
  table of each workload (``kv_indptr``, ``kv_indices``, ``kv_last_page_len``, all int32).

q, k_cache and v_cache are left ``random`` and sm_scale is a scalar, so only the small int32 page
tables are stored. Each workload draws its sequence lengths from a seeded generator and hands the
requests consecutive slices of a random permutation of the page pool, so a request's pages are
scattered over the cache. The pool has a few spare pages beyond those in use. Rerunning the script
rewrites the same files byte for byte.

Run with a Python that has torch and safetensors, e.g.::

    /tmp/fibvenv/bin/python examples/flashinfer/make_gqa_workloads.py
"""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parent
DEFINITION = "gqa_paged_decode_h32_kv8_d128_ps16"
PAGE_SIZE = 16
HEAD_DIM = 128
SEED = 20240611

# (batch_size, shortest, longest): sequence lengths are drawn uniformly from [shortest, longest].
# The longest request of the last workload is pinned to 8192 tokens.
SHAPES = [
    (1, 280, 320),
    (8, 500, 2000),
    (16, 1000, 4096),
    (32, 300, 8192),
]


def page_table(seq_lens: list[int], gen: torch.Generator) -> tuple[dict[str, torch.Tensor], int]:
    """Build kv_indptr / kv_indices / kv_last_page_len for the given lengths; return them and num_pages."""
    pages_per_req = [math.ceil(n / PAGE_SIZE) for n in seq_lens]
    used = sum(pages_per_req)
    num_pages = used + max(4, used // 16)  # some pages of the pool stay unused
    perm = torch.randperm(num_pages, generator=gen)
    kv_indices = perm[:used].to(torch.int32)
    kv_indptr = torch.zeros(len(seq_lens) + 1, dtype=torch.int32)
    kv_indptr[1:] = torch.tensor(pages_per_req, dtype=torch.int32).cumsum(0)
    kv_last_page_len = torch.tensor([(n - 1) % PAGE_SIZE + 1 for n in seq_lens], dtype=torch.int32)
    tables = {
        "kv_indptr": kv_indptr.contiguous(),
        "kv_indices": kv_indices.contiguous(),
        "kv_last_page_len": kv_last_page_len.contiguous(),
    }
    return tables, num_pages


def main() -> None:
    gen = torch.Generator().manual_seed(SEED)
    blob_dir = ROOT / "blob" / "workloads" / "gqa_paged"
    blob_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (batch_size, shortest, longest) in enumerate(SHAPES):
        seq_lens = torch.randint(shortest, longest + 1, (batch_size,), generator=gen).tolist()
        if longest == 8192:
            seq_lens[0] = 8192
        tables, num_pages = page_table(seq_lens, gen)
        wid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"adaexplore/examples/flashinfer/{DEFINITION}/{i}"))
        rel = f"blob/workloads/gqa_paged/{DEFINITION}_{wid}.safetensors"
        save_file(tables, str(ROOT / rel))

        def blob(key: str) -> dict:
            return {"type": "safetensors", "path": rel, "tensor_key": key}

        trace = {
            "definition": DEFINITION,
            "workload": {
                "axes": {
                    "batch_size": batch_size,
                    "num_pages": num_pages,
                    "len_indptr": batch_size + 1,
                    "num_kv_indices": int(tables["kv_indices"].numel()),
                },
                "inputs": {
                    "q": {"type": "random"},
                    "k_cache": {"type": "random"},
                    "v_cache": {"type": "random"},
                    "kv_indptr": blob("kv_indptr"),
                    "kv_indices": blob("kv_indices"),
                    "kv_last_page_len": blob("kv_last_page_len"),
                    "sm_scale": {"type": "scalar", "value": 1.0 / math.sqrt(HEAD_DIM)},
                },
                "uuid": wid,
            },
            "solution": None,
            "evaluation": None,
        }
        lines.append(json.dumps(trace))
        print(
            f"batch {batch_size:3d}: tokens {min(seq_lens)}..{max(seq_lens)}, "
            f"{tables['kv_indices'].numel()} of {num_pages} pages -> {rel}"
        )
    out = ROOT / "workloads" / "gqa_paged" / f"{DEFINITION}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
