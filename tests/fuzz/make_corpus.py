#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/) from results/ and
profiles/, small .npy files and command lines, plus the inputs that crashed arch-bench in issue 8
(regression-*), and pairs of reports (two reports separated by a NUL byte, which fuzz_report diffs
and merges: issue 42). Run from anywhere; it replaces only the files it writes. With
--bin build/arch-bench it also writes pair-shards-*, the two shards of a real `run --shard I/2`.
Kept small (a few hundred KB): libFuzzer grows its own working corpus in the build folder."""
import json
import pathlib
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"


def write(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def compact(document):
    return json.dumps(document, separators=(",", ":"))


def trimmed(report, samples=8):
    for row in report.get("metrics", {}).get("rows", []):
        if row.get("samples_ms"):
            row["samples_ms"] = row["samples_ms"][:samples]
            row["repeats"] = len(row["samples_ms"])
    return report


def report_seeds():
    results = ROOT / "results"
    for path in sorted(results.glob("*.json")):
        if path.stem.endswith("-qk0.3"):
            continue  # the same shape as its sibling
        report = trimmed(json.loads(path.read_text()))
        write("report", path.stem + ".json", compact(report))
    base = trimmed(json.loads((results / "45_linear_recurrent_state_ci-cpu-baseline.json").read_text()))
    # Issue 8 defect 1: options nested deeper than any walk over a report should go.
    text = compact(base)
    row_options = '"options":{'
    at = text.index(row_options, text.index('"rows"'))
    write("report", "regression-1-deep-options.json",
          text[:at + len(row_options)] + '"x":' + "[" * 20000 + "]" * 20000 + "," + text[at + len(row_options):])
    # Defect 3: a 50,000-character run_label (std::regex recursed once per character).
    long_label = json.loads(json.dumps(base))
    long_label["identity"]["run_label"] = "a" * 50000
    write("report", "regression-3-long-run-label.json", compact(long_label))
    # Defect 4: a number no double holds.
    write("report", "regression-4-number-overflow.json", text.replace('"repeats":', '"repeats":1e400,"x":', 1))


def pair(first, second):
    return compact(first).encode() + b"\0" + compact(second).encode()


def report_pair_seeds():
    """Two reports in one input: the comparisons diff and merge make (hardware, mode, the gate)."""
    results = ROOT / "results"
    base = trimmed(json.loads((results / "45_linear_recurrent_state_ci-cpu-baseline.json").read_text()))
    other = trimmed(json.loads((results / "45_linear_recurrent_state_cpp-kernels-2core.json").read_text()))
    write("report", "pair-other-lengths.bin", pair(base, other))
    intel = json.loads(json.dumps(base))
    intel["hardware"]["host"]["cpu_model"] = "Intel(R) Xeon(R) Platinum 8480+"
    intel["hardware"]["gpu"] = [{"name": "NVIDIA H100 80GB HBM3"}]
    write("report", "pair-other-hardware.bin", pair(base, intel))
    interrupted = json.loads(json.dumps(base))
    interrupted["metrics"]["rows"] = []
    interrupted["failure"] = {"kind": "interrupted", "message": "interrupted by SIGTERM before the first cell"}
    interrupted["evidence_level"] = "dry_run"
    write("report", "pair-interrupted.bin", pair(base, interrupted))
    fp32 = json.loads(json.dumps(base))
    fp32["workload"]["dtype"] = "float32"
    for row in fp32["metrics"]["rows"]:
        row["dtype"] = "float32"
    fp32["identity"]["mode"] = "performer"
    write("report", "pair-dtype-and-mode.bin", pair(base, fp32))


def shard_pair_seeds(binary):
    """The two shards of one small plan, measured by `binary`: merge goes as deep as it can."""
    with tempfile.TemporaryDirectory() as folder:
        shards = []
        for index in range(2):
            output = pathlib.Path(folder) / f"s{index}.json"
            subprocess.run([binary, "run", "--sequence-lengths", "16,32", "--phase", "decode,prefill", "--repeats",
                            "8", "--warmup", "1", "--query-heads", "2", "--head-dim", "16", "--device", "cpu",
                            "--threads", "1", "-q", "--shard", f"{index}/2", "--output", str(output)], check=True)
            shards.append(trimmed(json.loads(output.read_text())))
    write("report", "pair-shards-0-1.bin", pair(shards[0], shards[1]))
    slower = json.loads(json.dumps(shards[1]))
    slower["hardware"]["host"]["cpu_model"] = "Some Other CPU"
    slower["hardware"]["ceilings"]["peak_gflops"] *= 2
    write("report", "pair-shards-other-hardware.bin", pair(shards[0], slower))


def profile_seeds():
    for path in sorted((ROOT / "profiles").glob("*.json")):
        write("profile", path.name, path.read_bytes())
    cpu = json.loads((ROOT / "profiles" / "ARCH-CPU-MECHANISM.json").read_text())
    long_id = dict(cpu, id="P" * 20000)
    write("profile", "regression-3-long-id.json", compact(long_id))
    write("profile", "regression-4-number-overflow.json", compact(cpu).replace("{", '{"x":1e400,', 1))
    write("profile", "regression-1-deep.json", '{"id":' + "[" * 20000 + "]" * 20000 + "}")


def npy(descr, shape, values, version=1, fortran=False):
    shape_text = f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(str(d) for d in shape) + ")"
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_text}, }}"
    prelude = 10 if version == 1 else 12
    header += " " * ((-(prelude + len(header) + 1)) % 64) + "\n"
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    fmt = "<" + ("f" if descr == "<f4" else "d") * len(values)
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + struct.pack(fmt, *values)


def npy_seeds():
    write("npy", "scalar-f8.npy", npy("<f8", [], [1.5]))
    write("npy", "vector-f4.npy", npy("<f4", [3], [0.5, -1.0, 2.0]))
    write("npy", "q-1x2x4x2-f4.npy", npy("<f4", [1, 2, 4, 2], [0.1 * i for i in range(16)]))
    write("npy", "empty-f8.npy", npy("<f8", [0, 4], []))
    write("npy", "v2-f8.npy", npy("<f8", [2, 2], [1.0, 2.0, 3.0, 4.0], version=2))
    write("npy", "v3-f4.npy", npy("<f4", [2], [1.0, 2.0], version=3))
    write("npy", "fortran.npy", npy("<f8", [2, 1], [1.0, 2.0], fortran=True))
    # Issue 8 defect 2: a header nesting '(' 65,000 deep.
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': " + "(" * 65000 + "}"
    header += " " * ((-(12 + len(header) + 1)) % 64) + "\n"
    write("npy", "regression-2-deep-header.npy",
          b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header.encode())


def cli_seeds():
    lines = {
        "run-default": ["run"],
        "run-seed-card": ["--mode", "linear_recurrence", "--output", "x.json", "--semantic-id", "S",
                          "--workload-id", "W", "--run-label", "L", "--profile-id", "ARCH-CUDA-MECHANISM",
                          "--sequence-lengths", "512,2048,8192", "--query-heads", "8", "--head-dim", "64",
                          "--dtype", "bfloat16", "--warmup", "10", "--repeats", "100"],
        "run-performer": ["run", "--mode", "performer", "--features", "16,64", "--phase", "decode,prefill",
                          "--qk-scale", "0.3", "--dtype", "fp32", "--cache", "hot", "--threads", "2"],
        "run-mamba": ["run", "--mode", "mamba_scan", "--state-size", "32", "--batch", "2", "--dry-run",
                      "--seed", "9223372036854775807", "--timing", "steady_clock"],
        "run-relu": ["run", "--feature-map", "relu", "--sequence-lengths", "16,16", "--phase", "decode,decode"],
        "diff": ["diff", "a.json", "b.json", "--format", "markdown", "--fail-on", "never", "--min-effect", "5%",
                 "--alpha", "0.01", "--allow-workload-change"],
        "validate": ["validate", "a.json", "b.json", "--schema", "profile"],
        # Issue 8 defects 5 and 7: sizes whose byte products overflow int64, seeds out of range.
        "regression-5-huge-length": ["run", "--sequence-lengths", "4611686018427387904", "--dry-run"],
        "regression-5-max-length": ["run", "--sequence-lengths", "9223372036854775807", "--head-dim", "256",
                                    "--batch", "9223372036854775807"],
        "regression-7-seed": ["run", "--seed", "-1"],
        "regression-7-seed-big": ["run", "--seed", "9223372036854775808"],
    }
    for name, words in lines.items():
        write("cli", name, "\n".join(words))


if __name__ == "__main__":
    report_seeds()
    report_pair_seeds()
    if "--bin" in sys.argv:
        shard_pair_seeds(sys.argv[sys.argv.index("--bin") + 1])
    profile_seeds()
    npy_seeds()
    cli_seeds()
