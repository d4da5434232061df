#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/equiv_cuda.sh — `memlife equiv` with data through NCCL on GPU_WORLD GPUs (default 2).
# tests: 4 per mode
# Expected: direct vs naive RS+AG (256 MiB float32 rank_iota): rows 1 and 2 hold, 3 and 4 do not
# (exit 1; requested peak 256 vs 640 MiB at world 2, DESIGN.md's H200 numbers); the 20-element
# int64 contracts: the shard scaled between RS and AG fails row 1 at 41:9 (element 0 is the sum
# 0 + 100 = 100 over 2 ranks, 200 scaled; 600 vs 1200 at world 4); random float32 (16 MiB):
# the report says whether NCCL's AllReduce and RS+AG agree bitwise and the largest differences,
# and row 1 holds within float32's default tolerance. The line shows what was measured.
# --kernels (64 MiB): CUPTI counts each plan's kernels on every rank's GPU between its warm-up and
# its end: 1 AllReduce kernel per rank for direct against 1 ReduceScatter + 1 AllGather for naive
# (the chapter's Nsight count per iteration), measured = expected; the line shows the names.
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
for mode in $GPU_MODES; do
    equiv "$mode" dvn "$E/direct_vs_naive.yaml" --world "$GPU_WORLD"
    verdict "$mode equiv direct vs naive" \
        '[.rows[].verdict] == ["holds", "holds", "does not hold", "does not hold"] and .provenance.nccl_version != null'
    equiv "$mode" scaled "$E/contracts.yaml:direct" "$E/contracts.yaml:scaled_shard" --world "$GPU_WORLD"
    verdict "$mode equiv scaled shard" \
        '.causes[0].code == "shard_changed" and .causes[0].line == 41 and .ranks[0].data.first_difference == "element 0: 100 vs 200"'
    equiv "$mode" float "$E/random_float.yaml" --world "$GPU_WORLD"
    seen=$(jq -r '[.ranks[].data] | "bitwise equal on \([.[] | select(.bitwise_equal)] | length) ranks, \(map(.differ_bitwise) | add) elements differ, max abs \(map(.max_abs) | max), max rel \(map(.max_rel) | max)"' "$JSON" 2>/dev/null)
    verdict "$mode equiv random float32 ($seen)" \
        '.rows[0].verdict == "holds" and ([.ranks[].data | .differ_beyond_tolerance == 0 and (.bitwise_equal == (.differ_bitwise == 0))] | all)'
    equiv "$mode" kernels "$E/direct_vs_naive.yaml" --world "$GPU_WORLD" --set M=64MiB --kernels
    seen=$(jq -r '.rows[2].detail | sub("^.*; kernels"; "kernels")' "$JSON" 2>/dev/null)
    verdict "$mode equiv kernels ($seen)" \
        '.kernels.measured and ([.ranks[] | .a.kernels_measured.by_collective == {"all_reduce": 1} and
          .b.kernels_measured.by_collective == {"reduce_scatter": 1, "all_gather": 1} and
          .a.kernels_expected == 1 and .b.kernels_expected == 2] | length == '"$GPU_WORLD"' and all) and
         (.rows[2].detail | contains("; kernels per rank: expected 1 vs 2, measured 1 vs 2 (ncclDevKernel_AllReduce_")) and
         [.rows[].verdict] == ["holds", "holds", "does not hold", "does not hold"]'
done
exit 0
