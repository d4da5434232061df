#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/optimize_seed.sh — the seed schedules rewritten by `memlife optimize`, run on real GPUs
# in both launch modes: measured = predicted, and the optimized numbers themselves.
# tests: 12
# Expected (requested view, M = 256 MiB, world 2), steady/peak MiB after `memlife optimize`:
#   01 AllReduce            256/256  (already at its floor; nothing to rewrite)
#   02 RS only              128/256  (in place, then chunked release: M/N / M; docs/design.md measured
#                                     the chunked release on H200 x 2: 256 MiB peak, then 128 MiB)
#   03 naive RS+AG          256/256  (lifetimes 640 -> 384, then in place -> 256: one buffer)
#   04 optimized RS+AG      256/256  (in place)
# and schedules/optimize/rs_{ag,only}_checked.yaml (int64 data with checks) rewritten: measured =
# predicted on every rank in both views, and their check rows pass.
# Each input is optimized without its `expect:` block: optimize keeps a user's budget as written
# (docs/optimize.md), so the rewritten file would fail its old expectations by design; what is
# checked here is the run against the numbers above and against the prediction.
source "$(dirname "$0")/lib.bash"

# without_expect SRC DST: SRC with its top-level `expect:` mapping left out.
without_expect() {
    awk '/^expect:/ { skip = 1; next } skip && /^[^ #]/ { skip = 0 } !skip' "$1" >"$2"
}

optimized_seed() {
    local m=256 s=$((256 / GPU_WORLD))
    echo "01_allreduce_full $m $m"
    echo "02_rs_only $s $m"
    echo "03_rs_ag_naive $m $m"
    echo "04_rs_ag_optimized $m $m"
}

if ! gpu_ready; then
    for mode in $GPU_MODES; do
        while read -r f _; do gpu_skip "$mode optimized seed $f"; done < <(optimized_seed)
        gpu_skip "$mode optimized rs_ag_checked" "$mode optimized rs_only_checked"
    done
    exit 0
fi
OPT=$RESULTS/optimized
mkdir -p "$OPT/src"
for f in 01_allreduce_full 02_rs_only 03_rs_ag_naive 04_rs_ag_optimized; do
    without_expect "schedules/seed/$f.yaml" "$OPT/src/$f.yaml"
done
for f in rs_ag_checked rs_only_checked; do
    without_expect "schedules/optimize/$f.yaml" "$OPT/src/$f.yaml"
done
for mode in $GPU_MODES; do
    while read -r f steady peak; do
        if ! "$MEMLIFE" optimize "$OPT/src/$f.yaml" --world "$GPU_WORLD" -o "$OPT/$f.yaml" \
            --format md >"$OPT/$f.md" 2>&1; then
            echo "not ok - $mode optimized seed $f: memlife optimize failed: $(head -1 "$OPT/$f.md")"
            continue
        fi
        # optimize writes nothing when it keeps no rewrite (the AllReduce is at its floor
        # already): the schedule as written is then the optimized one
        run_file=$OPT/$f.yaml
        [ -f "$run_file" ] || run_file=$OPT/src/$f.yaml
        gpu_run "$mode" "optimized_$f" "$run_file"
        gpu_check lifetime "$mode optimized seed $f" "$RC" "$JSON" "$GPU_WORLD" "$steady" "$peak"
    done < <(optimized_seed)
    for f in rs_ag_checked rs_only_checked; do
        # n = 1 Mi int64 per rank: at world 2 a shard is 4 MiB, whole pages for the chunked release
        "$MEMLIFE" optimize "$OPT/src/$f.yaml" --world "$GPU_WORLD" -o "$OPT/$f.yaml" \
            --format md >"$OPT/$f.md" 2>&1
        gpu_run "$mode" "optimized_$f" "$OPT/$f.yaml"
        gpu_check device "$mode optimized $f" "$RC" "$JSON" "$GPU_WORLD"
    done
done
