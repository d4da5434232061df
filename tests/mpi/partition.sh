#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The host backend across two hosts, and a network partition between them (docs/runtime.md,
# "Across hosts"). The hosts are two network namespaces joined by a veth pair (10.213.77.1 and
# .2); the user's own mpirun runs in the first with a hostfile naming both, and starts the second
# host's daemon through a launch agent that runs it in that namespace (`ip netns exec`, with a
# hostname of its own) where ssh would log in. Traffic stays inside the namespaces this script
# makes, every job is bounded by `timeout`, and the namespaces go at the end.
#
#   across:    no cut: rank 0 on host A and rank 1 on host B both exit 0 (TCP between them).
#   cut:       rank 0 sleeps 4 s before the AllReduce (delay=0@2:4) and the link goes down
#              (`ip link set ... down`) while rank 1 waits for it: rank 1, on the far side from
#              mpirun, prints the deadline error (--timeout 10) and ends with exit 3, within the
#              deadline + the 5 s abort grace + 10 s of slack after the cut.
#   unheard:   the same cut with host B's Open MPI daemon stopped (SIGSTOP), so that MPI_Abort
#              reaches no one, as across a partition from mpirun: the rank still ends with exit 3,
#              on its own, RT_ABORT_GRACE_S (5 s) after the abort ("MPI_Abort had not ended this
#              rank 5 s after it began; exiting"); it used to stay alive.
# Where namespaces cannot be made (not root, no `ip`, no unshare, a container without the
# capability) every case is a visible skip.
. "$(dirname "$0")/lib.bash"

CASES=("two hosts: a run across them" "two hosts: the link cut during the AllReduce"
       "two hosts: the link cut and MPI_Abort unheard")
require_host_backend "${CASES[@]}"
skip_all() { for n in "${CASES[@]}"; do skip "$n" "$1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "network namespaces need root"
command -v ip >/dev/null 2>&1 || skip_all "no 'ip' (iproute2)"
command -v unshare >/dev/null 2>&1 || skip_all "no 'unshare' (util-linux)"

NA=mlA$$ NB=mlB$$ VA=mlva$$ VB=mlvb$$ NET=10.213.77
cleanup() {
    local ns p
    for ns in $NA $NB; do
        for p in $(ip netns pids $ns 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        ip netns del $ns 2>/dev/null
    done
}
trap 'cleanup; json_collect "$TMP"; rm -rf "$TMP"' EXIT
# namespaces an earlier run left when it was killed outright (its pid in their names is gone)
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^ml[AB][0-9]+$'); do
    kill -0 "${ns#ml?}" 2>/dev/null && continue
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
done
if ! { ip netns add $NA && ip netns add $NB &&
       ip link add $VA netns $NA type veth peer name $VB netns $NB &&
       ip -n $NA addr add $NET.1/24 dev $VA && ip -n $NB addr add $NET.2/24 dev $VB &&
       ip -n $NA link set lo up && ip -n $NB link set lo up &&
       ip -n $NA link set $VA up && ip -n $NB link set $VB up; } 2>"$TMP/netns.err"; then
    skip_all "cannot make network namespaces: $(head -1 "$TMP/netns.err")"
fi

# The launch agent: mpirun calls it as it would call ssh, `AGENT HOST COMMAND...`.
cat >"$TMP/agent.sh" <<EOF
#!/bin/sh
host=\$1
shift
case \$host in $NET.2) ns=$NB ;; *) ns=$NA ;; esac
exec ip netns exec \$ns unshare --uts sh -c "hostname host-\$ns; \$*"
EOF
printf '%s.1 slots=1\n%s.2 slots=1\n' $NET $NET >"$TMP/hosts"
chmod +x "$TMP/agent.sh"
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)

