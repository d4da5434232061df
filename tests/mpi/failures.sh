#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Failure behaviour on the host backend: never a hang, never a partial result file.
#  - a collective sequence that diverges at run time (lint told to let it through) ends every
#    rank with exit 3 and a message naming the ranks and the step, well within --timeout 10;
#  - with the sequence check off, the same divergence still ends (at an MPI error or the deadline);
#  - a failed allocation names the step, the bytes asked and the live bytes; exit 3;
#  - an interrupted run leaves no result file;
#  - --ranks must agree with an outside launcher's size;
#  - no wait on a child without a deadline: mpirun slow to end the job after an
#    MPI_Abort, a torch driver that never ends.
. "$(dirname "$0")/lib.bash"

require_host_backend "failure behaviour"
D=tests/mpi/data

# no_result NAME: the -o file and any temp file beside it are absent.
no_result() {
    if ls "$TMP"/result* >/dev/null 2>&1; then not_ok "$1" "left $(ls "$TMP"/result* | head -1)"; else ok "$1"; fi
}

# Lint sees the divergence first: exit 2, nothing runs.
run run $D/diverge.yaml --backend host --ranks 4 -o "$TMP/result.json"
if [ "$RC" -eq 2 ] && grep -q "all_gather" "$TMP/err"; then ok "divergent schedule rejected by lint (exit 2)"
else not_ok "divergent schedule rejected by lint (exit 2)" "exit $RC"; fi

for n in 2 4 8; do
    name="divergence at $n ranks ends every rank with exit 3 within the deadline"
    run run $D/diverge.yaml --backend host --ranks $n --no-lint cross-rank --timeout 10 -o "$TMP/result.json"
    want="collective sequence diverges at collective 2: rank 0 issues all_gather (count 64, int64) at $D/diverge.yaml:11:5, rank 1 has ended after 1 collective"
    if [ "$RC" -ne 3 ]; then not_ok "$name" "exit $RC"
    elif [ "$SECS" -ge $((10 * SLOW)) ]; then not_ok "$name" "took $SECS s"
    elif ! grep -qF "$D/diverge.yaml:11:5: error: $want" "$TMP/err"; then
        not_ok "$name" "message: $(head -2 "$TMP/err" | tr '\n' ' ')"
    elif [ "$(grep -c 'sequence diverges' "$TMP/err")" -ne 1 ]; then
        not_ok "$name" "reported $(grep -c 'sequence diverges' "$TMP/err") times, want once"
    else ok "$name"; fi
done
no_result "divergence leaves no result file"

name="divergence without the sequence check still ends (exit 3) within --timeout 5"
run run $D/diverge.yaml --backend host --ranks 4 --no-lint cross-rank --no-sequence-check --timeout 5 -o "$TMP/result.json"
if [ "$RC" -eq 3 ] && [ "$SECS" -le $((15 * SLOW)) ] && grep -q "ending every rank" "$TMP/err"; then ok "$name"
else not_ok "$name" "exit $RC after $SECS s: $(head -2 "$TMP/err" | tr '\n' ' ')"; fi

# slow_mpirun NAME TAG WANT_RE: memlife run with the fake mpirun $TMP/slow_TAG_mpirun (written by
# the caller), the ranks' TMPDIR (where memlife makes its registration directory) $TMP/TAG-tmp.
# memlife must end the job LAUNCH_ABORT_GRACE_S (10 s) after the event, exit 3 with the line
# WANT_RE (an anchored regex) on stderr; 5 s later nothing of the job may be alive, and neither a
# result file nor the registration directory may be left.
slow_mpirun() {
    local name=$1 tag=$2 want_re=$3 marker=$TMP/slow-$2-marker.json t0 left
    chmod +x "$TMP/slow_${tag}_mpirun"
    mkdir -p "$TMP/$tag-tmp"
    t0=$(date +%s)
    TMPDIR=$TMP/$tag-tmp MEMLIFE_MPIRUN=$TMP/slow_${tag}_mpirun timeout -k 5 60 "$MEMLIFE" run \
        $D/diverge.yaml --backend host --ranks 2 --no-lint cross-rank -o "$marker" >"$TMP/out" 2>"$TMP/err"
    RC=$?
    SECS=$(($(date +%s) - t0))
    sleep 5
    left=$(pgrep -f -- "$marker" | wc -l)
    if [ "$RC" -eq 3 ] && [ "$SECS" -ge 10 ] && [ "$SECS" -le 20 ] && [ "$left" -eq 0 ] && grep -qE "$want_re" "$TMP/err"
    then ok "$name"
    else
        not_ok "$name" "exit $RC after $SECS s, $left processes alive 5 s later: $(head -2 "$TMP/err" | tr '\n' ' ')"
        pgrep -f -- "$marker" | xargs -r kill -KILL 2>/dev/null
    fi
    if ls "$marker"* "$TMP"/.slow-$tag-marker* >/dev/null 2>&1; then
        not_ok "slow $tag leaves no result file" "left $(ls "$marker"* "$TMP"/.slow-$tag-marker* 2>/dev/null | head -1)"
    else ok "slow $tag leaves no result file"; fi
    if ls -d "$TMP/$tag-tmp"/memlife-ranks-* >/dev/null 2>&1; then
        not_ok "slow $tag: the registration directory is removed" "left $(ls -d "$TMP/$tag-tmp"/memlife-ranks-* | head -1)"
    else ok "slow $tag: the registration directory is removed"; fi
}

