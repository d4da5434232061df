#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/equiv_cuda.sh — `memlife equiv` with data through NCCL on GPU_WORLD GPUs (default 2).
# tests: 4 per mode
# Expected: direct vs naive RS+AG (256 MiB float32 rank_iota): rows 1 and 2 hold, 3 and 4 do not
# (exit 1; requested peak 256 vs 640 MiB at world 2, DESIGN.md's H200 numbers); the 20-element
# int64 contracts: the shard scaled between RS and AG fails row 1 at 41:9 (first difference below,
# by world); random float32 (16 MiB):
# the report says whether NCCL's AllReduce and RS+AG agree bitwise and the largest differences,
# and row 1 holds within float32's default tolerance. The line shows what was measured.
# --kernels (64 MiB): CUPTI counts each plan's kernels on every rank's GPU between its warm-up and
# its end: 1 AllReduce kernel per rank for direct against 1 ReduceScatter + 1 AllGather for naive
# (the chapter's Nsight count per iteration; none at world 1), measured = expected; the line shows
# the names. Rows at world 1 as at 2: communication holds (0 ring steps either way), structure
# (1 vs 2 calls) and state (peak 256 vs 768 MiB) do not.
source "$(dirname "$0")/lib.bash"

cases=("equiv direct vs naive" "equiv scaled shard" "equiv random float32" "equiv kernels")
if ! gpu_ready; then
    for mode in $GPU_MODES; do gpu_skip "${cases[@]/#/$mode }"; done
    exit 0
fi
E=schedules/equiv
equiv() {   # equiv MODE NAME ARGS...: JSON in $RESULTS/MODE/NAME.json, exit code in RC
    local mode=$1 name=$2
    shift 2
    mkdir -p "$RESULTS/$mode"
    JSON=$RESULTS/$mode/$name.json
    if [ "$mode" = mpi ]; then
        timeout "$STEP_TIMEOUT" mpirun --allow-run-as-root --oversubscribe -np "$GPU_WORLD" \
            "$MEMLIFE" equiv "$@" --backend cuda --format json -o "$JSON" \
            </dev/null >"$RESULTS/$mode/$name.out" 2>"$RESULTS/$mode/$name.err"
    else
        timeout "$STEP_TIMEOUT" "$MEMLIFE" equiv "$@" --backend cuda --gpus "$GPU_WORLD" \
            --format json -o "$JSON" </dev/null >"$RESULTS/$mode/$name.out" 2>"$RESULTS/$mode/$name.err"
    fi
    RC=$?
}
verdict() {   # verdict NAME FILTER: ok when jq's FILTER is true on $JSON and RC is 1
    local got
    got=$(jq -r "$2" "$JSON" 2>&1)
    if [ "$RC" -eq 1 ] && [ "$got" = true ]; then echo "ok - $1"
    else echo "not ok - $1: exit $RC, $(echo "$got" | head -2 | tr '\n' ' ') $(head -2 "${JSON%.json}.err" | tr '\n' ' ')"; fi
}
# Element i of the sum of rank_iota (100 r + i) over N ranks is 50 N (N-1) + N i; scaled by 2
# it doubles. The first difference is element 0 where that is not 0 (N >= 2: 100 vs 200 at 2,
# 600 vs 1200 at 4, 2800 vs 5600 at 8), else element 1 (N = 1: 1 vs 2).
if [ "$GPU_WORLD" -ge 2 ]; then
    e0=$((50 * GPU_WORLD * (GPU_WORLD - 1)))
    scaled_first="element 0: $e0 vs $((2 * e0))"
else
    scaled_first="element 1: 1 vs 2"
fi
# Kernels per rank: one per call, none at world 1 (NCCL launches no kernel for one rank: measured
# with CUPTI on one H200, NCCL 2.28.3; equiv_kernels_expected).
if [ "$GPU_WORLD" -ge 2 ]; then
    kern_a=1 kern_b=2 by_a='{"all_reduce": 1}' by_b='{"reduce_scatter": 1, "all_gather": 1}'
    kern_text='; kernels per rank: expected 1 vs 2, measured 1 vs 2 (ncclDevKernel_AllReduce_'
else
    kern_a=0 kern_b=0 by_a='{}' by_b='{}'
    kern_text='; kernels per rank: expected 0 vs 0, measured 0 vs 0 (no kernels | no kernels)'
fi
for mode in $GPU_MODES; do
    equiv "$mode" dvn "$E/direct_vs_naive.yaml" --world "$GPU_WORLD"
    verdict "$mode equiv direct vs naive" \
        '[.rows[].verdict] == ["holds", "holds", "does not hold", "does not hold"] and .provenance.nccl_version != null'
    equiv "$mode" scaled "$E/contracts.yaml:direct" "$E/contracts.yaml:scaled_shard" --world "$GPU_WORLD"
    verdict "$mode equiv scaled shard ($scaled_first)" \
        '.causes[0].code == "shard_changed" and .causes[0].line == 41 and .ranks[0].data.first_difference == "'"$scaled_first"'"'
    equiv "$mode" float "$E/random_float.yaml" --world "$GPU_WORLD"
    seen=$(jq -r '[.ranks[].data] | "bitwise equal on \([.[] | select(.bitwise_equal)] | length) ranks, \(map(.differ_bitwise) | add) elements differ, max abs \(map(.max_abs) | max), max rel \(map(.max_rel) | max)"' "$JSON" 2>/dev/null)
    verdict "$mode equiv random float32 ($seen)" \
        '.rows[0].verdict == "holds" and ([.ranks[].data | .differ_beyond_tolerance == 0 and (.bitwise_equal == (.differ_bitwise == 0))] | all)'
    equiv "$mode" kernels "$E/direct_vs_naive.yaml" --world "$GPU_WORLD" --set M=64MiB --kernels
    seen=$(jq -r '.rows[2].detail | sub("^.*; kernels"; "kernels")' "$JSON" 2>/dev/null)
    verdict "$mode equiv kernels ($seen)" \
        '.kernels.measured and ([.ranks[] | .a.kernels_measured.by_collective == '"$by_a"' and
          .b.kernels_measured.by_collective == '"$by_b"' and
          .a.kernels_expected == '"$kern_a"' and .b.kernels_expected == '"$kern_b"'] | length == '"$GPU_WORLD"' and all) and
         (.rows[2].detail | contains("'"$kern_text"'")) and
         [.rows[].verdict] == ["holds", "holds", "does not hold", "does not hold"]'
done
exit 0
