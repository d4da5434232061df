#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# replay.sh — every allocator fixture measured on the H200 (tests/torch/fixtures/allocator/)
# replayed through memlife's torch view; allocated and reserved must be exact at every step.
# One `ok`/`not ok` line per fixture (replay_check.py says how), run by `make test`.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
MEMLIFE=${MEMLIFE:-$ROOT/${BUILD:-build}/memlife}
if ! command -v python3 >/dev/null; then
    echo "skip - torch replay: python3 not found"
    exit 0
fi
exec python3 tests/torch/replay_check.py "$MEMLIFE" tests/torch/fixtures/allocator/*__*.json
