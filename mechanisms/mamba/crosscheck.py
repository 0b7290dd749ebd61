"""mamba against mamba-ssm's selective_scan_ref and seed 000's selective scan; a CrossCheck module (scripts/crosscheck.py)."""

import os

import numpy as np
import torch
from crosscheck import t, tensor_float_is_double
import crosscheck as xc

MECHANISM, ORDER, SCALED_INPUTS = "mamba", 40, ["u", "B", "C"]  # SCALED_INPUTS: what "x30" multiplies
PUBLISHED = [
    xc.Package("mamba", "mamba-ssm", lambda pkgs, common: xc.load_functions(
        os.path.join(pkgs, "mamba_ssm", "ops", "selective_scan_interface.py"), ["selective_scan_ref"], common)),
    xc.Seed("seed000", "seed 000", "000_90dd878822583f77.txt", ["mamba_selective_scan"]),
]


def ref_mamba(p, a, case):
    with tensor_float_is_double():
        out, last = p.mamba.selective_scan_ref(t(a["u"]), t(a["dt"]), -torch.exp(t(a["A_log"])), t(a["B"]),
                                               t(a["C"]), D=t(a["D"]), z=t(a["z"]), delta_bias=t(a["dt_bias"]),
                                               delta_softplus=True, return_last_state=True)
    return {"out": out.numpy(), "final_state": last.numpy()}


def ref_mamba_seed000(p, a, case):
    # The seed's scan takes x, delta [batch, seq, d_state] and returns state @ C_t^T [batch, batch]:
    # one channel's S6 with its input and step broadcast over N, the channels as its batch, and
    # the diagonal of each output (channel c read by its own C) as y.
    u, dt, z = a["u"], a["dt"], a["z"]
    b, channels, length = u.shape
    A = -np.exp(a["A_log"])
    delta = np.log1p(np.exp(dt + a["dt_bias"][None, :, None]))  # softplus
    out = np.zeros(u.shape)
    for i in range(b):
        n = A.shape[1]
        x = t(np.repeat(u[i].T[:, :, None], n, axis=2)).transpose(0, 1)      # [channels, length, N]
        d = t(np.repeat(delta[i].T[:, :, None], n, axis=2)).transpose(0, 1)  # [channels, length, N]
        B = t(np.broadcast_to(a["B"][i].T[None], (channels, length, n)))
        C = t(np.broadcast_to(a["C"][i].T[None], (channels, length, n)))
        y = p.seed000.mamba_selective_scan(x, d, t(A), B, C)  # [channels, length, channels]
        y = torch.diagonal(y, dim1=0, dim2=2).T.numpy()          # [channels, length]
        y = y + a["D"][:, None] * u[i]
        out[i] = y * (z[i] / (1 + np.exp(-z[i])))
    return {"out": out}


REFERENCES = {
    "mamba-ssm selective_scan_ref": ("mamba", ref_mamba),
    "seed000 mamba_selective_scan": ("seed000", ref_mamba_seed000),
}


def cases(add):
    add("mamba", ["mamba-ssm selective_scan_ref"], dims=(16, 40))
    add("mamba", ["seed000 mamba_selective_scan"], dims=(16, 16), small_lengths=(1, 30))
