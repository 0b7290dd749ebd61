#!/usr/bin/env python3
"""The libraries a user would deploy, timed on the GPU machine in the same lease as arch-bench.

    python3 scripts/device-peers.py [--quick] > OUT/peers.jsonl

One JSON object a line (the format scripts/gpu-table.py reads): `case`, `B`, `H`, `KV`, `D`, `L`,
`ms` (median, L2 flushed before each call: triton.testing.do_bench, as the 2026-12-04 numbers were
taken), and the library's version. Cases, all bf16, at the cells scripts/device-check.sh measures:
- PyTorch's scaled_dot_product_attention: causal prefill with its default backend and restricted to
  cuDNN and to FlashAttention-2; decode (one query against the cache); grouped-query decode
  (enable_gqa) at the Llama-style 32 query / 8 K/V heads x 128;
- flash-linear-attention's chunked kernels where `fla` imports (scripts/device-bundle.sh carries the
  fla-core wheel that scripts/crosscheck.sh pins): chunk_linear_attn, chunk_retention,
  chunk_gated_delta_rule, chunk_rwkv6 and chunk_simple_gla (the scalar-decay form of Mamba-2's SSD).
A case a library cannot run is a line with `error` instead of `ms`; the script never stops early.
"""
import argparse
import json
import sys
import traceback

import torch
import torch.nn.functional as F

try:
    from triton.testing import do_bench
except ImportError:  # pragma: no cover - the GPU machine has triton with PyTorch
    do_bench = None

DEVICE = "cuda"
DTYPE = torch.bfloat16


