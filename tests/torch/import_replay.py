#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""import_replay.py MEMLIFE SNAPSHOT.pickle SCHEDULE.yaml PRELUDE — the torch view's reserved
bytes after every step of an imported snapshot (`memlife trace` counter `torch reserved bytes`,
the k-th counter sample is op k) against the snapshot's own reserved after the matching trace event: the bytes held
when recording began (final segments minus the trace's segment events) plus the segment_alloc /
segment_map minus segment_free / segment_unmap sizes up to that event. PRELUDE is the number of
steps `memlife import` put before the trace (its summary line says it). Prints one line,
`ok - NAME: N of N events exact` or `not ok - NAME: the first difference`. The fixtures are the
project's own trusted files, so the standard pickle module may load them here."""
import json
import trace_counters
import os
import pickle
import subprocess
import sys
import tempfile

SEG_UP = ("segment_alloc", "segment_map")
SEG_DOWN = ("segment_free", "segment_unmap")


def main():
    memlife, snap_path, yaml_path, prelude = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    name = os.path.basename(snap_path)
    with open(snap_path, "rb") as f:
        snap = pickle.load(f)
    trace = snap["device_traces"][0]
    final = sum(s["total_size"] for s in snap["segments"] if s.get("device", 0) == 0)
    delta = sum(e["size"] if e["action"] in SEG_UP else -e["size"]
                for e in trace if e["action"] in SEG_UP + SEG_DOWN)
    reserved = final - delta
    # the schedule's steps: a segment_free run that releases only some cached segments (garbage
    # collection, the oversize release before a retry) has no step of its own, the alloc after
    # it makes it in the model; a run that is an empty_cache step has
    with open(yaml_path) as f:
        lines = f.read().split("\nsteps:\n", 1)[1].splitlines()
    kinds = [l[2:].split(":", 1)[0] for l in lines if l.startswith("- ")]
    # (step index, reserved the snapshot had after the event the step stands for)
    want = [(prelude - 1, reserved)] if prelude else []
    step = prelude
    for i, e in enumerate(trace):
        a = e["action"]
        if a in SEG_UP:
            reserved += e["size"]
        elif a in SEG_DOWN:
            reserved -= e["size"]
            if (i == 0 or trace[i - 1]["action"] not in SEG_DOWN) and \
                    step < len(kinds) and kinds[step] == "empty_cache":
                step += 1   # memlife import's empty_cache step
        elif a in ("alloc", "free_requested"):
            if kinds[step] != ("alloc" if a == "alloc" else "free"):
                print("not ok - %s: trace entry %d (%s) is step %d, a %s" % (name, i, a, step, kinds[step]))
                return 1
            want.append((step, reserved))
            step += 1
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "trace.json")
        r = subprocess.run([memlife, "trace", yaml_path, "-o", out], capture_output=True, text=True)
        if r.returncode != 0:
            print("not ok - %s: memlife trace exit %d: %s" % (name, r.returncode, r.stderr.strip()[:300]))
            return 1
        with open(out) as f:
            events = json.load(f)["traceEvents"]
    reserved = trace_counters.per_op(events, "torch reserved bytes")
    got = {k: trace_counters.value_after(reserved, k) for k, _ in want}
    bad = [(k, w, got[k]) for k, w in want if got[k] != w]
    if bad:
        k, w, g = bad[0]
        print("not ok - %s: reserved at step %d: snapshot %d, predicted %d (%d of %d events differ)"
              % (name, k, w, g, len(bad), len(want)))
        return 1
    print("ok - %s: reserved exact at %d of %d events" % (name, len(want), len(want)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
