#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/comm_view.sh — the predicted communicator view against the measured one, one line per
# NCCL setting, in the single-process launch mode (the communicator does not depend on it).
# tests: 7
# The view's GPU kind from nvidia-smi (gpu_kind: H100 80GB -> h100-80gb, H200 -> h200).
# Expected (analyzer/predict/commmodel.c, NCCL 2.28.3 on H200): the communicator memlife measures
# (cudaMemGetInfo after the warm-up minus before ncclCommInit*) within 2 MiB of the predicted
# total, and its init stage within 2 MiB of the predicted init. At world 1: default 580 MiB;
# NCCL_MAX_NCHANNELS=2 208; NCCL_RUNTIME_CONNECT=0 1092; NCCL_BUFFSIZE=1048576 580;
# NCCL_LL128_BUFFSIZE=1048576 580; NCCL_WORK_FIFO_BYTES=4194304 580; NCCL_RUNTIME_CONNECT=0 with
# NCCL_BUFFSIZE=1048576 708 (the proxy's shared buffer at 128 KiB chunks). At world 2:
# 388 MiB at init, 862 after the first AllReduce (2 x H200, one process). On H100 80GB each world
# init is 6 MiB more (the library's 198 MiB: 586, 214, 1098, 714 at world 1).
source "$(dirname "$0")/lib.bash"

settings=("" NCCL_MAX_NCHANNELS=2 NCCL_RUNTIME_CONNECT=0 NCCL_BUFFSIZE=1048576
          NCCL_LL128_BUFFSIZE=1048576 NCCL_WORK_FIFO_BYTES=4194304
          "NCCL_RUNTIME_CONNECT=0 NCCL_BUFFSIZE=1048576")
if ! gpu_ready; then
    for s in "${settings[@]}"; do gpu_skip "communicator ${s:-default}"; done
    exit 0
fi
KIND=$(gpu_kind)
if [ -z "$KIND" ]; then
    GPU_WHY="no measured constant for this GPU ($(nvidia-smi --query-gpu=name --format=csv,noheader -i 0))"
    for s in "${settings[@]}"; do gpu_skip "communicator ${s:-default}"; done
    exit 0
fi
k=0
for s in "${settings[@]}"; do
    name="communicator ${s:-default}"
    # The settings for this run only: exported, then unset again.
    for kv in $s; do export "${kv?}"; done
    gpu_run single "comm_$k" schedules/seed/03_rs_ag_naive.yaml --gpu "$KIND"
    for kv in $s; do unset "${kv%%=*}"; done
    if [ "$RC" -ne 0 ]; then
        echo "not ok - $name: exit $RC"; gpu_show_err
    else
        python3 - "$JSON" "$name" <<'PY'
import json, sys
MiB = 1 << 20
d = json.load(open(sys.argv[1]))["schedules"][0]
pred, meas = d["communicator"], d["ranks"][0]["measured"]
stages = {s["stage"]: s["bytes"] for s in meas.get("communicator_stages", [])}
pi, pt = pred["stages"][0]["bytes"], pred["total"]
mi, mt = stages.get("init", -1), meas["communicator_bytes"]
line = "predicted %.3f MiB (init %.3f), measured %.3f MiB (init %.3f; %s), %d channels" % (
    pt / MiB, pi / MiB, mt / MiB, mi / MiB,
    ", ".join("%s %.0f" % (k, v / MiB) for k, v in stages.items()), pred["channels"])
ok = abs(pt - mt) <= 2 * MiB and abs(pi - mi) <= 2 * MiB
print(("ok - %s: %s" if ok else "not ok - %s: %s: more than 2 MiB apart") % (sys.argv[2], line))
PY
    fi
    k=$((k + 1))
done
