#!/usr/bin/env bash
# Regenerates results/README.md (the Markdown summary of every committed report, `arch-bench report`)
# and results/plots/ (their charts, scripts/plot.py) from results/*.json:
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

{
  echo "# Committed results"
  echo
  echo "The evidence reports in this folder, summarized by \`arch-bench report\` with the charts of"
  echo "\`scripts/plot.py\` (in \`plots/\`). Regenerate both with \`scripts/results-summary.sh\`; do not edit"
  echo "by hand. Timings are CPU timings of a shared 2-core VM (see each report's hardware line)."
  echo
  for report in results/*.json; do
    name="$(basename "$report")"
    echo "- [\`$name\`](#$(basename "$report" .json | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z'))"
  done
  echo
} > "$STAGE/README.md"
for report in results/*.json; do
  name="$(basename "$report" .json)"
  "$BIN" report "$report" --plots "$STAGE/plots" --output "$STAGE/$name.md"
  { echo "<a id=\"$(echo "$name" | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z')\"></a>"; echo; cat "$STAGE/$name.md"; } \
    >> "$STAGE/README.md"
  rm "$STAGE/$name.md"
done
rm -rf results/plots
mv "$STAGE/plots" results/plots
mv "$STAGE/README.md" results/README.md
echo "results-summary: wrote results/README.md and $(ls results/plots | wc -l) charts in results/plots/" >&2
