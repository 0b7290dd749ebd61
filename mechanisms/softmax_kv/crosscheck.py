"""softmax_kv against seed 000's standard attention; a CrossCheck module (scripts/crosscheck.py)."""

import torch
from crosscheck import t
import crosscheck as xc

MECHANISM, ORDER, SCALED_INPUTS = "softmax_kv", 10, ["q", "k"]  # SCALED_INPUTS: what "x30" multiplies
PUBLISHED = [
    xc.Seed("seed000", "seed 000", "000_90dd878822583f77.txt", ["standard_attention"]),
]


def ref_softmax_kv_seed000(p, a, case):
    length = a["q"].shape[2]
    mask = torch.tril(torch.ones(length, length))
    out, _ = p.seed000.standard_attention(t(a["q"]), t(a["k"]), t(a["v"]), mask=mask)
    return {"out": out.numpy()}


REFERENCES = {
    "seed000 standard_attention": ("seed000", ref_softmax_kv_seed000),
}


def cases(add):
    add("softmax_kv", ["seed000 standard_attention"])
