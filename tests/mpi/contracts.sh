#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The chapter's five data contracts on the host backend. At 4 ranks: 20 rank rows PASS, one per
# contract per rank (seed: "总计 20 条逐 rank contract 全部通过"), each contract checked the ways the
# chapter does: the direct AllReduce result, the RS+AG result and the closed form 600 + 4i
# (20 int64 elements at 4 ranks) agree; the wrong shard order and the wrong op are detected; the
# nondivisible ReduceScatter is refused by the runtime before any collective on every rank; the
# 1003-element case pads with each op's identity (SUM 0, PROD 1, MAX min, MIN max) and trims.
# The same files run at 2, 3 and 8 ranks. A deliberately wrong contract must fail (exit 1).
. "$(dirname "$0")/lib.bash"

CONTRACTS=(schedules/seed/*contract*.yaml)
require_host_backend "five contracts at 4 ranks"

run run "${CONTRACTS[@]}" --backend host --ranks 4 --format json -o "$TMP/c4.json"
if [ "$RC" -ne 0 ]; then
    not_ok "five contracts at 4 ranks" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
else
    # seed: five contracts x 4 ranks = 20 rows, all pass.
    jq_case "five contracts at 4 ranks: 20 rank rows PASS" '[.schedules[].checks[] |
        select(.name == "exact-sum-equivalence" or .name == "wrong-shard-order-rejected" or
               .name == "wrong-reduction-op-rejected" or .name == "padding-and-trim-equivalence" or
               .name == "nondivisible-without-padding-rejected")] |
        length == 20 and all(.status == "pass") and ([.[].rank] | unique == [0,1,2,3])' "$TMP/c4.json"
    jq_case "every check row of every contract passes at 4 ranks" \
        '[.schedules[].checks[] | .status == "pass"] | all' "$TMP/c4.json"
    # seed: direct == RS+AG == 600 + 4i, three results compared.
    jq_case "exact sum: direct, RS+AG and closed form 600 + 4i agree on 20 elements" \
        '[.schedules[].checks[] | select(.name == "exact-sum-equivalence" or
            .name == "decomposed-equals-closed-form" or .name == "direct-equals-independent-sum") |
            .status == "pass" and .detail == "equal: 20 of 20 elements"] | length == 12 and all' \
        "$TMP/c4.json"
    jq_case "wrong shard order detected: rolled shard 3 (660) differs from direct (600)" \
        '[.schedules[].checks[] | select(.name == "wrong-shard-order-rejected") |
            .detail | startswith("not equal as required: first difference at element 0: 600 vs 660")] |
            length == 4 and all' "$TMP/c4.json"
    jq_case "wrong reduction op detected: SUM 600 vs MAX 300 at element 0" \
        '[.schedules[].checks[] | select(.name == "wrong-reduction-op-rejected") |
            .detail | startswith("not equal as required: first difference at element 0: 600 vs 300")] |
            length == 4 and all' "$TMP/c4.json"
    jq_case "nondivisible 1003 refused before any collective on every rank" \
        '[.schedules[].checks[] | select(.name == "nondivisible-without-padding-rejected") |
            (.detail | startswith("refused before any collective: size_mismatch"))] |
            length == 4 and all' "$TMP/c4.json"
    jq_case "1003 elements padded with SUM/PROD/MAX/MIN identities and trimmed: 1003 equal" \
        '[.schedules[].checks[] | select(.name | startswith("padding-and-trim")) |
            .detail == "equal: 1003 of 1003 elements"] | length == 16 and all' "$TMP/c4.json"
    jq_case "contracts at 4 ranks: measured requested = predicted" \
        '[.schedules[].ranks[] | .match] | length == 20 and all' "$TMP/c4.json"
fi

for n in 2 3 8; do
    run run "${CONTRACTS[@]}" --backend host --ranks "$n" --format json -o "$TMP/c$n.json"
    if [ "$RC" -ne 0 ]; then
        not_ok "five contracts at $n ranks" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
        continue
    fi
    jq_case "five contracts at $n ranks: $((5 * n)) contract rows and every check passes" \
        '[.schedules[].checks[] | select(.name == "exact-sum-equivalence" or
            .name == "wrong-shard-order-rejected" or .name == "wrong-reduction-op-rejected" or
            .name == "padding-and-trim-equivalence" or
            .name == "nondivisible-without-padding-rejected")] | length == '"$((5 * n))"' and
        ([.[] | .status == "pass"] | all)' "$TMP/c$n.json"
done

# A contract that must fail does fail: exit 1, a "fail" row per rank naming the difference.
run run tests/mpi/data/check_fails.yaml --backend host --ranks 4 --format json -o "$TMP/f.json"
if [ "$RC" -ne 1 ]; then
    not_ok "a wrong closed form fails its check (exit 1)" "exit $RC"
else
    jq_case "a wrong closed form fails its check (exit 1)" '[.schedules[].checks[] |
        .status == "fail" and (.detail | startswith("not equal: first difference at element 0: 600 vs 601"))] |
        length == 4 and all' "$TMP/f.json"
fi
