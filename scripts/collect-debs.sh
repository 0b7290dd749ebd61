#!/usr/bin/env bash
# Downloads the .deb files of the build dependencies into .device/debs (git-ignored), so that they
# can be carried to a GPU machine that has CUDA, cmake and ninja but no package registry; there
# scripts/device-check.sh unpacks them into a prefix. Run here, on a machine with apt.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.device/debs"
mkdir -p "$DEST"
cd "$DEST"
apt-get download nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9 libbenchmark-dev libbenchmark1debian \
  googletest libgtest-dev libvalijson-dev nettle-dev libnettle8
ls -1 "$DEST"
