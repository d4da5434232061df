#!/usr/bin/env bash
# tests/gpu/probe/session1.sh — issue 22's measurements on one GPU in one call: NCCL's memory
# under settings (nccl_mem.py, and NCCL's own ALLOC log), the page edges (pages.py), memlife's
# communicator stages under the same settings, then tools/gpu_session.sh at GPU_WORLD=1.
# Run from a tree holding build/memlife, tests/, tools/ and schedules/; writes under $OUT.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
R=$OUT/r
mkdir -p "$R"
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv >"$R/machine.txt" 2>&1
timeout 200 python3 tests/gpu/probe/nccl_mem.py >"$R/nccl_mem.jsonl" 2>&1
echo "nccl_mem done at $((SECONDS - t0)) s"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ALLOC,ENV,TUNING timeout 60 python3 tests/gpu/probe/nccl_mem.py --one '{}' \
    >"$R/nccl_alloc_log.txt" 2>&1
timeout 90 python3 tests/gpu/probe/pages.py "$R/pages" >"$R/pages.txt" 2>&1
echo "pages done at $((SECONDS - t0)) s"
for s in default NCCL_BUFFSIZE=1048576 NCCL_MAX_NCHANNELS=2 NCCL_RUNTIME_CONNECT=0 \
         NCCL_LL128_BUFFSIZE=1048576 NCCL_WORK_FIFO_BYTES=4194304; do
    for f in 01_allreduce_full 03_rs_ag_naive; do
        e=()
        [ "$s" = default ] || e=("$s")
        env "${e[@]}" timeout 60 build/memlife run "schedules/seed/$f.yaml" --backend cuda --gpus 1 \
            --world 1 --format json -o "$R/ml_${s}_$f.json" >"$R/ml_${s}_$f.out" 2>&1
        echo "memlife $s $f exit $?"
    done
done
echo "memlife runs done at $((SECONDS - t0)) s"
GPU_WORLD=1 SESSION_BUDGET=${SESSION_BUDGET:-230} OUT=$OUT/s bash tools/gpu_session.sh >/dev/null 2>&1
echo "session exit $? at $((SECONDS - t0)) s"
grep -E '^(ok|not ok|skip) - |passed|failed' "$OUT/s/session.log" | cut -c1-240
python3 - "$R" <<'PY'
import json, sys
for l in open(sys.argv[1] + "/nccl_mem.jsonl"):
    try:
        d = json.loads(l)
    except ValueError:
        print(l[:200].rstrip()); continue
    if "error" in d:
        print(d["env"], "ERROR", d["error"][-300:]); continue
    st = d["stages"]
    parts = ["ctx(nvml)=%d" % (st[0][2] - d["nvml_before"])]
    for k in range(1, len(st)):
        parts.append("%s=%d" % (st[k][0].replace(" ", "_"), st[k][1] - st[k - 1][1]))
    print(json.dumps(d["env"]), " ".join(parts))
PY
tar -czf "$OUT/r.tgz" -C "$OUT" r && rm -rf "$R"
