"""rwkv4 against seed 002's WKV formula; a CrossCheck module (scripts/crosscheck.py)."""

import numpy as np

import crosscheck as xc

MECHANISM, ORDER, SCALED_INPUTS = "rwkv4", 70, ["k"]  # SCALED_INPUTS: what "x30" multiplies
PUBLISHED = []


def ref_rwkv4_seed002(p, a, case):
    # Seed 002's WKV, transcribed from its formula (the seed's code cells are flattened prose):
    # wkv_t = (sum_{i<t} e^{-(t-1-i)w + k_i} v_i + e^{u + k_t} v_t) / (sum_{i<t} e^{-(t-1-i)w + k_i} + e^{u + k_t}),
    # a direct sum in fp64 without a running max.
    k, v = a["k"], a["v"]
    w, u = np.exp(a["time_decay"]), a["time_first"]
    b, h, length, d = k.shape
    out = np.zeros(v.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        for step in range(length):
            i = np.arange(step)
            weights = np.exp(-(step - 1 - i)[None, None, :, None] * w[None, :, None, :] + k[:, :, :step])
            bonus = np.exp(u[None] + k[:, :, step])
            num = (weights * v[:, :, :step]).sum(2) + bonus * v[:, :, step]
            den = weights.sum(2) + bonus
            out[:, :, step] = num / den
    return {"out": out}


REFERENCES = {
    "seed002 WKV formula": (None, ref_rwkv4_seed002),
}


def cases(add):
    add("rwkv4", ["seed002 WKV formula"])
