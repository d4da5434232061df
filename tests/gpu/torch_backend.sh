#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The torch backend on one GPU (ProcessGroupNCCL at world 1), with the python3 that has torch:
#   - the seed lifetimes: memory_allocated after the baseline reads 256/256, 256/512, 256/768,
#     256/512 MiB steady/peak (at world 1 the shard is the whole 256 MiB tensor: RS-only holds
#     full + shard, the naive RS+AG full + shard + gathered), and the torch view predicted =
#     measured for allocated and reserved after every op;
#   - the four imported H200 snapshots (memlife import) re-run through PyTorch's allocator:
#     predicted = measured at every op.
# MEMLIFE names the binary (default build/memlife); OUT, when set, keeps the results.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
MEMLIFE=${MEMLIFE:-$ROOT/build/memlife}
DIR=${OUT:-$(mktemp -d)}
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if ! "$MEMLIFE" predict --help 2>/dev/null | grep -q -- --torch-conf; then
    echo "skip - torch backend on a GPU: this memlife has no torch view"
    exit 0
fi
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "skip - torch backend on a GPU: no GPU that torch sees"
    exit 0
fi
MiB=1048576
# seeds: 256/256, 256/512, 256/768, 256/512 MiB of memory_allocated (steady = last - baseline)
for s in "01_allreduce_full 256 256" "02_rs_only 256 512" "03_rs_ag_naive 256 768" "04_rs_ag_optimized 256 512"; do
    set -- $s
    f=schedules/seed/$1.yaml
    "$MEMLIFE" run "$f" --backend torch --ranks 1 --torch-conf expandable_segments:False \
        --format json -o "$DIR/$1.json" 2>"$DIR/$1.err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "not ok - torch backend seed $1: exit $rc: $(head -3 "$DIR/$1.err" | tr '\n' ' ')"
        continue
    fi
    python3 - "$DIR/$1.json" "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); name, steady, peak = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tl = d["schedules"][0]["ranks"][0]["measured"]["timeline"]
used = [e["pool_used"] for e in tl]
got = ((used[-1] - used[0]) >> 20, (max(used) - used[0]) >> 20)
print("%s - torch backend seed %s: memory_allocated %d/%d MiB steady/peak (want %d/%d)"
      % ("ok" if got == (steady, peak) else "not ok", name, got[0], got[1], steady, peak))
PY
    python3 tests/torch/compare_measured.py "$MEMLIFE" "$DIR/$1.json" "$f" --world 1 --torch-conf expandable_segments:False
done
for n in a_train b_fsdp2 c_expandable d_late; do
    "$MEMLIFE" import "tests/torch/fixtures/snapshots/$n.pickle" -o "$DIR/$n.yaml" -q &&
        "$MEMLIFE" run "$DIR/$n.yaml" --backend torch --ranks 1 --no-data --format json -o "$DIR/$n.run.json" 2>"$DIR/$n.err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "not ok - torch backend re-run of $n: exit $rc: $(head -3 "$DIR/$n.err" | tr '\n' ' ')"
        continue
    fi
    python3 tests/torch/compare_measured.py "$MEMLIFE" "$DIR/$n.run.json" "$DIR/$n.yaml"
done
