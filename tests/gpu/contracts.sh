#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/contracts.sh — the chapter's five data contracts with int64 data through NCCL.
# tests: 4 (+1 at a world that some contract files refuse)
# Expected: every contract that GPU_WORLD admits passes on every rank: 5 x N rank rows at
# N = 2, 4, 8 (10, 20, 40; the chapter: 20 at world 4 on V100; 10 on 2 x H200, docs/design.md).
# At N = 1 the wrong-order and wrong-op files need two ranks and the nondivisible one a world
# that does not divide 1003 (their `requires:`): memlife refuses them with `schedule needs ...
# (world is 1)`, exit 2, and the other two give 2 x 1 = 2 rank rows (gpu_check.py CONTRACTS).
# Data is written with cudaMemcpy and copied back for the checks. Second line per mode: every
# run exits 0 (its memory expectations, device view included, hold).
source "$(dirname "$0")/lib.bash"

all=(05_contract_exact_sum.yaml 05_contract_wrong_shard_order.yaml 05_contract_wrong_op.yaml
     05_contract_padding_trim.yaml 05_contract_nondivisible.yaml)
if ! gpu_ready; then
    for mode in $GPU_MODES; do gpu_skip "$mode contracts" "$mode contracts exit 0"; done
    exit 0
fi
# The files this world admits; the others must be refused by their requires: (no GPU needed).
files=() refused=()
for f in "${all[@]}"; do
    why=$("$MEMLIFE" check --quiet --world "$GPU_WORLD" "schedules/seed/$f" 2>&1 >/dev/null)
    if printf '%s\n' "$why" | grep -q "error: schedule needs .* (world is $GPU_WORLD)"; then
        refused+=("$f: ${why#*error: }")
    else
        files+=("$f")
    fi
done
if [ "${#refused[@]}" -gt 0 ]; then
    echo "ok - contracts refused at world $GPU_WORLD by requires: $(printf '%s; ' "${refused[@]}")"
fi
# One run of the admitted files per mode (each measured on its own; one communicator).
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
