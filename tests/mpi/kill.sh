#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The job never outlives memlife: memlife killed outright (SIGKILL, what a CI timeout
# does) leaves no process of the job alive 5 s later and no result file; mpirun killed outright
# makes memlife end and reap the ranks before it says they have ended; SIGTERM and SIGINT end the
# job with 128 + N and no result; a SIGTERM near the end either wins (143, no result) or comes
# too late (0, a complete result), never both; a signal, or SIGKILL of rank 0, while rank 0 writes
# the result leaves no temp file beside it, nor does SIGTERM during predict -o's write. The processes of one case are found by a marker
# unique to it in their argv (the -o path, which mpirun and every rank carry).
. "$(dirname "$0")/lib.bash"

require_host_backend "the job never outlives memlife"
F=tests/mpi/data/faults.yaml

# alive MARKER: how many processes carry MARKER in their argv (pgrep -f, our own marker only).
alive() { pgrep -f -- "$1" | wc -l; }

# reap MARKER: a failed case's leftovers end, by their pids (found by the case's own marker).
reap() { pgrep -f -- "$1" | xargs -r kill -KILL 2>/dev/null; }

# leftovers MARKER: files in $TMP named after the case (the result or its hidden temp file).
leftovers() { find "$TMP" -maxdepth 1 -name "*$1*" -printf '%f ' 2>/dev/null; }

# start MARKER ARGS...: memlife run ARGS -o $TMP/MARKER.json in the background; $PID.
start() {
    local marker=$1
    shift
    "$MEMLIFE" run $F --backend host "$@" -o "$TMP/$marker.json" >"$TMP/$marker.out" 2>"$TMP/$marker.err" &
    PID=$!
}

# wait_for N MARKER: until N processes carry MARKER (mpirun and its ranks started), at most 20 s.
wait_for() {
    local n=$1 marker=$2 k
    for k in $(seq 200); do
        [ "$(alive "$marker")" -ge "$n" ] && return 0
        sleep 0.1
    done
    return 1
}

# mid_run NAME MARKER RANKS: starts a run of RANKS ranks whose rank 1 sleeps 20 s (delay=1@3:20,
# within --timeout 60) and returns once mpirun and every rank have run for a second; 1 (with
# not_ok) when they never started.
mid_run() {
    start "$2" --ranks "$3" --timeout 60 --inject delay=1@3:20
    if ! wait_for $(($3 + 1)) "$2"; then
        not_ok "$1" "mpirun and $3 ranks never ran: $(head -3 "$TMP/$2.err")"
        return 1
    fi
    sleep 1
}

# 1. SIGKILL memlife while rank 1 sleeps 20 s (delay=1@3:20, within --timeout 60): its ranks see
#    it gone (MEMLIFE_PARENT_PID), mpirun gets SIGTERM from the kernel (PR_SET_PDEATHSIG).
m=kill9-memlife-$$
if mid_run "SIGKILL of memlife mid-run" $m 4; then
    kill -KILL $PID
    wait $PID 2>/dev/null
    sleep 5
    n=$(alive $m)
    left=$(leftovers $m.json)
    if [ "$n" -eq 0 ] && [ -z "$left" ]; then
        ok "SIGKILL of memlife mid-run: no process of the job alive 5 s later, no result file"
    else
        not_ok "SIGKILL of memlife mid-run" "$n processes alive 5 s later ($(pgrep -af -- $m | head -3 | tr '\n' ';')), files: '$left'"
        reap "$m"
    fi
fi

# 2. SIGKILL mpirun: memlife ends the orphaned ranks (they come to it as a subreaper), reaps each,
#    and only then says they have ended: nothing of the job is alive when memlife exits.
m=kill9-mpirun-$$
if mid_run "SIGKILL of mpirun mid-run" $m 4; then
    kill -KILL "$(pgrep -P $PID | head -1)"
    t0=$SECONDS
    wait $PID
    rc=$?
    n=$(alive $m)
    want="error: mpirun was ended by signal 9 (Killed); every rank has ended"
    if [ $rc -eq 3 ] && [ "$n" -eq 0 ] && grep -qxF "$want" "$TMP/$m.err" && [ -z "$(leftovers $m.json)" ] &&
        [ $((SECONDS - t0)) -le 5 ]; then
        ok "SIGKILL of mpirun: exit 3, '$want' once every rank is reaped, no result"
    else
        not_ok "SIGKILL of mpirun" "exit $rc, $n processes alive at memlife's exit, $((SECONDS - t0)) s: $(tail -2 "$TMP/$m.err" | tr '\n' ' ')"
        reap "$m"
    fi
