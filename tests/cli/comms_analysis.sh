#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Communicators beyond lint: the time model, the trace and optimize on tests/cli/comms/analysis.yaml
# (dp 2 x tp 2 at world 4; the file says which ranks form which groups).
# Time model (analyzer/predict/timemodel.h, default link): an all_reduce of 32 MiB costs
# alpha 10 us + factor x 33554432 B / 279.62 GB/s (AllReduce's busbw, 67108864 B / 240 us): on
# dp's group of 2 the factor is 2(2-1)/2 = 1, 120 us + 10 = 130.0 us; on the world of 4 it is
# 2(4-1)/4 = 1.5, 180 us + 10 = 190.0 us.
. "$(dirname "$0")/lib.bash"
F=tests/cli/comms/analysis.yaml

run trace "$F" -o "$TMP/t.json"
if [ "$RC" = 0 ] && jq -e '[.traceEvents[] | select(.cat == "collective" and .pid == 0 and
        .name == "all_reduce") | .dur] == [130, 190]' "$TMP/t.json" >/dev/null; then
    ok "all_reduce of 32 MiB: 130.0 us on dp's group of 2, 190.0 us on the world of 4"
else
    not_ok "time model per group" "exit $RC: $(jq -c '[.traceEvents[] | select(.cat == "collective" and .pid == 0) | [.name, .dur]]' "$TMP/t.json" 2>&1 | head -c 300)"
fi
# Rank 3 is member 1 of tp {2,3} and of dp {1,3}; its lanes: the default stream (tid 1), tp's
# collectives on it (1 + 1 stream x comm 1 + 0 = tid 2), dp's (tid 3).
if jq -e '[.traceEvents[] | select(.cat == "collective" and .pid == 3) |
        [.name, .tid, .args.comm // "world", .args.comm_size // 4, .args.comm_rank // 3]] ==
        [["reduce_scatter", 2, "tp", 2, 1], ["all_reduce", 3, "dp", 2, 1],
         ["all_reduce", 1, "world", 4, 3], ["all_gather", 2, "tp", 2, 1]]' "$TMP/t.json" >/dev/null &&
   jq -e '[.traceEvents[] | select(.name == "thread_name" and .pid == 3) | .args.name] ==
        ["host", "stream default", "stream default, comm tp", "stream default, comm dp"]' \
        "$TMP/t.json" >/dev/null; then
    ok "trace: rank 3's collectives on a lane per communicator, with its group's size and rank"
else
    not_ok "trace lanes" "$(jq -c '[.traceEvents[] | select(.pid == 3 and (.cat == "collective" or .name == "thread_name")) | [.name, .tid, .args.comm, .args.name]]' "$TMP/t.json" 2>&1 | head -c 400)"
fi
# The in-place all_gather: at rank 3, x's slot 1 (32 MiB at 32 MiB) is tp's slot of rank 3 (its
# rank in tp is 1): in place on every rank, so the requested peak is x + y = 96 MiB and, once y
# is freed, the all_gather needs nothing more.
run predict "$F" --format json
if [ "$RC" = 0 ] && jq -e '[.schedules[0].ranks[].requested.peak] == [100663296, 100663296, 100663296, 100663296]' \
        "$TMP/out" >/dev/null && jq -e '[.traceEvents[] | select(.name == "all_gather") | .args.in_place] | all' "$TMP/t.json" >/dev/null; then
    ok "in place at the rank within tp on every rank: requested peak 96 MiB"
else
    not_ok "in place per group" "exit $RC: $(jq -c '[.schedules[0].ranks[].requested.peak]' "$TMP/out" 2>&1)"
fi
# optimize on tests/cli/comms/optimize.yaml (its comment works out 128 MiB -> 96 MiB): what it
# writes back keeps mesh, comms and every comm:, and checks again.
run optimize tests/cli/comms/optimize.yaml -o "$TMP/o.yaml" -q
if [ "$RC" = 0 ] && [ -s "$TMP/o.yaml" ] && grep -q '^mesh: {dp: 2, tp: 2}' "$TMP/o.yaml" &&
   grep -q 'reduce_scatter: {send: x, recv: y, comm: tp}' "$TMP/o.yaml" &&
   grep -q 'all_reduce: {send: y, recv: z, comm: dp}' "$TMP/o.yaml" &&
   [ "$("$MEMLIFE" predict "$TMP/o.yaml" --format json 2>"$TMP/err2" |
        jq '[.schedules[0].ranks[].requested.peak] | unique')" = "$(printf '[\n  100663296\n]')" ]; then
    ok "optimize keeps mesh, comms and comm:; its rewrite predicts 96 MiB (from 128 MiB)"
else
    not_ok "optimize with communicators" "exit $RC: $(head -c 300 "$TMP/err" "$TMP/err2" 2>/dev/null)"
fi
