#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sub-communicators on the host backend (one MPI_Comm_split communicator per schedule
# communicator). At 4 and 8 ranks, for schedules/seed/07_tp_allreduce_rs_ag.yaml (AllReduce =
# RS + AG on the tp groups of a dp x tp mesh) and schedules/training/hsdp.yaml (shard groups and
# replica groups):
#  - the run's measured requested bytes equal the prediction on every rank, and the exact numbers
#    the files work by hand (07: peak 8*(2L + 2P + qp), 776 B at 4 ranks and 1496 B at 8; hsdp:
#    steady 1572864 B and peak 2031616 B at both worlds);
#  - every contract row passes: 07 has ten per rank (40 at 4 ranks, 80 at 8), hsdp four;
#  - each group's result is its own: the tp groups {2g, 2g+1} sum rank_iota to 100*(4g+1) + 2i,
#    a different sum per group (two groups at 4 ranks, four at 8), never the world's
#    100*n(n-1)/2 + n*i.
# And a sub-communicator collective issued by only part of its group never hangs: lint rejects
# it (exit 2); let through, the sequence check ends every rank at once (exit 3) naming the
# collective and its communicator; without the sequence check the deadline ends it (exit 3).
# A communicator that leaves ranks out runs with the sequence check on (those ranks wait a
# round), and send/recv with `comm:` reach the group's peers.
. "$(dirname "$0")/lib.bash"

S07=schedules/seed/07_tp_allreduce_rs_ag.yaml
HSDP=schedules/training/hsdp.yaml
D=tests/mpi/data
require_host_backend "07 and hsdp at 4 ranks" "07 and hsdp at 8 ranks" "partial issue"

for n in 4 8; do
    run run $S07 $HSDP --backend host --ranks "$n" --format json -o "$TMP/c$n.json"
    if [ "$RC" -ne 0 ]; then
        not_ok "07 and hsdp at $n ranks" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
        continue
    fi
    # 07 at world n: n = 5*world elements, L = n+1, qp = ceil(L/2), P = 2*qp (see the file).
    e=$((5 * n)); L=$((e + 1)); qp=$(((L + 1) / 2)); P=$((2 * qp)); peak07=$((8 * (2 * L + 2 * P + qp)))
    jq_case "$n ranks: measured requested = predicted on every rank of both schedules" \
        '[.schedules[].ranks[] | .match] | length == '"$((2 * n))"' and all' "$TMP/c$n.json"
    jq_case "$n ranks: 07 measured steady 0 and peak $peak07 B on every rank" \
        '[.schedules[] | select(.name == "tp-allreduce-equals-rs-ag") | .ranks[] |
            .measured.requested == {steady: 0, peak: '"$peak07"'}] | length == '"$n"' and all' \
        "$TMP/c$n.json"
    jq_case "$n ranks: hsdp measured steady 1572864 B and peak 2031616 B on every rank" \
        '[.schedules[] | select(.name == "hsdp") | .ranks[] |
            .measured.requested == {steady: 1572864, peak: 2031616}] | length == '"$n"' and all' \
        "$TMP/c$n.json"
    jq_case "$n ranks: 07's ten contracts, $((10 * n)) rank rows, all pass" \
        '[.schedules[] | select(.name == "tp-allreduce-equals-rs-ag") | .checks[]] |
            length == '"$((10 * n))"' and all(.status == "pass") and
            ([.[].rank] | unique == [range('"$n"')]) and
            ([.[].name] | unique | length == 10)' "$TMP/c$n.json"
    jq_case "$n ranks: hsdp's four checks, $((4 * n)) rank rows, all pass" \
        '[.schedules[] | select(.name == "hsdp") | .checks[]] |
            length == '"$((4 * n))"' and all(.status == "pass")' "$TMP/c$n.json"
    # Group {b, b+1} (b = rank - rank%2) sums to X = 100*(2b+1) at element 0; its shards rolled by
    # one start with element n/2 of the sum, X + 2*(n/2) = X + n (n = 5*world elements).
    jq_case "$n ranks: each tp group its own sum, $((n / 2)) different ones (rolled shard X vs X + $e)" \
        '[.schedules[] | select(.name == "tp-allreduce-equals-rs-ag") | .checks[] |
            select(.name == "tp-wrong-shard-order-rejected") |
            (100 * (2 * (.rank - .rank % 2) + 1)) as $x |
            {ok: (.detail | startswith("not equal as required: first difference at element 0: \($x) vs \($x + '"$e"')")),
             x: $x}] |
            length == '"$n"' and all(.ok) and ([.[].x] | unique | length == '"$((n / 2))"')' \
        "$TMP/c$n.json"
    W=$((100 * n * (n - 1) / 2))
    jq_case "$n ranks: no tp group's sum is the world's ($W at element 0)" \
        '[.schedules[] | select(.name == "tp-allreduce-equals-rs-ag") | .checks[] |
            select(.name == "tp-result-is-not-the-worlds") |
            (100 * (2 * (.rank - .rank % 2) + 1)) as $x |
            .detail | startswith("not equal as required: first difference at element 0: \($x) vs '"$W"';")] |
            length == '"$n"' and all' "$TMP/c$n.json"
