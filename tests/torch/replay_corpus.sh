#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# replay_corpus.sh — the batch corpus (tests/torch/fixtures/allocator_corpus.tar.xz: 1660
# fixtures, 664042 steps, measured on an H100 with PyTorch 2.11; allocator_corpus.md) replayed
# through memlife's torch view with the segments' recorded addresses: allocated and reserved
# exact at every step, every block at PyTorch's address. One ok / not ok line for all of it,
# and a line for each fixture that differs (replay_check.py -q), run by `make test`.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
MEMLIFE=${MEMLIFE:-$ROOT/${BUILD:-build}/memlife}
if ! command -v python3 >/dev/null || ! command -v xz >/dev/null; then
    echo "skip - torch corpus replay: python3 or xz not found"
    exit 0
fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
tar -xJf tests/torch/fixtures/allocator_corpus.tar.xz -C "$tmp" || { echo "not ok - torch corpus replay: cannot unpack"; exit 1; }
exec python3 tests/torch/replay_check.py -q -j "$(nproc)" "$MEMLIFE" "$tmp"/*__*.json
