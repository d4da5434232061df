#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# replay_corpus.sh — the batch corpus (tests/torch/fixtures/allocator_corpus.tar.xz: 1660
# fixtures, 664042 steps, measured on an H100 with PyTorch 2.11; allocator_corpus.md) replayed
# through memlife's torch view with the segments' recorded addresses: allocated and reserved
# exact at every step, every block at PyTorch's address; then without the addresses, with the
# model's own placement of segments. One ok / not ok line for each, and a line for each fixture
# that differs with the addresses (replay_check.py -q), run by `make test`.
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
files=("$tmp"/*__*.json)
if [ "${BUILD:-build}" = build-san ]; then
    # Under ASan + UBSan the point is memory safety, and the whole corpus takes over ten minutes:
    # every tenth fixture, both passes; the exact counts are the plain build's (below).
    sample=()
    for ((k = 0; k < ${#files[@]}; k += 10)); do sample+=("${files[k]}"); done
    python3 tests/torch/replay_check.py -q -j "$(nproc)" "$MEMLIFE" "${sample[@]}"
    rc=$?
    got=$(python3 tests/torch/replay_check.py --no-addresses -q -j "$(nproc)" "$MEMLIFE" "${sample[@]}" | tail -1)
    case $got in
    *"replay: "*" steps exact in ${#sample[@]} fixtures"*)
        echo "ok - torch corpus replay without the recorded addresses, sanitizers on a tenth: every fixture replayed" ;;
    *)
        echo "not ok - torch corpus replay without the recorded addresses, sanitizers on a tenth: got: $got"
        rc=1 ;;
    esac
    exit $rc
fi
python3 tests/torch/replay_check.py -q -j "$(nproc)" "$MEMLIFE" "${files[@]}"
rc=$?
# Without the addresses the model places the segments itself (analyzer/torch/torchplace.c):
# 663973 steps exact, 3 fixtures differ from some step on (docs/torch.md, Addresses); more
# would be a placement that got worse, fewer one that got better (then update this number).
got=$(python3 tests/torch/replay_check.py --no-addresses -q -j "$(nproc)" "$MEMLIFE" "${files[@]}" | tail -1)
case $got in
*"replay: 663973 of 664042 steps exact in 1660 fixtures (3 fixtures differ)"*)
    echo "ok - torch corpus replay without the recorded addresses: 663973 of 664042 steps exact, 3 fixtures differ" ;;
*)
    echo "not ok - torch corpus replay without the recorded addresses: expected 663973 of 664042 steps exact, 3 fixtures differing; got: $got"
    rc=1 ;;
esac
exit $rc
