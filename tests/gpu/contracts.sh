#!/usr/bin/env bash
# tests/gpu/contracts.sh — the chapter's five data contracts with int64 data through NCCL.
# tests: 4
# Expected: every contract passes on every rank: 10 rank rows at world 2 (the chapter: 20 at
# world 4 on V100; 5 contracts PASS on 2 x H200, DESIGN.md). Data is written with cudaMemcpy and
# copied back for the checks. Second line per mode: every run exits 0 (its memory expectations,
# device view included, hold).
source "$(dirname "$0")/lib.bash"

files=(05_contract_exact_sum 05_contract_wrong_shard_order 05_contract_wrong_op
       05_contract_padding_trim 05_contract_nondivisible)
if ! gpu_ready; then
    for mode in $GPU_MODES; do gpu_skip "$mode contracts" "$mode contracts exit 0"; done
    exit 0
fi
for mode in $GPU_MODES; do
    jsons=() bad=""
    for f in "${files[@]}"; do
        gpu_run "$mode" "$f" "schedules/seed/$f.yaml"
        jsons+=("$JSON")
        if [ "$RC" -ne 0 ]; then
            bad="${bad:+$bad, }$f exit $RC"
            bad_err=$ERR bad_rc=$RC
        fi
    done
    gpu_check contracts "$mode contracts" "$GPU_WORLD" "${jsons[@]}"
    if [ -z "$bad" ]; then
        echo "ok - $mode contracts exit 0"
    else
        echo "not ok - $mode contracts exit 0: $bad"
        ERR=$bad_err RC=$bad_rc gpu_show_err
    fi
done
