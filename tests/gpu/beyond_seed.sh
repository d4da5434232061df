#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/beyond_seed.sh — lifetimes beyond the chapter, both launch modes.
# tests: 6
#   inplace_rs_ag.yaml: RS in place then AG in place on one buffer: 256/256 MiB (M / M).
#   chunked_rs_only.yaml --allocator chunked: VMM chunks, in-place RS, release the chunks not
#     owned: 128/256 MiB at world 2 (M/N / M; measured on H200 x 2, DESIGN.md).
#   page_stress.yaml: sub-MiB, 1 MiB + 1 and odd sizes: device view measured = predicted (the
#     page model by hand: 14 MiB peak), requested exact.
source "$(dirname "$0")/lib.bash"

if ! gpu_ready; then
    for mode in $GPU_MODES; do
        gpu_skip "$mode inplace_rs_ag" "$mode chunked_rs_only" "$mode page_stress"
    done
    exit 0
fi
shard=$((256 / GPU_WORLD))
for mode in $GPU_MODES; do
    gpu_run "$mode" inplace_rs_ag schedules/inplace_rs_ag.yaml
    gpu_check lifetime "$mode inplace_rs_ag" "$RC" "$JSON" "$GPU_WORLD" 256 256
    gpu_run "$mode" chunked_rs_only schedules/chunked_rs_only.yaml --allocator chunked
    gpu_check lifetime "$mode chunked_rs_only" "$RC" "$JSON" "$GPU_WORLD" "$shard" 256
    gpu_run "$mode" page_stress schedules/page_stress.yaml
    gpu_check device "$mode page_stress" "$RC" "$JSON" "$GPU_WORLD"
done
