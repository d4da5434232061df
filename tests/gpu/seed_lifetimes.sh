#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/seed_lifetimes.sh — the chapter's four lifetimes on real GPUs, both launch modes.
# tests: 8
# Expected (requested view, M = 256 MiB, world N = GPU_WORLD): AllReduce M/M, RS only
# M/N / M+M/N, naive RS+AG M / 2M+M/N, optimized RS+AG M / M+M/N steady/peak, exactly on every
# rank (lib.bash gpu_seed_lifetimes: 256/256, 256/512, 256/768, 256/512 MiB at N = 1;
# 256/256, 128/384, 256/640, 256/384 at N = 2, as PyTorch 2.11 on 2 x H200); the device view
# (cudaMemGetInfo after the warm-up baseline) equal to the predicted device page model.
source "$(dirname "$0")/lib.bash"

if ! gpu_ready; then
    for mode in $GPU_MODES; do
        while read -r f _; do gpu_skip "$mode seed $f"; done < <(gpu_seed_lifetimes)
    done
    exit 0
fi
for mode in $GPU_MODES; do
    while read -r f steady peak; do
        gpu_run "$mode" "$f" "schedules/seed/$f.yaml"
        gpu_check lifetime "$mode seed $f" "$RC" "$JSON" "$GPU_WORLD" "$steady" "$peak"
    done < <(gpu_seed_lifetimes)
done
