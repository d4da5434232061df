#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `memlife equiv` with data on Open MPI (host backend), 4 ranks: both plans run in one job, the
# result buffers are read back and compared on every rank. The chapter's direct vs naive
# decomposed at 256 MiB: rows 1 and 2 hold, 3 and 4 do not (exit 1); direct vs direct: all hold
# (exit 0); a shard scaled between RS and AG fails row 1 naming the scale step; random float32
# inputs report bitwise equality and the largest differences. Provenance is in every result.
. "$(dirname "$0")/lib.bash"

E=schedules/equiv
require_host_backend "equiv with data on 4 ranks"

# seed: 256 MiB float32 per rank, x_i = 100*rank + i; both sum the same 4 values per element.
run equiv $E/direct_vs_naive.yaml --ranks 4 --format json -o "$TMP/dvn.json"
if [ "$RC" -ne 1 ] || [ ! -s "$TMP/dvn.json" ]; then
    not_ok "direct vs naive at 4 ranks, 256 MiB: exit 1" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
else
    ok "direct vs naive at 4 ranks, 256 MiB: exit 1"
    jq_case "direct vs naive: 1 output and 2 communication hold, 3 structure and 4 state do not" \
        '[.rows[].verdict] == ["holds", "holds", "does not hold", "does not hold"]' "$TMP/dvn.json"
    jq_case "direct vs naive: 67108864 float32 compared on each of 4 ranks, none beyond tolerance" \
        '[.ranks[].data | .compared == 67108864 and .differ_beyond_tolerance == 0] |
         length == 4 and all' "$TMP/dvn.json"
    jq_case "direct vs naive: peak 256 vs 576 MiB, 1 vs 2 calls per rank" \
        '.rows[3].detail == "requested peak 256 MiB vs 576 MiB; device peak 256 MiB vs 576 MiB on every rank" and
         (.rows[2].detail | startswith("public API calls 1 vs 2 per rank"))' "$TMP/dvn.json"
    jq_case "provenance: memlife, commit, host backend, Open MPI, world 4, hosts of ranks 0-3, UTC date" \
        '.provenance | .memlife == "0.1.0" and (.commit | length > 0) and .backend == "host" and
         (.mpi | startswith("Open MPI")) and .world == 4 and (.hosts | endswith("(ranks 0-3)")) and
         (.date | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"))' "$TMP/dvn.json"
fi

run equiv $E/direct_vs_naive.yaml:direct $E/direct_vs_naive.yaml:direct --ranks 4 --set M=1MiB
if [ "$RC" -eq 0 ] && grep -q 'bitwise equal on 4 ranks (1048576 elements)' "$TMP/out" &&
   grep -q '^all four hold$' "$TMP/out"; then
    ok "direct vs direct at 4 ranks: all four hold, exit 0"
else
    not_ok "direct vs direct at 4 ranks: all four hold, exit 0" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
fi

# The checklist with data: the first difference on rank 0 and the cause's step. seed: the sum is
# 600 + 4i; scaled by 2: 1200; rolled by one shard: 660; MAX: 300; int8: 600 mod 256 = 88;
# rank 0 sending its own unreduced x[5]: 5.
while read -r file a b code line col first; do
    run equiv "$E/$file:$a" "$E/$file:$b" --ranks 4 --format json -o "$TMP/c.json" </dev/null  # mpirun reads stdin
    got=$(jq -r '[.rows[0].verdict, (.causes[0] | "\(.code) \(.line):\(.col)"),
                  .ranks[0].data.first_difference] | join(" | ")' "$TMP/c.json" 2>&1)
    want="does not hold | $code $line:$col | $first"
    if [ "$RC" -eq 1 ] && [ "$got" = "$want" ]; then ok "$b with data: $code at $line:$col, $first"
    else not_ok "$b with data: $code at $line:$col, $first" "exit $RC, got '$got'"; fi
done <<'CASES'
contracts.yaml direct scaled_shard shard_changed 41 9 element 0: 600 vs 1200
contracts.yaml direct prescaled scaling 48 9 element 0: 600 vs 1200
contracts.yaml direct reordered gather_order 66 9 element 0: 600 vs 660
contracts.yaml direct shard_owner shard_owner 73 9 element 0: 600 vs 5
contracts.yaml direct max_op reduction_op 81 9 element 0: 600 vs 300
contracts.yaml direct int8 dtype 89 9 element 0: 600 vs 88
padding.yaml direct_max max_zero_pad padding_identity 76 9 element 1003: -9223372036854775808 vs 0
CASES

# seed: the shard scaled by 2 between the phases: all 20 elements of every rank differ.
run equiv $E/contracts.yaml:direct $E/contracts.yaml:scaled_shard --ranks 4 --format json -o "$TMP/s.json"
jq_case "scaled shard: 20 of 20 elements differ on each rank; row 1 names the scale at 41:9" \
    '[.ranks[].data.differ_beyond_tolerance] == [20, 20, 20, 20] and
     (.causes[0].text | startswith("B scales the shard '"'"'shard[0 : 5]'"'"' by 2 (scale at 41:9)"))' "$TMP/s.json"

run equiv $E/padding.yaml:direct $E/padding.yaml:padded --ranks 4 --format json -o "$TMP/p.json"
jq_case "padded with 0 and trimmed: 1003 int64 equal on each rank (exact)" \
    '.rows[0].verdict == "holds" and [.ranks[].data | .compared == 1003 and .differ_bitwise == 0] == [true, true, true, true]' "$TMP/p.json"
run equiv $E/padding.yaml:direct $E/padding.yaml:trim_too_much --ranks 4 --format json -o "$TMP/t.json"
jq_case "trim too much: counts 1003 vs 1002 on every rank, cause trim at 52:9" \
    '[.ranks[].data | .count_a == 1003 and .count_b == 1002] == [true, true, true, true] and
     .causes[0].code == "trim" and .causes[0].line == 52' "$TMP/t.json"
run equiv $E/padding.yaml:direct $E/padding.yaml:input_count --ranks 4 --format json -o "$TMP/i.json"
jq_case "input count 1000 = 250 x 4 of 1003: the last 3 elements of each rank differ" \
    '[.ranks[].data.differ_beyond_tolerance] == [3, 3, 3, 3] and .causes[0].code == "input_count"' "$TMP/i.json"

# A plan inconsistent across ranks is named, not run (exit 1, no runtime failure).
run equiv $E/contracts.yaml:direct $E/contracts.yaml:divergent --ranks 4 --format json -o "$TMP/d.json"
jq_case "divergent plan: collective sequences inconsistent across ranks at 102:9, not run" \
    '.rows[0].verdict == "does not hold" and .causes[0].code == "collective_sequence" and
     .ranks[0].data == null' "$TMP/d.json"

# Random float32 inputs (16 MiB per rank): the report says whether the two reduction paths agree
# bitwise and how far apart they are; row 1 holds within float32's default tolerance.
run equiv $E/random_float.yaml --ranks 4 --format json -o "$TMP/f.json"
if [ "$RC" -ne 1 ]; then
    not_ok "random float32 at 4 ranks" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
else
    seen=$(jq -r '[.ranks[].data] | "bitwise equal on \([.[] | select(.bitwise_equal)] | length) of 4 ranks, \(map(.differ_bitwise) | add) elements differ, max abs \(map(.max_abs) | max), max rel \(map(.max_rel) | max)"' "$TMP/f.json")
    jq_case "random float32 at 4 ranks: 4194304 elements per rank, within rtol 1.3e-6 / atol 1e-5 ($seen)" \
        '.rows[0].verdict == "holds" and .tolerance.rtol == 1.3e-06 and .tolerance.atol == 1e-05 and
         ([.ranks[].data | .compared == 4194304 and .differ_beyond_tolerance == 0 and
           (.bitwise_equal == (.differ_bitwise == 0)) and ((.max_abs == 0) == .bitwise_equal)] | all)' "$TMP/f.json"
fi

# --kernels on the host backend: no GPU kernels to count; a note says kernel evidence needs the
# cuda backend with CUPTI, and the rest is as without it (seed: rows 1-2 hold, 3-4 do not; exit 1;
# row 3's 1 vs 2 kernels per rank expected only).
run equiv $E/direct_vs_naive.yaml --ranks 2 --set M=1MiB --kernels --format json -o "$TMP/k.json"
note="kernel evidence needs the cuda backend with CUPTI: backend 'host' runs no GPU kernels; row 3 shows the kernels expected only"
if [ "$RC" -eq 1 ] && [ "$(grep -c -- "--kernels" "$TMP/err")" -eq 1 ] &&
   grep -qxF "note: --kernels: $note" "$TMP/err"; then
    export KNOTE=$note
    jq_case "--kernels on host: the note once on stderr and in the JSON, exit 1 as without it, rows unchanged" \
        '.kernels == {"measured": false, "note": $ENV.KNOTE} and
         [.rows[].verdict] == ["holds", "holds", "does not hold", "does not hold"] and
         .rows[2].detail == "public API calls 1 vs 2 per rank, kernels 1 vs 2 per rank (2 vs 4 over 2 ranks); intermediate buffers 0 vs 2" and
         ([.ranks[] | .a.kernels_expected == 1 and .b.kernels_expected == 2 and
           .a.kernels_measured == null and .b.kernels_measured == null] | length == 2 and all)' "$TMP/k.json"
else
    not_ok "--kernels on host: the note once on stderr and in the JSON, exit 1 as without it, rows unchanged" \
        "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
fi
run equiv $E/direct_vs_naive.yaml:direct $E/direct_vs_naive.yaml:direct --ranks 2 --set M=1MiB --kernels
if [ "$RC" -eq 0 ] && grep -qxF -- "--kernels: $note" "$TMP/out" && grep -q '^all four hold$' "$TMP/out"; then
    ok "--kernels on host, direct vs direct: the note in the table, all four hold, exit 0"
else
    not_ok "--kernels on host, direct vs direct: the note in the table, all four hold, exit 0" \
        "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
fi

# Provenance in `run` results too (counts are JSON integers, docs/json.md), and the one-line
# header of the table.
run run schedules/seed/01_allreduce_full.yaml --ranks 4 --set M=1MiB --format json -o "$TMP/r.json"
jq_case "run result provenance: world 4, hosts, date, Open MPI" \
    '.provenance | .world == 4 and (.hosts | length > 0) and (.date | endswith("Z")) and
     (.mpi | startswith("Open MPI"))' "$TMP/r.json"
run run schedules/seed/01_allreduce_full.yaml --ranks 4 --set M=1MiB
if head -1 "$TMP/out" | grep -q '^memlife 0\.1\.0 (.*) | host | Open MPI .* | world 4 | hosts .* | 20..-..-..T..:..:..Z$'; then
    ok "run table: provenance header line"
else not_ok "run table: provenance header line" "$(head -1 "$TMP/out")"; fi
exit 0
