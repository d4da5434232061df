#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runtime fault injection on the host backend at 4 ranks: every injected failure ends
# every rank within the deadline (+ a few seconds of mpirun teardown), with exit 3, a message that
# gives the failing rank's step (file:line:col), op index and live requested bytes and where the
# other ranks were, and no result file (-o FILE absent, and no temp file beside it).
#
# The target is tests/mpi/data/faults.yaml; its header lists the ops and the live bytes these
# cases expect (int64, 1024 elements per shard at 4 ranks: full 32768 B, shard 8192 B, gathered
# 32768 B; 73728 B live at the reduce_scatter, op 4). Every run is bounded by `timeout 60`.
. "$(dirname "$0")/lib.bash"

require_host_backend "fault injection"
F=tests/mpi/data/faults.yaml

# trun ARGS...: `memlife ARGS` under timeout 60; $RC, $MS (elapsed milliseconds), $TMP/err.
trun() {
    local t0
    t0=$(date +%s%N)
    timeout -k 5 60 "$MEMLIFE" "$@" >"$TMP/out" 2>"$TMP/err"
    RC=$?
    MS=$((($(date +%s%N) - t0) / 1000000))
}

# expect_case NAME RC MAX_MS [LINE]...: exit RC, done within MAX_MS, each LINE (an ERE matched
# against a whole stderr line) present, no result file. Every run writes to $TMP/result.json.
expect_case() {
    local name=$1 want_rc=$2 max_ms=$3 line
    shift 3
    if [ "$RC" -ne "$want_rc" ]; then
        not_ok "$name" "exit $RC, want $want_rc: $(head -3 "$TMP/err" | tr '\n' ' ')"
        return
    fi
    if [ "$MS" -gt "$max_ms" ]; then
        not_ok "$name" "took $MS ms, want at most $max_ms"
        return
    fi
    for line in "$@"; do
        if ! grep -qE "^$line\$" "$TMP/err"; then
            not_ok "$name" "no line '$line' in: $(head -6 "$TMP/err" | tr '\n' ' ')"
            return
        fi
    done
    if [ "$want_rc" -ne 0 ] && ls "$TMP"/result* >/dev/null 2>&1; then
        not_ok "$name" "left $(ls "$TMP"/result* | head -1)"
        return
    fi
    ok "$name"
}

q() { printf '%s' "$1" | sed 's/[][().*+?^$|\\]/\\&/g'; }   # a literal line as an ERE
RS_NOTE="$(q "$F:14:5: note: rank ")[023]$(q " was at op 4 (reduce_scatter), in the sequence check before it; live requested bytes 73728")"

# 1. fail-alloc on rank 1: its alloc 1 ('shard', op 2) fails holding 'full' (32768 B). The others
#    learn it at the sequence check before the reduce_scatter and end with it: no deadline needed
#    (--timeout 10; the run ends in well under that). Rank 0 prints every rank's state.
trun run $F --backend host --ranks 4 --timeout 10 --inject fail-alloc=1@1 -o "$TMP/result.json"
expect_case "fail-alloc on rank 1: exit 3, step, bytes, live bytes, every rank's op, no file" 3 10000 \
    "$(q "$F:12:5: error: alloc of 'shard' (8192 bytes) failed: injected fault fail-alloc=1@1 (alloc 1 of rank 1); live requested bytes 32768")" \
    "$(q "$F:12:5: note: rank 1 failed at op 2 (alloc); live requested bytes 32768")" \
    "$RS_NOTE"
if [ "$RC" -eq 3 ] && [ "$(grep -cE "^$RS_NOTE\$" "$TMP/err")" -ne 3 ]; then
    not_ok "fail-alloc on rank 1: a state note for each of ranks 0, 2, 3" "$(grep -cE "^$RS_NOTE\$" "$TMP/err") notes"
else ok "fail-alloc on rank 1: a state note for each of ranks 0, 2, 3"; fi

# 1b. The same without the sequence check: no rank learns it in an exchange, so rank 1 says its
#     own op and ends the job (MPI_Abort); the others, waiting in the reduce_scatter, are ended.
trun run $F --backend host --ranks 4 --timeout 10 --no-sequence-check --inject fail-alloc=1@1 -o "$TMP/result.json"
expect_case "fail-alloc on rank 1 without the sequence check: rank 1's op, MPI_Abort, exit 3" 3 10000 \
    "$(q "$F:12:5: error: alloc of 'shard' (8192 bytes) failed: injected fault fail-alloc=1@1 (alloc 1 of rank 1); live requested bytes 32768")" \
    "$(q "$F:12:5: note: rank 1 failed at op 2 (alloc); live requested bytes 32768")"

