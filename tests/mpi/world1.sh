#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One rank on the host backend (mpirun -np 1): chunked_rs_only with `chunks: world` = 1 chunk
# (its release keeps the one chunk: 256 MiB steady and peak at M = 256 MiB, measured = predicted),
# and the two contracts that hold at world 1 (exact sum: 3 check rows; padding: 4), all passing.
. "$(dirname "$0")/lib.bash"

require_host_backend "world 1 chunked_rs_only" "world 1 contracts"
run run schedules/chunked_rs_only.yaml --backend host --ranks 1 --format json -o "$TMP/ch.json"
if [ "$RC" -ne 0 ]; then
    not_ok "world 1 chunked_rs_only" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
else
    jq_case "world 1 chunked_rs_only: 256/256 MiB measured = predicted, one chunk released as none" \
        '.schedules[0].ranks[0] | .measured.requested.steady == 268435456 and
         .measured.requested.peak == 268435456 and .requested.steady == 268435456' "$TMP/ch.json"
fi
run run schedules/seed/05_contract_exact_sum.yaml schedules/seed/05_contract_padding_trim.yaml \
    --backend host --ranks 1 --format json -o "$TMP/c1.json"
if [ "$RC" -ne 0 ]; then
    not_ok "world 1 contracts" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
else
    jq_case "world 1 contracts: 7 check rows, all pass" \
        '[.schedules[].checks[]] | length == 7 and all(.status == "pass")' "$TMP/c1.json"
fi
