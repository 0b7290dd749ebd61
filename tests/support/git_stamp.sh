#!/usr/bin/env bash
# GitStamp.cmake (the build-time commit stamp) against a scratch repository: it names HEAD, says
# whether tracked files were modified, follows a new commit, and leaves the file untouched (same
# mtime) when nothing changed, so an unchanged tree recompiles nothing.
# Usage: git_stamp.sh CMAKE GIT STAMP_SCRIPT
set -euo pipefail
cmake_bin=$1 git_bin=$2 script=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/repo out=$work/git_commit.cpp
fail() { echo "FAIL: $*"; echo "--- $out"; cat "$out" 2>/dev/null; exit 1; }
stamp() { "$cmake_bin" -DSOURCE_DIR="$repo" -DOUTPUT="$out" -DGIT="$git_bin" -P "$script"; }
g() { "$git_bin" -C "$repo" -c user.name=t -c user.email=t@t "$@"; }

mkdir "$repo" && g init -q && echo one > "$repo/file" && g add file && g commit -qm one
first=$(g rev-parse HEAD)
stamp
grep -q "git_commit = \"$first\";" "$out" || fail "stamp does not name HEAD $first"
grep -q "git_tree_modified = false;" "$out" || fail "clean tree stamped as modified"

touch -d '2000-01-01' "$out"
stamp
[[ $(stat -c %Y "$out") == $(date -d '2000-01-01' +%s) ]] || fail "unchanged tree rewrote the stamp"

echo untracked > "$repo/other"
stamp
grep -q "git_tree_modified = false;" "$out" || fail "an untracked file marked the tree modified"

echo two > "$repo/file"
stamp
grep -q "git_tree_modified = true;" "$out" || fail "modified tracked file not stamped"

g commit -qam two
second=$(g rev-parse HEAD)
stamp
grep -q "git_commit = \"$second\";" "$out" || fail "new commit $second not stamped"
grep -q "git_tree_modified = false;" "$out" || fail "committed tree still stamped as modified"

rm -rf "$repo/.git"
stamp
grep -q 'git_commit = "unknown";' "$out" || fail "outside a checkout the commit must be unknown"
echo "git stamp: HEAD, modified state, new commit and no-op rebuild all as expected"