# 2. kill rank 2 at op 3 (alloc 'gathered', holding 40960 B): SIGKILL, so mpirun ends the job
#    (exit 137); memlife maps it to 3 and says so. The survivors, ended by mpirun while they waited
#    at the sequence check before the reduce_scatter, say for whom. --timeout 30: the end comes
#    from the teardown, well before any deadline (bound 15 s).
trun run $F --backend host --ranks 4 --timeout 30 --inject kill=2@3 -o "$TMP/result.json"
expect_case "kill rank 2 at op 3: exit 3, the killed rank's step and live bytes, mpirun's end" 3 15000 \
    "$(q "$F:13:5: error: rank 2 killed at op 3 (alloc) by injected fault kill=2@3; live requested bytes 40960")" \
    "$(q "error: a rank was ended by signal 9 (Killed); mpirun ended the other ranks (mpirun exit 137); every rank has ended")"
if grep -qE "^$(q "$F:14:5: note: rank ")[013]$(q " had waited ")[0-9.]+$(q " s at reduce_scatter (14:5), op 4, for ranks [2] (in an exchange with every rank) when the job was ended; live requested bytes 73728")\$" "$TMP/err"
then ok "kill rank 2: a survivor says it waited at reduce_scatter (14:5) for ranks [2]"
else not_ok "kill rank 2: a survivor says it waited at reduce_scatter (14:5) for ranks [2]" "$(tr '\n' ' ' <"$TMP/err" | head -c 600)"; fi

# 3. delay rank 3 at op 4 past a 5 s deadline (it sleeps --timeout + 10 = 15 s): ranks 0-2 wait
#    5 s at the sequence check before the reduce_scatter, name rank 3 and end the job (MPI_Abort,
#    exit 3), the sleeping rank included. Bound: the deadline + 5 s.
trun run $F --backend host --ranks 4 --timeout 5 --inject delay=3@4 -o "$TMP/result.json"
expect_case "delay rank 3 past a 5 s deadline: exit 3 within 10 s, the waiters name rank 3" 3 10000 \
    "$(q "$F:14:5: note: rank 3 delayed at op 4 (reduce_scatter) by injected fault delay=3@4 for 15 s, past the 5 s deadline of its peers; live requested bytes 73728")" \
    "$(q "$F:14:5: error: rank ")[012]$(q " waited 5.0 s at reduce_scatter (14:5), op 4, for ranks [3] (in an exchange with every rank; deadline 5 s, --timeout); live requested bytes 73728; ending every rank")"
if [ "$MS" -lt 5000 ]; then not_ok "delay: the waiters waited out the 5 s deadline" "ended after $MS ms"
else ok "delay: the waiters waited out the 5 s deadline"; fi

# 3b. delay rank 3 before the communicator set-up (delay=3@init; past a 4 s deadline): ranks 0-2
#    wait in their first exchange with every rank (the provenance's host names, before any op),
#    which has no rank state of its own: it takes the run's --timeout (4 s here, not the 60 s
#    fallback) and ends the job. Bound: the deadline + 5 s.
trun run $F --backend host --ranks 4 --timeout 4 --inject delay=3@init -o "$TMP/result.json"
expect_case "delay=3@init past a 4 s deadline: exit 3 within 9 s, the waiters name rank 3" 3 9000 \
    "$(q "note: rank 3 delayed before its first exchange with its peers by injected fault delay=3@init for 14 s, past the 4 s deadline of its peers")" \
    "$(q "memlife: error: rank ")[012]$(q " waited 4.0 s for ranks [3] (in an exchange with every rank; deadline 4 s, --timeout); ending every rank")"
if [ "$MS" -lt 4000 ]; then not_ok "delay=3@init: the waiters waited out the 4 s deadline" "ended after $MS ms"
else ok "delay=3@init: the waiters waited out the 4 s deadline"; fi

# 4. fail-alloc=0 on every rank with -o: each rank's first alloc ('full', op 0, nothing held yet)
#    fails; each prints its own error; nothing is written.
trun run $F --backend host --ranks 4 --timeout 10 --inject fail-alloc=0 -o "$TMP/result.json"
expect_case "fail-alloc=0 on every rank with -o: exit 3, no result file, no temp file" 3 10000 \
    "$(q "$F:11:5: error: alloc of 'full' (32768 bytes) failed: injected fault fail-alloc=0 (alloc 0 of rank ")[0-3]$(q "); live requested bytes 0")"
if [ "$RC" -eq 3 ] && [ "$(grep -c "injected fault fail-alloc=0" "$TMP/err")" -ne 4 ]; then
    not_ok "fail-alloc=0: each of the 4 ranks reports its own failure" "$(grep -c "injected fault" "$TMP/err") reports"
