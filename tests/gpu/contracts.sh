#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/contracts.sh — the chapter's five data contracts with int64 data through NCCL.
# tests: 4
# Expected: every contract passes on every rank: 10 rank rows at world 2 (the chapter: 20 at
# world 4 on V100; 5 contracts PASS on 2 x H200, DESIGN.md). Data is written with cudaMemcpy and
# copied back for the checks. Second line per mode: every run exits 0 (its memory expectations,
# device view included, hold).
source "$(dirname "$0")/lib.bash"

files=(05_contract_exact_sum.yaml 05_contract_wrong_shard_order.yaml 05_contract_wrong_op.yaml
       05_contract_padding_trim.yaml 05_contract_nondivisible.yaml)
if ! gpu_ready; then
    for mode in $GPU_MODES; do gpu_skip "$mode contracts" "$mode contracts exit 0"; done
    exit 0
fi
# One run of the five files per mode (each measured on its own; one communicator).
for mode in $GPU_MODES; do
    gpu_run "$mode" contracts "${files[@]/#/schedules/seed/}"
    gpu_check contracts "$mode contracts" "$GPU_WORLD" "$JSON"
    if [ "$RC" -eq 0 ]; then
        echo "ok - $mode contracts exit 0"
    else
        echo "not ok - $mode contracts exit 0: exit $RC$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import gpu_check; d = gpu_check.first_difference(sys.argv[2]); print("; " + d if d else "")' "$ROOT/tests/gpu" "$JSON")"
        gpu_show_err
    fi
done
