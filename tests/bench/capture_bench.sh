#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife capture at the scale of a real program (part of make bench): a 7-billion-parameter
# GPT-style FSDP2 step (tests/capture/programs/gpt.py: 32 blocks of 12 x 4096^2 parameters, bf16
# compute, Adam) as rank 0 of world 64, captured on the virtual device (no GPU), then predicted.
# Targets: the capture in at most 60 s of wall time, the prediction of its schedule in at most
# 1 s of CPU time (both on the 2-core CPU machine). Then the same step captured at MBS 1, 2, 4
# (--vary) and `fit --vary MBS --budget 80GiB --gpu h100-80gb` on it: the whole search (a
# prediction in the torch view under the limit per value tried; MBS only in sizes, so one
# expansion and lint serve them all) in at most 1 s of CPU time.
cd "$(dirname "$0")/../.." || exit 2
[ -x .venv/bin/python ] && export PATH="$PWD/.venv/bin:$PATH"
if ! python3 -c 'import torch' 2>/dev/null; then
    echo "skip - capture benchmark: no python3 with torch (make deps)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s.%N)
./memlife capture tests/capture/programs/gpt.py --world 64 --set D=4096 --set L=32 --set H=32 \
    --set S=4096 --set MBS=1 -o "$tmp/7b.yaml" -q || exit 1
t1=$(date +%s.%N)
/usr/bin/time -f '%U %S' -o "$tmp/time" ./memlife predict "$tmp/7b.yaml" --format json -o /dev/null || true
read -r u s <"$tmp/time"
steps=$(grep -c '^ *- ' "$tmp/7b.yaml")
awk -v a="$t0" -v b="$t1" -v u="$u" -v s="$s" -v n="$steps" 'BEGIN {
    w = b - a; c = u + s
    printf "%s - capture of a 7B FSDP2 step at world 64 on the virtual device: %.1f s wall (target <= 60)\n",
           (w <= 60) ? "PASS" : "FAIL", w
    printf "%s - predict of that schedule (%d steps): %.2f s CPU (target <= 1)\n",
           (c <= 1) ? "PASS" : "FAIL", n, c }'
./memlife capture tests/capture/programs/gpt.py --world 64 --set D=4096 --set L=32 --set H=32 \
    --set S=4096 --vary MBS=1,2,4 -o "$tmp/7bv.yaml" -q || exit 1
/usr/bin/time -f '%U %S' -o "$tmp/time" ./memlife fit "$tmp/7bv.yaml" --vary MBS --budget 80GiB \
    --gpu h100-80gb --format json -o "$tmp/fit.json" || true
read -r u s <"$tmp/time"
value=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["value"])' "$tmp/fit.json" 2>/dev/null)
awk -v u="$u" -v s="$s" -v v="${value:-?}" 'BEGIN { c = u + s
    printf "%s - fit of the 7B step (MBS at 80 GiB on an H100, world 64: %s): %.2f s CPU (target <= 1)\n",
           (c <= 1 && v != "?") ? "PASS" : "FAIL", v, c }'
