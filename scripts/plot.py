#!/usr/bin/python3
"""Charts of arch-bench result reports (PNG, and SVG on request), drawn with matplotlib.

arch-bench itself never draws: `arch-bench report --plots DIR` runs this script, and it works alone:

    scripts/plot.py --out DIR [--formats png,svg] [--overwrite] [--manifest] REPORT.json...

Per report (file stem S) it writes, when the report has the data:
  S_step_time.png      median step time vs context length L, log-log, one line per mechanism arm,
                       the p05-p95 band shaded, the decision's crossover length marked; one panel per phase
  S_state_bytes.png    state bytes vs L (the explicit history grows, a fixed state stays flat)
  S_peak_memory.png    tracked peak memory vs L, per phase
  S_error.png          max relative error against the fp64 reference vs L, with the dtype tolerance
  S_approximation_vs_m.png   performer reports: relative L2 error against exact softmax vs features m
  S_capacity.png       landscape reports: the state-capacity (recall) curve, mean cosine vs pairs n
  S_model_capacity.png run --model reports: the largest batch that fits after the weights and the whole
                       model's decode step vs L, as published and with its attention replaced by each candidate

Every image is 960 x 420 pixels (9.6 x 4.2 inches at 100 dpi). Files are written to a temporary name and
linked into place, so a reader never sees half an image and an existing chart is never replaced unless
--overwrite. --manifest prints {"charts": [{report, kind, title, png, svg, width, height}]} as JSON on
standard output (arch-bench reads it); messages go to standard error.

Exit codes: 0 written; 2 bad input (unreadable or not a result report, a chart file exists, bad option);
3 matplotlib cannot be imported (Debian: apt-get install python3-matplotlib, run with /usr/bin/python3).
"""

import argparse
import json
import math
import os
import sys
import tempfile

WIDTH_IN, HEIGHT_IN, DPI = 9.6, 4.2, 100
WIDTH_PX, HEIGHT_PX = int(WIDTH_IN * DPI), int(HEIGHT_IN * DPI)
EXIT_BAD_INPUT, EXIT_NO_MATPLOTLIB = 2, 3
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
# PNGs are reduced to a palette of this many colours: charts have few, and the files shrink ~3x.
PNG_COLOURS = 96


class BadInput(Exception):
    pass


def load_report(path):
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror}")
    except ValueError as error:
        raise BadInput(f"{path}: not JSON: {error}")
    rows = document.get("metrics", {}).get("rows") if isinstance(document, dict) else None
    if not isinstance(rows, list) or not isinstance(document.get("identity"), dict):
        raise BadInput(f"{path}: not an arch-bench result report (no identity or metrics.rows)")
    return document


def arm_label(row):
    variant = row.get("variant") or ""
    return row["mechanism"] + (f" [{variant}]" if variant else "")


def arms_in_order(document):
    """Arm labels: the baseline first, then the candidates as the report lists them, then any others."""
    labels = []
    for row in document["metrics"]["rows"]:
        label = arm_label(row)
        if label not in labels:
            labels.append(label)
    baseline = [arm_label(r) for r in document["metrics"]["rows"] if r.get("role") == "baseline"]
    return sorted(labels, key=lambda label: (label not in baseline, labels.index(label)))


def phases_of(document):
    phases = list(document.get("workload", {}).get("phases") or [])
    for row in document["metrics"]["rows"]:
        if row.get("phase") not in phases:
            phases.append(row.get("phase"))
    return [p for p in phases if any(r.get("phase") == p for r in document["metrics"]["rows"])]


def ok_rows(document, phase=None):
    return [r for r in document["metrics"]["rows"]
            if r.get("status") == "ok" and (phase is None or r.get("phase") == phase)]


def series(rows, label, key):
    points = sorted((r["sequence_length"], r[key]) for r in rows
                    if arm_label(r) == label and isinstance(r.get(key), (int, float)))
    return [p[0] for p in points], [p[1] for p in points]


def crossover_lengths(document):
    """{phase: L} from decision.details.crossover_length, else the top-level length for every phase."""
    decision = document.get("decision") or {}
    per_phase = (decision.get("details") or {}).get("crossover_length")
    if isinstance(per_phase, dict):
        return {phase: length for phase, length in per_phase.items() if isinstance(length, (int, float))}
    if isinstance(decision.get("crossover_length"), (int, float)):
        return {phase: decision["crossover_length"] for phase in phases_of(document)}
    return {}


