"""retnet against fla's naive retention and seed 000's multi-scale retention; a CrossCheck module (scripts/crosscheck.py)."""

import math
import os

import torch
from crosscheck import t, tensor_float_is_double
import crosscheck as xc

MECHANISM, ORDER, SCALED_INPUTS = "retnet", 50, ["q", "k"]  # SCALED_INPUTS: what "x30" multiplies
PUBLISHED = [
    xc.Package("fla_retention", "fla retention", lambda pkgs, common: xc.load_module(
        os.path.join(pkgs, "fla", "ops", "retention", "naive.py"), "fla_naive_retention")),
    xc.Seed("seed000", "seed 000", "000_90dd878822583f77.txt", ["retnet_multi_scale"]),
]


def ref_retnet_fla(p, a, case):
    with tensor_float_is_double():
        out = p.fla_retention.naive_retention(t(a["q"]), t(a["k"]), t(a["v"]))
    # fla's naive_retention scales q by dim^-1/2; arch-bench's retention is bare.
    return {"out": out.numpy() * math.sqrt(a["q"].shape[-1])}


def ref_retnet_seed000(p, a, case):
    heads = a["q"].shape[1]
    rows = []
    for h in range(heads):
        gamma = 1 - 2.0 ** (-5 - h)
        sl = slice(h, h + 1)
        rows.append(p.seed000.retnet_multi_scale(t(a["q"][:, sl]), t(a["k"][:, sl]), t(a["v"][:, sl]), [gamma]))
    return {"out": torch.cat(rows, dim=1).numpy()}


REFERENCES = {
    "fla naive_retention": ("fla_retention", ref_retnet_fla),
    "seed000 retnet_multi_scale": ("seed000", ref_retnet_seed000),
}


def cases(add):
    add("retnet", ["fla naive_retention"])
    add("retnet", ["seed000 retnet_multi_scale"], small_lengths=(1, 40))
