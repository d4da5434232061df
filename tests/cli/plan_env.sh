#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --plan on a file without plans, or naming none of its plans, is an error that lists them
# (it used to be ignored on files without plans); every environment variable memlife reads is
# checked before anything starts: a bad value is exit 2 with its name and value, and no mpirun
# is started.
. "$(dirname "$0")/lib.bash"

SEED=schedules/seed/01_allreduce_full.yaml
PLANS=schedules/seed/06_bench_direct_decomposed.yaml   # plans: direct, decomposed (line 18)

# first_line NAME RC WANT -- ARGS...: exit RC, nothing on stdout, first stderr line WANT.
first_line() {
    local name=$1 want_rc=$2 want=$3
    shift 4
    run "$@"
    local why="" got
    got=$(head -1 "$TMP/err")
    [ "$RC" -eq "$want_rc" ] || why="exit $RC, want $want_rc"
    [ -s "$TMP/out" ] && why="${why:+$why; }stdout not empty"
    [ "$got" = "$want" ] || why="${why:+$why; }stderr: want '$want', got '$got'"
    if [ -z "$why" ]; then ok "$name"; else not_ok "$name" "$why"; fi
}

NOPLANS="$SEED: error: no plan 'direct': this schedule has no 'plans:', only one list of 'steps:'"
for cmd in predict check optimize plot trace; do
    first_line "$cmd --plan on a file without plans" 2 "$NOPLANS" -- $cmd --plan direct $SEED
done
first_line "predict --plan on a mix of files: the file without plans is an error" 2 "$NOPLANS" \
    -- predict --plan direct $PLANS $SEED
first_line "predict --plan naming no plan lists the plans" 2 \
    "$PLANS:18:3: error: no plan 'fused' in this schedule (plans: direct, decomposed)" \
    -- predict --plan fused $PLANS
first_line "bench --plan naming no plan lists the plans" 2 \
    "$PLANS:18:3: error: no plan 'fused' in this schedule (plans: direct, decomposed)" \
    -- bench --plan fused $PLANS --ranks 2
first_line "equiv FILE:PLAN on a file without plans" 2 \
    "$SEED: error: no plan 'a': this schedule has no 'plans:', only one list of 'steps:'" \
    -- equiv $SEED:a $SEED:b --no-data

# NCCL's variables that the communicator model reads: checked by predict too.
NCCL_BUFFSIZE=4MB first_line "NCCL_BUFFSIZE=4MB: exit 2 naming the variable" 2 \
    "error: environment variable NCCL_BUFFSIZE='4MB' is not an integer >= 0" -- predict --quiet $SEED

# Environment: a fake mpirun that leaves a mark shows whether anything was launched.
cat >"$TMP/mpirun" <<EOF
#!/bin/sh
touch "$TMP/launched"
exit 0
EOF
chmod +x "$TMP/mpirun"
if "$MEMLIFE" --version | grep -q 'host (not built)'; then
    echo "skip - environment checks before mpirun: memlife was built without Open MPI"
