"""performer against performer-pytorch's softmax_kernel and causal linear attention; a CrossCheck module (scripts/crosscheck.py)."""

import os

import torch
from crosscheck import t
import crosscheck as xc

MECHANISM, ORDER, SCALED_INPUTS = "performer", 30, ["q", "k"]  # SCALED_INPUTS: what "x30" multiplies
PUBLISHED = [
    xc.Package("performer", "performer-pytorch", lambda pkgs, common: xc.load_functions(
        os.path.join(pkgs, "performer_pytorch", "performer_pytorch.py"), ["softmax_kernel", "causal_linear_attention_noncuda"], common)),
]


def ref_performer_pytorch(p, a, case):
    w = t(a["w"])
    q = p.performer.softmax_kernel(t(a["q"]), projection_matrix=w, is_query=True, eps=1e-6)
    k = p.performer.softmax_kernel(t(a["k"]), projection_matrix=w, is_query=False, eps=1e-6)
    v = t(a["v"])
    # eps=0: performer-pytorch adds 1e-6 to k_cumsum in the denominator, google-research does not;
    # arch-bench follows google-research (docs/user-guide.md, "The favor stabiliser": what the 1e-6 changes).
    out = p.performer.causal_linear_attention_noncuda(q, k, v, eps=0.0)
    return {"out": out.numpy(), "final_state": torch.einsum("bhnd,bhne->bhde", k, v).numpy(),
            "final_normalizer": k.sum(dim=-2).numpy()}


REFERENCES = {
    "performer-pytorch softmax_kernel": ("performer", ref_performer_pytorch),
}


def cases(add):
    pub = ["--favor-stabilizer", "published"]
    add("performer", ["performer-pytorch softmax_kernel"], options=pub,
        extra=[xc.Case("performer", "performer-pytorch softmax_kernel", 100, 64, options=["--favor-stabilizer",
                                                                                          "causal"],
                       expect="differ"),
               xc.Case("performer", "performer-pytorch softmax_kernel", 100, 128, features=256, options=pub),
               xc.Case("performer", "performer-pytorch softmax_kernel", 64, 256, features=16, options=pub)])


def label_extra(case):
    return f"m={case.features}"


def generate_options(case):
    return ["--features", str(case.features)]
