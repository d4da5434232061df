#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu_session.sh — every GPU acceptance step of the cuda backend in one command,
# for the GPU machine lent (GPU_WORLD GPUs, default 2). Run from the repository root with the
# binary built on the CPU machine carried along (build/memlife; libyaml is linked statically):
#
#   bash tools/gpu_session.sh                  # 2 GPUs; writes $OUT/session.log, $OUT/results.tgz
#   GPU_WORLD=1 bash tools/gpu_session.sh      # one GPU: every case with its world-1 numbers
#
# It prints the machine (nvidia-smi -L, driver, the NCCL / CUDA / MPI libraries the binary
# resolves), then runs tests/gpu/*.sh — the same cases `make test-gpu` runs — in both launch
# modes: mpirun -np N (one process per GPU) and --gpus N (one process, every GPU). At N = 2:
#   seed lifetimes 256/256, 128/384, 256/640, 256/384 MiB, device view = prediction;
#   the five contracts (10 rank rows PASS, int64); inplace_rs_ag (peak 256 MiB);
#   chunked_rs_only --allocator chunked (128 / 256 MiB); page_stress (device predicted = measured);
#   the seed lifetimes under --allocator async (pool statistics); a 200 GiB cudaMalloc (exit 3,
#   message); a stalled collective (exit 3 at the --timeout deadline, no hang). Each script derives
#   its numbers at other worlds (tests/gpu/lib.bash; at N = 1: 256/256, 256/512, 256/768,
#   256/512 MiB, 2 contract rows with three files refused by requires:, no stall cases, 0 kernels).
# One `ok - ` / `not ok - ` line per acceptance item, a summary, and everything (each run's
# command and stderr too) in $OUT/session.log; every JSON report with its stdout / stderr in
# $OUT/results.tgz. Every command runs under `timeout`; the whole session stays under 8 minutes
# (SESSION_BUDGET seconds, default 450). Exit 0 when no item failed, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=tools/gpu_common.bash
. tools/gpu_common.bash
gpu_session_env session.log 450
export RESULTS
RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/memlife-gpu-session.XXXXXX")

session() {
    local t0=$SECONDS
    echo "# memlife GPU session, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), binary built at commit $(build_commit)"
    gpu_machine memory.total,memory.used
    echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE GPU_WORLD=${GPU_WORLD:-2}"
    echo "## libraries build/memlife resolves (NCCL: libnccl.so.2 from the loader path)"
    if [ -x "$MEMLIFE" ]; then
        timeout 30 ldd "$MEMLIFE" | grep -E 'nccl|cudart|mpi\.|jansson|yaml|not found'
    else
        echo "$MEMLIFE is missing: build it with make on the CPU machine and carry build/memlife"
    fi
    timeout 10 ldconfig -p | grep -E 'libnccl\.so' | head -n 4
    ls /usr/lib/x86_64-linux-gnu/libnccl.so.* 2>/dev/null | head -n 4

    # The unit test of the backend, when its libraries (cmocka) load here.
    local unit=$BUILD/tests/test_cuda_stub
    if [ -x "$unit" ] && ! ldd "$unit" | grep -q 'not found'; then
        echo "## $unit"
        CMOCKA_MESSAGE_OUTPUT=stdout timeout 120 "$unit" 2>&1 | tail -n 6
        if [ "${PIPESTATUS[0]}" -eq 0 ]; then echo "ok - unit test_cuda_stub"; else echo "not ok - unit test_cuda_stub"; fi
    fi

    local script left
    for script in tests/gpu/seed_lifetimes.sh tests/gpu/contracts.sh tests/gpu/beyond_seed.sh \
                  tests/gpu/async_pool.sh tests/gpu/failures.sh tests/gpu/equiv_cuda.sh \
                  tests/gpu/optimize_seed.sh tests/gpu/comm_view.sh tests/gpu/comms.sh \
                  tests/gpu/torch_backend.sh; do
        left=$((BUDGET - (SECONDS - t0)))
        echo "## $script (${left} s of the session budget left)"
        if [ "$left" -lt 20 ]; then
            echo "not ok - $script: session time budget spent before it ran"
            continue
        fi
        timeout -k 10 "$left" bash "$script"
        local rc=$?
        [ "$rc" -eq 0 ] || echo "not ok - $script: could not run to the end (exit $rc)"
    done

    echo "## provenance of the first report"
    local first=$RESULTS/mpi/01_allreduce_full.json
    [ -f "$first" ] || first=$(ls "$RESULTS"/*/*.json 2>/dev/null | head -n 1)
    if [ -n "$first" ] && [ -f "$first" ]; then
        python3 -c 'import json,sys; [print("%s=%s" % kv) for kv in json.load(open(sys.argv[1])).get("provenance", {}).items()]' "$first"
    else
        echo "(no report was written)"
    fi
    echo "## every run: command, exit code, time, stderr"
    cat "$RESULTS/commands.log" 2>/dev/null
    echo "## session took $((SECONDS - t0)) s"
}

session 2>&1 | tee "$LOG.tmp"
tap_summary "$LOG.tmp" "$LOG"
rc=$?
tar -czf "$OUT/results.tgz" -C "$RESULTS" . && rm -rf "$RESULTS"
exit "$rc"
