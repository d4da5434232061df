#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# all_to_all's prediction and its contract (runtime/ir/coll.c's row; tests/coll/*.yaml say where
# each number comes from):
#   - tests/coll/a2a_memory.yaml, 64 MiB float32 per rank at world 4: requested 64 / 128 MiB on
#     every rank (send and recv live together), floor 128 MiB (never in place: an all_reduce of
#     the same views floors at 64 MiB), time 10 + 0.75 * 148 / 0.5 = 232 us; its expectations
#     hold (check exit 0); at world 2 the time is 10 + 0.5 * 148 / 0.5 = 158 us;
#   - lint: a count that does not divide by the world (10 at world 4) and an all_to_all in place
#     are size_mismatch / bad_inplace errors at the offending view, exit 2;
#   - schedules/contracts/all_to_all.yaml checks at worlds 2, 3 and 4;
#   - equiv's data flow: two all_to_alls equal a copy, one does not; kernel families: a group of
#     send and recv is one SendRecv kernel, an all_to_all one;
#   - import of a capture whose step calls dist.all_to_all_single: an all_to_all step.
. "$(dirname "$0")/lib.bash"

MiB=1048576
F=tests/coll/a2a_memory.yaml
run predict --format json "$F"
if [ "$RC" -eq 0 ] && [ "$(jq -c '[.schedules[0].ranks[] | [.requested.steady, .requested.peak,
        .floor, .time.step_us, .time.comm_us]] | unique' "$TMP/out")" = "[[$((64 * MiB)),$((128 * MiB)),$((128 * MiB)),232,232]]" ]; then
    ok "all_to_all 64 MiB at world 4: requested 64 / 128 MiB, floor 128 MiB, 232 us on every rank"
else
    not_ok "all_to_all prediction" "exit $RC: $(jq -c '.schedules[0].ranks[0] | [.requested, .floor, .time]' "$TMP/out" 2>&1 | head -c 300)"
fi
sed 's/all_to_all: {send: tokens, recv: routed}/all_reduce: {send: tokens, recv: routed}/' "$F" >"$TMP/ar.yaml"
run predict --format json "$TMP/ar.yaml"
got=$(jq '.schedules[0].ranks[0].floor' "$TMP/out" 2>/dev/null)
[ "$RC" -eq 0 ] && [ "$got" = $((64 * MiB)) ] && ok "the same views as an all_reduce floor at 64 MiB (in place possible)" ||
    not_ok "all_reduce floor" "exit $RC, floor $got"
run predict --format json --world 2 "$F"
got=$(jq '.schedules[0].ranks[0].time.step_us' "$TMP/out" 2>/dev/null)
[ "$RC" -eq 0 ] && [ "$got" = 158 ] && ok "all_to_all 64 MiB at world 2: (N-1)/N = 1/2, 158 us" ||
    not_ok "all_to_all time at world 2" "exit $RC, step $got us"
run check "$F"
[ "$RC" -eq 0 ] && ok "all_to_all memory expectations hold (check exit 0)" ||
    not_ok "all_to_all check" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"

run check tests/coll/a2a_nondivisible.yaml
[ "$RC" -eq 2 ] && grep -qx "tests/coll/a2a_nondivisible.yaml:8:24: error: all_to_all count 10 does not divide by the world (4): each rank gets count/world elements" "$TMP/err" &&
    ok "lint: all_to_all count 10 at world 4 does not divide (exit 2, at the send view)" ||
    not_ok "lint: nondivisible all_to_all" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"
run check tests/coll/a2a_inplace.yaml
[ "$RC" -eq 2 ] && grep -qx "tests/coll/a2a_inplace.yaml:8:23: error: all_to_all send \[0:16\] and recv \[0:16\] overlap in one buffer, but it never runs in place" "$TMP/err" &&
    ok "lint: all_to_all in place is refused (exit 2, at the view)" ||
    not_ok "lint: in-place all_to_all" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"

for w in 2 3 4; do
    run check --world "$w" schedules/contracts/all_to_all.yaml
    [ "$RC" -eq 0 ] && ok "all_to_all contract checks at world $w" ||
        not_ok "all_to_all contract at world $w" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"
done

# equiv's data flow (tests/coll/a2a_equiv.yaml): two exchanges equal a copy, one does not; the
# facts: 2 calls, 2 kernels (one SendRecv each), (N-1) = 3 steps and 3/4 of 96 B = 72 B a call.
run equiv --no-data --format json tests/coll/a2a_equiv.yaml:twice tests/coll/a2a_equiv.yaml:copy
jq_case() {
    local got
    got=$(jq -r "$2" "$TMP/out" 2>&1)
    [ "$got" = true ] && ok "$1" || not_ok "$1" "exit $RC: $(echo "$got" | head -2 | tr '\n' ' ')"
}
jq_case "equiv: all_to_all twice = a copy on every rank, by the data flow" \
    '.rows[0].verdict == "holds" and ([.ranks[].a | .calls.all_to_all == 2 and
      .kernels_expected == 2 and .ring_steps == 6 and .link_bytes == 144] | length == 4 and all)'
run equiv --no-data --format json tests/coll/a2a_equiv.yaml:once tests/coll/a2a_equiv.yaml:copy
jq_case "equiv: one all_to_all differs from a copy (the data flow finds values differ)" \
    '.rows[0].verdict == "does not hold" and (.rows[0].detail | contains("values differ"))'

# Kernel families (coll.h: rows with one kernel_match): the contract's by_hand plan makes 3
# groups of one send and one recv at world 4, 6 API calls that NCCL runs as 3 SendRecv kernels
# (an all_to_all is one kernel a call: tests/coll/a2a_equiv.yaml above).
run equiv --no-data --format json schedules/contracts/all_to_all.yaml:collective \
    schedules/contracts/all_to_all.yaml:by_hand
jq_case "equiv: a group of send and recv is one kernel (6 calls, 3 kernels)" \
    '[.ranks[] | .b.api_calls == 6 and .b.kernels_expected == 3] | length == 4 and all'

# A capture names the collective by its row (tests/coll/a2a_capture.json: `memlife capture` of a
# step that calls dist.all_to_all_single(routed, tokens) on 256 float32 per rank at world 4, on
# the virtual device): import writes the all_to_all step, send and recv 1024 B apart, and the
# schedule checks (requested peak 1024 + 1024 + 4 B: tokens, routed and the sum).
run import tests/coll/a2a_capture.json -o "$TMP/cap.yaml"
if [ "$RC" -eq 0 ] && grep -qxF "    - all_to_all: {send: init, recv: act}" "$TMP/cap.yaml" &&
    grep -qxF "  requested: {steady: 0, peak: 2052}" "$TMP/cap.yaml"; then
    run check "$TMP/cap.yaml"
    [ "$RC" -eq 0 ] && ok "import: a captured all_to_all_single is an all_to_all step; check passes" ||
        not_ok "import: the captured all_to_all checks" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"
else
    not_ok "import: a captured all_to_all" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"
fi
