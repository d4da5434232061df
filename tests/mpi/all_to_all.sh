#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# all_to_all on the backends (schedules/contracts/all_to_all.yaml: q = 3 int64 per block):
#   - host (MPI_Alltoall) at 2, 3 and 4 ranks: plan `collective` gives 3 check rows per rank
#     (the closed form 100*(i/q) + rank*q + i%q, all_to_all twice = the input, and n+1 elements
#     refused by the runtime as size_mismatch on every rank), plan `by_hand` (the same exchange
#     as a copy and world-1 groups of send/recv) 1 row per rank: 4 x N rows, all pass; requested
#     bytes measured = predicted on every rank (collective 3*8*n at peak, n = 3N: 144, 216,
#     288 B; by_hand 2*8*n);
#   - a wrong closed form (one more than the truth) fails: exit 1, the closed-form row fails;
#   - an all_to_all in place, let through lint (--no-lint inplace-offsets), is refused by the
#     runtime on every rank at the step: exit 3, bad_inplace, no result file;
#   - torch (dist.all_to_all_single over gloo) at 2 ranks, plan `collective` (the torch backend
#     runs no send/recv): 3 x 2 rows pass, measured = predicted.
. "$(dirname "$0")/lib.bash"

A2A=schedules/contracts/all_to_all.yaml
require_host_backend "all_to_all on the host backend"

for n in 2 3 4; do
    run run "$A2A" --backend host --ranks "$n" --format json -o "$TMP/h$n.json"
    jq_run_case "host all_to_all, $n ranks: 4 x $n check rows, all pass" \
        '[.schedules[] | .checks[]? | .status == "pass"] | length == 4 * '"$n"' and all' "$TMP/h$n.json"
    jq_case "host all_to_all, $n ranks: requested measured = predicted, peak 3*8*$((3 * n)) and 2*8*$((3 * n)) B" \
        '[.schedules[] | (if .plan == "collective" then 24 else 16 end) as $b | .ranks[] | .match and
            .measured.requested.peak == .requested.peak and .requested.peak == $b * '"$((3 * n))"'] |
         length == 2 * '"$n"' and all' "$TMP/h$n.json"
done

sed 's|rank\*q + i%q"}\]}|rank*q + i%q + 1"}]}|' "$A2A" >"$TMP/wrong.yaml"
run run "$TMP/wrong.yaml" --backend host --ranks 3 --plan collective --format json -o "$TMP/w.json"
if [ "$RC" -eq 1 ]; then
    jq_case "host all_to_all: a wrong closed form fails on every rank (exit 1)" \
        '[.schedules[].checks[] | select(.name == "all-to-all-closed-form") | .status == "fail"] |
         length == 3 and all' "$TMP/w.json"
else
    not_ok "host all_to_all: a wrong closed form fails" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"
fi

run run tests/coll/a2a_inplace.yaml --backend host --ranks 4 --no-lint inplace-offsets \
    -o "$TMP/ip.json"
want="tests/coll/a2a_inplace.yaml:8:5: error: all_to_all refused: bad_inplace: all_to_all: send and recv overlap in 'a', but it never runs in place"
if [ "$RC" -eq 3 ] && [ ! -e "$TMP/ip.json" ] && grep -qxF "$want" "$TMP/err" &&
    [ "$(grep -c 'note: rank [0-3] failed at op 1 (all_to_all)' "$TMP/err")" -eq 4 ]; then
    ok "host all_to_all in place: the runtime refuses it on every rank (exit 3, bad_inplace)"
else
    not_ok "host all_to_all in place" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"
fi

TORCH_PY=$(torch_python)
if [ -z "$TORCH_PY" ]; then
    skip "torch all_to_all, 2 ranks" "no python3 with torch (make deps)"
else
    run run "$A2A" --backend torch --ranks 2 --plan collective --format json -o "$TMP/t2.json"
    jq_run_case "torch all_to_all, 2 ranks (gloo): 3 x 2 check rows pass, measured = predicted" \
        '.provenance.torch_process_group == "gloo" and
         ([.schedules[] | .checks[]? | .status == "pass"] | length == 6 and all) and
         ([.schedules[].ranks[] | .match and .measured.requested.peak == 144] | length == 2 and all)' \
        "$TMP/t2.json"
fi
