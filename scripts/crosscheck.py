#!/usr/bin/env python3
"""Cross-check arch-bench's mechanisms against the field's published implementations.

For every case: `arch-bench conformance --generate` draws inputs, `arch-bench conformance` runs the
mechanism's kernels (prefill, and decode token by token) and its own fp64 reference, then the
published implementation runs in float64 on the same rounded inputs and both kernel outputs are
compared with it: max|out - ref| / max|ref| against 1e-4 (float32) or 2e-2 (bfloat16).

The published code is never part of this repository: scripts/crosscheck.sh downloads the packages
from PyPI into a cache folder at set-up time, and this script loads only their pure-PyTorch
reference functions from those files (no GPU, Triton or CUDA build is needed). The seeds' code is
read from ../shared/seeds at run time. Each mapping (argument order, layouts, variant) is
documented in README.md, "Cross-check against published implementations".

Exit code: 0 every case agrees (or its reference itself overflows, said so), 1 a disagreement,
2 bad input (a missing package folder, arch-bench binary or unknown option).
"""
import argparse
import ast
import contextlib
import importlib.util
import math
import os
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - crosscheck.sh installs python3-torch first
    sys.exit("crosscheck: PyTorch is missing (run scripts/crosscheck.sh, which installs python3-torch)")

TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

torch.set_default_dtype(torch.float64)


# --- loading the published code -----------------------------------------------------------------

class _Fp64Torch(types.ModuleType):
    """`torch` as the published references see it: float32 (and `torch.float`) mean float64.

    Several naive references cast to float32 on entry (`x.float()`, `.to(torch.float32)`,
    `dtype=torch.float32`): that is their way of saying "the accurate path", and this keeps their
    arithmetic but runs it in float64, as the cross-check compares against fp64."""

    def __getattr__(self, name):
        if name in ("float32", "float"):
            return torch.float64
        return getattr(torch, name)


FP64_TORCH = _Fp64Torch("torch")


@contextlib.contextmanager
def tensor_float_is_double():
    """Tensor.float() -> float64 while a published reference runs (see _Fp64Torch)."""
    original = torch.Tensor.float
    torch.Tensor.float = lambda self, *args, **kwargs: self.double()
    try:
        yield
    finally:
        torch.Tensor.float = original


def load_module(path, name):
    """A whole published module by file path (its imports must be torch/einops only)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.torch = FP64_TORCH
    return module


def load_functions(path, names, extra_globals):
    """Only the named top-level functions of a published file, by file path.

    performer_pytorch.py and mamba_ssm's selective_scan_interface.py import CUDA-only modules at
    module level (fast_transformers, selective_scan_cuda, triton kernels), so their pure-PyTorch
    references are compiled on their own from the file's syntax tree, with torch/einops as globals."""
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    wanted = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in names]
    missing = set(names) - {node.name for node in wanted}
    if missing:
        raise LookupError(f"{path}: no function {', '.join(sorted(missing))}")
    scope = dict(extra_globals)
    exec(compile(ast.Module(body=wanted, type_ignores=[]), path, "exec"), scope)
    return types.SimpleNamespace(**{name: scope[name] for name in names})


