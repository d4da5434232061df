#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ranks' shared expansions against the reference pass (analyzer/pipeline/rankshare.h): each
# schedule through predict (JSON), check and trace as memlife runs them, and again with
# MEMLIFE_NO_SHARE=1 (every rank expanded, linted and predicted on its own); stdout, stderr and
# the exit code must be the same bytes. The schedules take every way of sharing: identical ranks
# (schedules/seed, most of schedules/training), offsets only (training/zero.yaml,
# inplace_rs_ag.yaml, tests/bench/gen.c's training), `when:` groups with subset members (the
# comms and races files below, gen.c's mix, at its own world and at 8, and gen_mesh.c's 2-D
# mesh), one rank at a time (pipeline_1f1b.yaml, chunked_rs_only.yaml, sends and receives). The
# unit tests (test_rankshare.c, test_compact.c) check that the variable does take every rank
# alone.
. "$(dirname "$0")/lib.bash"

CC=${CC:-cc}
if ! "$CC" -O2 -o "$TMP/gen" tests/bench/gen.c ||
    ! "$CC" -O2 -o "$TMP/gen_mesh" tests/bench/gen_mesh.c; then
    not_ok "rankshare reference: the generators build" "$CC failed"
    exit 0
fi
"$TMP/gen" 3000 >"$TMP/mix.yaml"
"$TMP/gen" 3000 training >"$TMP/training.yaml"
"$TMP/gen_mesh" 3000 >"$TMP/mesh.yaml"

files=(schedules/seed/*.yaml schedules/training/*.yaml schedules/inplace_rs_ag.yaml
    schedules/chunked_rs_only.yaml
    tests/cli/comms/ends_early.yaml tests/cli/comms/order_ok.yaml
    tests/cli/comms/order_deadlock.yaml tests/cli/comms/p2p_pair_ok.yaml
    tests/cli/comms/diverge_across_groups.yaml
    tests/races/clean/reduce_non_root_reads.yaml tests/races/race/reduce_to_root.yaml
    tests/gpu/schedules/stall_rank0_only.yaml
    "$TMP/mix.yaml" "$TMP/training.yaml" "$TMP/mesh.yaml")

# same NAME ARGS...: memlife ARGS shared and alone, byte for byte; the shared run's output must
# not be empty (a command that printed nothing compares nothing).
same() {
    local name=$1
    shift
    "$MEMLIFE" "$@" >"$TMP/a.out" 2>"$TMP/a.err"
    local ra=$?
    MEMLIFE_NO_SHARE=1 "$MEMLIFE" "$@" >"$TMP/b.out" 2>"$TMP/b.err"
    local rb=$?
    if [ "$ra" != "$rb" ]; then
        not_ok "$name" "exit $ra shared, $rb alone"
    elif ! cmp -s "$TMP/a.out" "$TMP/b.out"; then
        not_ok "$name" "stdout differs: $(diff "$TMP/a.out" "$TMP/b.out" | head -3 | tr '\n' '|')"
    elif ! cmp -s "$TMP/a.err" "$TMP/b.err"; then
        not_ok "$name" "stderr differs: $(diff "$TMP/a.err" "$TMP/b.err" | head -3 | tr '\n' '|')"
    elif [ ! -s "$TMP/a.out" ] && [ ! -s "$TMP/a.err" ]; then
        not_ok "$name" "no output at all (exit $ra)"
    else
        ok "$name"
    fi
}

for f in "${files[@]}"; do
    name=${f#"$TMP"/}
    same "rankshare reference: predict --format json $name" predict --format json "$f"
    same "rankshare reference: check $name" check "$f"
    same "rankshare reference: trace $name" trace -o - "$f"
done
same "rankshare reference: predict --format json mix.yaml --world 8" \
    predict --format json --world 8 "$TMP/mix.yaml"
same "rankshare reference: check mix.yaml --world 8" check --world 8 "$TMP/mix.yaml"
