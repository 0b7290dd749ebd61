"""linear_attention against fla's naive recurrence and seeds 000 and 003; a CrossCheck module (scripts/crosscheck.py)."""

import os

import numpy as np
import torch
from crosscheck import ReferenceBroken, t, tensor_float_is_double
import crosscheck as xc

MECHANISM, ORDER, SCALED_INPUTS = "linear_attention", 20, ["q", "k"]  # SCALED_INPUTS: what "x30" multiplies
PUBLISHED = [
    xc.Package("fla_linear", "fla linear_attn", lambda pkgs, common: xc.load_module(
        os.path.join(pkgs, "fla", "ops", "linear_attn", "naive.py"), "fla_naive_linear_attn")),
    xc.Seed("seed000", "seed 000", "000_90dd878822583f77.txt", ["LinearAttention"]),
    xc.Seed("seed003", "seed 003", "003_4bff65c6bfacc842.txt", ["positive_feature_map", "linear_attention_scan"]),
]


def ref_linear_attention_fla(p, a, case):
    relu = "relu" in case.options
    phi = (lambda x: np.maximum(x, 0) + 1) if relu else (lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0))))
    # fla takes [batch, length, heads, dim]; the feature map is applied outside the kernel.
    q, k, v = (t(x).transpose(1, 2) for x in (phi(a["q"]), phi(a["k"]), a["v"]))
    with tensor_float_is_double():
        out, (state, _) = p.fla_linear.naive_recurrent_linear_attn(q, k, v, scale=1.0, normalize=True,
                                                                   output_final_state=True)
    return {"out": out.transpose(1, 2).numpy(), "final_state": state.numpy()}


def ref_linear_attention_seed000(p, a, case):
    # The seed's forward_parallel is non-causal (K.sum over every token): row t of the causal output
    # is the last row of forward_parallel over the prefix 0..t.
    layer = p.seed000.LinearAttention.__new__(p.seed000.LinearAttention)
    q, k, v = t(a["q"]), t(a["k"]), t(a["v"])
    try:
        rows = [layer.forward_parallel(q[:, :, :i + 1], k[:, :, :i + 1], v[:, :, :i + 1])[:, :, -1]
                for i in range(q.shape[2])]
    except RuntimeError as error:  # the seed's own code, as written
        raise ReferenceBroken(f"seed 000's forward_parallel raises: {error}") from error
    return {"out": torch.stack(rows, dim=2).numpy()}


def ref_linear_attention_seed003(p, a, case):
    b, h = a["q"].shape[:2]
    out = np.zeros(a["v"].shape)
    state = np.zeros((b, h, a["q"].shape[3], a["v"].shape[3]))
    for i in range(b):
        for j in range(h):
            out[i, j], state[i, j], _ = p.seed003.linear_attention_scan(a["q"][i, j], a["k"][i, j], a["v"][i, j])
    return {"out": out, "final_state": state}


REFERENCES = {
    "fla naive_recurrent_linear_attn": ("fla_linear", ref_linear_attention_fla),
    "seed000 LinearAttention (prefixes)": ("seed000", ref_linear_attention_seed000),
    "seed003 linear_attention_scan": ("seed003", ref_linear_attention_seed003),
}


def cases(add):
    # Seed 000's LinearAttention does not run as written (REF-BROKEN): one case says so.
    add("linear_attention", ["fla naive_recurrent_linear_attn"],
        extra=[xc.Case("linear_attention", "seed000 LinearAttention (prefixes)", 100, 32)])
    add("linear_attention", ["seed003 linear_attention_scan", "fla naive_recurrent_linear_attn"],
        options=["--feature-map", "relu"])
