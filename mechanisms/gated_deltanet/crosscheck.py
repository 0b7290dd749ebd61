"""gated_deltanet against fla's naive gated delta rule (recurrent and chunked); a CrossCheck module (scripts/crosscheck.py)."""

import os


from crosscheck import l2_normalise, t
import crosscheck as xc

MECHANISM, ORDER, SCALED_INPUTS = "gated_deltanet", 60, ["q", "k"]  # SCALED_INPUTS: what "x30" multiplies
PUBLISHED = [
    xc.Package("fla_gdn", "fla gated_delta_rule", lambda pkgs, common: xc.load_module(
        os.path.join(pkgs, "fla", "ops", "gated_delta_rule", "naive.py"), "fla_naive_gated_delta_rule")),
]


def ref_gated_deltanet_fla(p, a, case, chunk=False):
    q, k = (t(l2_normalise(a[x])).transpose(1, 2) for x in ("q", "k"))
    v = t(a["v"]).transpose(1, 2)
    g, beta = t(a["g"]).transpose(1, 2), t(a["beta"]).transpose(1, 2)
    scale = a["q"].shape[-1] ** -0.5
    if chunk:  # argument order (q, k, v, g, beta)
        out, state = p.fla_gdn.naive_chunk_gated_delta_rule(q, k, v, g, beta, scale=scale, output_final_state=True)
    else:      # argument order (q, k, v, beta, g)
        out, state = p.fla_gdn.naive_recurrent_gated_delta_rule(q, k, v, beta, g, scale=scale, output_final_state=True)
    return {"out": out.transpose(1, 2).numpy(), "final_state": state.numpy()}


REFERENCES = {
    "fla naive_recurrent_gated_delta": ("fla_gdn", ref_gated_deltanet_fla),
    "fla naive_chunk_gated_delta_rule": ("fla_gdn", lambda p, a, c: ref_gated_deltanet_fla(p, a, c, chunk=True)),
}


def cases(add):
    add("gated_deltanet", ["fla naive_recurrent_gated_delta", "fla naive_chunk_gated_delta_rule"])
