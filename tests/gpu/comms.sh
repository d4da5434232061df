#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/comms.sh — NCCL's memory per communicator on the cuda backend against the view, at
# world 1 in the single-process launch mode: tests/gpu/schedules/comms_w1_share_{false,true}.yaml
# (the world and two splits of it, each then running AllReduce, ReduceScatter, AllGather) under
# the four settings of tests/gpu/fixtures/nccl_split_h100.jsonl, the kind from nvidia-smi
# (gpu_kind). For each: the communicator bytes memlife measures (cudaMemGetInfo after the
# warm-up less before NCCL) within 2 MiB of the view's total, the world's init stage within
# 2 MiB of the view's world init, and each split's stage ("split NAME") within 2 MiB of its init.
# tests: 8
# Expected on H100 80GB (analyzer/predict/commmodel.c; measured with the probe): share false
# 586 + 390 + 388 MiB, true 586 + 260 + 260; NCCL_MAX_NCHANNELS=2 214 + 18 + 16 / 214 + 12 + 12;
# NCCL_RUNTIME_CONNECT=0 1098 + 902 + 900 / 1098 + 260 + 260; NCCL_BUFFSIZE=1048576 as the
# default. On H200 every world init is 6 MiB less (192 MiB for the library, not 198).
GPU_WORLD=1
source "$(dirname "$0")/lib.bash"

settings=("" NCCL_MAX_NCHANNELS=2 NCCL_RUNTIME_CONNECT=0 NCCL_BUFFSIZE=1048576)
names() {
    local s share
    for s in "${settings[@]}"; do
        for share in false true; do echo "communicators ${s:-default}, share $share"; done
    done
}
if ! gpu_ready; then
    while read -r n; do gpu_skip "$n"; done < <(names)
    exit 0
fi
KIND=$(gpu_kind)
if [ -z "$KIND" ]; then
    GPU_WHY="no measured constant for this GPU ($(nvidia-smi --query-gpu=name --format=csv,noheader -i 0))"
    while read -r n; do gpu_skip "$n"; done < <(names)
    exit 0
fi
k=0
for s in "${settings[@]}"; do
    for share in false true; do
        name="communicators ${s:-default}, share $share"
        for kv in $s; do export "${kv?}"; done
        gpu_run single "comms_$k" "tests/gpu/schedules/comms_w1_share_$share.yaml" --gpu "$KIND"
        for kv in $s; do unset "${kv%%=*}"; done
        k=$((k + 1))
        if [ "$RC" -ne 0 ]; then
            echo "not ok - $name: exit $RC"; gpu_show_err
            continue
        fi
        python3 - "$JSON" "$name" <<'PY'
import json, sys
MiB = 1 << 20
d = json.load(open(sys.argv[1]))["schedules"][0]
pred, meas = d["communicator"], d["ranks"][0]["measured"]
stages = {s["stage"]: s["bytes"] for s in meas.get("communicator_stages", [])}
comms = {c["name"]: c for c in pred.get("communicators", [])}
rows = [("total", pred["total"], meas["communicator_bytes"])]
if "world" in comms:
    rows.append(("world init", comms["world"]["stages"][0]["bytes"], stages.get("init", -1)))
for n in ("split1", "split2"):
    if n in comms:
        rows.append((n + " init", comms[n]["stages"][0]["bytes"], stages.get("split " + n, -1)))
bad = [r for r in rows if abs(r[1] - r[2]) > 2 * MiB] + ([("communicators", 0, 0)] if len(comms) != 3 else [])
line = ", ".join("%s predicted %.0f measured %.0f MiB" % (r[0], r[1] / MiB, r[2] / MiB) for r in rows)
print(("not ok - %s: %s: more than 2 MiB apart" if bad else "ok - %s: %s") % (sys.argv[2], line))
PY
    done
done