fi

# 3. SIGTERM and SIGINT mid-run: passed on to mpirun, exit 128 + N, no result, nothing left.
for sig in TERM INT HUP; do
    m=sig$sig-$$
    mid_run "SIG$sig mid-run" $m 2 || continue
    kill -$sig $PID
    wait $PID
    rc=$?
    n=$(alive $m)
    want=$((128 + $(kill -l $sig)))
    if [ $rc -eq $want ] && [ "$n" -eq 0 ] && [ -z "$(leftovers $m.json)" ]; then
        ok "SIG$sig mid-run: exit $want, no process left, no result"
    else
        not_ok "SIG$sig mid-run" "exit $rc (want $want), $n processes alive, files '$(leftovers $m.json)'"
        reap "$m"
    fi
done

# 4. SIGTERM near the end, 8 times at times spread around the end of a plain run: exit 143
#    never comes with a result file, exit 0 always does (and it is complete JSON).
m=plain-$$
t0=$(date +%s%N)
"$MEMLIFE" run $F --backend host --ranks 2 --format json -o "$TMP/$m.json" 2>"$TMP/$m.err"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ $rc -eq 0 ] && jq -e '.schedules[0].ranks | length == 2' "$TMP/$m.json" >/dev/null &&
    [ "$(leftovers $m.json)" = "$m.json " ]; then
    ok "a plain run with -o: the result in place, no temp file beside it ($ms ms)"
else
    not_ok "a plain run with -o" "exit $rc, files '$(leftovers $m.json)': $(head -2 "$TMP/$m.err")"
fi
bad=0 won=0 late=0
for k in 1 2 3 4 5 6 7 8; do
    m=term-end-$k-$$
    at=$((ms * (60 + 7 * k) / 100))    # 67% .. 116% of the plain run
    "$MEMLIFE" run $F --backend host --ranks 2 --format json -o "$TMP/$m.json" >/dev/null 2>"$TMP/$m.err" &
    PID=$!
    sleep "$(printf '%d.%03d' $((at / 1000)) $((at % 1000)))"
    kill -TERM $PID 2>/dev/null
    wait $PID
    rc=$?
    if [ $rc -eq 143 ] && [ -z "$(leftovers $m.json)" ]; then
        won=$((won + 1))
    elif [ $rc -eq 0 ] && jq -e '.schedules[0].ranks | length == 2' "$TMP/$m.json" >/dev/null 2>&1; then
        late=$((late + 1))
    else
        bad=$((bad + 1))
        echo "  try $k at $at ms: exit $rc, files '$(leftovers $m.json)': $(head -2 "$TMP/$m.err" | tr '\n' ' ')"
    fi
    [ "$(alive $m)" -eq 0 ] || { bad=$((bad + 1)); echo "  try $k: processes left"; reap "$m"; }
done
if [ $bad -eq 0 ]; then
    ok "SIGTERM near the end, 8 tries: $won ended by it with no result, $late complete; never 143 with a result"
else
    not_ok "SIGTERM near the end, 8 tries" "$bad bad ($won by the signal, $late complete)"
fi

# 5. -o a link: the result goes where the link points (its temp file beside that file, renamed
#    there at the end), the link stays a link (base/util.h ml_output_place).
m=link-$$
mkdir "$TMP/$m.d"
ln -s "$m.d/target.json" "$TMP/$m.json"
"$MEMLIFE" run $F --backend host --ranks 2 --format json -o "$TMP/$m.json" 2>"$TMP/$m.err"
rc=$?
if [ $rc -eq 0 ] && [ -L "$TMP/$m.json" ] &&
    jq -e '.schedules[0].ranks | length == 2' "$TMP/$m.d/target.json" >/dev/null &&
    [ "$(find "$TMP/$m.d" -mindepth 1 -printf '%f ')" = "target.json " ]; then
    ok "run -o a link: the result where the link points, the link kept, no temp file"
