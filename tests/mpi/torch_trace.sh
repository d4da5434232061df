#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `memlife trace` of a `run --backend torch` result (issue 16): the worked example of PyTorch's
# caching allocator (tests/cli/torch/worked_example.yaml, 2 ranks, 7 ops) runs on the torch
# backend and is saved; its trace must carry, on every counter sample, the run result's own
# numbers as `measured` (exact integers): 'requested bytes' = the timeline's `requested` after
# each op, and where the timeline has pool readings 'torch allocated bytes' / 'torch reserved
# bytes' = `pool_used` / `pool_reserved` (PyTorch's memory_allocated / memory_reserved).
#
# On CPUs (gloo, Debian's CPU torch) the driver reads no allocator counters (driver.py's mem()
# answers zeros without CUDA), so the result has no pool readings and the torch counters must
# carry no measured value at all (none made up); the counters' values from pool readings are
# tested by tests/unit/test_measure.c, from a run result that the real writer wrote with known
# pool values. On a GPU this script checks them from the run itself.
. "$(dirname "$0")/lib.bash"

why=$(host_backend_missing)
[ -z "$why" ] && [ -z "$(torch_python)" ] && why="no python3 with torch (apt-get install python3-torch)"
command -v python3 >/dev/null || why="python3 not found"
if [ -n "$why" ]; then
    skip "torch trace counters" "$why"
    exit 0
fi

name="torch trace counters: run --backend torch, 2 ranks"
run run tests/cli/torch/worked_example.yaml --backend torch --ranks 2 --format json -o "$TMP/run.json"
if [ "$RC" -ne 0 ]; then
    not_ok "$name" "run: exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
    exit 0
fi
run trace "$TMP/run.json" -o "$TMP/t.json"
if [ "$RC" -ne 0 ]; then
    not_ok "$name" "trace: exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
    exit 0
fi

python3 - "$TMP/run.json" "$TMP/t.json" <<'PY'
import json, sys
run, tr = (json.load(open(p)) for p in sys.argv[1:3])
ev = tr["traceEvents"]
procs = {e["args"]["name"]: e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
item = run["schedules"][0]
bad, pooled = [], 0
N_OPS = 7   # worked_example.yaml's steps, one op each

def measured(pid, counter):
    """`measured` of every sample of a counter track, in order (None where absent)."""
    return [e["args"].get("measured") for e in ev
            if e["pid"] == pid and e["ph"] == "C" and e["name"] == counter]

for rank in item["ranks"]:
    r = rank["rank"]
    pid = procs.get("worked-example rank %d" % r)
    ops = sorted((s for s in rank["measured"]["timeline"] if s["index"] is not None),
                 key=lambda s: s["index"])
    if pid is None or len(ops) != N_OPS:
        bad.append((r, "no process or %d samples" % len(ops)))
        continue
    # one sample per op, then a closing one that repeats the last op's (analyzer/visual/trace.c)
    want = {"requested bytes": [s["requested"] for s in ops]}
    if all("pool_used" in s for s in ops):
        pooled += 1
        want["torch allocated bytes"] = [s["pool_used"] for s in ops]
        want["torch reserved bytes"] = [s["pool_reserved"] for s in ops]
    elif any("pool_used" in s for s in ops):
        bad.append((r, "pool readings on some samples only"))
    else:
        for c in ("torch allocated bytes", "torch reserved bytes"):
            got = measured(pid, c)
            if len(got) != N_OPS + 1 or any(v is not None for v in got):
                bad.append((r, c, "measured without pool readings", got))
    for c, w in want.items():
        got = measured(pid, c)
        if got != w + w[-1:]:
            bad.append((r, c, got, w))
print("ok - torch trace counters: measured = the run result's numbers on every sample"
      if not bad and len(item["ranks"]) == 2 else "not ok - torch trace counters: %s" % bad[:2])
if pooled == 0:
    print("skip - torch trace counters from pool readings: this torch reads no allocator counters "
          "(CPU); tests/unit/test_measure.c checks them from a result the writer wrote")
else:
    print("ok - torch trace counters from pool readings on %d ranks" % pooled)
PY
