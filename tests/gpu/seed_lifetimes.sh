#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/seed_lifetimes.sh — the chapter's four lifetimes on real GPUs, both launch modes.
# tests: 8
# Expected (requested view, M = 256 MiB, world 2; PyTorch 2.11 + NCCL 2.28.9 on 2 x H200,
# DESIGN.md): AllReduce 256/256, RS only 128/384, naive RS+AG 256/640, optimized RS+AG 256/384
# MiB steady/peak, exactly on every rank; the device view (cudaMemGetInfo after the warm-up
# baseline) equal to the predicted device page model on every rank.
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
