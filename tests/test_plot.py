#!/usr/bin/python3
"""Tests of scripts/plot.py on the committed results/*.json, and of the HTML page of `arch-bench report`
in headless Chromium when it is installed.

    /usr/bin/python3 tests/test_plot.py [-v]        (scripts/ci-checks.sh runs it; BUILD_DIR picks arch-bench)

Every chart must be a real PNG of the documented size (960 x 420) that is not blank; tests that need
matplotlib or chromium say "skipped" with what to install when those are missing.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLOT = os.path.join(ROOT, "scripts", "plot.py")
RESULTS = sorted(os.path.join(ROOT, "results", name) for name in os.listdir(os.path.join(ROOT, "results"))
                 if name.endswith(".json"))
WIDTH, HEIGHT = 960, 420
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def have_matplotlib():
    return subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True).returncode == 0


def png_facts(path):
    """(width, height, distinct byte values in the decoded image data): enough to tell a blank image."""
    with open(path, "rb") as handle:
        data = handle.read()
    if not data.startswith(PNG_SIGNATURE):
        raise AssertionError(f"{path}: not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    chunks, at = [], 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            chunks.append(data[at + 8:at + 8 + length])
        at += 12 + length
    pixels = zlib.decompress(b"".join(chunks))
    return width, height, len(set(pixels))


def expected_kinds(document):
    kinds = {"step_time", "state_bytes", "peak_memory", "error"}
    features = {(r.get("options") or {}).get("features") for r in document["metrics"]["rows"]
                if (r.get("options") or {}).get("feature_map") == "favor+" and "approx_rel_l2_vs_softmax" in r}
    if len(features) > 1:
        kinds.add("approximation_vs_m")
    if (document.get("capacity") or {}).get("mechanisms"):
        kinds.add("capacity")
    if (document.get("model") or {}).get("lengths"):
        kinds.add("model_capacity")
    return kinds


def run_plot(*args):
    return subprocess.run([sys.executable, PLOT, *args], capture_output=True, text=True)


@unittest.skipUnless(have_matplotlib(), f"skipped: {sys.executable} cannot import matplotlib "
                                        "(apt-get install python3-matplotlib)")
class CommittedReportCharts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="arch-bench-plot-")
        cls.result = run_plot("--out", cls.folder, "--formats", "png,svg", "--manifest", *RESULTS)
        cls.manifest = json.loads(cls.result.stdout) if cls.result.returncode == 0 else {"charts": []}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def test_every_chart_of_every_report_is_a_nonblank_png_of_the_documented_size(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        for report in RESULTS:
            with open(report, encoding="utf-8") as handle:
                document = json.load(handle)
            charts = [c for c in self.manifest["charts"] if c["report"] == report]
            self.assertEqual({c["kind"] for c in charts}, expected_kinds(document), report)
            for chart in charts:
                self.assertTrue(os.path.isfile(chart["png"]), chart)
                width, height, distinct = png_facts(chart["png"])
                self.assertEqual((width, height), (WIDTH, HEIGHT), chart["png"])
                self.assertEqual((chart["width"], chart["height"]), (WIDTH, HEIGHT))
                self.assertGreater(distinct, 8, f"{chart['png']} looks blank")
                with open(chart["svg"], encoding="utf-8") as handle:
                    self.assertIn("<svg", handle.read(2000), chart["svg"])
                self.assertIn(document["identity"]["run_label"], chart["title"])

    def test_the_crossover_is_marked_on_the_step_time_chart(self):
        # The same report drawn with and without its decision: the marker changes the picture.
        report = os.path.join(ROOT, "results", "45_linear_recurrent_state_cpp-kernels-2core.json")
        with open(report, encoding="utf-8") as handle:
            document = json.load(handle)
        document["decision"]["crossover_length"] = None
        document["decision"]["details"].pop("crossover_length", None)
        folder = tempfile.mkdtemp(prefix="arch-bench-plot-")
        try:
            unmarked = os.path.join(folder, "unmarked.json")
            with open(unmarked, "w", encoding="utf-8") as handle:
                json.dump(document, handle)
            self.assertEqual(run_plot("--out", folder, unmarked).returncode, 0)
            with open(os.path.join(folder, "unmarked_step_time.png"), "rb") as a, \
                 open(os.path.join(self.folder, os.path.basename(report)[:-5] + "_step_time.png"), "rb") as b:
                self.assertNotEqual(a.read(), b.read())
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def test_existing_charts_are_never_replaced(self):
        before = {c["png"]: os.path.getmtime(c["png"]) for c in self.manifest["charts"]}
        again = run_plot("--out", self.folder, RESULTS[0])
        self.assertEqual(again.returncode, 2)
        self.assertIn("exists", again.stderr)
        self.assertEqual(before, {path: os.path.getmtime(path) for path in before})

    def test_bad_input_is_exit_two(self):
        folder = tempfile.mkdtemp(prefix="arch-bench-plot-")
        try:
            not_a_report = os.path.join(folder, "x.json")
            with open(not_a_report, "w", encoding="utf-8") as handle:
                handle.write('{"rows": []}')
            result = run_plot("--out", folder, not_a_report)
            self.assertEqual(result.returncode, 2)
            self.assertIn("not an arch-bench result report", result.stderr)
            self.assertEqual(run_plot("--out", folder, "--formats", "gif", RESULTS[0]).returncode, 2)
            self.assertEqual(run_plot("--out", folder, os.path.join(folder, "missing.json")).returncode, 2)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def arch_bench():
    build = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))
    path = os.path.join(build, "arch-bench")
    return path if os.access(path, os.X_OK) else None


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


class HtmlPageInChromium(unittest.TestCase):
    def test_the_page_renders_offline_with_its_charts(self):
        if not have_matplotlib():
            self.skipTest("skipped: matplotlib is not installed (apt-get install python3-matplotlib)")
        if arch_bench() is None:
            self.skipTest("skipped: no arch-bench executable (build first, or set BUILD_DIR)")
        browser = chromium()
        if browser is None:
            self.skipTest("skipped: chromium is not installed (apt-get install chromium); the HTML page was not "
                          "opened in a browser")
        folder = tempfile.mkdtemp(prefix="arch-bench-html-")
        try:
            page = os.path.join(folder, "report.html")
            report = os.path.join(ROOT, "results", "45_linear_recurrent_state_cpp-kernels-2core.json")
            made = subprocess.run([arch_bench(), "report", report, "--format", "html", "--plots",
                                   os.path.join(folder, "charts"), "--output", page], capture_output=True, text=True)
            self.assertEqual(made.returncode, 0, made.stderr)
            shot = os.path.join(folder, "shot.png")
            # No network: the page must not need it (--proxy-server to nowhere makes any fetch fail).
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--proxy-server=127.0.0.1:9", "--window-size=1200,1600", f"--screenshot={shot}",
                            "file://" + page], capture_output=True, timeout=120, cwd=folder)
            self.assertTrue(os.path.isfile(shot), "chromium wrote no screenshot")
            width, height, distinct = png_facts(shot)
            self.assertEqual((width, height), (1200, 1600))
            self.assertGreater(distinct, 8, "the screenshot is blank")
            if os.environ.get("ARCH_BENCH_KEEP_SCREENSHOT"):
                shutil.copy(shot, os.environ["ARCH_BENCH_KEEP_SCREENSHOT"])
        finally:
            shutil.rmtree(folder, ignore_errors=True)



@unittest.skipUnless(have_matplotlib(), f"skipped: {sys.executable} cannot import matplotlib "
                                        "(apt-get install python3-matplotlib)")
class ModelCapacityChart(unittest.TestCase):
    def test_a_model_report_gets_its_capacity_chart(self):
        # A landscape report with the model block a `run --model` adds (schema 1.1.0), figures made up.
        with open(os.path.join(ROOT, "results", "landscape_cpp-kernels-2core.json"), encoding="utf-8") as handle:
            document = json.load(handle)
        figures = lambda ms, state, batch: {"decode_step_ms": ms, "state_bytes_per_sequence": state, "max_batch": batch}
        document["model"] = {
            "id": "llama-3.1-8b", "sha256": "0" * 64, "source": "https://example.invalid", "parameter_count": 8030261248,
            "weight_dtype": "bfloat16", "layers": [], "overrides": [], "replaced_layers": ["attention"],
            "memory": {"bytes": 141 << 30, "source": "--memory-gib", "weights_reserve_bytes": 16060522496},
            "lengths": [{"sequence_length": length,
                         "model": dict(figures(0.01 * length / 512, length << 17, (125 << 30) // (length << 17)),
                                       per_layer_type=[]),
                         "replaced_by": [dict(figures(0.4, 1 << 24, 7000), mechanism="mamba", variant="instead_of=attention")]}
                        for length in (8192, 32768, 131072)]}
        folder = tempfile.mkdtemp(prefix="arch-bench-plot-")
        try:
            report = os.path.join(folder, "model.json")
            with open(report, "w", encoding="utf-8") as handle:
                json.dump(document, handle)
            result = run_plot("--out", folder, "--manifest", report)
            self.assertEqual(result.returncode, 0, result.stderr)
            kinds = {c["kind"]: c for c in json.loads(result.stdout)["charts"]}
            self.assertEqual(set(kinds), expected_kinds(document))
            width, height, distinct = png_facts(kinds["model_capacity"]["png"])
            self.assertEqual((width, height), (WIDTH, HEIGHT))
            self.assertGreater(distinct, 8)
            self.assertIn("llama-3.1-8b", kinds["model_capacity"]["title"])
        finally:
            shutil.rmtree(folder, ignore_errors=True)

if __name__ == "__main__":
    unittest.main()