else
    not_ok "run -o a link" "exit $rc, $(ls -la "$TMP/$m.json" "$TMP/$m.d" 2>&1 | tr '\n' ' '): $(head -2 "$TMP/$m.err")"
fi

# 6. A signal while rank 0 writes the result: the temp file beside it (".NAME.memlife-PID.tmp.X",
#    base/util.h ml_write_file_atomic) exists from before its fsync until the rename; a shim
#    (tests/mpi/slow_fsync.c, LD_PRELOAD) holds the fsync 5 s and notes the writer's pid. SIGTERM
#    to memlife then, which mpirun passes on to the ranks and follows with SIGKILL: exit 143 and
#    nothing left beside the result; SIGKILL to the writing rank itself (which no handler sees):
#    exit 3, and memlife removes what the rank left. predict -o, with no handler of its own:
#    SIGTERM during its write ends it by the signal, with no temp file.
CC=${CC:-cc}
shim=$TMP/slow_fsync.so
if ! $CC -shared -fPIC -o "$shim" tests/mpi/slow_fsync.c -ldl 2>"$TMP/shim.err"; then
    skip "a signal while rank 0 writes the result" "cannot build tests/mpi/slow_fsync.c: $(head -1 "$TMP/shim.err")"
else
    # ASan wants to be the first library; the shim only wraps fsync
    slow=(env LD_PRELOAD="$shim" SLOW_FSYNC_S=5 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
    # writing MARKER: until the shim has noted a writer (at most 30 s); its pid in $WRITER.
    writing() {
        local k
        for k in $(seq 300); do
            WRITER=$(head -1 "$TMP/$1.note" 2>/dev/null)
            [ -n "$WRITER" ] && return 0
            sleep 0.1
        done
        return 1
    }
    for how in term-memlife kill-writer; do
        m=write-$how-$$
        "${slow[@]}" SLOW_FSYNC_NOTE="$TMP/$m.note" "$MEMLIFE" run $F --backend host --ranks 2 \
            --format json -o "$TMP/$m.json" >/dev/null 2>"$TMP/$m.err" &
        PID=$!
        if ! writing $m; then
            not_ok "$how while rank 0 writes" "no write began: $(head -2 "$TMP/$m.err" | tr '\n' ' ')"
            kill -KILL $PID 2>/dev/null
            reap "$m"
            continue
        fi
        during=$(leftovers $m.json)
        if [ $how = term-memlife ]; then kill -TERM $PID; want=143; else kill -KILL "$WRITER"; want=3; fi
        wait $PID
        rc=$?
        left=$(leftovers $m.json)
        case $during in *.tmp.*) seen=1 ;; *) seen=0 ;; esac
        if [ $rc -eq $want ] && [ $seen = 1 ] && [ -z "$left" ] && [ "$(alive $m)" -eq 0 ]; then
            ok "$how while rank 0 writes the result: exit $want, its temp file removed"
        else
            not_ok "$how while rank 0 writes the result" "exit $rc (want $want), files during '$during', after '$left'"
            reap "$m"
        fi
    done
    m=write-predict-$$
    "${slow[@]}" SLOW_FSYNC_NOTE="$TMP/$m.note" "$MEMLIFE" predict $F --format json \
        -o "$TMP/$m.json" >/dev/null 2>"$TMP/$m.err" &
    PID=$!
    if writing $m; then
        during=$(leftovers $m.json)
        kill -TERM $PID
        wait $PID
        rc=$?
        left=$(leftovers $m.json)
        if [ $rc -eq 143 ] && [ -n "$during" ] && [ -z "$left" ]; then
            ok "SIGTERM while predict -o writes: exit 143, its temp file '$during' removed"
        else
            not_ok "SIGTERM while predict -o writes" "exit $rc, files during '$during', after '$left'"
        fi
    else
        not_ok "SIGTERM while predict -o writes" "no write began: $(head -2 "$TMP/$m.err" | tr '\n' ' ')"
        kill -KILL $PID 2>/dev/null
    fi
fi
