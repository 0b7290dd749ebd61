"""softmax_kv against seed 000's standard attention.

Found by scripts/crosscheck.py (which this imports as `crosscheck`); what a mechanism's crosscheck.py
exports is described there (CrossCheck). The mapping is documented in docs/user-guide.md, "Cross-check against
published implementations"."""

import torch
from crosscheck import t
import crosscheck as xc

MECHANISM = "softmax_kv"
ORDER = 10
# Inputs that "x30" multiplies: those whose size drives the exponentials (logits, decays, gates).
SCALED_INPUTS = ["q", "k"]
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
