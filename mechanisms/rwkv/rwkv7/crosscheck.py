"""rwkv7 against fla's DPLR recurrence; a CrossCheck module (scripts/crosscheck.py)."""

import math
import os

import numpy as np
from crosscheck import t, tensor_float_is_double
import crosscheck as xc

MECHANISM, ORDER, SCALED_INPUTS = "rwkv7", 90, ["r", "k"]  # SCALED_INPUTS: what "x30" multiplies
PUBLISHED = [
    xc.Package("fla_dplr", "fla dplr (rwkv7)", lambda pkgs, common: xc.load_module(
        os.path.join(pkgs, "fla", "ops", "generalized_delta_rule", "dplr", "naive.py"), "fla_naive_dplr")),
]


def ref_rwkv7_fla(p, a, case):
    kappa = a["kappa"]
    alpha, beta = -kappa, kappa * a["iclr"]
    log_w = -math.exp(-0.5) / (1 + np.exp(-a["w_raw"]))  # log of w = exp(-e^-0.5 sigmoid(w_raw))
    d = a["r"].shape[-1]
    with tensor_float_is_double():
        # fla's dplr_recurrence scales q by d^-1/2 and keeps S as [key, value] (arch-bench's S^T).
        out, state = p.fla_dplr.dplr_recurrence(t(a["r"]), t(a["k"]), t(a["v"]), t(alpha), t(beta), t(log_w),
                                                output_final_state=True)
    return {"out": out.numpy() * math.sqrt(d), "final_state": state.transpose(-1, -2).numpy()}


REFERENCES = {
    "fla dplr_recurrence (rwkv7)": ("fla_dplr", ref_rwkv7_fla),
}


def cases(add):
    add("rwkv7", ["fla dplr_recurrence (rwkv7)"])