else ok "fail-alloc=0: each of the 4 ranks reports its own failure"; fi

# 5. MEMLIFE_INJECT takes the same syntax as --inject.
MEMLIFE_INJECT=fail-alloc=1@1 trun run $F --backend host --ranks 4 --timeout 10 -o "$TMP/result.json"
expect_case "MEMLIFE_INJECT=fail-alloc=1@1 fails the same alloc as --inject" 3 10000 \
    "$(q "$F:12:5: error: alloc of 'shard' (8192 bytes) failed: injected fault fail-alloc=1@1 (alloc 1 of rank 1); live requested bytes 32768")"

# 6. Without the sequence check the survivors of a delay wait in the reduce_scatter itself: MPI
#    cannot say for whom, but the wait still has its deadline (--timeout 3; bound 3 + 5 s).
trun run $F --backend host --ranks 4 --timeout 3 --no-sequence-check --inject delay=3@4 -o "$TMP/result.json"
expect_case "delay without the sequence check: the collective's own wait ends at the deadline" 3 8000 \
    "$(q "$F:14:5: error: rank ")[012]$(q " waited 3.0 s at reduce_scatter (14:5), op 4, for its peers (in the collective; deadline 3 s, --timeout); live requested bytes 73728; ending every rank")"

# 7. A delay inside the deadline is only slower: exit 0 and a result (1 s at op 4, --timeout 5).
trun run $F --backend host --ranks 4 --timeout 5 --inject delay=3@4:1 --format json -o "$TMP/ok.json"
expect_case "delay of 1 s within a 5 s deadline: the run completes (exit 0)" 0 10000 \
    "$(q "$F:14:5: note: rank 3 delayed at op 4 (reduce_scatter) by injected fault delay=3@4:1 for 1 s, within the 5 s deadline of its peers; live requested bytes 73728")"
if [ "$RC" -eq 0 ]; then jq_case "delay within the deadline: the result records inject=delay=3@4:1" \
    '.provenance.inject == "delay=3@4:1"' "$TMP/ok.json"; fi
rm -f "$TMP/ok.json"

# 8. Faults that cannot happen are refused before any rank starts (exit 2).
trun run $F --backend host --ranks 4 --inject kill=4@3 -o "$TMP/result.json"
expect_case "kill=4@3 at 4 ranks is refused (exit 2)" 2 10000 \
    "$(q "error: --inject kill=4@3: rank 4 is outside the world of 4 ranks")"
trun run $F --backend host --ranks 4 --inject kill=2@10 -o "$TMP/result.json"
expect_case "kill=2@10 beyond the 10 ops is refused (exit 2)" 2 10000 \
    "$(q "error: --inject kill=2@10 is never reached: rank 2 has 10 ops (0 to 9)")"
trun run $F --backend host --ranks 4 --inject kill=2 -o "$TMP/result.json"
expect_case "kill=2 without an op is a usage error (exit 2)" 2 10000 \
    "$(q "error: --inject: 'kill=2' is not kill=RANK@OP (e.g. kill=2@3)")"

# 9. Under an outside mpirun that does not end the job when a rank dies (--enable-recovery), the
#    survivors still end: their waits have deadlines (--timeout 5; bound 5 + 5 s). The exit status
#    is then mpirun's, not memlife's, so only the ending and the messages are checked.
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
name="outside mpirun --enable-recovery: survivors of kill=2@3 end at the deadline, naming rank 2"
if ! mpirun "${root[@]}" --help all 2>&1 | grep -q -- --enable-recovery; then
    skip "$name" "this mpirun has no --enable-recovery"
else
    t0=$(date +%s%N)
    timeout -k 5 60 mpirun "${root[@]}" -q --oversubscribe --enable-recovery -np 4 "$MEMLIFE" run $F \
        --backend host --timeout 5 --inject kill=2@3 -o "$TMP/result.json" >"$TMP/out" 2>"$TMP/err"
    RC=$?
    MS=$((($(date +%s%N) - t0) / 1000000))
    n=$(grep -cE "^$(q "$F:14:5: error: rank ")[013]$(q " waited 5.0 s at reduce_scatter (14:5), op 4, for ranks [2] (in an exchange with every rank; deadline 5 s, --timeout); live requested bytes 73728; ending every rank")\$" "$TMP/err")
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ] || [ "$MS" -gt $((10000 * SLOW)) ]; then not_ok "$name" "exit $RC after $MS ms"
    elif [ "$n" -lt 1 ]; then not_ok "$name" "$(grep -v PMIX "$TMP/err" | head -4 | tr '\n' ' ')"
    elif ls "$TMP"/result* >/dev/null 2>&1; then not_ok "$name" "left a result file"
    else ok "$name"; fi
fi
