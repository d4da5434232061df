#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `memlife equiv --no-data`: the four rows from the plans alone (row 1 from the data flow), the
# chapter's numbers, the checklist's causes with their steps, and bad input. The same pairs run
# with data on Open MPI in tests/mpi/equiv_host.sh.
. "$(dirname "$0")/lib.bash"

E=schedules/equiv
jq_case() {
    local name=$1 filter=$2 file=$3 got
    got=$(jq -r "$filter" "$file" 2>&1)
    if [ "$got" = true ]; then ok "$name"; else not_ok "$name" "$(echo "$got" | head -3 | tr '\n' ' ')"; fi
}

# seed: direct AllReduce vs naive RS+AG at world 4, 256 MiB: 6 = 3 + 3 ring steps, 384 MiB =
# 192 + 192 MiB per link; 1 vs 2 API calls per rank; requested peak 256 vs 576 MiB.
run equiv $E/direct_vs_naive.yaml --no-data --format json
cp "$TMP/out" "$TMP/dvn.json"
if [ "$RC" -ne 1 ]; then not_ok "direct vs naive: exit 1" "exit $RC: $(head -2 "$TMP/err")"; else ok "direct vs naive: exit 1"; fi
jq_case "direct vs naive: rows 1 and 2 hold, 3 and 4 do not" \
    '[.rows[].verdict] == ["holds", "holds", "does not hold", "does not hold"]' "$TMP/dvn.json"
jq_case "direct vs naive: 6 ring steps and 402653184 link bytes (384 MiB) on every rank, both plans" \
    '[.ranks[] | .a.ring_steps == 6 and .b.ring_steps == 6 and .a.link_bytes == 402653184 and
      .b.link_bytes == 402653184] | length == 4 and all' "$TMP/dvn.json"
jq_case "direct vs naive: 1 vs 2 public API calls and kernels per rank" \
    '[.ranks[] | .a.api_calls == 1 and .b.api_calls == 2 and .b.calls == {"reduce_scatter": 1,
      "all_gather": 1} and .b.kernels_expected == 2] | all' "$TMP/dvn.json"
jq_case "direct vs naive: requested peak 268435456 vs 603979776 (256 vs 576 MiB), steady 256 MiB" \
    '[.ranks[] | .a.requested.peak == 268435456 and .b.requested.peak == 603979776 and
      .a.requested.steady == 268435456 and .b.requested.steady == 268435456 and
      .b.requested.peak_live == ["full", "shard", "gathered"]] | all' "$TMP/dvn.json"
jq_case "direct vs naive: intermediates 0 vs 2 (full, shard: 335544320 B)" \
    '.ranks[0].a.intermediates == 0 and .ranks[0].b.intermediates == 2 and
     .ranks[0].b.intermediate_bytes == 335544320' "$TMP/dvn.json"

run equiv $E/direct_vs_naive.yaml:direct $E/direct_vs_naive.yaml:direct --no-data
if [ "$RC" -eq 0 ] && grep -q '^all four hold$' "$TMP/out"; then ok "direct vs direct: all four hold, exit 0"
else not_ok "direct vs direct: all four hold, exit 0" "exit $RC"; fi

# --kernels without a run: nothing to measure; the note says what kernel evidence needs, the
# verdicts and the exit code stay (direct vs direct: 0).
run equiv $E/direct_vs_naive.yaml:direct $E/direct_vs_naive.yaml:direct --no-data --kernels
if [ "$RC" -eq 0 ] && grep -q '^all four hold$' "$TMP/out" &&
   grep -qxF "note: --kernels: kernel evidence needs the cuda backend with CUPTI: --no-data runs neither plan; row 3 shows the kernels expected only" "$TMP/err"; then
    ok "--no-data --kernels: the note on stderr, all four hold, exit 0"
else not_ok "--no-data --kernels: the note on stderr, all four hold, exit 0" "exit $RC: $(head -2 "$TMP/err")"; fi

# The checklist: each wrong plan is named by its cause and step (file:line:col).
while read -r file a b code line col; do
    run equiv "$E/$file:$a" "$E/$file:$b" --no-data --format json </dev/null
    got=$(jq -r '[.rows[0].verdict, (.causes[] | "\(.code) \(.line):\(.col)")] | join(" ")' "$TMP/out" 2>&1)
    want="does not hold $code $line:$col"
    if [ "$RC" -eq 1 ] && [ "$got" = "$want" ]; then ok "$b: $code at $line:$col"
    else not_ok "$b: $code at $line:$col" "exit $RC, got '$got'"; fi
done <<'CASES'
contracts.yaml direct scaled_shard shard_changed 41 9
contracts.yaml direct prescaled scaling 48 9
contracts.yaml direct reordered gather_order 66 9
contracts.yaml direct shard_owner shard_owner 73 9
contracts.yaml direct max_op reduction_op 81 9
contracts.yaml direct int8 dtype 89 9
contracts.yaml direct divergent collective_sequence 102 9
padding.yaml direct trim_too_much trim 52 9
padding.yaml direct input_count input_count 59 9
padding.yaml direct_max max_zero_pad padding_identity 76 9
CASES

run equiv $E/padding.yaml:direct $E/padding.yaml:padded --no-data --format json
jq_case "padded with SUM's identity and trimmed: row 1 holds by the data flow" \
    '.rows[0].verdict == "holds" and .causes == [] and .flow.equal' "$TMP/out"

# Seed lifetimes have no init: nothing to compare, row 1 undecided (exit 1), not a false cause.
run equiv schedules/seed/01_allreduce_full.yaml schedules/seed/03_rs_ag_naive.yaml --no-data --format json
jq_case "seed lifetimes without init: row 1 undecided, results full and gathered" \
    '.rows[0].verdict == "undecided" and .a.result == "full" and .b.result == "gathered" and
     .causes == []' "$TMP/out"

# Markdown: a table to paste into a pull request.
run equiv $E/contracts.yaml:direct $E/contracts.yaml:max_op --no-data --format md
if grep -q '^| 1 output semantics | does not hold |' "$TMP/out" &&
   grep -q '^- schedules/equiv/contracts.yaml:81:9: reduction op differs: A reduces with sum' "$TMP/out"; then
    ok "markdown: table row and cause line"
else not_ok "markdown: table row and cause line" "$(head -3 "$TMP/out")"; fi

# Bad input: exit 2 with the reason.
bad() {
    local name=$1 want=$2
    shift 2
    run "$@"
    if [ "$RC" -eq 2 ] && grep -qF -- "$want" "$TMP/err"; then ok "$name"
    else not_ok "$name" "exit $RC: $(head -2 "$TMP/err")"; fi
}
bad "bench plans free their results: say --result" "frees every buffer before it ends" \
    equiv schedules/seed/06_bench_direct_decomposed.yaml --no-data
bad "a freed --result cannot be read" "result buffer 'x' is not live at the end" \
    equiv schedules/seed/06_bench_direct_decomposed.yaml --no-data --result x=gathered
bad "more than two plans" "equiv compares two plans" equiv $E/contracts.yaml --no-data
bad "unknown plan" "no plan 'nope' in this schedule (plans: " equiv $E/contracts.yaml:direct $E/contracts.yaml:nope --no-data
bad "csv refused" "'equiv' writes table, json or md, not csv" \
    equiv $E/direct_vs_naive.yaml --no-data --format csv
bad "unknown result name" "no buffer 'zz'" equiv $E/direct_vs_naive.yaml --no-data --result zz
exit 0
