#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scale limits: big schedules load and predict, with the exact numbers, and the limits
# on names and nesting are errors that say so. Only what is deterministic is checked here:
# exit codes, predicted bytes, limits. How the time grows with the size (1 M vs 10 M steps,
# 100 k vs 1 M buffers) is a benchmark, `make bench` (tests/bench/scale.sh): CPU-time ratios on
# a shared VM are noise in a test (a fresh clone once measured 15.5x for 10x linear work).
#
#   steps:    1 M written steps (tests/cli/scale_gen.c: alloc / all_reduce / free cycles of one
#             4 KiB buffer at a time, world 1): predict exits 0, requested peak 4096 B (one live
#             buffer), device peak one 2 MiB page.
#   buffers:  1 M distinct 1 KiB buffers live at once, one collective each, one free of them all:
#             requested peak 1 M x 1 KiB = 1024000000 B; device: 2048 of them share a 2 MiB page
#             (sub-page requests are packed), ceil(1000000 / 2048) = 489 pages = 1025507328 B.
#   races:    1 M steps of FSDP-style prefetch on two streams (scale_gen races: record/wait both
#             ways, one new slice of one buffer per six steps, a whole-buffer read every 64
#             slices), linted clean by the race lint (analyzer/lint/lint_race.c): requested peak
#             the one buffer of 1000000 / 6 + 1 = 166667 floats = 666668 B, device one page.
#   limits:   a name of 128 bytes loads and one of 129 is `name longer than 128 bytes`; 64 nested
#             repeats load and 65 are `nesting deeper than 64 levels` (docs/schedule.md).
# Under ASan (SANITIZE=1) the 1 M sizes are skipped (they would need tens of GB); SCALE_BIG=0
# skips them too. The limit cases run everywhere.
. "$(dirname "$0")/lib.bash"

CC=${CC:-cc}
if ! $CC -O2 -o "$TMP/gen" tests/cli/scale_gen.c 2>"$TMP/cc.err"; then
    echo "error: cannot build tests/cli/scale_gen.c: $(head -1 "$TMP/cc.err")" >&2
    exit 2
fi
ASAN=0
ldd "$MEMLIFE" 2>/dev/null | grep -q libasan && ASAN=1

# big_case NAME KIND N REQUESTED DEVICE: generates the schedule, predicts it (JSON), and checks
# exit 0 and rank 0's requested and device peaks.
big_case() {
    local name=$1 kind=$2 n=$3 want_req=$4 want_dev=$5 why="" req dev
    "$TMP/gen" "$kind" "$n" >"$TMP/big.yaml"
    run predict "$TMP/big.yaml" --format json
    rm -f "$TMP/big.yaml"
    if [ "$RC" -ne 0 ]; then
        not_ok "$name" "exit $RC: $(head -1 "$TMP/err")"
        return
    fi
    req=$(jq -r '.schedules[0].ranks[0].requested.peak' "$TMP/out")
    dev=$(jq -r '.schedules[0].ranks[0].device.peak' "$TMP/out")
    [ "$req" = "$want_req" ] || why="requested peak $req, want $want_req"
    [ "$dev" = "$want_dev" ] || why="${why:+$why; }device peak $dev, want $want_dev"
    if [ -z "$why" ]; then ok "$name: requested peak $req B, device peak $dev B"; else not_ok "$name" "$why"; fi
}

if [ "$ASAN" = 1 ]; then
    echo "skip - scale 1M steps: needs tens of GB under ASan (SANITIZE=1)"
    echo "skip - scale 1M buffers: needs tens of GB under ASan (SANITIZE=1)"
    echo "skip - scale 1M race-linted steps: needs tens of GB under ASan (SANITIZE=1)"
elif [ "${SCALE_BIG:-1}" = 0 ]; then
    echo "skip - scale 1M steps: SCALE_BIG=0"
    echo "skip - scale 1M buffers: SCALE_BIG=0"
    echo "skip - scale 1M race-linted steps: SCALE_BIG=0"
else
    big_case "scale 1M steps" steps 1000000 4096 2097152
    big_case "scale 1M buffers" buffers 1000000 1024000000 1025507328
    big_case "scale 1M race-linted steps" races 1000000 666668 2097152
fi


# limit_case NAME KIND N WANT_RC [WANT_TEXT]: a generated file at a limit; WANT_TEXT is the
# expected first diagnostic after "FILE:LINE:COL: error: ".
limit_case() {
    local name=$1 kind=$2 n=$3 want_rc=$4 want=${5:-} why=""
    "$TMP/gen" "$kind" "$n" >"$TMP/$kind.yaml"
    run check "$TMP/$kind.yaml"
    [ "$RC" -eq "$want_rc" ] || why="exit $RC, want $want_rc: $(head -1 "$TMP/err")"
    if [ -n "$want" ] && ! head -1 "$TMP/err" | grep -Eq "^$TMP/$kind.yaml:[0-9]+:[0-9]+: error: $want\$"; then
        why="${why:+$why; }first diagnostic is '$(head -1 "$TMP/err")', want '...: error: $want'"
    fi
    if [ -z "$why" ]; then ok "$name"; else not_ok "$name" "$why"; fi
}
limit_case "name of 128 bytes loads" name 128 0
limit_case "name of 129 bytes is an error" name 129 2 "buffer name longer than 128 bytes"
limit_case "name of 1 MB is an error, not a slow load" name 1000000 2 "buffer name longer than 128 bytes"
limit_case "64 nested repeats load" nest 64 0
limit_case "65 nested repeats are an error" nest 65 2 "nesting deeper than 64 levels"
limit_case "10000 nested repeats are an error" nest 10000 2 "nesting deeper than 64 levels"