done

# Partial issue: rank 1 skips its group's all_reduce (tests/mpi/data/comm_partial.yaml).
run run $D/comm_partial.yaml --backend host --ranks 4 -o "$TMP/p.json"
if [ "$RC" -eq 2 ] && grep -q "all_reduce" "$TMP/err" && [ ! -e "$TMP/p.json" ]; then
    ok "partial issue on a sub-communicator rejected by lint (exit 2), nothing run"
else not_ok "partial issue on a sub-communicator rejected by lint (exit 2), nothing run" "exit $RC"; fi

name="partial issue let through: the sequence check ends every rank (exit 3) within the deadline"
run run $D/comm_partial.yaml --backend host --ranks 4 --no-lint cross-rank --timeout 10 -o "$TMP/p.json"
want="collective sequence diverges at collective 1: rank 0 issues all_reduce (count 16, int64, sum, comm tp) at $D/comm_partial.yaml:14:5, rank 1 has ended after 0 collectives"
if [ "$RC" -ne 3 ]; then not_ok "$name" "exit $RC"
elif [ "$SECS" -ge $((10 * SLOW)) ]; then not_ok "$name" "took $SECS s"
elif ! grep -qF "$D/comm_partial.yaml:14:5: error: $want" "$TMP/err"; then
    not_ok "$name" "message: $(head -2 "$TMP/err" | tr '\n' ' ')"
else ok "$name"; fi

name="partial issue without the sequence check: the deadline ends it (exit 3, --timeout 5)"
run run $D/comm_partial.yaml --backend host --ranks 4 --no-lint cross-rank --no-sequence-check --timeout 5 -o "$TMP/p.json"
if [ "$RC" -eq 3 ] && [ "$SECS" -le $((15 * SLOW)) ] &&
    grep -q "rank 0 waited 5.0 s at all_reduce (14:5).*ending every rank" "$TMP/err"; then ok "$name"
else not_ok "$name" "exit $RC after $SECS s: $(head -2 "$TMP/err" | tr '\n' ' ')"; fi
if [ -e "$TMP/p.json" ]; then not_ok "a partial issue leaves no result file" "$TMP/p.json written"
else ok "a partial issue leaves no result file"; fi

# A communicator that leaves ranks 0 and 1 out: the group {2,3} issues its all_reduce while they
# wait a round at the world's; every rank ends with 1100 + 6i (tests/mpi/data/comm_upper.yaml).
# --no-lint cross-rank: what is tested is the runtime's own sequence check, whatever lint says.
run run $D/comm_upper.yaml --backend host --ranks 4 --no-lint cross-rank --timeout 20 --format json -o "$TMP/u.json"
jq_run_case "ranks in no group skip its collective: 8 rows pass (upper 500 + 2i on {2,3}, world 1100 + 6i)" \
    '([.schedules[].checks[]] | length == 8 and all(.status == "pass")) and
        ([.schedules[].ranks[] | .match] | length == 4 and all)' "$TMP/u.json"

# send / recv with comm: peers within the group (tests/mpi/data/comm_p2p.yaml): each tp pair
# swaps, and rank 3 (local 0 of `pair`) reaches rank 1 (its local 1).
run run $D/comm_p2p.yaml --backend host --ranks 4 --no-lint cross-rank --timeout 20 --format json -o "$TMP/p2p.json"
jq_run_case "send/recv through tp and a rank list: 4 swaps and the pair's hop (300 + i) pass" \
    '[.schedules[].checks[]] | length == 5 and all(.status == "pass") and
        ([.[] | select(.name == "pair-hop") | .rank] == [1])' "$TMP/p2p.json"