# mpirun slow to end the job after rank 0's MPI_Abort hung memlife. Played
# deterministically by a fake mpirun (MEMLIFE_MPIRUN) that, like rank 0 before MPI_Abort, sends
# memlife the abort notice (SIGUSR1 to MEMLIFE_PARENT_PID, launch.h) and then never ends: it and
# a "rank" in its group ignore SIGTERM, a second "rank" in a session of its own (out of the
# group's reach) too. memlife must kill the group after LAUNCH_ABORT_GRACE_S (10 s), end and reap
# the rank outside it, say so and exit 3.
cat >"$TMP/slow_abort_mpirun" <<'FAKE'
#!/usr/bin/env bash
trap '' TERM
rank='trap "" TERM; while :; do sleep 0.2; done'
bash -c "$rank" fake-rank "$@" &
setsid bash -c "$rank" fake-rank "$@" &
kill -USR1 "$MEMLIFE_PARENT_PID"
while :; do sleep 0.2; done
FAKE
slow_mpirun "mpirun that never ends after a rank's MPI_Abort: memlife ends the job in 10 s + reaping, exit 3" \
    abort "^error: mpirun had not ended the job 10 s after a rank's MPI_Abort: memlife killed its process group and every rank left$"

# The same without an MPI_Abort: a rank that crashes (SIGSEGV, SIGKILL) says nothing, and
# mpirun slow to end the others hung memlife the same way. Every rank registers in
# MEMLIFE_RANKS_DIR (its pid as the file name, its rank inside) once MPI_Init has succeeded and
# removes the file after MPI_Finalize (launch.h). Played by a fake mpirun whose "rank 1" registers
# and then dies of SIGKILL, its file left behind, while mpirun and another "rank" ignore SIGTERM
# and never end. memlife must see rank 1 gone (it looks every 100 ms), kill the group 10 s later
# and name the rank.
cat >"$TMP/slow_crash_mpirun" <<'FAKE'
#!/usr/bin/env bash
trap '' TERM
rank='trap "" TERM; while :; do sleep 0.2; done'
bash -c "$rank" fake-rank "$@" &
bash -c 'echo 1 >"$MEMLIFE_RANKS_DIR/$BASHPID"; sleep 0.5; kill -KILL $BASHPID' fake-rank "$@" &
while :; do sleep 0.2; done
FAKE
slow_mpirun "mpirun that never ends after a rank dies of SIGKILL: memlife ends the job in 10 s, exit 3" \
    crash "^error: mpirun had not ended the job 10 s after rank 1 \(pid [0-9]+\) ended without MPI_Finalize or MPI_Abort \(a crash or a kill\): memlife killed its process group and every rank left$"

# With the real mpirun: rank 2 dies of SIGKILL mid-run (--inject kill=2@3,
# at its alloc of 'gathered' in tests/mpi/data/faults.yaml). Whoever ends the job, mpirun or
# memlife's deadline, memlife exits 3 within the 10 s deadline plus mpirun's own teardown; 5 s
# later no process of the job is alive, and neither the result file nor its temp file nor the
# ranks' registration directory is left.
name="a rank killed by SIGKILL mid-run (real mpirun): exit 3, nothing of the job alive 5 s later"
marker=$TMP/rank-kill-marker.json
mkdir -p "$TMP/rank-kill-tmp"
t0=$(date +%s)
TMPDIR=$TMP/rank-kill-tmp timeout -k 5 60 "$MEMLIFE" run $D/faults.yaml --backend host --ranks 4 \
    --timeout 30 --inject kill=2@3 -o "$marker" >"$TMP/out" 2>"$TMP/err"