def timed_ms(function):
    if do_bench is not None:
        return float(do_bench(function, warmup=25, rep=100, return_mode="median"))
    # CUDA events around single calls after an L2-sized flush, median of 50.
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device=DEVICE)
    for _ in range(5):
        function()
    samples = []
    for _ in range(50):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return sorted(samples)[len(samples) // 2]


def emit(case, version, **fields):
    print(json.dumps({"case": case, **fields, "library": version}), flush=True)


def attempt(case, version, shape, make):
    """Builds the call (inputs allocated once), times it and prints a line; a failure is a line too."""
    try:
        function = make()
        emit(case, version, **shape, ms=timed_ms(function))
    except Exception as error:  # noqa: BLE001 - a peer that cannot run is evidence, not a crash
        emit(case, version, **shape, error=f"{type(error).__name__}: {error}".splitlines()[0][:300])
        traceback.print_exc(file=sys.stderr)
    finally:
        torch.cuda.empty_cache()


def sdpa_backend(name):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel(getattr(SDPBackend, name))


def sdpa_cases(quick):
    version = f"torch {torch.__version__} (cuDNN {torch.backends.cudnn.version()})"
    randn = lambda *shape: torch.randn(*shape, device=DEVICE, dtype=DTYPE)  # noqa: E731
    prefill = [(1, 2048), (1, 8192), (16, 2048), (16, 8192)]
    for batch, length in prefill:
        shape = {"B": batch, "H": 8, "KV": 8, "D": 64, "L": length}
        for case, backend in (("sdpa_prefill_causal", None), ("sdpa_cudnn_prefill", "CUDNN_ATTENTION"),
                              ("sdpa_flash_prefill", "FLASH_ATTENTION")):
            def make(batch=batch, length=length, backend=backend):
                q, k, v = (randn(batch, 8, length, 64) for _ in range(3))
                def call():
                    if backend is None:
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    with sdpa_backend(backend):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return call
            attempt(case, version, shape, make)
    decode = [(1, 8192), (1, 32768), (16, 8192), (16, 32768)] if quick else \
        [(b, l) for b in (1, 16) for l in (512, 2048, 8192, 32768)]
    for batch, length in decode:
        def make(batch=batch, length=length):
            q, k, v = randn(batch, 8, 1, 64), randn(batch, 8, length, 64), randn(batch, 8, length, 64)
            return lambda: F.scaled_dot_product_attention(q, k, v)
        attempt("sdpa_decode", version, {"B": batch, "H": 8, "KV": 8, "D": 64, "L": length}, make)
    for batch, length in ((1, 8192), (1, 32768), (16, 8192), (16, 32768)):
        def make(batch=batch, length=length):
            q, k, v = randn(batch, 32, 1, 128), randn(batch, 8, length, 128), randn(batch, 8, length, 128)
            return lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        attempt("sdpa_gqa_decode", version, {"B": batch, "H": 32, "KV": 8, "D": 128, "L": length}, make)


def fla_cases(quick):
    try:
        import fla
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule
        from fla.ops.linear_attn import chunk_linear_attn
        from fla.ops.retention import chunk_retention
        from fla.ops.rwkv6 import chunk_rwkv6
        from fla.ops.simple_gla import chunk_simple_gla
    except Exception as error:  # noqa: BLE001
        emit("fla_import", "fla", error=f"{type(error).__name__}: {error}"[:300])
        return
    version = f"fla {getattr(fla, '__version__', '?')}"
    randn = lambda *shape: torch.randn(*shape, device=DEVICE, dtype=DTYPE)  # noqa: E731
    heads, dim = 8, 64

    def inputs(batch, length):  # fla's [B, T, H, D] layout
        return (randn(batch, length, heads, dim) for _ in range(3))

    def linear_attn(batch, length):
        q, k, v = inputs(batch, length)
        return lambda: chunk_linear_attn(q, k, v)  # normalize=True: the z normaliser arch-bench keeps

    def retention(batch, length):
        q, k, v = inputs(batch, length)
        return lambda: chunk_retention(q, k, v)

    def gated_delta_rule(batch, length):
        q, k, v = inputs(batch, length)
        k = F.normalize(k.float(), dim=-1).to(DTYPE)
        beta = torch.rand(batch, length, heads, device=DEVICE, dtype=DTYPE)
        g = F.logsigmoid(torch.randn(batch, length, heads, device=DEVICE, dtype=torch.float32))
        return lambda: chunk_gated_delta_rule(q, k, v, g=g, beta=beta)

    def rwkv6(batch, length):
        r, k, v = inputs(batch, length)
        w = -torch.exp(randn(batch, length, heads, dim).float()).to(DTYPE)  # log decay, as fla takes it
        u = randn(heads, dim)
        return lambda: chunk_rwkv6(r, k, v, w, u)

    def simple_gla(batch, length):
        q, k, v = inputs(batch, length)
        g = F.logsigmoid(torch.randn(batch, length, heads, device=DEVICE, dtype=torch.float32))
        return lambda: chunk_simple_gla(q, k, v, g=g)

    # B16 L32768 in the quick set too: issue 41 states gated_delta_rule's target there (5.78 ms), and
    # device-check's landscape part times gated_deltanet and rwkv7 at that cell.
    cells = [(1, 8192), (16, 8192), (16, 32768)] if quick else \
        [(1, 2048), (1, 8192), (16, 2048), (16, 8192), (16, 32768)]
    for case, make in (("fla_chunk_linear_attn", linear_attn), ("fla_chunk_retention", retention),
                       ("fla_chunk_gated_delta_rule", gated_delta_rule), ("fla_chunk_rwkv6", rwkv6),
                       ("fla_chunk_simple_gla", simple_gla)):
        for batch, length in cells:
            attempt(case, version, {"B": batch, "H": heads, "KV": heads, "D": dim, "L": length},
                    lambda make=make, batch=batch, length=length: make(batch, length))


def copy_ceiling():
    source = torch.empty(1 << 30, dtype=torch.uint8, device=DEVICE)
    target = torch.empty_like(source)
    ms = timed_ms(lambda: target.copy_(source))
    emit("copy_1GiB", f"torch {torch.__version__}", ms=ms, gbps=2 * source.numel() / (ms * 1e-3) / 1e9)
    del source, target
    torch.cuda.empty_cache()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="only the cells scripts/device-check.sh measures (B 1 and 16, L 8192 and 32768)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("device-peers: no CUDA device for PyTorch", file=sys.stderr)
        return 1
    torch.manual_seed(0)
    emit("device", f"torch {torch.__version__}", name=torch.cuda.get_device_name(0))
    copy_ceiling()
    sdpa_cases(args.quick)
    fla_cases(args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