def seed_functions(path, names, extra_globals):
    """Functions (or classes) from a seed document: Chinese prose with Python code cells.

    A definition starts at a line `def NAME(` / `class NAME` in column 0 and runs until the next
    line in column 0 that is neither blank nor a comment; the last definition of a name wins (seed
    003 shows a TODO skeleton first and the reference answer after it)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    found = {}
    for i, line in enumerate(lines):
        for name in names:
            if line.startswith((f"def {name}(", f"class {name}(", f"class {name}:")):
                end = i + 1
                while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#"):
                    end += 1
                found[name] = "\n".join(lines[i:end])
    missing = set(names) - set(found)
    if missing:
        raise LookupError(f"{path}: no definition of {', '.join(sorted(missing))}")
    scope = dict(extra_globals)
    for name in names:
        exec(compile(found[name], f"{path}:{name}", "exec"), scope)
    return types.SimpleNamespace(**{name: scope[name] for name in names})


class Published:
    """The published references, loaded once from the package cache and the seeds folder."""

    def __init__(self, cache, seeds):
        self.cache, self.seeds = cache, seeds
        self.problems = []
        common = {"torch": FP64_TORCH, "F": F, "math": math, "np": np}
        try:
            from einops import rearrange, repeat
        except ImportError:
            sys.path.insert(0, os.path.join(cache, "pkgs"))
            from einops import rearrange, repeat
        common.update(rearrange=rearrange, repeat=repeat)
        pkgs = os.path.join(cache, "pkgs")
        self.performer = self._try("performer-pytorch", lambda: load_functions(
            os.path.join(pkgs, "performer_pytorch", "performer_pytorch.py"),
            ["softmax_kernel", "causal_linear_attention_noncuda"], common))
        self.mamba = self._try("mamba-ssm", lambda: load_functions(
            os.path.join(pkgs, "mamba_ssm", "ops", "selective_scan_interface.py"), ["selective_scan_ref"], common))
        fla = os.path.join(pkgs, "fla", "ops")
        self.fla_linear = self._try("fla linear_attn", lambda: load_module(
            os.path.join(fla, "linear_attn", "naive.py"), "fla_naive_linear_attn"))
        self.fla_retention = self._try("fla retention", lambda: load_module(
            os.path.join(fla, "retention", "naive.py"), "fla_naive_retention"))
        self.fla_gdn = self._try("fla gated_delta_rule", lambda: load_module(
            os.path.join(fla, "gated_delta_rule", "naive.py"), "fla_naive_gated_delta_rule"))
        # Only the forward function: the file's backward is decorated with `@torch.no_grad`, which
        # Debian's torch 1.13 does not take without parentheses.
        self.fla_rwkv6 = self._try("fla rwkv6", lambda: load_functions(
            os.path.join(fla, "rwkv6", "recurrent_naive.py"), ["naive_recurrent_rwkv6"], common))
        self.fla_dplr = self._try("fla dplr (rwkv7)", lambda: load_module(
            os.path.join(fla, "generalized_delta_rule", "dplr", "naive.py"), "fla_naive_dplr"))
        seed000 = os.path.join(seeds, "000_90dd878822583f77.txt")
        seed003 = os.path.join(seeds, "003_4bff65c6bfacc842.txt")
        self.seed000 = self._try("seed 000", lambda: seed_functions(
            seed000, ["standard_attention", "LinearAttention", "mamba_selective_scan", "retnet_multi_scale"], common))
        self.seed003 = self._try("seed 003", lambda: seed_functions(
            seed003, ["positive_feature_map", "linear_attention_scan"], common))

    def _try(self, what, load):
        try:
            return load()
        except (OSError, LookupError, SyntaxError, ImportError, TypeError, AttributeError) as error:
            self.problems.append(f"{what}: {error}")
            return None


# --- arch-bench --------------------------------------------------------------------------------

def bf16_round(x):
    """float64 -> float32 -> bfloat16 (round to nearest even), as arch-bench stores bf16."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def store_round(x, dtype):
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    return bf16_round(x) if dtype == "bfloat16" else x


class Case:
    def __init__(self, mechanism, reference, length, dim, dtype="float32", heads=2, batch=1, scale=1.0,
                 options=(), features=64, expect="agree"):
        self.mechanism, self.reference = mechanism, reference
        self.length, self.dim, self.dtype, self.heads, self.batch = length, dim, dtype, heads, batch
        self.scale, self.options, self.features, self.expect = scale, list(options), features, expect

    def label(self):
        extra = " ".join(self.options)
        scale = f" x{self.scale:g}" if self.scale != 1 else ""
        if self.mechanism == "performer":
            extra = f"m={self.features} {extra}"
        return f"{self.mechanism:<16} {self.reference:<34} {self.dtype:<8} B={self.batch} H={self.heads} " \
               f"L={self.length:<4} d={self.dim:<3}{scale}{(' ' + extra) if extra else ''}"


