#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/failures.sh — failures end cleanly: exit 3, a message, no hang; both launch modes.
# tests: 5
#   oom_200gib.yaml: a 200 GiB cudaMalloc (an H200 has 141 GiB): exit 3 with the size asked and
#     the device's free memory in the message, well inside the step timeout.
#   stall_rank0_only.yaml (world >= 2; --no-lint cross-rank --no-sequence-check --timeout 10): rank 0 issues
#     an AllReduce no peer joins; every rank ends with exit 3 and a message within 10 s +
#     start-up, not the step timeout. Under mpirun the backend's deadline fires ("nccl all_reduce
#     did not complete within 10 s on rank 0 (stream 'default'); communicator aborted"); with
#     --gpus the executor judges all ranks in one process and reports the divergence first.
#   init_stall (mpirun only, world >= 2; --timeout 5 --inject delay=1@init): rank 1 sleeps before
#     ncclCommInitRank (15 s, past the deadline), so rank 0 waits inside NCCL's init, which has no
#     timeout: memlife's watchdog must end the job at 5 s with exit 3 and "error: rank 0:
#     ncclCommInitRank (every rank joins) did not return within 5 s (--timeout); ending the job".
source "$(dirname "$0")/lib.bash"

if ! gpu_ready; then
    for mode in $GPU_MODES; do gpu_skip "$mode cudaMalloc failure" "$mode stall"; done
    gpu_skip "mpi init stall"
    exit 0
fi
here=tests/gpu/schedules
for mode in $GPU_MODES; do
    gpu_run "$mode" oom_200gib "$here/oom_200gib.yaml"
    if [ "$RC" -ne 3 ]; then
        echo "not ok - $mode cudaMalloc failure: exit $RC, want 3"; gpu_show_err
    elif ! grep -q 'cudaMalloc of 214748364800 bytes (200 GiB) failed' "$ERR" ||
        ! grep -Eq 'has ~?[0-9.]+ GiB free of ~?[0-9.]+ GiB\)' "$ERR"; then
        echo "not ok - $mode cudaMalloc failure: message lacks the size or the free memory"; gpu_show_err
    else
        echo "ok - $mode cudaMalloc failure: exit 3 in ${SECS} s: $(grep -m1 'cudaMalloc of' "$ERR")"
    fi

    if [ "$GPU_WORLD" -lt 2 ]; then
        # One rank has no peer to wait for: its AllReduce completes alone (a copy), so there is
        # no stall to end; the case needs two GPUs.
        echo "skip - $mode stall: world $GPU_WORLD has no peer that could fail to join"
        continue
    fi
    gpu_run "$mode" stall "$here/stall_rank0_only.yaml" --no-lint cross-rank \
        --no-sequence-check --timeout 10
    if [ "$RC" -ne 3 ]; then
        echo "not ok - $mode stall: exit $RC in ${SECS} s, want 3"; gpu_show_err
    elif [ "$SECS" -gt 60 ]; then
        echo "not ok - $mode stall: exit 3 but after ${SECS} s (deadline 10 s)"; gpu_show_err
    else
        how=$(grep -m1 -E 'did not complete within|diverg|error' "$ERR")
        echo "ok - $mode stall: exit 3 in ${SECS} s: ${how:-no message?}"
    fi
done

# The init watchdog (mpirun only: with --gpus every rank is this process's, no peer can be late).
if [[ " $GPU_MODES " != *" mpi "* ]]; then
    echo "skip - mpi init stall: GPU_MODES ($GPU_MODES) has no mpi launch mode"
    exit 0
fi
if [ "$GPU_WORLD" -lt 2 ]; then
    echo "skip - mpi init stall: world $GPU_WORLD has no rank 1 to delay"
    exit 0
fi
gpu_run mpi init_stall schedules/seed/01_allreduce_full.yaml --set M=1MiB --timeout 5 \
    --inject delay=1@init
want='error: rank 0: ncclCommInitRank (every rank joins) did not return within 5 s (--timeout); ending the job'
if [ "$RC" -ne 3 ]; then
    echo "not ok - mpi init stall: exit $RC in ${SECS} s, want 3"; gpu_show_err
elif [ "$SECS" -gt 30 ]; then
    echo "not ok - mpi init stall: exit 3 but after ${SECS} s (deadline 5 s)"; gpu_show_err
elif ! grep -qF "$want" "$ERR"; then
    echo "not ok - mpi init stall: no line '$want'"; gpu_show_err
else
    echo "ok - mpi init stall: exit 3 in ${SECS} s: $want"
fi