class Charts:
    def __init__(self, plt, out_dir, formats, overwrite):
        self.plt, self.out_dir, self.formats, self.overwrite = plt, out_dir, formats, overwrite

    def style(self, document):
        """One colour (and marker, so that curves lying on each other stay visible) per arm, the same in
        every chart of a report; the baseline black."""
        palette = self.plt.get_cmap("tab10").colors
        colours, index = {}, 0
        for label in arms_in_order(document):
            baseline = any(r.get("role") == "baseline" and arm_label(r) == label for r in document["metrics"]["rows"])
            if baseline:
                colours[label] = "black"
            else:
                colours[label] = palette[index % len(palette)]
                index += 1
        return colours

    @staticmethod
    def marker(document, label):
        labels = arms_in_order(document)
        return MARKERS[labels.index(label) % len(MARKERS)] if label in labels else "o"

    def figure(self, panels):
        fig, axes = self.plt.subplots(1, panels, figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, squeeze=False)
        return fig, list(axes[0])

    def finish(self, fig, axes, title, legend=True):
        fig.suptitle(title, fontsize=11)
        handles, labels = [], []
        for ax in axes:
            ax.grid(True, which="major", alpha=0.35)
            ax.grid(True, which="minor", alpha=0.12)
            for handle, label in zip(*ax.get_legend_handles_labels()):
                if label not in labels:
                    handles.append(handle)
                    labels.append(label)
        right = 0.995
        if legend and labels:
            fig.legend(handles, labels, loc="center right", fontsize=8, frameon=False)
            longest = max(len(label) for label in labels)
            right = max(0.6, 1 - (0.02 + 0.0065 * longest))
        fig.subplots_adjust(left=0.085, right=right, bottom=0.13, top=0.85, wspace=0.28)


def readable_log_y(ax):
    """Log y axis labelled at 1, 2, 5 x 10^k in plain numbers: a chart spanning one or two decades
    otherwise shows a single labelled tick."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def bytes_text(value):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:g} {unit}"
    return f"{value:g} B"


def readable_bytes_y(ax):
    """Byte sizes are powers of two here (64 KiB, 1 MiB): log base 2, labelled in binary units."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_locator(LogLocator(base=2, numticks=12))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: bytes_text(value)))
    ax.yaxis.set_minor_formatter(NullFormatter())


def powers_of_two_axis(ax, values, label):
    """An x axis of sizes that double (L, m, n): log base 2, ticked and labelled at the values drawn only."""
    ax.set_xscale("log", base=2)
    ax.set_xlabel(label)
    ticks = sorted(set(values))
    if ticks:
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(v) for v in ticks])
        ax.minorticks_off()


def lengths_axis(ax, lengths):
    powers_of_two_axis(ax, lengths, "context length L (tokens)")


def draw_step_time(charts, document, colours, title_prefix):
    phases = phases_of(document)
    fig, axes = charts.figure(len(phases))
    crossovers = crossover_lengths(document) if document["identity"].get("mode") != "landscape" else {}
    drew = False
    for ax, phase in zip(axes, phases):
        rows = ok_rows(document, phase)
        all_lengths = []
        for label in arms_in_order(document):
            xs, median = series(rows, label, "median_step_ms")
            if not xs:
                continue
            drew = True
            all_lengths += xs
            _, low = series(rows, label, "p05_step_ms")
            _, high = series(rows, label, "p95_step_ms")
            ax.plot(xs, median, marker=charts.marker(document, label), markersize=4, linewidth=1.6, color=colours[label], label=label)
            if len(low) == len(xs) and len(high) == len(xs):
                ax.fill_between(xs, low, high, color=colours[label], alpha=0.18, linewidth=0)
        readable_log_y(ax)
        lengths_axis(ax, all_lengths)
        ax.set_ylabel("step time, ms (median, p05–p95 band)" if phase == "decode" else "prefill time, ms (median, p05–p95)")
        ax.set_title(phase, fontsize=10)
        if phase in crossovers:
            length = crossovers[phase]
            ax.axvline(length, color="tab:red", linestyle="--", linewidth=1)
            ax.annotate(f"crossover L={int(length)}", xy=(length, 0.97), xycoords=("data", "axes fraction"),
                        xytext=(4, 0), textcoords="offset points", color="tab:red", fontsize=8, va="top")
    charts.finish(fig, axes, f"{title_prefix}: step time vs context length (log-log)")
    return fig, drew


