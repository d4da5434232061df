#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The host backend's --stream-order (runtime/backends/host_streams.h). A race that lint
# is told to let through shows in the data only when the streams run in another order:
# tests/mpi/data/race_copy.yaml copies 'g' on default while the in-place all_reduce on 'comm'
# may still write it. At 2 ranks with rank_iota (x[i] = 100*rank + i) the sum is 100 + 2i:
#   program order: all_reduce, then copy: saved = 100 + 2i on both ranks, PASS;
#   reverse: the copy first: saved = rank_iota, rank 0 differs at element 0 (0 vs 100, all 8
#   elements), rank 1 at element 1 (101 vs 102; element 0 is 100 either way), FAIL.
# race_copy_fixed.yaml adds the record/wait: every order (reverse, three shuffles) passes. The
# memory of the seed schedules does not depend on the order (measured = predicted, exit 0).
. "$(dirname "$0")/lib.bash"

require_host_backend "stream order"
RACE=tests/mpi/data/race_copy.yaml
FIXED=tests/mpi/data/race_copy_fixed.yaml

run run "$RACE" --backend host --ranks 2
if [ "$RC" -eq 2 ] && grep -q "^$RACE:12:17: error: copy on 'default' reads g\[0:8\] while all_reduce on 'comm' writes g\[0:8\]" "$TMP/err" &&
    grep -qxF "$RACE:11:23: note: all_reduce on 'comm' writes g[0:8] here" "$TMP/err"; then
    ok "race refused by lint without --no-lint races"
else
    not_ok "race refused by lint without --no-lint races" "exit $RC: $(head -1 "$TMP/err")"
fi

run run "$RACE" --backend host --ranks 2 --no-lint races --format json -o "$TMP/p.json"
if [ "$RC" -ne 0 ]; then
    not_ok "race in program order: PASS" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"
else
    jq_case "race in program order: PASS" \
        '[.schedules[0].checks[] | .status == "pass"] | length == 2 and all' "$TMP/p.json"
fi

run run "$RACE" --backend host --ranks 2 --no-lint races --stream-order reverse --format json \
    -o "$TMP/r.json"
if [ "$RC" -ne 1 ]; then
    not_ok "race in reverse order: FAIL" "exit $RC, want 1: $(head -2 "$TMP/err" | tr '\n' ' ')"
else
    jq_case "race in reverse order: FAIL on both ranks, with the rank_iota values" \
        '[.schedules[0].checks[] | select(.status == "fail") | .detail] ==
         ["not equal: first difference at element 0: 0 vs 100; 8 of 8 elements differ",
          "not equal: first difference at element 1: 101 vs 102; 7 of 8 elements differ"]' \
        "$TMP/r.json"
fi

for order in program reverse shuffle:1 shuffle:2 shuffle:3; do
    run run "$FIXED" --backend host --ranks 2 --stream-order "$order"
    if [ "$RC" -eq 0 ] && grep -q "contract saved-is-reduced: PASS (2 rank rows)" "$TMP/out"; then
        ok "ordered copy passes under --stream-order $order"
    else
        not_ok "ordered copy passes under --stream-order $order" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"
    fi
done

run run schedules/seed/0[1-4]*.yaml --backend host --ranks 4 --stream-order shuffle:7
[ "$RC" -eq 0 ] && ok "seed lifetimes measured = predicted under shuffle:7" ||
    not_ok "seed lifetimes measured = predicted under shuffle:7" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"

run run "$FIXED" --backend host --ranks 2 --stream-order sideways
if [ "$RC" -eq 2 ] && grep -q "stream-order takes program, reverse or shuffle\[:SEED\], not 'sideways'" "$TMP/err"; then
    ok "unknown --stream-order is a usage error"
else
    not_ok "unknown --stream-order is a usage error" "exit $RC: $(head -1 "$TMP/err")"
fi
run run "$FIXED" --backend host --ranks 2 --stream-order shuffle:x
if [ "$RC" -eq 2 ] && grep -q "shuffle:SEED takes a decimal seed, not 'x'" "$TMP/err"; then
    ok "bad shuffle seed is a usage error"
else
    not_ok "bad shuffle seed is a usage error" "exit $RC: $(head -1 "$TMP/err")"
fi
