#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/async_pool.sh — the seed lifetimes under --allocator async (cudaMallocAsync from a
# pool of memlife's own, release threshold 0).
# tests: 16
# Per run two lines: requested steady/peak exactly the seed's (256/256, 128/384, 256/640, 256/384
# MiB at world 2) with the pool's used high-water mark equal to the peak; then whether the device
# view still equals the cudaMalloc page model (the pool maps its own granules: a difference here
# is a finding about the pool, reported, not hidden).
source "$(dirname "$0")/lib.bash"

if ! gpu_ready; then
    for mode in $GPU_MODES; do
        while read -r f _; do
            gpu_skip "$mode async $f" "$mode async $f device view = prediction"
        done < <(gpu_seed_lifetimes)
    done
    exit 0
fi
# One run of the four files per mode (each file is warmed up and measured on its own; the
# communicator is made once): schedule k of the report is the k-th file.
for mode in $GPU_MODES; do
    files=()
    while read -r f _; do files+=("schedules/seed/$f.yaml"); done < <(gpu_seed_lifetimes)
    gpu_run "$mode" async_seed "${files[@]}" --allocator async
    k=0
    while read -r f steady peak; do
        gpu_check async "$mode async $f" "$RC" "$JSON#$k" "$GPU_WORLD" "$steady" "$peak"
        k=$((k + 1))
    done < <(gpu_seed_lifetimes)
done
