"""rwkv6 against fla's naive recurrent RWKV-6; a CrossCheck module (scripts/crosscheck.py)."""

import os

import numpy as np
from crosscheck import t, tensor_float_is_double
import crosscheck as xc

MECHANISM, ORDER, SCALED_INPUTS = "rwkv6", 80, ["r", "k"]  # SCALED_INPUTS: what "x30" multiplies
PUBLISHED = [
    # Only the forward function: the file's backward is decorated with `@torch.no_grad`, which
    # Debian's torch 1.13 does not take without parentheses.
    xc.Package("fla_rwkv6", "fla rwkv6", lambda pkgs, common: xc.load_functions(
        os.path.join(pkgs, "fla", "ops", "rwkv6", "recurrent_naive.py"), ["naive_recurrent_rwkv6"], common)),
]


def ref_rwkv6_fla(p, a, case):
    w = -np.exp(a["time_decay_t"])  # fla's w is log w_t
    with tensor_float_is_double():
        out, state = p.fla_rwkv6.naive_recurrent_rwkv6(t(a["r"]), t(a["k"]), t(a["v"]), t(w), t(a["time_faaaa"]),
                                                      scale=1.0, output_final_state=True)
    return {"out": out.numpy(), "final_state": state.numpy()}


REFERENCES = {
    "fla naive_recurrent_rwkv6": ("fla_rwkv6", ref_rwkv6_fla),
}


def cases(add):
    add("rwkv6", ["fla naive_recurrent_rwkv6"])
