#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/capture_gpu_truth.sh — on a machine with one GPU and PyTorch: the ground truth that
# memlife capture is held to. For each program configuration it captures rank 0 of world W
# --on cuda (the caching allocator's own trace: the truth, with the real step's peaks in the
# header) and --on fake (the virtual device, as on a CPU), and runs PyTorch's FSDPMemTracker on
# the same step. Everything goes into one tarball, $OUT/capture.tar.gz (default /tmp).
# tests/capture/compare.py reads it.
set -u
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
dir=$(mktemp -d)
P=tests/capture/programs/gpt.py
SIZE=${SIZE:-"--set D=1024 --set L=4 --set S=1024 --set MBS=2 --set H=16"}
py=${PYTHON:-python3}
$py -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' | tee "$dir/machine.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$dir/machine.txt" 2>&1
for mode in ${MODES:-fsdp fsdp_ac}; do
    for w in ${WORLDS:-1 8 64}; do
        for on in cuda fake; do
            t0=$SECONDS
            # shellcheck disable=SC2086
            timeout 300 $py -m memlife capture $P --world "$w" --on $on --set MODE=$mode $SIZE \
                -o "$dir/${on}_${mode}_w$w.json" 2>"$dir/${on}_${mode}_w$w.err"
            echo "capture --on $on MODE=$mode world $w: exit $? in $((SECONDS - t0)) s"
        done
        # shellcheck disable=SC2086
        timeout 300 $py tests/capture/peer_tracker.py $P --world "$w" --set MODE=$mode $SIZE \
            >>"$dir/tracker.jsonl" 2>>"$dir/tracker.err"
    done
done
# DistributedDataParallel: a real group at world 1 (its communication hook needs one; its memory
# does not depend on the world size).
# shellcheck disable=SC2086
timeout 300 $py -m memlife capture $P --world 1 --group nccl --on cuda --set MODE=ddp $SIZE \
    -o "$dir/cuda_ddp_w1.json" 2>"$dir/cuda_ddp_w1.err"
echo "capture --on cuda MODE=ddp world 1 (nccl): exit $?"
tar czf "$OUT/capture.tar.gz" -C "$dir" .
ls -la "$OUT/capture.tar.gz"