def draw_per_length(charts, document, colours, title_prefix, key, ylabel, what, per_phase=True, tolerance=False,
                    in_bytes=False):
    phases = phases_of(document) if per_phase else phases_of(document)[:1]
    fig, axes = charts.figure(len(phases))
    drew = False
    for ax, phase in zip(axes, phases):
        rows = ok_rows(document, phase)
        all_lengths = []
        for label in arms_in_order(document):
            xs, ys = series(rows, label, key)
            if not xs:
                continue
            drew = True
            all_lengths += xs
            ax.plot(xs, ys, marker=charts.marker(document, label), markersize=4, linewidth=1.6, color=colours[label], label=label)
        if tolerance:
            tolerances = sorted({r["tolerance"] for r in rows if isinstance(r.get("tolerance"), (int, float))})
            for value in tolerances:
                ax.axhline(value, color="grey", linestyle=":", linewidth=1)
                ax.annotate(f"tolerance {value:g}", xy=(0.01, value), xycoords=("axes fraction", "data"),
                            fontsize=8, color="grey", va="bottom")
        readable_bytes_y(ax) if in_bytes else readable_log_y(ax)
        lengths_axis(ax, all_lengths)
        ax.set_ylabel(ylabel)
        ax.set_title(phase if per_phase else "", fontsize=10)
    charts.finish(fig, axes, f"{title_prefix}: {what}")
    return fig, drew


def draw_approximation(charts, document, title_prefix):
    """Performer: relative L2 error against exact softmax vs the number of random features m."""
    phases = phases_of(document)
    fig, axes = charts.figure(len(phases))
    palette = charts.plt.get_cmap("viridis")
    drew = False
    for ax, phase in zip(axes, phases):
        rows = [r for r in ok_rows(document, phase) if isinstance(r.get("approx_rel_l2_vs_softmax"), (int, float))]
        lengths = sorted({r["sequence_length"] for r in rows})
        for i, length in enumerate(lengths):
            colour = palette(i / max(1, len(lengths) - 1) * 0.85)
            favor = sorted((r["options"]["features"], r["approx_rel_l2_vs_softmax"]) for r in rows
                           if r["sequence_length"] == length and r.get("options", {}).get("feature_map") == "favor+")
            trig = [(r["options"]["features"], r["approx_rel_l2_vs_softmax"]) for r in rows
                    if r["sequence_length"] == length and r.get("options", {}).get("feature_map") == "trig"]
            if favor:
                drew = True
                ax.plot([m for m, _ in favor], [e for _, e in favor], marker="o", markersize=3.5, color=colour,
                        label=f"FAVOR+, L={length}")
            if trig:
                drew = True
                ax.plot([m for m, _ in trig], [e for _, e in trig], marker="x", linestyle="none", markersize=7,
                        color=colour, label=f"trig, L={length}")
        readable_log_y(ax)  # before the x axis: its minorticks_off() also clears the log y axis's minor ticks
        powers_of_two_axis(ax, [r["options"]["features"] for r in rows], "random features m")
        ax.set_ylabel("relative L2 error vs exact softmax")
        ax.set_title(phase, fontsize=10)
    charts.finish(fig, axes, f"{title_prefix}: approximation error vs features m")
    return fig, drew


def draw_capacity(charts, document, colours, title_prefix):
    capacity = (document.get("capacity") or {}).get("mechanisms") or {}
    fig, axes = charts.figure(1)
    ax = axes[0]
    drew = False
    palette = charts.plt.get_cmap("tab10").colors
    for i, (mechanism, curve) in enumerate(sorted(capacity.items())):
        n, cosine = curve.get("n") or [], curve.get("mean_cosine") or []
        if not n or len(n) != len(cosine):
            continue
        drew = True
        colour = colours.get(mechanism, palette[i % len(palette)])
        ax.plot(n, cosine, marker=charts.marker(document, mechanism), markersize=4, linewidth=1.6, color=colour,
                label=mechanism)
    ax.axhline(0.9, color="grey", linestyle=":", linewidth=1)
    ax.annotate("cosine 0.9", xy=(0.01, 0.9), xycoords=("axes fraction", "data"), fontsize=8, color="grey",
                va="bottom")
    powers_of_two_axis(ax, [v for curve in capacity.values() for v in (curve.get("n") or [])],
                       "key/value pairs written n")
    ax.set_ylabel("mean cosine of recalled values")
    ax.set_ylim(-0.05, 1.05)
    charts.finish(fig, axes, f"{title_prefix}: state capacity (recall) vs pairs written")
    return fig, drew


