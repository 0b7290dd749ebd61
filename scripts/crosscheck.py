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
documented in docs/user-guide.md, "Cross-check against published implementations".

Each mechanism declares its own cross-check in its folder, mechanisms/<id>/crosscheck.py (found by
glob; see CrossCheck below for what it exports); this script holds what they share.

Exit code: 0 every case agrees (or its reference itself overflows, said so), 1 a disagreement,
2 bad input (a missing package folder, arch-bench binary or unknown option).
"""
import argparse
import ast
import contextlib
import glob
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


class Package:
    """A published package's reference code, declared by a mechanism's crosscheck.py: loaded once as
    `Published.<attribute>` by load(pkgs, common) (the package cache's pkgs/ folder, and the globals a
    reference file is compiled with); `what` names it in the "not loaded" notes."""

    def __init__(self, attribute, what, load):
        self.attribute, self.what, self.load = attribute, what, load


class Seed:
    """Definitions from a seed document (seed_functions), declared by a mechanism's crosscheck.py. The
    mechanisms' names from the same seed are loaded together, as one `Published.<attribute>`."""

    def __init__(self, attribute, what, file, names):
        self.attribute, self.what, self.file, self.names = attribute, what, file, list(names)


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
        for source in PACKAGE_SOURCES:
            setattr(self, source.attribute, self._try(source.what, lambda: source.load(pkgs, common)))
        for seed in SEED_SOURCES:
            setattr(self, seed.attribute, self._try(seed.what, lambda: seed_functions(
                os.path.join(seeds, seed.file), seed.names, common)))

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
        label_extra = getattr(MECHANISMS[self.mechanism], "label_extra", None)
        if label_extra is not None:
            extra = f"{label_extra(self)} {extra}"
        return f"{self.mechanism:<16} {self.reference:<34} {self.dtype:<8} B={self.batch} H={self.heads} " \
               f"L={self.length:<4} d={self.dim:<3}{scale}{(' ' + extra) if extra else ''}"


def run_arch_bench(binary, case, workdir):
    """Generates the inputs, scales them (x30 cases), runs `arch-bench conformance`; returns
    (inputs, outputs, exit code, manifest) with every array as float64."""
    inputs, outputs = os.path.join(workdir, "in"), os.path.join(workdir, "out")
    generate = [binary, "conformance", "--generate", inputs, "--mechanism", case.mechanism, "--batch", str(case.batch),
                "--heads", str(case.heads), "--length", str(case.length), "--dim", str(case.dim), "--seed", "7",
                "--dtype", case.dtype]
    generate_options = getattr(MECHANISMS[case.mechanism], "generate_options", None)
    if generate_options is not None:
        generate += generate_options(case)
    generate += [o for o in case.options if o.startswith("--feature-map") or o in ("relu", "elu", "trig")]
    subprocess.run(generate, check=True, stdout=subprocess.DEVNULL)
    arrays = {name[:-4]: np.load(os.path.join(inputs, name)).astype(np.float64)
              for name in os.listdir(inputs) if name.endswith(".npy")}
    if case.scale != 1:
        for name in MECHANISMS[case.mechanism].SCALED_INPUTS:
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


# --- helpers of the mechanisms' references (mechanisms/<id>/crosscheck.py) ----------------------

class ReferenceBroken(Exception):
    """The published code itself does not run as written (not a disagreement: reported as such)."""


def t(x):
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))


def l2_normalise(x):
    # fla's l2norm (use_qk_l2norm_in_kernel): x / sqrt(sum x^2 + 1e-6)
    return x / np.sqrt((x * x).sum(-1, keepdims=True) + 1e-6)


# --- the case sets ------------------------------------------------------------------------------

def cases(shape_set):
    out = []

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

    for module in MECHANISMS.values():
        module.cases(mechanism)
    return out


# --- the mechanisms' declarations ---------------------------------------------------------------

class CrossCheck:
    """What mechanisms/<id>/crosscheck.py exports (it imports this script as `crosscheck`):

      MECHANISM      the mechanism id ("rwkv6")
      ORDER          where its cases come in the run (the built-ins 10, 20, ... 90)
      SCALED_INPUTS  the inputs an "x30" case multiplies: those that drive the exponentials
      PUBLISHED      the Package and Seed sources its references read (loaded once, shared by name)
      REFERENCES     {name: (Published attribute or None, function(published, arrays, case) -> {"out", ...})}
      cases(add)     its cases: add(MECHANISM, [reference names], options=..., dims=..., small_lengths=...,
                     extra=[Case(...)]) adds the standard shape set per reference (see cases() above)
    and optionally label_extra(case) (text before the options in the case's label) and
    generate_options(case) (more `conformance --generate` arguments)."""


def discover(root):
    """Every mechanisms/**/crosscheck.py, by ORDER then id."""
    sys.modules.setdefault("crosscheck", sys.modules[__name__])
    modules = []
    for path in sorted(glob.glob(os.path.join(root, "mechanisms", "**", "crosscheck.py"), recursive=True)):
        name = "crosscheck_" + os.path.relpath(os.path.dirname(path), os.path.join(root, "mechanisms")).replace(
            os.sep, "_")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    modules.sort(key=lambda module: (module.ORDER, module.MECHANISM))
    return {module.MECHANISM: module for module in modules}


MECHANISMS = discover(ROOT)
REFERENCES = {name: ref for module in MECHANISMS.values() for name, ref in module.REFERENCES.items()}
# Published packages in the mechanisms' order (one per attribute); seeds after them, the names that
# the mechanisms read from one seed loaded together.
PACKAGE_SOURCES, SEED_SOURCES = [], []
for _module in MECHANISMS.values():
    for _source in _module.PUBLISHED:
        if isinstance(_source, Seed):
            _same = [seed for seed in SEED_SOURCES if seed.attribute == _source.attribute]
            if _same:
                _same[0].names += [n for n in _source.names if n not in _same[0].names]
            else:
                SEED_SOURCES.append(Seed(_source.attribute, _source.what, _source.file, _source.names))
        elif all(package.attribute != _source.attribute for package in PACKAGE_SOURCES):
            PACKAGE_SOURCES.append(_source)


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
