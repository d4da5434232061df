#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bench/import_bench.sh — `memlife import` of a synthetic snapshot of EVENTS device-trace
# entries (default 1,000,000) against `python3 -c 'import pickle; pickle.load(open(F, "rb"))'` on
# the same file: CPU time (user + system), best of 3 each, and memlife's peak RSS. memlife's time
# is the whole command: reading the pickle, walking the trace, writing the schedule. The bars: at
# most 0.8x the CPU time of Python only loading it, and a peak RSS at most twice the file's size
# (the file itself is in memory while it is read; the trace is digested as it goes).
#
# The snapshot is shaped like _dump_snapshot's and consistent (every free is of a live block):
# a 1000-slot churn of allocs, free_requested and free_completed with 3 frames each (two in
# torch/, one in user code, so names come from frames), a segment_alloc per 64 MiB of address.
#   tests/bench/import_bench.sh                 generate (cached in $BENCH_DIR), time
#   EVENTS=100000 tests/bench/import_bench.sh   a quick one
set -eu
cd "$(dirname "$0")/../.."
EVENTS=${EVENTS:-1000000}
DIR=${BENCH_DIR:-/tmp/memlife-import-bench}
MEMLIFE=${MEMLIFE:-$PWD/${BUILD:-build}/memlife}
mkdir -p "$DIR"
PKL=$DIR/import_${EVENTS}.pickle

if [ ! -s "$PKL" ]; then
    python3 - "$PKL" "$EVENTS" <<'PY'
import pickle, random, sys
path, events = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
torch_files = ["/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py",
               "/opt/venv/lib/python3.12/site-packages/torch/_tensor.py"]
user_files = ["/home/u/train.py", "/home/u/model.py"]
base = 0x7f0000000000
slots = [None] * 1000
trace, t, seg_end = [], 1_700_000_000_000_000, base
def ev(action, addr, size):
    global t
    t += 3
    trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
                  "frames": [{"filename": torch_files[0], "line": 1370, "name": "convert"},
                             {"filename": torch_files[1], "line": 41, "name": "wrapped"},
                             {"filename": rng.choice(user_files), "line": rng.randrange(1, 400),
                              "name": "step"}]})
while len(trace) < events:
    k = rng.randrange(len(slots))
    if slots[k] is None:
        addr = base + k * (64 << 20)
        if addr >= seg_end:
            ev("segment_alloc", seg_end, (64 << 20) * 16)
            seg_end += (64 << 20) * 16
        slots[k] = (addr, rng.randrange(1, 64 << 20))
        ev("alloc", *slots[k])
    else:
        ev("free_requested", *slots[k])
        ev("free_completed", *slots[k])
        slots[k] = None
trace = trace[:events]
segs, live = {}, {}
for e in trace:   # the final state: every segment, with the blocks still allocated
    if e["action"] == "segment_alloc":
        segs[e["addr"]] = {"device": 0, "address": e["addr"], "total_size": e["size"], "stream": 0,
                           "segment_type": "large", "is_expandable": False, "blocks": []}
    elif e["action"] == "alloc":
        live[e["addr"]] = e["size"]
    elif e["action"] == "free_requested":
        del live[e["addr"]]
for addr, size in sorted(live.items()):
    seg = max(a for a in segs if a <= addr)
    segs[seg]["blocks"].append({"address": addr, "size": (size + 511) // 512 * 512,
                                "requested_size": size, "state": "active_allocated", "frames": []})
snapshot = {"segments": list(segs.values()), "device_traces": [trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""}, "external_annotations": []}
with open(path, "wb") as f:
    pickle.dump(snapshot, f, protocol=4)
PY
fi

# best-of-3 CPU seconds of a command, from the children's rusage, and the peak RSS in KiB of the
# children (each run is the same command: the largest is its peak)
best_cpu() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys
best = None
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    best = t if best is None else min(best, t)
print(f"{best:.3f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
PY
}
read -r PY_BEST PY_RSS < <(best_cpu python3 -c 'import pickle, sys; pickle.load(open(sys.argv[1], "rb"))' "$PKL")
read -r ML_BEST ML_RSS < <(best_cpu "$MEMLIFE" import "$PKL" -o "$DIR/import.yaml" -q)
SIZE=$(stat -c %s "$PKL")
echo "file: $PKL ($SIZE bytes, $EVENTS events), schedule $(wc -l <"$DIR/import.yaml") lines"
echo "python3 pickle.load: $PY_BEST s CPU, peak RSS $((PY_RSS / 1024)) MiB"
echo "memlife import: $ML_BEST s CPU, peak RSS $((ML_RSS / 1024)) MiB"
awk -v m="$ML_BEST" -v p="$PY_BEST" 'BEGIN {
    r = m / p
    printf "%s - memlife import / python3 pickle.load, CPU time: %.2f (target <= 0.8)\n",
           (r <= 0.8) ? "PASS" : "FAIL", r
}'
awk -v m="$ML_RSS" -v f="$SIZE" 'BEGIN {
    r = m * 1024 / f
    printf "%s - memlife import peak RSS / the file size: %.2f (target <= 2)\n",
           (r <= 2) ? "PASS" : "FAIL", r
}'
