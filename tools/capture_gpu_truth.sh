#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/capture_gpu_truth.sh — on a machine with one GPU and PyTorch: the ground truth that
# memlife capture is held to. For each program configuration it captures rank 0 of world W
# --on cuda (the caching allocator's own trace: the truth, with the real step's peaks in the
# header) and --on fake (the virtual device, as on a CPU), and runs PyTorch's FSDPMemTracker (or
# MemTracker) on the same step. Everything goes into one tarball, $OUT/capture.tar.gz (default
# /tmp); tests/capture/compare.py reads it. The runs are separate processes, JOBS at a time
# (default 8): each process's allocator is its own, so running them side by side changes none
# of their numbers.
set -u
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
dir=$(mktemp -d)
G=tests/capture/programs/gpt.py
T=tests/capture/programs/gpt_tp.py
SIZE=${SIZE:-"--set D=1024 --set L=4 --set S=1024 --set MBS=2 --set H=16"}
py=${PYTHON:-python3}
$py -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' | tee "$dir/machine.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$dir/machine.txt" 2>&1
# one line per run: NAME PROGRAM MODE WORLD WHAT(cuda|fake|tracker) [EXTRA ARGS]
jobs=$dir/jobs
: >"$jobs"
for mode in ${MODES:-fsdp fsdp_ac ddp}; do
    for w in ${WORLDS:-1 8 64}; do
        for what in cuda fake tracker; do echo "$G $mode $w $what" >>"$jobs"; done
    done
done
# FSDP2 + tensor parallel on a (dp, tp) mesh of tp 2
for w in ${TP_WORLDS:-8 64}; do
    for what in cuda fake tracker; do echo "$T fsdp_tp $w $what --set TP=2" >>"$jobs"; done
done
# DistributedDataParallel on a real NCCL group at world 1
echo "$G ddp 1 cuda --group nccl" | sed 's/ cuda / cuda_nccl /' >>"$jobs"
export dir py SIZE
# shellcheck disable=SC2016
xargs -P "${JOBS:-8}" -L 1 bash -c '
    prog=$0 mode=$1 w=$2 what=$3; shift 3
    t0=$SECONDS
    case $what in
        tracker)
            timeout 600 $py tests/capture/peer_tracker.py "$prog" --world "$w" --set MODE="$mode" $SIZE "$@" \
                >"$dir/tracker_${mode}_w$w.json" 2>"$dir/tracker_${mode}_w$w.err" ;;
        cuda_nccl)
            timeout 600 $py -m memlife capture "$prog" --world "$w" --on cuda --set MODE="$mode" $SIZE "$@" \
                -o "$dir/cudanccl_${mode}_w$w.json" 2>"$dir/cudanccl_${mode}_w$w.err" ;;
        *)
            timeout 600 $py -m memlife capture "$prog" --world "$w" --on "$what" --set MODE="$mode" $SIZE "$@" \
                -o "$dir/${what}_${mode}_w$w.json" 2>"$dir/${what}_${mode}_w$w.err" ;;
    esac
    echo "$what $mode world $w: exit $? in $((SECONDS - t0)) s"' <"$jobs"
cat "$dir"/tracker_*.json >"$dir/tracker.jsonl" 2>/dev/null
tar czf "$OUT/capture.tar.gz" -C "$dir" .
ls -la "$OUT/capture.tar.gz"
