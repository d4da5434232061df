#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The chapter's four lifetimes run for real on the host backend at 2, 3, 4 and 8 ranks (256 MiB
# tensor, float32): on every rank the measured requested steady and peak equal the prediction
# byte for byte, and so does the requested view after every op (`match`). At 4 ranks the numbers
# are also asserted against the chapter's table.
. "$(dirname "$0")/lib.bash"

LIFETIMES=(schedules/seed/*allreduce_full*.yaml schedules/seed/*rs_only*.yaml
           schedules/seed/*rs_ag_naive*.yaml schedules/seed/*rs_ag_optimized*.yaml)
require_host_backend "seed lifetimes at 2 ranks" "seed lifetimes at 3 ranks" \
    "seed lifetimes at 4 ranks" "seed lifetimes at 8 ranks"

for n in 2 3 4 8; do
    name="seed lifetimes at $n ranks: measured requested = predicted on every rank and op"
    run run "${LIFETIMES[@]}" --backend host --ranks "$n" --format json -o "$TMP/w$n.json"
    if [ "$RC" -ne 0 ]; then
        not_ok "$name" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
        continue
    fi
    jq_case "$name" '[.schedules[] | select(.world == '"$n"') | .ranks[] |
        .match and .measured.requested.steady == .requested.steady and
        .measured.requested.peak == .requested.peak] | length == 4 * '"$n"' and all' "$TMP/w$n.json"
    jq_case "seed lifetimes at $n ranks: one sample per op after the baseline" \
        '[.schedules[] | .ranks[] | .measured.timeline[0].op == "baseline"] | all' "$TMP/w$n.json"
done

# seed: the chapter's table at 4 ranks, requested view, MiB: AllReduce 256/256, RS only 64/320,
# naive RS+AG 256/576, optimized RS+AG 256/320.
MiB=1048576
want='{"allreduce-full":[256,256],"reduce-scatter-shard":[64,320],"rs-ag-naive-lifetime":[256,576],"rs-ag-optimized-lifetime":[256,320]}'
if [ -f "$TMP/w4.json" ]; then
    jq_case "seed lifetimes at 4 ranks: measured 256/256, 64/320, 256/576, 256/320 MiB" \
        "($want) as \$w | [.schedules[] | .name as \$n | .ranks[] |
          .measured.requested.steady == \$w[\$n][0] * $MiB and
          .measured.requested.peak == \$w[\$n][1] * $MiB] | length == 16 and all" "$TMP/w4.json"
else
    not_ok "seed lifetimes at 4 ranks: measured 256/256, 64/320, 256/576, 256/320 MiB" "no result"
fi