RC=$?
SECS=$(($(date +%s) - t0))
sleep 5
left=$(pgrep -f -- "$marker" | wc -l)
if [ "$RC" -eq 3 ] && [ "$SECS" -le $((15 * SLOW)) ] && [ "$left" -eq 0 ]; then ok "$name"
else
    not_ok "$name" "exit $RC after $SECS s, $left processes alive 5 s later: $(head -2 "$TMP/err" | tr '\n' ' ')"
    pgrep -f -- "$marker" | xargs -r kill -KILL 2>/dev/null
fi
if ls "$marker"* "$TMP"/.rank-kill-marker* "$TMP/rank-kill-tmp"/memlife-ranks-* >/dev/null 2>&1; then
    not_ok "rank killed mid-run: no result file, no registration directory" "left $(ls -d "$marker"* "$TMP"/.rank-kill-marker* "$TMP/rank-kill-tmp"/* 2>/dev/null | head -1)"
else ok "rank killed mid-run: no result file, no registration directory"; fi

# The same for the torch backend's driver (a child of each rank): one that closes its stdout
# without a word and never ends (it ignores SIGTERM) was waited for without a deadline. Played
# by a fake python (MEMLIFE_PYTHON); the rank must kill it 5 s later (torch.c, DRIVER_END_S),
# say it was ended by signal 9 and exit 3, and nothing of it may be alive after.
name="a torch driver that closes its pipe and never ends is killed 5 s later, exit 3"
fakepy=$TMP/silent_driver_python
cat >"$fakepy" <<'FAKE'
#!/usr/bin/env bash
trap '' TERM
exec 1>&-
while :; do sleep 0.2; done
FAKE
chmod +x "$fakepy"
t0=$(date +%s)
MEMLIFE_PYTHON=$fakepy timeout -k 5 60 "$MEMLIFE" run schedules/seed/01_allreduce_full.yaml \
    --backend torch --ranks 1 -o "$TMP/silent-driver.json" >"$TMP/out" 2>"$TMP/err"
RC=$?
SECS=$(($(date +%s) - t0))
sleep 1
left=$(pgrep -f -- "$fakepy" | wc -l)
if [ "$RC" -eq 3 ] && [ "$SECS" -ge 5 ] && [ "$SECS" -le 30 ] && [ "$left" -eq 0 ] &&
    grep -q "the torch driver (pid [0-9]*) was ended by signal 9 (Killed)" "$TMP/err"
then ok "$name"
else
    not_ok "$name" "exit $RC after $SECS s, $left processes alive: $(head -2 "$TMP/err" | tr '\n' ' ')"
    pgrep -f -- "$fakepy" | xargs -r kill -KILL 2>/dev/null
fi

# 1 TiB is more than this machine can map; the live bytes are the 1 MiB allocated before.
name="failed 1 TiB allocation: step, bytes asked, live bytes; exit 3"
run run $D/huge_alloc.yaml --backend host --ranks 2 -o "$TMP/result.json"
if [ "$RC" -eq 3 ] && grep -qE "^$D/huge_alloc.yaml:8:5: error: alloc of 'huge' \(1099511627776 bytes\) failed: .*; live requested bytes 1048576$" "$TMP/err"
then ok "$name"; else not_ok "$name" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"; fi
no_result "failed allocation leaves no result file"

name="MEMLIFE_HOST_MEM_LIMIT=2MiB refuses the 1 TiB alloc by the limit"
MEMLIFE_HOST_MEM_LIMIT=2MiB run run $D/huge_alloc.yaml --backend host --ranks 2 -o "$TMP/result.json"
if [ "$RC" -eq 3 ] && grep -q "host memory limit: 1099511627776 bytes asked, 1048576 held, limit 2097152 (MEMLIFE_HOST_MEM_LIMIT); live requested bytes 1048576" "$TMP/err"
then ok "$name"; else not_ok "$name" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"; fi

