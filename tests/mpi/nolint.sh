#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `--no-lint CLASS` lets one class of lint errors through (analyzer/lint/lint_classes.c), and the
# host runtime then refuses the schedule itself, at the step: exit 3, the step's file:line:col
# and the runtime's own message, every rank ended, no result file. Without --no-lint the same
# file is lint's (exit 2, nothing started). The schedules are tests/mpi/data/nolint_*.yaml; the
# expected lines are the runtime's messages in runtime/exec/exec.c (fail(), validate_view,
# validate_coll).
. "$(dirname "$0")/lib.bash"

require_host_backend "--no-lint classes refused by the runtime"
D=tests/mpi/data

# nolint NAME RANKS CLASS LINT_LINE RUNTIME_LINE: check exits 2 with LINT_LINE first; run
# --no-lint CLASS exits 3 within 20 s with RUNTIME_LINE among its lines and no result file.
nolint() {
    local name=$1 ranks=$2 class=$3 lint=$4 want=$5 f=$D/nolint_$1.yaml
    run check $f
    if [ "$RC" -ne 2 ] || [ "$(head -1 "$TMP/err")" != "$lint" ]; then
        not_ok "$name: lint refuses it" "exit $RC: $(head -1 "$TMP/err")"
    else ok "$name: lint refuses it (exit 2)"; fi
    CASE_TIMEOUT=60 run run $f --backend host --ranks "$ranks" --no-lint "$class" --timeout 20 -o "$TMP/r.json"
    if [ "$RC" -eq 3 ] && grep -qxF -- "$want" "$TMP/err" && [ "$SECS" -le $((20 * SLOW)) ] &&
        [ -z "$(ls -A "$TMP" | grep 'r\.json')" ]; then
        ok "$name: --no-lint $class, the runtime refuses it at the step (exit 3, $SECS s)"
    else
        not_ok "$name: --no-lint $class" "exit $RC, $SECS s, want '$want' in: $(head -4 "$TMP/err" | tr '\n' ' ')"
    fi
}

nolint use_after_free 2 use-after-free \
    "$D/nolint_use_after_free.yaml:7:23: error: use of 'x' after free" \
    "$D/nolint_use_after_free.yaml:7:5: error: all_reduce refused: out_of_bounds: send 'x' is not a live buffer"
# Refused on rank 1 only: before this change the refusal came after the sequence check and rank
# 0, inside the collective, kept rank 1 waiting until the deadline.
nolint released_chunk 2 use-after-free \
    "$D/nolint_released_chunk.yaml:8:24: error: use of 'x[0:256]' outside chunk 1, the only one kept by its release [rank 1]" \
    "$D/nolint_released_chunk.yaml:8:5: error: all_reduce refused: out_of_bounds: send 'x[0 : 256]' reaches outside chunk 1, the only one left after the release"
nolint double_free 2 double-free \
    "$D/nolint_double_free.yaml:6:11: error: 'x' freed twice" \
    "$D/nolint_double_free.yaml:6:5: error: free of 'x', which is not live"
nolint double_alloc 2 double-alloc \
    "$D/nolint_double_alloc.yaml:5:18: error: alloc of 'x' which is still live" \
    "$D/nolint_double_alloc.yaml:5:5: error: alloc of 'x', which is still live"
nolint double_release 2 double-release \
    "$D/nolint_double_release.yaml:6:20: error: release of 'x' which was already released" \
    "$D/nolint_double_release.yaml:6:5: error: 'x' was already released"
# Rank 1's offset: NCCL's in-place recv is send + rank * 256 elements (coll.h).
nolint inplace 4 inplace-offsets \
    "$D/nolint_inplace.yaml:6:38: error: reduce_scatter send [0:1024] and recv [0:256] overlap in one buffer, but nccl runs in place only at recv - send = 256 elements on rank 1 [rank 1]" \
    "$D/nolint_inplace.yaml:6:5: error: reduce_scatter refused: bad_inplace: reduce_scatter: send and recv overlap in 'x' but recv is at element offset 0 from send, not NCCL's in-place offset 256"

# hazards: a free racing a collective on another stream cannot happen on the host backend (its
# collectives complete before the next op), so the run completes and measures what lint's
# prediction says: 1 MiB peak, 0 steady (tests/bad/hazard_free_unsynced_stream.yaml).
run run tests/bad/hazard_free_unsynced_stream.yaml --backend host --ranks 2 --no-lint hazards --format json -o "$TMP/h.json"
if [ "$RC" -eq 0 ] && jq -e '[.schedules[0].ranks[].match] | all' "$TMP/h.json" >/dev/null 2>&1; then
    ok "--no-lint hazards: the host backend runs the stream race to the end, measured = predicted"
else not_ok "--no-lint hazards" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"; fi

# An unknown class lists the table.
run run $D/nolint_double_free.yaml --backend host --ranks 2 --no-lint races-everywhere
want="error: --no-lint takes one of cross-rank, hazards, use-after-free, double-free, double-alloc, double-release, inplace-offsets, races, not 'races-everywhere'"
if [ "$RC" -eq 2 ] && [ "$(head -1 "$TMP/err")" = "$want" ]; then ok "--no-lint with an unknown class lists the classes"; else
    not_ok "--no-lint with an unknown class" "exit $RC: $(head -1 "$TMP/err")"; fi