# Inputs that "x30" multiplies: those whose size drives the exponentials (logits, decays, gates).
SCALED_INPUTS = {"softmax_kv": ["q", "k"], "linear_attention": ["q", "k"], "performer": ["q", "k"],
                 "retnet": ["q", "k"], "gated_deltanet": ["q", "k"], "rwkv4": ["k"], "rwkv6": ["r", "k"],
                 "rwkv7": ["r", "k"], "mamba": ["u", "B", "C"]}


def run_arch_bench(binary, case, workdir):
    """Generates the inputs, scales them (x30 cases), runs `arch-bench conformance`; returns
    (inputs, outputs, exit code, manifest) with every array as float64."""
    inputs, outputs = os.path.join(workdir, "in"), os.path.join(workdir, "out")
    generate = [binary, "conformance", "--generate", inputs, "--mechanism", case.mechanism, "--batch", str(case.batch),
                "--heads", str(case.heads), "--length", str(case.length), "--dim", str(case.dim), "--seed", "7",
                "--dtype", case.dtype]
    if case.mechanism == "performer":
        generate += ["--features", str(case.features)]
    generate += [o for o in case.options if o.startswith("--feature-map") or o in ("relu", "elu", "trig")]
    subprocess.run(generate, check=True, stdout=subprocess.DEVNULL)
    arrays = {name[:-4]: np.load(os.path.join(inputs, name)).astype(np.float64)
              for name in os.listdir(inputs) if name.endswith(".npy")}
    if case.scale != 1:
        for name in SCALED_INPUTS[case.mechanism]:
            arrays[name] = store_round(arrays[name] * case.scale, case.dtype)
            np.save(os.path.join(inputs, name + ".npy"), arrays[name].astype(np.float32))
    run = [binary, "conformance", "--mechanism", case.mechanism, "--inputs", inputs, "--outputs", outputs,
           "--dtype", case.dtype] + case.options
    code = subprocess.run(run, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if code.returncode not in (0, 1):
        raise RuntimeError(f"arch-bench conformance exited {code.returncode}: {code.stderr.strip()}")
    outs = {name[:-4]: np.load(os.path.join(outputs, name)).astype(np.float64)
            for name in os.listdir(outputs) if name.endswith(".npy")}
    return arrays, outs, code.returncode


# --- the published references, mapped to arch-bench's layouts ----------------------------------

class ReferenceBroken(Exception):
    """The published code itself does not run as written (not a disagreement: reported as such)."""


def t(x):
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))


def l2_normalise(x):
    # fla's l2norm (use_qk_l2norm_in_kernel): x / sqrt(sum x^2 + 1e-6)
    return x / np.sqrt((x * x).sum(-1, keepdims=True) + 1e-6)


def ref_softmax_kv_seed000(p, a, case):
    length = a["q"].shape[2]
    mask = torch.tril(torch.ones(length, length))
    out, _ = p.seed000.standard_attention(t(a["q"]), t(a["k"]), t(a["v"]), mask=mask)
    return {"out": out.numpy()}


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


def ref_performer_pytorch(p, a, case):
    w = t(a["w"])
    q = p.performer.softmax_kernel(t(a["q"]), projection_matrix=w, is_query=True, eps=1e-6)
    k = p.performer.softmax_kernel(t(a["k"]), projection_matrix=w, is_query=False, eps=1e-6)
    v = t(a["v"])
    # eps=0: performer-pytorch adds 1e-6 to k_cumsum in the denominator, google-research does not;
    # arch-bench follows google-research (README: what the 1e-6 changes).
    out = p.performer.causal_linear_attention_noncuda(q, k, v, eps=0.0)
    return {"out": out.numpy(), "final_state": torch.einsum("bhnd,bhne->bhde", k, v).numpy(),
            "final_normalizer": k.sum(dim=-2).numpy()}


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


