"""rwkv6 against fla's naive recurrent RWKV-6.

Found by scripts/crosscheck.py (which this imports as `crosscheck`); what a mechanism's crosscheck.py
exports is described there (CrossCheck). The mapping is documented in docs/user-guide.md, "Cross-check against
published implementations"."""

import os

import numpy as np
from crosscheck import t, tensor_float_is_double
import crosscheck as xc

MECHANISM = "rwkv6"
ORDER = 80
# Inputs that "x30" multiplies: those whose size drives the exponentials (logits, decays, gates).
SCALED_INPUTS = ["r", "k"]
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
