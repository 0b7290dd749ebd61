"""mamba2 against mamba-ssm's ssd_minimal_discrete (the SSD listing of Dao & Gu 2024); a CrossCheck module
(scripts/crosscheck.py)."""

import os

import numpy as np
import torch
from crosscheck import Case, t, tensor_float_is_double
import crosscheck as xc

MECHANISM, ORDER, SCALED_INPUTS = "mamba2", 45, ["ssd_dt", "ssd_x"]  # x30: dt drives the decays, x the sizes
# The listing's file imports the Triton kernels at module level, so only its two functions are
# compiled (scripts/crosscheck.py's load_functions), from the sdist that crosscheck.sh unpacks.
PUBLISHED = [
    xc.Package("mamba_ssd", "mamba-ssm ssd_minimal", lambda pkgs, common: xc.load_functions(
        os.path.join(pkgs, "mamba_ssm", "modules", "ssd_minimal.py"), ["segsum", "ssd_minimal_discrete"], common)),
]
BLOCK = 16  # the listing's block_len; the sequence is padded to a multiple of it (below)


def ref_ssd_minimal(p, a, case):
    # The listing computes the SSM part only: Y = SSD(X = dt x, A = dt A, B, C). The layer around it
    # (dt = softplus(dt + dt_bias), the skip D x and the gate silu(z)) is applied here as Mamba2's
    # forward does. Each head is passed alone with its group's B and C: the listing's einsums sum
    # over the group axis, so they hold for one group at a time (and its older form took B, C per head).
    x, z = a["ssd_x"], a["ssd_z"]                            # [batch, length, heads, P]
    dt = np.log1p(np.exp(a["ssd_dt"] + a["ssd_dt_bias"]))   # softplus, [batch, length, heads]
    A = -np.exp(a["ssd_A_log"])                              # [heads]
    batch, length, heads, width = x.shape
    groups, n = a["ssd_B"].shape[2], a["ssd_B"].shape[3]
    padded = -(-length // BLOCK) * BLOCK
    # Padding tokens with dt x = 0 and dt A = 0 (no decay) change neither the rows before them nor the
    # final state: the listing asserts length % block_len == 0.
    pad = [(0, 0), (0, padded - length)]
    y = np.zeros(x.shape)
    final = np.zeros((batch, heads, width, n))
    for h in range(heads):
        g = h // (heads // groups)
        X = np.pad((x[:, :, h] * dt[:, :, h, None])[:, :, None], pad + [(0, 0), (0, 0)])
        dA = np.pad((dt[:, :, h] * A[h])[:, :, None], pad + [(0, 0)])
        B = np.pad(a["ssd_B"][:, :, g:g + 1], pad + [(0, 0), (0, 0)])
        C = np.pad(a["ssd_C"][:, :, g:g + 1], pad + [(0, 0), (0, 0)])
        with tensor_float_is_double():
            Y, last = p.mamba_ssd.ssd_minimal_discrete(t(X), t(dA), t(B), t(C), BLOCK)
        y[:, :, h] = Y.numpy()[:, :length, 0]
        final[:, h] = last.numpy().reshape(batch, width, n)
    y = y + a["ssd_D"][None, None, :, None] * x
    return {"out": y * (z / (1 + np.exp(-z))), "final_state": final}


REFERENCES = {"mamba-ssm ssd_minimal_discrete": ("mamba_ssd", ref_ssd_minimal)}


def generate_options(case):
    # Four-head cases share B and C between pairs of heads (n_groups 2).
    return ["--n-groups", "2"] if case.heads == 4 else []


def label_extra(case):
    return "G=2" if case.heads == 4 else ""


def cases(add):
    add("mamba2", ["mamba-ssm ssd_minimal_discrete"], dims=(16, 64), small_lengths=(1, 100),
        extra=[Case("mamba2", "mamba-ssm ssd_minimal_discrete", 70, 32, heads=4)])