def ref_rwkv6_fla(p, a, case):
    w = -np.exp(a["time_decay_t"])  # fla's w is log w_t
    with tensor_float_is_double():
        out, state = p.fla_rwkv6.naive_recurrent_rwkv6(t(a["r"]), t(a["k"]), t(a["v"]), t(w), t(a["time_faaaa"]),
                                                      scale=1.0, output_final_state=True)
    return {"out": out.numpy(), "final_state": state.numpy()}


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
    "seed000 standard_attention": ("seed000", ref_softmax_kv_seed000),
    "fla naive_recurrent_linear_attn": ("fla_linear", ref_linear_attention_fla),
    "seed000 LinearAttention (prefixes)": ("seed000", ref_linear_attention_seed000),
    "seed003 linear_attention_scan": ("seed003", ref_linear_attention_seed003),
    "performer-pytorch softmax_kernel": ("performer", ref_performer_pytorch),
    "mamba-ssm selective_scan_ref": ("mamba", ref_mamba),
    "seed000 mamba_selective_scan": ("seed000", ref_mamba_seed000),
    "fla naive_retention": ("fla_retention", ref_retnet_fla),
    "seed000 retnet_multi_scale": ("seed000", ref_retnet_seed000),
    "fla naive_recurrent_gated_delta": ("fla_gdn", ref_gated_deltanet_fla),
    "fla naive_chunk_gated_delta_rule": ("fla_gdn", lambda p, a, c: ref_gated_deltanet_fla(p, a, c, chunk=True)),
    "fla naive_recurrent_rwkv6": ("fla_rwkv6", ref_rwkv6_fla),
    "fla dplr_recurrence (rwkv7)": ("fla_dplr", ref_rwkv7_fla),
    "seed002 WKV formula": (None, ref_rwkv4_seed002),
}


# --- the case sets ------------------------------------------------------------------------------

def cases(shape_set):
    out = []
    pub = ["--favor-stabilizer", "published"]

    def mechanism(name, refs, options=(), dims=(32, 80), small_lengths=(1, 100), extra=()):
        for ref in refs:
            for length, dim in [(small_lengths[0], dims[0]), (small_lengths[1], dims[1])]:
                out.append(Case(name, ref, length, dim, options=options))
            out.append(Case(name, ref, 70, 64, dtype="bfloat16", options=options))
            out.append(Case(name, ref, 65, 32, scale=30.0, options=options))
            if shape_set == "full":
                for dim in (128, 256):
                    out.append(Case(name, ref, 130, dim, options=options))
                out.append(Case(name, ref, 257, 64, batch=2, options=options))
        out.extend(extra)

    mechanism("softmax_kv", ["seed000 standard_attention"])
    # Seed 000's LinearAttention does not run as written (REF-BROKEN): one case says so.
    mechanism("linear_attention", ["fla naive_recurrent_linear_attn"],
              extra=[Case("linear_attention", "seed000 LinearAttention (prefixes)", 100, 32)])
    mechanism("linear_attention", ["seed003 linear_attention_scan", "fla naive_recurrent_linear_attn"],
              options=["--feature-map", "relu"])
    mechanism("performer", ["performer-pytorch softmax_kernel"], options=pub,
              extra=[Case("performer", "performer-pytorch softmax_kernel", 100, 64, options=["--favor-stabilizer",
                                                                                            "causal"],
                          expect="differ"),
                     Case("performer", "performer-pytorch softmax_kernel", 100, 128, features=256, options=pub),
                     Case("performer", "performer-pytorch softmax_kernel", 64, 256, features=16, options=pub)])
    mechanism("mamba", ["mamba-ssm selective_scan_ref"], dims=(16, 40))
    mechanism("mamba", ["seed000 mamba_selective_scan"], dims=(16, 16), small_lengths=(1, 30))
    mechanism("retnet", ["fla naive_retention"])
    mechanism("retnet", ["seed000 retnet_multi_scale"], small_lengths=(1, 40))
    mechanism("gated_deltanet", ["fla naive_recurrent_gated_delta", "fla naive_chunk_gated_delta_rule"])
    mechanism("rwkv4", ["seed002 WKV formula"])
    mechanism("rwkv6", ["fla naive_recurrent_rwkv6"])
    mechanism("rwkv7", ["fla dplr_recurrence (rwkv7)"])
    return out


