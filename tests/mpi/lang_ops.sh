#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The language's data forms on the host backend at 4 ranks (tests/mpi/data/lang_ops.yaml, each
# expected value worked by hand beside its check): a repeat index in views and closed forms, avg
# on int32/int64 (NCCL's truncation toward zero) and bfloat16, float16 sums, scale by 1/world
# and by a decimal. 6 contracts x 4 ranks = 24 rows, all PASS; the requested peak measured is the
# predicted 448 B (w 3*16*4 + a 16*4 + b 16*8 + g 16*2 + h 16*2 = 192 + 64 + 128 + 32 + 32).
# Then --dtype bfloat16 / float16 on tests/mpi/data/dtype_default.yaml, and the host's refusal of
# a count beyond MPI's int before the launch; then send/recv and groups (tests/mpi/data/p2p.yaml).
. "$(dirname "$0")/lib.bash"

F=tests/mpi/data/lang_ops.yaml
require_host_backend "lang ops at 4 ranks"
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

# --dtype on a schedule whose buffers take the default: 2 checks x 4 ranks PASS in each 16-bit type
# (x is N = 16 elements: 32 B, y 8 B; peak 40 B).
for t in bfloat16 float16; do
    run run tests/mpi/data/dtype_default.yaml --backend host --ranks 4 --dtype $t --format json -o "$TMP/d.json"
    if [ "$RC" -ne 0 ]; then
        not_ok "--dtype $t reductions on the host" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
        continue
    fi
    jq_case "--dtype $t reductions on the host: 8 rows PASS, peak 40 B measured = predicted" \
        '([.schedules[0].checks[] | .status == "pass"] | length == 8 and all) and
         ([.schedules[0].ranks[] | .requested.peak == 40 and .measured.requested.peak == 40] | all)' \
        "$TMP/d.json"
done

# What the host cannot run (an MPI count beyond int) is refused before any rank starts: exit 2 at
# the collective's step, not a failure mid-run.
cat > "$TMP/big.yaml" <<'YAML'
world: 2
steps:
  - alloc: {buf: x, count: 3GiB, dtype: int8}
  - all_reduce: {buf: x}
  - free: x
YAML
run run "$TMP/big.yaml" --backend host --ranks 2
want="$TMP/big.yaml:4:5: error: the host backend cannot run this: all_reduce of 3221225472 elements exceeds MPI's int count (2147483647)"
if [ "$RC" -eq 2 ] && [ "$(head -1 "$TMP/err")" = "$want" ]; then ok "host refuses a count beyond MPI's int before launch (exit 2)"
else not_ok "host refuses a count beyond MPI's int before launch (exit 2)" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"; fi

# Point-to-point (tests/mpi/data/p2p.yaml, values by hand in its header): a ring in one group, a
# hop outside one, three ring hops in an indexed repeat: ring 4 + hop 1 + ring-k 4 = 9 rows PASS
# (a check in a repeat is one row per rank, its 3 iterations' verdicts joined with "; ");
# peak a + b + c = 3 x 8 x 4 B = 96 B measured = predicted.
run run tests/mpi/data/p2p.yaml --backend host --ranks 4 --format json -o "$TMP/p.json"
if [ "$RC" -ne 0 ]; then
    not_ok "send/recv and groups on the host" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
else
    jq_case "send/recv and groups on the host: 9 rows PASS (ring-k 3 iterations each), 96 B measured = predicted" \
        '([.schedules[0].checks[] | .status == "pass"] | length == 9 and all) and
         ([.schedules[0].checks[] | select(.name == "ring-k") | .detail | split("; ") | length == 3] | all) and
         ([.schedules[0].ranks[] | .requested.peak == 96 and .measured.requested.peak == 96] | all)' \
        "$TMP/p.json"
fi
