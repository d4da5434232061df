#!/usr/bin/env bash
# The language's data forms on the host backend at 4 ranks (tests/mpi/data/lang_ops.yaml, each
# expected value worked by hand beside its check): a repeat index in views and closed forms, avg
# on int32/int64 (NCCL's truncation toward zero) and bfloat16, float16 sums, scale by 1/world
# and by a decimal. 6 contracts x 4 ranks = 24 rows, all PASS; the requested peak measured is the
# predicted 448 B (w 3*16*4 + a 16*4 + b 16*8 + g 16*2 + h 16*2 = 192 + 64 + 128 + 32 + 32).
. "$(dirname "$0")/lib.bash"

F=tests/mpi/data/lang_ops.yaml
why=$(host_backend_missing)
if [ -n "$why" ]; then
    skip "lang ops at 4 ranks" "$why"
    exit 0
fi
run run "$F" --backend host --ranks 4 --format json -o "$TMP/l.json"
if [ "$RC" -ne 0 ]; then
    not_ok "lang ops at 4 ranks" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
    exit 0
fi
jq_case "lang ops: 6 contracts x 4 ranks = 24 rows, all PASS" \
    '[.schedules[0].checks[]] | length == 24 and all(.status == "pass") and
     ([.[].name] | unique | length) == 6' "$TMP/l.json"
jq_case "lang ops: requested peak 448 B predicted and measured on every rank" \
    '[.schedules[0].ranks[] | .requested.peak == 448 and .measured.requested.peak == 448 and .match]
     | length == 4 and all' "$TMP/l.json"