# --- comparing ----------------------------------------------------------------------------------

def rel_error(out, ref):
    scale = np.max(np.abs(ref))
    if not np.all(np.isfinite(out)):
        return math.inf
    return float(np.max(np.abs(out - ref)) / scale) if scale > 0 else float(np.max(np.abs(out)))


def check(case, published, binary):
    attribute, function = REFERENCES[case.reference]
    if attribute is not None and getattr(published, attribute) is None:
        return "SKIPPED", "reference not loaded", None
    with tempfile.TemporaryDirectory(prefix="xcheck-") as workdir:
        arrays, outs, code = run_arch_bench(binary, case, workdir)
        try:
            ref = function(published, arrays, case)
        except ReferenceBroken as error:
            return "REF-BROKEN", str(error), None
    tolerance = TOLERANCE[case.dtype]
    if not np.all(np.isfinite(ref["out"])):
        own = "finite" if np.all(np.isfinite(outs["prefill_out"])) else "non-finite"
        return "REF-OVERFLOW", f"the published reference overflows (non-finite); arch-bench's output is {own}", None
    errors = {"prefill": rel_error(outs["prefill_out"], ref["out"]), "decode": rel_error(outs["decode_out"], ref["out"])}
    for name in ("final_state", "final_normalizer"):
        # (The causal stabiliser's states are relative to its running max: not comparable.)
        if name in ref and name in outs and case.dtype == "float32" and case.expect == "agree":
            errors[name] = rel_error(outs[name], ref[name])
    worst = max(errors.values())
    detail = " ".join(f"{name} {value:.2e}" for name, value in errors.items())
    if code != 0:
        detail += " (arch-bench's own conformance failed)"
    if case.expect == "differ":
        return ("DIFFERS (expected)" if worst > tolerance else "AGREES (unexpected)"), detail, worst
    return ("ok" if worst <= tolerance and code == 0 else "FAIL"), detail, worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "arch-bench"), help="the arch-bench executable")
    parser.add_argument("--cache", required=True, help="folder the set-up unpacked the published packages into")
    parser.add_argument("--seeds", default=os.path.join(ROOT, "..", "shared", "seeds"), help="the seeds folder")
    parser.add_argument("--shapes", choices=["ci", "full"], default="ci", help="ci: the small set CI runs")
    parser.add_argument("--only", default="", help="comma-separated mechanisms to check (default: all)")
    args = parser.parse_args()
    if not os.access(args.bin, os.X_OK):
        print(f"crosscheck: --bin {args.bin} is not an executable (build arch-bench first)", file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(args.cache, "pkgs")):
        print(f"crosscheck: --cache {args.cache} has no pkgs/ folder (run scripts/crosscheck.sh)", file=sys.stderr)
        return 2
    published = Published(args.cache, args.seeds)
    for problem in published.problems:
        print(f"note: not loaded: {problem}")
    only = set(filter(None, args.only.split(",")))
    selected = [case for case in cases(args.shapes) if not only or case.mechanism in only]
    print(f"{'mechanism':<16} {'published reference':<34} {'dtype':<8} shape {'':>26} verdict  max|out-ref|/max|ref|")
    counts = {}
    failed = []
    start = time.time()
    for case in selected:
        try:
            verdict, detail, _ = check(case, published, args.bin)
        except (RuntimeError, subprocess.CalledProcessError, KeyError, ValueError) as error:
            verdict, detail = "FAIL", f"error: {error}"
        counts[verdict] = counts.get(verdict, 0) + 1
        print(f"{case.label():<90} {verdict:<8} {detail}", flush=True)
        if verdict in ("FAIL", "AGREES (unexpected)"):
            failed.append(case.label())
    summary = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))
    print(f"summary: {len(selected)} cases in {time.time() - start:.0f} s: {summary}; tolerance fp32 "
          f"{TOLERANCE['float32']:.0e}, bf16 {TOLERANCE['bfloat16']:.0e}")
    if failed:
        print("crosscheck FAILED:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
