#!/usr/bin/env python3
"""arch-bench on a GPU against the libraries people deploy, measured in the same lease.

    scripts/gpu-table.py DIR                       # the Markdown table on standard output
    scripts/gpu-table.py DIR --readme README.md    # rewrite the table between the README's markers
    scripts/gpu-table.py --readme README.md --check       # exit 1 when the README's table is stale
                                                          # (DIR left out: the folder the README names)

DIR is one device run's evidence folder (results/<gpu>-<date>/, as scripts/device-check.sh leaves it):
the `gpu_measured` arch-bench reports (*.json) and the peers' timings (peers*.jsonl, one JSON object a
line: `case`, `B`, `L`, `ms`, and `H`, `D`, `KV` where they differ from 8, 64 and H; written by
scripts/device-peers.py; a line with `error`, a case the peer could not run, is left out). Each
arch-bench row whose cell a peer measured becomes a line: its time and the peer's, both as fractions
of the copy bandwidth and of the bf16 GEMM rate measured in the arch-bench run (the bytes and FLOPs
are the row's own, so the two are compared on the same work), and the speed ratio peer ms /
arch-bench ms (above 1: arch-bench is faster). Python's standard library only.
"""
import argparse
import glob
import json
import os
import re
import sys

BEGIN = "<!-- gpu-table:begin (scripts/gpu-table.py writes this table; do not edit by hand) -->"
END = "<!-- gpu-table:end -->"

# Which peer cases measure the same work as an arch-bench (mechanism, phase). The SDPA cases are
# PyTorch's scaled_dot_product_attention (default backend, or restricted to cuDNN / FlashAttention-2);
# the fla ones flash-linear-attention's chunked kernels (chunk_simple_gla is the scalar-decay form
# that Mamba-2's SSD is).
PEER_CASES = {
    ("softmax_kv", "decode"): ("sdpa_decode", "sdpa_gqa_decode"),
    ("softmax_kv", "prefill"): ("sdpa_prefill_causal", "sdpa_cudnn_prefill", "sdpa_flash_prefill"),
    ("linear_attention", "prefill"): ("fla_chunk_linear_attn",),
    ("retnet", "prefill"): ("fla_chunk_retention",),
    ("gated_deltanet", "prefill"): ("fla_chunk_gated_delta_rule",),
    ("rwkv6", "prefill"): ("fla_chunk_rwkv6",),
    ("mamba2", "prefill"): ("fla_chunk_simple_gla",),
}
SHAPE_IN_NAME = re.compile(r"^(?P<base>.+)_h(?P<H>\d+)_kv(?P<KV>\d+)_d(?P<D>\d+)$")


class EvidenceError(Exception):
    pass


def load_peers(folder):
    """Peer timings keyed by (case, B, H, KV, D, L); the fastest kept where a case repeats."""
    peers = {}
    for path in sorted(glob.glob(os.path.join(folder, "peers*.jsonl"))):
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                entry = json.loads(line)
                if "L" not in entry or "B" not in entry or "error" in entry:
                    continue  # machine facts (copy rate, library versions), or a case the peer could not run
                if not isinstance(entry.get("ms"), (int, float)) or entry["ms"] <= 0:
                    raise EvidenceError(f"{path}:{number}: a cell without a positive 'ms'")
                case = entry["case"]
                shape = {"H": entry.get("H", 8), "D": entry.get("D", 64)}
                named = SHAPE_IN_NAME.match(case)
                if named:  # the first lease wrote GQA shapes into the case name
                    case = named["base"]
                    shape = {"H": int(named["H"]), "D": int(named["D"]), "KV": int(named["KV"])}
                kv = entry.get("KV", shape.get("KV", shape["H"]))
                key = (case, entry["B"], shape["H"], kv, shape["D"], entry["L"])
                if key not in peers or entry["ms"] < peers[key]:
                    peers[key] = entry["ms"]
    return peers


def implementation(row):
    """What ran: the GPU kernel the row names, else the softmax implementation option, else ''."""
    return row.get("gpu_kernel") or row.get("options", {}).get("softmax_impl") or ""


def arch_bench_rows(folder):
    """The best-suited ok row per (mechanism, phase, implementation, cell): CUDA-event timings of
    launches (as the peers are timed) before graph replays, then the most repeats."""
    chosen = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
        if report.get("evidence_level") != "gpu_measured":
            continue
        ceilings = report["hardware"].get("ceilings") or {}
        for row in report["metrics"]["rows"]:
            if row.get("status") != "ok" or row.get("dtype") != "bfloat16":
                continue
            kv = row.get("options", {}).get("kv_heads") or row["heads"]
            cell = (row["batch"], row["heads"], kv, row["head_dim"], row["sequence_length"])
            key = (row["mechanism"], row["phase"], implementation(row), cell)
            rank = (row.get("timing_method") != "cuda_graph", row.get("repeats", 0))
            if key not in chosen or rank > chosen[key][0]:
                chosen[key] = (rank, row, ceilings, os.path.basename(path))
    return chosen