def draw_model_capacity(charts, document, colours, title_prefix):
    """run --model: per context length, the largest batch whose caches fit after the weights (left) and
    the whole model's decode step over its sequence-mixing layers (right), as published and with its
    attention replaced by each candidate."""
    model = document.get("model") or {}
    lengths = [entry for entry in model.get("lengths") or [] if isinstance(entry.get("sequence_length"), int)]
    replaced = "+".join(model.get("replaced_layers") or [])
    curves = {}
    for entry in lengths:
        configurations = [("as published", entry.get("model") or {})]
        configurations += [(f"{replaced} -> {alt.get('mechanism')}", alt) for alt in entry.get("replaced_by") or []]
        for label, figures in configurations:
            curve = curves.setdefault(label, {"L": [], "batch": [], "L_ms": [], "ms": []})
            if isinstance(figures.get("max_batch"), int):
                curve["L"].append(entry["sequence_length"])
                curve["batch"].append(figures["max_batch"])
            if isinstance(figures.get("decode_step_ms"), (int, float)):
                curve["L_ms"].append(entry["sequence_length"])
                curve["ms"].append(figures["decode_step_ms"])
    fig, axes = charts.figure(2)
    palette = charts.plt.get_cmap("tab10").colors
    drew = False
    for i, (label, curve) in enumerate(curves.items()):
        published = label == "as published"
        # The model as published is drawn thick and on top: a candidate with the same figures must not hide it.
        style = dict(marker=MARKERS[i % len(MARKERS)], markersize=5 if published else 4,
                     linewidth=2.6 if published else 1.4, color="black" if published else palette[(i - 1) % len(palette)],
                     zorder=3 if published else 2, label=label)
        if curve["L"]:
            drew = True
            # A batch of 0 (nothing fits) stays on the chart at the bottom of a symlog axis.
            axes[0].plot(curve["L"], curve["batch"], **style)
        if curve["ms"]:
            axes[1].plot(curve["L_ms"], curve["ms"], **style)
    memory = model.get("memory") or {}
    all_lengths = [entry["sequence_length"] for entry in lengths]
    lengths_axis(axes[0], all_lengths)
    lengths_axis(axes[1], all_lengths)
    axes[0].set_yscale("symlog", linthresh=1)
    axes[0].set_ylim(bottom=0)
    axes[0].set_ylabel(f"largest batch in {bytes_text(memory.get('bytes') or 0)}")
    axes[1].set_ylabel("model decode step (ms)")
    if any(curve["ms"] for curve in curves.values()):
        readable_log_y(axes[1])
    weights_gib = (memory.get("weights_reserve_bytes") or 0) / (1 << 30)
    charts.finish(fig, axes, f"{title_prefix}: model {model.get('id', '')}, largest batch after "
                             f"{weights_gib:.3g} GiB of weights, and decode step")
    return fig, drew


def plan_charts(document):
    kinds = ["step_time", "state_bytes", "peak_memory", "error"]
    # Only a sweep of m makes a curve (the landscape has one Performer arm, at one m).
    features = {(r.get("options") or {}).get("features") for r in document["metrics"]["rows"]
                if isinstance(r.get("approx_rel_l2_vs_softmax"), (int, float)) and
                (r.get("options") or {}).get("feature_map") == "favor+"}
    if len(features) > 1:
        kinds.append("approximation_vs_m")
    if (document.get("capacity") or {}).get("mechanisms"):
        kinds.append("capacity")
    if (document.get("model") or {}).get("lengths"):
        kinds.append("model_capacity")
    return kinds


def draw(charts, document, kind):
    identity = document["identity"]
    prefix = f"{identity.get('mode', '')} · {identity.get('run_label', '')}"
    colours = charts.style(document)
    if kind == "step_time":
        return draw_step_time(charts, document, colours, prefix)
    if kind == "state_bytes":
        return draw_per_length(charts, document, colours, prefix, "state_bytes", "state bytes",
                               "state bytes vs context length", per_phase=False, in_bytes=True)
    if kind == "peak_memory":
        return draw_per_length(charts, document, colours, prefix, "peak_memory_bytes", "peak memory (tracked)",
                               "peak memory vs context length", in_bytes=True)
    if kind == "error":
        return draw_per_length(charts, document, colours, prefix, "max_rel_error", "max relative error vs fp64",
                               "error vs context length", tolerance=True)
    if kind == "approximation_vs_m":
        return draw_approximation(charts, document, prefix)
    if kind == "model_capacity":
        return draw_model_capacity(charts, document, colours, prefix)
    return draw_capacity(charts, document, colours, prefix)