# job NAME ARGS...: `memlife run ARGS` on both hosts under the user's mpirun, in the background
# ($JOB); each rank's stderr in $TMP/NAME.err.R and its exit code, once it ends, in
# $TMP/NAME.rc.R (through a wrapper: a rank on host B reports to nothing across the cut).
job() {
    local name=$1
    shift
    cat >"$TMP/$name.rank.sh" <<EOF
#!/bin/sh
exec 2>"$TMP/$name.err.\$OMPI_COMM_WORLD_RANK"
"$MEMLIFE" run tests/mpi/data/partition.yaml --backend host $* >/dev/null
echo \$? >"$TMP/$name.rc.\$OMPI_COMM_WORLD_RANK"
EOF
    chmod +x "$TMP/$name.rank.sh"
    # in a subshell: the shell does not report the job that stop_job kills
    (timeout -k 5 $((60 * SLOW)) ip netns exec $NA unshare --uts sh -c "hostname host-$NA; exec mpirun ${root[*]} \
        --hostfile '$TMP/hosts' -np 2 --mca plm_rsh_agent '$TMP/agent.sh' --mca btl tcp,self \
        --mca btl_tcp_if_include $NET.0/24 --mca oob_tcp_if_include $NET.0/24 '$TMP/$name.rank.sh'" \
        >"$TMP/$name.mpirun" 2>&1) &
    JOB=$!
}

# ended NAME SECONDS: until rank 1's exit code is there, at most SECONDS; 1 if it never came.
ended() {
    local k
    for k in $(seq $(($2 * 10))); do
        [ -s "$TMP/$1.rc.1" ] && return 0
        sleep 0.1
    done
    return 1
}

# running NAME: until rank 1 (host B) has said it is in the run, at most 30 s.
running() {
    local k
    for k in $(seq 300); do
        [ -n "$(ip netns pids $NB 2>/dev/null | xargs -r ps -o comm= -p | grep -x memlife)" ] && return 0
        sleep 0.1
    done
    return 1
}

# stop_job: the rest of a job (mpirun, the daemons, anything left) ends, by the namespaces' pids.
stop_job() {
    local ns p
    for ns in $NA $NB; do
        for p in $(ip netns pids $ns 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done
    wait $JOB 2>/dev/null
    ip -n $NA link set $VA up 2>/dev/null
    ip -n $NB link set $VB up 2>/dev/null
}

# 1. across the two hosts, no cut
job across --timeout 30
if ended across 60 && wait $JOB && [ "$(cat "$TMP/across.rc.0" 2>/dev/null)" = 0 ] &&
    [ "$(cat "$TMP/across.rc.1")" = 0 ]; then
    ok "${CASES[0]}: both ranks exit 0"
else
    not_ok "${CASES[0]}" "rank exits '$(cat "$TMP"/across.rc.* 2>/dev/null | tr '\n' ' ')': $(tail -3 "$TMP/across.mpirun" "$TMP"/across.err.* 2>/dev/null | tr '\n' ' ')"
fi
stop_job

# 2. and 3. the link cut while rank 1 waits in the AllReduce; in 3. host B's daemon stopped too
for which in cut unheard; do
    name=${CASES[1]}
    [ $which = unheard ] && name=${CASES[2]}
    job $which --timeout 10 --inject delay=0@2:4
    if ! running $which; then
        not_ok "$name" "rank 1 never ran: $(tail -3 "$TMP/$which.mpirun" | tr '\n' ' ')"
        stop_job
        continue
    fi
    sleep 1
    ip -n $NB link set $VB down
    if [ $which = unheard ]; then
        for p in $(ip netns pids $NB); do
            [ "$(ps -o comm= -p "$p")" = orted ] && kill -STOP "$p"
        done
    fi
    t0=$SECONDS
    bound=$((10 + 5 + 10 * SLOW))
    ended $which $bound
    secs=$((SECONDS - t0))
    rc=$(cat "$TMP/$which.rc.1" 2>/dev/null)
    err=$TMP/$which.err.1
    why=""
    [ "$rc" = 3 ] || why="rank 1's exit '${rc:-none: still running}' after ${secs} s, want 3 within $bound s"
    grep -q "error: rank 1 waited .* deadline 10 s, --timeout.*ending every rank" "$err" 2>/dev/null ||
        why="${why:+$why; }no deadline error on rank 1"
    if [ $which = unheard ]; then
        grep -qxF "error: rank 1: MPI_Abort had not ended this rank 5 s after it began; exiting" "$err" 2>/dev/null ||
            why="${why:+$why; }no 'MPI_Abort had not ended this rank' line"
    fi
    if [ -z "$why" ]; then ok "$name: rank 1 on host B ends with exit 3, ${secs} s after the cut"
    else not_ok "$name" "$why: $(tr '\n' ' ' <"$err" 2>/dev/null | cut -c1-400)"; fi
    stop_job
done