def fraction(numerator, ms, ceiling):
    if not numerator or not ceiling or ms <= 0:
        return None
    return numerator / (ms * 1e-3) / 1e9 / ceiling  # GB/s or GFLOP/s against the ceiling


def percent(value):
    return "-" if value is None else f"{100 * value:.1f}%"


def table(folder):
    peers = load_peers(folder)
    lines = [
        "| mechanism | phase | B | heads (K/V) x d | L | arch-bench kernel | ms | % copy | % GEMM "
        "| fastest peer | peer ms | peer % copy | peer % GEMM | speed vs peer |",
        "| --- | --- | ---: | --- | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    matched = 0
    for (mechanism, phase, impl, cell), (_, row, ceilings, _report) in sorted(arch_bench_rows(folder).items()):
        candidates = [(peers[(case, *cell)], case) for case in PEER_CASES.get((mechanism, phase), ())
                      if (case, *cell) in peers]
        if not candidates:
            continue
        peer_ms, peer_case = min(candidates)
        ms = row["median_step_ms"]
        bytes_moved, flops = row.get("bytes_moved"), row.get("flops")
        copy, gemm = ceilings.get("device_copy_gbps"), ceilings.get("gemm_bf16_gflops")
        batch, heads, kv, dim, length = cell
        shape = f"{heads} x {dim}" if kv == heads else f"{heads} ({kv}) x {dim}"
        lines.append(
            f"| {mechanism} | {phase} | {batch} | {shape} | {length} | {impl or '-'} | {ms:.4g} "
            f"| {percent(fraction(bytes_moved, ms, copy))} | {percent(fraction(flops, ms, gemm))} "
            f"| {peer_case} | {peer_ms:.4g} | {percent(fraction(bytes_moved, peer_ms, copy))} "
            f"| {percent(fraction(flops, peer_ms, gemm))} | {peer_ms / ms:.2f}x |")
        matched += 1
    if matched == 0:
        raise EvidenceError(f"{folder}: no arch-bench row has a peer measured at its cell")
    return "\n".join(lines) + "\n"


def with_table(readme_text, folder, rendered):
    if readme_text.count(BEGIN) != 1 or readme_text.count(END) != 1:
        raise EvidenceError(f"the README must hold the markers once each:\n{BEGIN}\n{END}")
    head, rest = readme_text.split(BEGIN)
    _, tail = rest.split(END)
    source = f"From `{folder}` (`scripts/gpu-table.py {folder} --readme README.md`):\n\n"
    return head + BEGIN + "\n" + source + rendered + END + tail


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?",
                        help="one device run's evidence folder (reports and peers*.jsonl); with --readme, "
                             "the folder its table names when left out")
    parser.add_argument("--readme", help="rewrite the table between this file's gpu-table markers")
    parser.add_argument("--check", action="store_true", help="with --readme: exit 1 if it is not current")
    args = parser.parse_args()
    if not args.folder and not args.readme:
        parser.error("give the evidence folder (or --readme with a table that names one)")
    try:
        current = None
        if args.readme:
            with open(args.readme, encoding="utf-8") as handle:
                current = handle.read()
        if not args.folder:
            named = re.search(re.escape(BEGIN) + r"\nFrom `([^`]+)`", current)
            if not named:
                raise EvidenceError(f"{args.readme} names no evidence folder after its gpu-table marker")
            args.folder = named[1]
        rendered = table(args.folder)
        if not args.readme:
            sys.stdout.write(rendered)
            return 0
        wanted = with_table(current, args.folder.rstrip("/"), rendered)
        if args.check:
            if wanted != current:
                print(f"gpu-table: {args.readme}'s GPU table is not the one {args.folder} gives; run\n"
                      f"  scripts/gpu-table.py {args.folder} --readme {args.readme}", file=sys.stderr)
                return 1
            return 0
        if wanted != current:
            staged = args.readme + ".gpu-table.tmp"
            with open(staged, "w", encoding="utf-8") as handle:
                handle.write(wanted)
            os.replace(staged, args.readme)
        return 0
    except (EvidenceError, OSError, ValueError, KeyError) as error:
        print(f"gpu-table: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
