#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# trace_clock.sh — every track of a `memlife trace` (a counter of one process, a lane of one
# process) has its events in op order at non-decreasing times, one distinct time per op, on the
# clock otherData.clock names (analyzer/visual/trace.c rank_clock):
#  - an imported snapshot (tests/torch/fixtures/snapshots/a_train.pickle): "snapshot", each step
#    at its time_us less the first's (import writes them; a_train's first two allocs are 562 us
#    apart);
#  - that import optimized (memlife optimize moves frees up, each with its time_us): its times go
#    back in op order, so not "snapshot" but "op-order" (an import's steps take no model time);
#  - pipeline_1f1b.yaml (no syncs: the model has the host's ops all at 0 while streams run on):
#    "model", host ops a nanosecond apart, never back to 0 after a collective;
#  - a schedule of allocs and frees only (the time model gives no durations): "op-order", op k
#    at k microseconds (examples/naive_vs_optimized/README.md).
. "$(dirname "$0")/lib.bash"
command -v python3 >/dev/null || { echo "skip - trace clock: python3 not installed"; exit 0; }

run import tests/torch/fixtures/snapshots/a_train.pickle -o "$TMP/a_train.yaml"
[ "$RC" -eq 0 ] || not_ok "import a_train" "exit $RC: $(head -1 "$TMP/err")"
run optimize "$TMP/a_train.yaml" -o "$TMP/a_train_opt.yaml"
[ "$RC" -eq 0 ] || not_ok "optimize a_train" "exit $RC: $(head -1 "$TMP/err")"
printf 'name: only-memory\nworld: 2\nsteps:\n  - alloc: {buf: a, bytes: 1MiB}\n  - alloc: {buf: b, bytes: 2MiB}\n  - free: a\n  - free: b\n' >"$TMP/mem.yaml"
for f in "$TMP/a_train.yaml" "$TMP/a_train_opt.yaml" schedules/training/pipeline_1f1b.yaml "$TMP/mem.yaml" schedules/seed/03_rs_ag_naive.yaml; do
    b=$(basename "$f" .yaml)
    run trace "$f" -o "$TMP/$b.trace.json"
    [ "$RC" -eq 0 ] || not_ok "trace $b" "exit $RC: $(head -1 "$TMP/err")"
done

python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]

def report(name, ok, why=""):
    print(("ok - " + name) if ok else ("not ok - %s: %s" % (name, why)))

def tracks(events):
    """(pid, counter name) and (pid, lane) -> their times in emission (op) order; regions (a span
    emitted at its end, starting at its begin) and metadata are not an op's."""
    t = {}
    for e in events:
        if e["ph"] == "M" or e.get("cat") == "region":
            continue
        key = (e["pid"], "C " + e["name"]) if e["ph"] == "C" else (e["pid"], e["tid"])
        t.setdefault(key, []).append(e["ts"])
    return t

def check(name, clock):
    doc = json.load(open("%s/%s.trace.json" % (tmp, name)))
    ev = doc["traceEvents"]
    bad = [(k, ts) for k, ts in tracks(ev).items() if any(b <= a for a, b in zip(ts, ts[1:]))]
    report("trace %s: every track's times increase, one per op" % name, not bad,
           bad and "%s: %s" % (bad[0][0], bad[0][1][:12]))
    report("trace %s: otherData.clock is %s" % (name, clock), doc["otherData"].get("clock") == clock,
           doc["otherData"])
    return ev

def samples(ev, pid=0, counter="requested bytes"):
    return [e["ts"] for e in ev if e["ph"] == "C" and e["pid"] == pid and e["name"] == counter]

ev = check("a_train", "snapshot")
times = [int(l.split(":")[1]) for l in open(tmp + "/a_train.yaml") if l.startswith("  time_us: ")]
s = samples(ev)
want = [float(t - times[0]) for t in times[:3]]
report("trace a_train: the snapshot's time_us, from its first (0, 562, 704 us)",
       len(s) == len(times) + 1 and s[:3] == want and want[1] == 562.0, (s[:3], want))

check("a_train_opt", "op-order")

ev = check("pipeline_1f1b", "model")
s = samples(ev)
# the model starts every host op at 0 here; after the first collective the samples stay later
report("trace pipeline_1f1b: host ops a tick apart, not all at 0 (0, 0.001, 0.002, ...)",
       s[:3] == [0.0, 0.001, 0.002] and s == sorted(s) and len(set(s)) == len(s), s[:6])

ev = check("mem", "op-order")
report("trace mem: op k at k us on each rank (0, 1, 2, 3, then the end at 4)",
       samples(ev, 0) == [0, 1, 2, 3, 4] and samples(ev, 1) == [0, 1, 2, 3, 4], samples(ev, 0))

check("03_rs_ag_naive", "model")
PY