# Interrupt a run of several seconds (naive RS+AG, 256 MiB, 8 ranks) after one second.
name="interrupted run (SIGINT to the launcher) leaves no result file"
timeout -k 5 120 "$MEMLIFE" run schedules/seed/*rs_ag_naive*.yaml schedules/seed/*allreduce_full*.yaml --backend host \
    --ranks 8 -o "$TMP/result.json" >/dev/null 2>&1 &
pid=$!
sleep 1
kill -INT $pid 2>/dev/null
wait $pid
RC=$?
if [ "$RC" -eq 0 ]; then skip "$name" "the run finished within a second"
else no_result "$name"; fi

# Under an outside mpirun, --ranks must match its size.
name="--ranks 4 under 'mpirun -np 2' is a usage error (exit 2)"
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
timeout -k 5 120 mpirun "${root[@]}" -q --oversubscribe -np 2 "$MEMLIFE" run schedules/seed/*allreduce_full*.yaml \
    --ranks 4 >"$TMP/out" 2>"$TMP/err"
RC=$?
if [ "$RC" -eq 2 ] && grep -q "ranks 4, but the MPI launcher started 2 ranks" "$TMP/err"; then ok "$name"
else not_ok "$name" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"; fi

# --ranks and --world that disagree, outside a launcher: one usage error before any mpirun
# starts (its ranks would each say it again), at once.
name="--ranks 2 --world 3: one usage error, no mpirun started"
t0=$(date +%s%N)
timeout 30 "$MEMLIFE" run schedules/seed/*allreduce_full*.yaml --ranks 2 --world 3 >"$TMP/out" 2>"$TMP/err"
RC=$?
ms=$((($(date +%s%N) - t0) / 1000000))
n=$(grep -c "^error: " "$TMP/err")
if [ "$RC" -eq 2 ] && [ "$n" -eq 1 ] && [ "$(head -1 "$TMP/err")" = "error: --ranks 2 and --world 3 disagree (one process per rank)" ] &&
    [ $ms -lt 1000 ]; then ok "$name ($ms ms)"
else not_ok "$name" "exit $RC, $n errors, $ms ms: $(head -4 "$TMP/err" | tr '\n' ' ')"; fi

# Without mpirun on PATH, `--ranks N` cannot start the ranks: a clear error, exit 3.
name="no mpirun on PATH: clear error, exit 3"
PATH=/nonexistent MEMLIFE_MPIRUN= run run schedules/seed/*allreduce_full*.yaml --ranks 2
if [ "$RC" -eq 3 ] && grep -q "^error: no mpirun on PATH" "$TMP/err"; then ok "$name"
else not_ok "$name" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"; fi

# Rank 0's report reaches memlife's stdout after the job (runtime/exec/launch.c): a stdout that
# cannot be written (a full disk; /dev/full fails every write) is exit 3 with the reason, not a
# run that exits 0 without its output (mpirun's forwarding dropped the error).
if [ -w /dev/full ]; then
    for cmd in "run schedules/seed/01_allreduce_full.yaml --backend host --ranks 2 -f json" \
               "bench schedules/seed/06_bench_direct_decomposed.yaml --backend host --ranks 2 --sizes 1KiB --warmup 1 --cycles 2 -f json"; do
        name="stdout full: ${cmd%% *} --ranks 2 exits 3"
        # shellcheck disable=SC2086
        timeout -k 5 120 "$MEMLIFE" $cmd >/dev/full 2>"$TMP/err"
        RC=$?
        if [ "$RC" -eq 3 ] && grep -q "^error: cannot write the results to stdout" "$TMP/err"; then ok "$name"
        else not_ok "$name" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"; fi
    done
    # The same run to a file: the whole report arrives (its last line is the table's last row).
    name="run --ranks 2: rank 0's report reaches stdout whole"
    run run schedules/seed/02_rs_only.yaml --backend host --ranks 2
    if [ "$RC" -eq 0 ] && grep -q "^reduce-scatter-shard (schedules/seed/02_rs_only.yaml, world 2)" "$TMP/out" &&
       [ "$(grep -c '^ *[01] ' "$TMP/out")" -ge 2 ]; then ok "$name"
    else not_ok "$name" "exit $RC: $(head -3 "$TMP/out" | tr '\n' ' ')"; fi
else
    skip "stdout full" "no writable /dev/full"
fi