else
    env_case() {
        local name=$1 assign=$2 want=$3
        rm -f "$TMP/launched"
        env MEMLIFE_MPIRUN="$TMP/mpirun" "$assign" "$MEMLIFE" run $SEED --backend host --ranks 2 \
            >"$TMP/out" 2>"$TMP/err"
        RC=$?
        local why="" got
        got=$(head -1 "$TMP/err")
        [ "$RC" -eq 2 ] || why="exit $RC, want 2"
        [ -e "$TMP/launched" ] && why="${why:+$why; }mpirun was started"
        [ "$got" = "$want" ] || why="${why:+$why; }stderr: want '$want', got '$got'"
        if [ -z "$why" ]; then ok "$name"; else not_ok "$name" "$why"; fi
    }
    env_case "MEMLIFE_HOST_MEM_LIMIT=lots: exit 2 before mpirun" MEMLIFE_HOST_MEM_LIMIT=lots \
        "error: environment variable MEMLIFE_HOST_MEM_LIMIT='lots' is not a byte count (an expression such as 2GiB)"
    env_case "MEMLIFE_HOST_MEM_LIMIT=-1: exit 2 before mpirun" MEMLIFE_HOST_MEM_LIMIT=-1 \
        "error: environment variable MEMLIFE_HOST_MEM_LIMIT='-1' is not a byte count (an expression such as 2GiB)"
    env_case "MEMLIFE_INJECT=bogus: exit 2 before mpirun" MEMLIFE_INJECT=bogus \
        "error: environment variable MEMLIFE_INJECT='bogus' is not a fault list: unknown fault 'bogus' (fail-alloc=[RANK@]K, kill=RANK@OP or delay=RANK@OP|init[:SECONDS])"
    env_case "MEMLIFE_MAX_INPUT=1e9: exit 2 before mpirun" MEMLIFE_MAX_INPUT=1e9 \
        "error: environment variable MEMLIFE_MAX_INPUT='1e9' is not a byte count of at least 1 (e.g. 64MiB)"
    env_case "MEMLIFE_LAUNCHED=yes: exit 2" MEMLIFE_LAUNCHED=yes \
        "error: environment variable MEMLIFE_LAUNCHED='yes' is not '1' (memlife sets it for the ranks it starts)"
    env_case "MEMLIFE_PARENT_PID=0: exit 2" MEMLIFE_PARENT_PID=0 \
        "error: environment variable MEMLIFE_PARENT_PID='0' is not an integer in [1, 2147483647]"
    env_case "OMPI_COMM_WORLD_SIZE=four: exit 2" OMPI_COMM_WORLD_SIZE=four \
        "error: environment variable OMPI_COMM_WORLD_SIZE='four' is not an integer in [1, 2147483647]"
    rm -f "$TMP/launched"
    env MEMLIFE_MPIRUN=/nonexistent/mpirun "$MEMLIFE" run $SEED --backend host --ranks 2 >"$TMP/out" 2>"$TMP/err"
    RC=$?
    want="error: environment variable MEMLIFE_MPIRUN='/nonexistent/mpirun' is not an executable file: No such file or directory"
    if [ $RC -eq 2 ] && [ "$(head -1 "$TMP/err")" = "$want" ]; then ok "MEMLIFE_MPIRUN not executable: exit 2"; else
        not_ok "MEMLIFE_MPIRUN not executable: exit 2" "exit $RC: $(head -1 "$TMP/err")"; fi
    # Standard input under memlife's own mpirun: the ranks cannot all read it (mpirun gives it
    # to rank 0 alone); refused before mpirun starts (it used to end with exit 2 and no message).
    rm -f "$TMP/launched"
    MEMLIFE_MPIRUN="$TMP/mpirun" "$MEMLIFE" run - --backend host --ranks 2 <$SEED >"$TMP/out" 2>"$TMP/err"
    RC=$?
    want="-: error: standard input cannot be read by every rank: give the schedule as a file"
    if [ $RC -eq 2 ] && [ ! -e "$TMP/launched" ] && [ "$(head -1 "$TMP/err")" = "$want" ]; then
        ok "run - is refused before mpirun starts"
    else not_ok "run - is refused before mpirun starts" "exit $RC: $(head -1 "$TMP/err")"; fi
    # The good values still launch: the fake mpirun runs (and exits 0 without ranks).
    rm -f "$TMP/launched"
    MEMLIFE_MPIRUN="$TMP/mpirun" MEMLIFE_HOST_MEM_LIMIT=2GiB "$MEMLIFE" run $SEED --backend host --ranks 2 >"$TMP/out" 2>"$TMP/err"
    if [ -e "$TMP/launched" ]; then ok "MEMLIFE_HOST_MEM_LIMIT=2GiB is accepted and mpirun starts"; else
        not_ok "MEMLIFE_HOST_MEM_LIMIT=2GiB is accepted and mpirun starts" "$(head -2 "$TMP/err")"; fi
fi
