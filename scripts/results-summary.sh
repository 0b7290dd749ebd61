#!/usr/bin/env bash
# Regenerates results/README.md (the Markdown summary of every committed report, `arch-bench report`)
# and results/plots/ (their charts, scripts/plot.py) from results/*.json, and for each GPU run's folder
# (results/<gpu>-<date>/, as scripts/device-check.sh leaves it) its report.md and plots/, with the table
# of arch-bench beside the peers measured in the same lease (scripts/gpu-table.py):
#   scripts/results-summary.sh
# Uses the arch-bench of $BUILD_DIR (default build/, else build/run/; built first, as scripts/run.sh
# builds it, when there is none) and /usr/bin/python3 with python3-matplotlib (installed when missing).
# Everything is made in a staging folder first; the old summary and charts are replaced only when
# the new ones are complete.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AB_TAG=results-summary
AB_QUIET=1
source "$ROOT/scripts/setup.sh"
ab_arch_bench
BIN="$AB_BIN"
ab_apt_install python3-matplotlib
cd "$ROOT"
STAGE="$(mktemp -d "$ROOT/results/.summary.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT

# Appends REPORT's Markdown summary to PAGE, its charts in PLOTS; the summary is written beside PAGE
# first, because `report` links the charts relative to the file it writes.
append_report() {
  local report="$1" plots="$2" page="$3"
  local one
  one="$(dirname "$page")/one.md"
  "$BIN" report "$report" --plots "$plots" --output "$one"
  cat "$one" >> "$page"
  rm "$one"
}
anchor() { basename "$1" .json | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z'; }

# Each GPU run's folder (results/<gpu>-<date>/, as scripts/device-check.sh leaves it): any folder of reports.
gpu_folders=()
for folder in results/*/; do
  ls "$folder"*.json > /dev/null 2>&1 && gpu_folders+=("${folder%/}")
done

{
  echo "# Committed results"
  echo
  echo "The evidence reports in this folder, summarized by \`arch-bench report\` with the charts of"
  echo "\`scripts/plot.py\` (in \`plots/\`). Regenerate both with \`scripts/results-summary.sh\`; do not edit"
  echo "by hand. Timings here are CPU timings of a shared 2-core VM (see each report's hardware line);"
  echo "each GPU run has a folder of its own, with its page:"
  echo
  for folder in "${gpu_folders[@]}"; do
    echo "- [\`$(basename "$folder")/\`]($(basename "$folder")/report.md)"
  done
  echo
  for report in results/*.json; do
    echo "- [\`$(basename "$report")\`](#$(anchor "$report"))"
  done
  echo
} > "$STAGE/README.md"
for report in results/*.json; do
  { echo "<a id=\"$(anchor "$report")\"></a>"; echo; } >> "$STAGE/README.md"
  append_report "$report" "$STAGE/plots" "$STAGE/README.md"
done

# One page per GPU run: the peers table, then its reports in the order of their names.
for folder in "${gpu_folders[@]}"; do
  name="$(basename "$folder")"
  page="$STAGE/$name/report.md"
  mkdir -p "$STAGE/$name"
  {
    echo "# GPU run $name"
    echo
    echo "Made by \`scripts/results-summary.sh\` from this folder's reports; do not edit by hand. What ran and"
    echo "how: [README.md](README.md) here and [docs/gpu-guide.md](../../docs/gpu-guide.md)."
    echo
    echo "## arch-bench beside the libraries measured in the same lease"
    echo
    python3 scripts/gpu-table.py "$folder" || echo "(no peer measured a cell of these reports)"
    echo
  } > "$page"
  for report in "$folder"/*.json; do
    append_report "$report" "$STAGE/$name/plots" "$page"
    echo >> "$page"
  done
done

rm -rf results/plots
mv "$STAGE/plots" results/plots
mv "$STAGE/README.md" results/README.md
for folder in "${gpu_folders[@]}"; do
  name="$(basename "$folder")"
  rm -rf "$folder/plots"
  mv "$STAGE/$name/plots" "$folder/plots"
  mv "$STAGE/$name/report.md" "$folder/report.md"
done
echo "results-summary: wrote results/README.md and $(ls results/plots | wc -l) charts in results/plots/;" \
  "${#gpu_folders[@]} GPU run page(s)" >&2
