#!/usr/bin/env python3
"""scripts/gpu-table.py: arch-bench GPU rows beside the peers measured in the same lease.

Run by ctest (gpu_table_script). Builds evidence folders from the committed H200 report
results/h200-2026-12-04/gpu-prefill.json with peers written here, so every expected number is
computed from the inputs, not copied from an output."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "gpu-table.py")
REPORT = os.path.join(ROOT, "results", "h200-2026-12-04", "gpu-prefill.json")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class GpuTable(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp()
        shutil.copy(REPORT, self.folder)
        with open(REPORT, encoding="utf-8") as handle:
            self.report = json.load(handle)

    def tearDown(self):
        shutil.rmtree(self.folder)

    def row(self, mechanism, length):
        return next(r for r in self.report["metrics"]["rows"]
                    if r["mechanism"] == mechanism and r["sequence_length"] == length)

    def write_peers(self, *entries, name="peers.jsonl"):
        with open(os.path.join(self.folder, name), "w", encoding="utf-8") as handle:
            for entry in entries:
                handle.write(json.dumps(entry) + "\n")

    def lines(self, result):
        self.assertEqual(result.returncode, 0, result.stderr)
        return [line for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]

    def test_the_fastest_peer_of_a_cell_and_the_speed_ratio(self):
        softmax = self.row("softmax_kv", 8192)
        self.write_peers({"case": "copy_1GiB", "ms": 0.5},
                         {"case": "sdpa_flash_prefill", "B": 1, "L": 8192, "ms": 0.4},
                         {"case": "sdpa_cudnn_prefill", "B": 1, "L": 8192, "ms": 0.2},
                         {"case": "sdpa_cudnn_prefill", "B": 1, "L": 8192, "H": 32, "D": 128, "ms": 0.01})
        lines = self.lines(run(self.folder))
        self.assertEqual(len(lines), 1, lines)  # one arch-bench row has a peer at its own shape
        cells = [c.strip() for c in lines[0].strip("|").split("|")]
        self.assertEqual(cells[:5], ["softmax_kv", "prefill", "1", "8 x 64", "8192"])
        self.assertEqual(cells[9], "sdpa_cudnn_prefill")
        self.assertEqual(cells[13], f"{0.2 / softmax['median_step_ms']:.2f}x")
        ceilings = self.report["hardware"]["ceilings"]
        gemm = softmax["flops"] / 0.2e-3 / 1e9 / ceilings["gemm_bf16_gflops"]
        self.assertEqual(cells[12], f"{100 * gemm:.1f}%")
        ours = softmax["flops"] / (softmax["median_step_ms"] * 1e-3) / 1e9 / ceilings["gemm_bf16_gflops"]
        self.assertEqual(cells[8], f"{100 * ours:.1f}%")

    def test_grouped_query_shapes_named_in_the_case_are_read(self):
        self.write_peers({"case": "fla_chunk_linear_attn", "B": 1, "L": 2048, "ms": 0.3},
                         {"case": "fla_chunk_linear_attn", "B": 1, "L": 8192, "error": "OutOfMemoryError"},
                         {"case": "sdpa_gqa_decode_h32_kv8_d128", "B": 1, "L": 2048, "ms": 0.02})
        lines = self.lines(run(self.folder))
        self.assertEqual(len(lines), 1, lines)  # the GQA decode cell has no arch-bench row here
        self.assertIn("| linear_attention | prefill | 1 | 8 x 64 | 2048 |", lines[0])

    def test_a_cell_without_a_time_and_a_folder_without_matches_are_refused(self):
        self.write_peers({"case": "sdpa_cudnn_prefill", "B": 1, "L": 8192})
        self.assertEqual(run(self.folder).returncode, 2)
        self.write_peers({"case": "sdpa_cudnn_prefill", "B": 2, "L": 8192, "ms": 0.2})
        result = run(self.folder)
        self.assertEqual(result.returncode, 2)
        self.assertIn("no arch-bench row has a peer", result.stderr)

    def test_the_readme_is_rewritten_between_its_markers_and_checked(self):
        self.write_peers({"case": "sdpa_cudnn_prefill", "B": 1, "L": 2048, "ms": 0.03})
        readme = os.path.join(self.folder, "README.md")
        with open(readme, "w", encoding="utf-8") as handle:
            handle.write("# title\n\n<!-- gpu-table:begin (scripts/gpu-table.py writes this table; do not edit "
                         "by hand) -->\nstale\n<!-- gpu-table:end -->\n\nafter\n")
        self.assertEqual(run(self.folder, "--readme", readme, "--check").returncode, 1)
        self.assertEqual(run(self.folder, "--readme", readme).returncode, 0)
        self.assertEqual(run(self.folder, "--readme", readme, "--check").returncode, 0)
        self.assertEqual(run("--readme", readme, "--check").returncode, 0)  # the folder it names
        with open(readme, encoding="utf-8") as handle:
            text = handle.read()
        self.assertNotIn("stale", text)
        self.assertTrue(text.startswith("# title\n") and text.endswith("\n\nafter\n"))
        self.assertIn("| softmax_kv | prefill | 1 | 8 x 64 | 2048 |", text)
        os.remove(readme)
        with open(readme, "w", encoding="utf-8") as handle:
            handle.write("no markers\n")
        self.assertEqual(run(self.folder, "--readme", readme).returncode, 2)
        with open(readme, encoding="utf-8") as handle:
            self.assertEqual(handle.read(), "no markers\n")  # nothing written half-way


if __name__ == "__main__":
    unittest.main()
