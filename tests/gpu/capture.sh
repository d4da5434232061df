#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests: 7
# memlife capture on one GPU (make test-gpu): --on cuda records PyTorch's caching allocator, so
# the captured schedule's torch view must replay memory_allocated and memory_reserved exactly
# (memlife check holds the allocator's own numbers); --on fake must come within 0.5% of those
# peaks on the same program (the virtual device's rules, docs/capture.md).
cd "$(dirname "$0")/../.." || exit 2
MEMLIFE=${MEMLIFE:-$PWD/${BUILD:-build}/memlife}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
names=("capture cuda linear check" "capture cuda gpt fsdp check" "capture cuda gpt fsdp_ac check"
       "capture fake vs cuda gpt fsdp" "capture fake vs cuda gpt fsdp_ac" "capture cuda ddp check"
       "capture fake vs cuda gpt ddp")
if ! nvidia-smi -L >/dev/null 2>&1 || ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    for n in "${names[@]}"; do echo "skip - $n: no GPU with PyTorch"; done
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SIZE=(--set D=512 --set L=2 --set S=512 --set MBS=2 --set H=8)

exact() {   # NAME ARGS...: capture --on cuda, then check
    local name=$1
    shift
    if timeout 300 "$MEMLIFE" capture "$@" --on cuda -o "$tmp/c.yaml" -q 2>"$tmp/err" &&
        timeout 120 "$MEMLIFE" check "$tmp/c.yaml" -q 2>>"$tmp/err"; then
        echo "ok - $name: allocated and reserved exact at every event"
    else
        echo "not ok - $name: $(head -c 400 "$tmp/err")"
    fi
}
exact "${names[0]}" tests/capture/programs/linear.py --world 4
exact "${names[1]}" tests/capture/programs/gpt.py --world 8 --set MODE=fsdp "${SIZE[@]}"
exact "${names[2]}" tests/capture/programs/gpt.py --world 8 --set MODE=fsdp_ac "${SIZE[@]}"

peaks() {   # YAML -> "allocated reserved"
    "$MEMLIFE" predict "$1" --format json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["schedules"][0]["ranks"][0]["torch"]
print(r["allocated"]["peak"], r["reserved"]["peak"])'
}
close() {   # NAME MODE: fake within 0.5% of cuda
    local name=$1 mode=$2
    for on in cuda fake; do
        timeout 300 "$MEMLIFE" capture tests/capture/programs/gpt.py --world 8 --set MODE="$mode" \
            "${SIZE[@]}" --on $on -o "$tmp/$on.yaml" -q 2>"$tmp/err" || break
    done
    read -r ca cr < <(peaks "$tmp/cuda.yaml")
    read -r fa fr < <(peaks "$tmp/fake.yaml")
    if [ -n "${ca:-}" ] && [ -n "${fa:-}" ] && python3 -c "
import sys; ca, cr, fa, fr = map(int, sys.argv[1:])
sys.exit(0 if abs(fa - ca) <= ca * 0.005 and abs(fr - cr) <= cr * 0.005 else 1)" "$ca" "$cr" "$fa" "$fr"; then
        echo "ok - $name: allocated $fa vs $ca, reserved $fr vs $cr (within 0.5%)"
    else
        echo "not ok - $name: allocated ${fa:-?} vs ${ca:-?}, reserved ${fr:-?} vs ${cr:-?}: $(head -c 300 "$tmp/err")"
    fi
}
close "${names[3]}" fsdp
close "${names[4]}" fsdp_ac
# DistributedDataParallel on a real group at world 1 (its memory does not depend on the world)
exact "${names[5]}" tests/capture/programs/gpt.py --world 1 --group nccl --set MODE=ddp "${SIZE[@]}"
# ... and on the fake group at world 8, the virtual device against the GPU
close "${names[6]}" ddp