def write_png(fig, out):
    """A palette PNG: the charts have a few dozen colours, so this keeps text and lines crisp at a third
    of the size (committed charts stay a few tens of KB). Pillow comes with Debian's matplotlib."""
    import io
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    try:
        from PIL import Image
    except ImportError:
        out.write(buffer.getvalue())
        return
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=PNG_COLOURS).save(out, format="PNG", optimize=True)


def save_atomically(fig, path, fmt, overwrite):
    folder = os.path.dirname(path) or "."
    handle, temporary = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            if fmt == "png":
                write_png(fig, out)
            else:
                fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; a chart is as readable as any file
        if overwrite:
            os.replace(temporary, path)
        else:
            os.link(temporary, path)  # fails if the name exists: never replace a chart silently
            os.unlink(temporary)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", metavar="REPORT.json", help="arch-bench result reports")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the charts (created when missing)")
    parser.add_argument("--formats", default="png", help="comma-separated: png, svg (default png)")
    parser.add_argument("--overwrite", action="store_true", help="replace existing chart files")
    parser.add_argument("--manifest", action="store_true", help="print the list of charts as JSON on stdout")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return 0 if stop.code == 0 else EXIT_BAD_INPUT
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    if not formats or any(f not in ("png", "svg") for f in formats) or "png" not in formats:
        print(f"plot.py: --formats {args.formats!r}: give png or png,svg", file=sys.stderr)
        return EXIT_BAD_INPUT

    try:
        documents = [(path, load_report(path)) for path in args.reports]
    except BadInput as error:
        print(f"plot.py: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    stems = [os.path.splitext(os.path.basename(path))[0] for path, _ in documents]
    if len(set(stems)) != len(stems):
        print("plot.py: two reports have the same file name; their charts would collide", file=sys.stderr)
        return EXIT_BAD_INPUT
    plan = [(path, document, stem, kind) for (path, document), stem in zip(documents, stems)
            for kind in plan_charts(document)]
    # Refuse before drawing anything, so a refusal leaves no partial set of charts behind.
    if not args.overwrite:
        existing = [os.path.join(args.out, f"{stem}_{kind}.{fmt}") for _, _, stem, kind in plan for fmt in formats
                    if os.path.exists(os.path.join(args.out, f"{stem}_{kind}.{fmt}"))]
        if existing:
            print(f"plot.py: {existing[0]} exists ({len(existing)} chart file(s) in all); nothing was replaced: "
                  "choose another --out or pass --overwrite", file=sys.stderr)
            return EXIT_BAD_INPUT

    try:
        import matplotlib
        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "arch-bench"  # stable ids: the same SVG for the same report
        import matplotlib.pyplot as plt
    except ImportError as error:
        print(f"plot.py: {sys.executable} cannot import matplotlib ({error}); on Debian: "
              "apt-get install python3-matplotlib, and run with /usr/bin/python3", file=sys.stderr)
        return EXIT_NO_MATPLOTLIB

    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        print(f"plot.py: --out {args.out}: cannot create the folder: {error.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    charts = Charts(plt, args.out, formats, args.overwrite)
    manifest = []
    for path, document, stem, kind in plan:
        fig, drew = draw(charts, document, kind)
        if drew:
            entry = {"report": path, "kind": kind, "title": fig._suptitle.get_text(), "png": "", "svg": "",
                     "width": WIDTH_PX, "height": HEIGHT_PX}
            for fmt in formats:
                target = os.path.join(args.out, f"{stem}_{kind}.{fmt}")
                try:
                    save_atomically(fig, target, fmt, args.overwrite)
                except FileExistsError:
                    print(f"plot.py: {target} appeared while drawing; nothing was replaced", file=sys.stderr)
                    return EXIT_BAD_INPUT
                entry[fmt] = target
            manifest.append(entry)
            print(f"plot.py: wrote {entry['png']}", file=sys.stderr)
        plt.close(fig)
    if args.manifest:
        json.dump({"charts": manifest}, sys.stdout)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
