#!/usr/bin/env bash
# Prints the CLI reference (docs/cli-reference.md) as Markdown: `arch-bench --help`, then the
# `--help` of every subcommand the binary's own top-level help lists, in that order.
#   scripts/cli-reference.sh BUILD_DIR > docs/cli-reference.md        # regenerate
#   scripts/cli-reference.sh --check BUILD_DIR docs/cli-reference.md  # exit 1 when the file is stale
# BUILD_DIR may also be the arch-bench binary itself. The output depends only on the binary's help
# text: plugins from ARCH_BENCH_PLUGIN_PATH are not loaded, and trailing blanks and blank lines are
# stripped.
set -euo pipefail

usage() {
  echo "usage: scripts/cli-reference.sh BUILD_DIR" >&2
  echo "       scripts/cli-reference.sh --check BUILD_DIR docs/cli-reference.md" >&2
  exit 2
}

binary_of() {
  if [ -d "$1" ]; then echo "$1/arch-bench"; else echo "$1"; fi
}

# One help text, with the environment that could change it removed.
help_of() {
  env -u ARCH_BENCH_PLUGIN_PATH LC_ALL=C "$BINARY" "$@" --help | sed -e 's/[[:space:]]*$//' |
    awk 'NF { for (; blank > 0; blank--) print ""; print; next } { blank++ }'  # no trailing blank lines
}

# The subcommand names, read from the top-level help's SUBCOMMANDS section (CLI11's layout: a
# header line, then one "  name  description" line each, until a blank line).
subcommands() {
  help_of | awk '
    tolower($0) ~ /^subcommands:/ { inside = 1; next }
    inside && /^[[:space:]]*$/ { exit }
    inside && /^  [a-z]/ { print $1 }'
}

generate() {
  echo "# arch-bench CLI reference"
  echo
  echo "Generated from the binary's own \`--help\` by \`scripts/cli-reference.sh\`; do not edit by hand."
  echo "Regenerate after changing an option (the \`docs_cli_reference_current\` test fails until then):"
  echo
  echo '```bash'
  echo "scripts/cli-reference.sh build > docs/cli-reference.md"
  echo '```'
  echo
  echo "Exit codes of every command: 0 success, 1 failure or regression, 2 bad input (nothing written),"
  echo "130/143 stopped by SIGINT/SIGTERM. The [user guide](user-guide.md) explains the commands."
  echo
  local names
  names="$(subcommands)"
  if [ -z "$names" ]; then
    echo "cli-reference.sh: no subcommands found in \`$BINARY --help\`" >&2
    exit 1
  fi
  echo "Subcommands: $(echo "$names" | sed 's/.*/[`&`](#arch-bench-&)/' | paste -sd' ' | sed 's/ /, /g')."
  echo
  echo "## \`arch-bench\`"
  echo
  echo '```text'
  help_of
  echo '```'
  local name
  for name in $names; do
    echo
    echo "## \`arch-bench $name\`"
    echo
    echo '```text'
    help_of "$name"
    echo '```'
  done
}

if [ "${1:-}" = "--check" ]; then
  [ $# -eq 3 ] || usage
  BINARY="$(binary_of "$2")"
  FILE="$3"
  [ -x "$BINARY" ] || { echo "cli-reference.sh: $BINARY is not an executable arch-bench" >&2; exit 2; }
  FRESH="$(mktemp)"
  trap 'rm -f "$FRESH" "$FRESH.diff"' EXIT
  generate > "$FRESH"
  if ! diff -u "$FILE" "$FRESH" > "$FRESH.diff" 2>&1; then
    head -n 60 "$FRESH.diff" >&2
    echo >&2
    echo "$FILE is stale: it no longer matches the --help of $BINARY." >&2
    echo "Regenerate it from the source root with:" >&2
    echo "  scripts/cli-reference.sh $(dirname "$BINARY") > docs/cli-reference.md" >&2
    exit 1
  fi
  echo "$FILE matches the --help of $BINARY"
  exit 0
fi

[ $# -eq 1 ] || usage
BINARY="$(binary_of "$1")"
[ -x "$BINARY" ] || { echo "cli-reference.sh: $BINARY is not an executable arch-bench" >&2; exit 2; }
generate
