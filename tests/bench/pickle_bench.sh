#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bench/pickle_bench.sh — pickle_read against Python's pickle.load on a synthetic snapshot
# of EVENTS device-trace entries (default 1,000,000), CPU time, best of 3 each.
#
# The snapshot is shaped like _dump_snapshot's: device_traces entries with action, addr, size,
# stream, time_us and frames (a list of FRAMES dicts of filename/line/name), pickled by Python's
# own pickler at protocol 4, so strings repeat as Python's memo makes them repeat: the same str
# object (a key, a filename from a pool) is written once and fetched with BINGET/LONG_BINGET after.
# Each event's frame dicts are distinct objects, as when frames are not shared.
#
#   tests/bench/pickle_bench.sh               build, generate (cached in $BENCH_DIR), time
#   EVENTS=100000 tests/bench/pickle_bench.sh a quick one
# Prints the two times and "pickle_read / python pickle.load: RATIO".
set -eu
cd "$(dirname "$0")/../.."
EVENTS=${EVENTS:-1000000}
FRAMES=${FRAMES:-4}
DIR=${BENCH_DIR:-/tmp/memlife-pickle-bench}
mkdir -p "$DIR"
PKL=$DIR/snapshot_${EVENTS}_${FRAMES}.pickle

${CC:-gcc} -O2 -g -std=c11 -D_GNU_SOURCE -Ianalyzer -Iruntime analyzer/snapshot/pickle*.c \
    runtime/base/input.c runtime/base/util.c runtime/base/human.c \
    tests/bench/pickle_bench.c -ljansson -o "$DIR/pickle_bench"

if [ ! -s "$PKL" ]; then
    python3 - "$PKL" "$EVENTS" "$FRAMES" <<'PY'
import pickle, random, sys
path, events, frames_per_event = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
files = [f"/usr/lib/python3/site-packages/torch/nn/modules/module_{i}.py" for i in range(60)]
names = [f"forward_{i}" for i in range(300)]
actions = ["alloc", "free_requested", "free_completed", "segment_alloc", "segment_free"]
trace = []
t = 1_700_000_000_000_000
for i in range(events):
    t += rng.randrange(1, 50)
    trace.append({
        "action": actions[i % len(actions)],
        "addr": 0x7f0000000000 + rng.randrange(1 << 32) * 512,
        "size": rng.randrange(1, 1 << 30),
        "stream": 0,
        "time_us": t,
        "frames": [{"filename": rng.choice(files), "line": rng.randrange(1, 3000),
                    "name": rng.choice(names)} for _ in range(frames_per_event)],
    })
snapshot = {"segments": [], "device_traces": [trace], "allocator_settings": {},
            "external_annotations": []}
with open(path, "wb") as f:
    pickle.dump(snapshot, f, protocol=4)
PY
fi

PY_BEST=$(python3 - "$PKL" <<'PY'
import pickle, sys, time
best = None
for _ in range(3):
    start = time.process_time()
    with open(sys.argv[1], "rb") as f:
        obj = pickle.load(f)
    t = time.process_time() - start
    del obj
    best = t if best is None else min(best, t)
print(f"{best:.3f}")
PY
)
C_BEST=$("$DIR/pickle_bench" "$PKL" 3 | awk '{print $2}')
echo "file: $PKL ($(stat -c %s "$PKL") bytes, $EVENTS events x $FRAMES frames)"
echo "python pickle.load: $PY_BEST s"
echo "pickle_read: $C_BEST s"
echo "pickle_read / python pickle.load: $(awk -v c="$C_BEST" -v p="$PY_BEST" 'BEGIN { printf "%.2f", c / p }')"
