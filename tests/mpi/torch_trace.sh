#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `memlife trace` of a `run --backend torch` result: the worked example of PyTorch's
# caching allocator (tests/cli/torch/worked_example.yaml, 2 ranks, 7 ops). Its trace must carry,
# on every counter sample, the run result's own numbers as `measured` (exact integers):
# 'requested bytes' = the timeline's `requested` after each op, and where the timeline has pool
# readings 'torch allocated bytes' / 'torch reserved bytes' = `pool_used` / `pool_reserved`
# (PyTorch's memory_allocated / memory_reserved).
#
# Two results:
#   - tests/cli/torch/h200_worked_example_run.json (trace, and plot's measured curve): a real run on one H200 (PyTorch 2.11.0+cu130,
#     NCCL 2.28.3, both ranks on cuda:0; memlife at commit dc0d071, before measured.pool.caches,
#     so the loader takes the torch backend from its provenance). It has pool readings after
#     every op; e.g. after op 6 both ranks read 40894976 allocated and 50331648 reserved (the
#     numbers of the worked example measured in tests/torch/fixtures/allocator).
#   - a run here on the torch backend. On CPUs (gloo, Debian's CPU torch) the driver reads no
#     allocator counters (driver.py's mem() answers zeros without CUDA): the result has no pool
#     readings and the torch counters must carry no measured value at all (none made up). The
#     writer's own pool values are tested by tests/unit/test_measure.c.
. "$(dirname "$0")/lib.bash"

# check NAME RUN.json TRACE.json NEED_POOL: the cases above; NEED_POOL=1 when the run must have
# pool readings on every rank.
check() {
python3 - "$@" <<'PY'
import json, sys
name = sys.argv[1]
run, tr = (json.load(open(p)) for p in sys.argv[2:4])
need_pool = sys.argv[4] == "1"
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
if need_pool and pooled != 2:
    bad.append("pool readings on %d of 2 ranks" % pooled)
print("ok - %s" % name if not bad and len(item["ranks"]) == 2 else "not ok - %s: %s" % (name, bad[:2]))
if not need_pool and pooled == 0:
    print("skip - %s, from pool readings: this torch reads no allocator counters (CPU); "
          "the H200 result above and tests/unit/test_measure.c check them" % name)
PY
}

command -v python3 >/dev/null || { skip "torch trace counters" "python3 not found"; exit 0; }

FIX=tests/cli/torch/h200_worked_example_run.json
name="torch trace counters: the H200 result, torch allocated / reserved measured on every sample"
run trace "$FIX" -o "$TMP/fix.json"
if [ "$RC" -ne 0 ]; then
    not_ok "$name" "trace: exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
else
    check "$name" "$FIX" "$TMP/fix.json" 1
fi
# plot reads the same values (series_rank_values): the torch view gets its measured curve
name="torch plot: the H200 result's torch.allocated has a measured curve"
run plot "$FIX" --view torch.allocated -o "$TMP/fix.svg"
n=$(grep -c 'data-kind="measured"' "$TMP/fix.svg" 2>/dev/null)
if [ "$RC" -eq 0 ] && [ "$n" = 1 ]; then ok "$name"; else not_ok "$name" "exit $RC, $n measured curves"; fi

why=$(host_backend_missing)
[ -z "$why" ] && [ -z "$(torch_python)" ] && why="no python3 with torch (make deps)"
if [ -n "$why" ]; then
    skip "torch trace counters" "$why"
    exit 0
fi

name="torch trace counters: run --backend torch here, 2 ranks, measured = the result's numbers"
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
check "$name" "$TMP/run.json" "$TMP/t.json" 0

