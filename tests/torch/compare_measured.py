#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""compare_measured.py MEMLIFE RUN.json SCHEDULE.yaml [ARG...] — the torch view predicted
(`memlife trace SCHEDULE ARG...`, counters `torch allocated bytes` / `torch reserved bytes`, op k
at ts k) against what `memlife run --backend torch --format json` measured on a GPU (each
timeline sample's pool_used = memory_allocated and pool_reserved = memory_reserved after op k),
for every rank of the run's one schedule. Prints `ok - NAME: allocated and reserved exact at N of
N ops on R ranks`, or `not ok - NAME: ...` with the first difference."""
import json
import os
import subprocess
import sys
import tempfile

COUNTERS = {"torch allocated bytes": "allocated", "torch reserved bytes": "reserved"}


def predicted(memlife, yaml_path, args, n_ops):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.json")
        r = subprocess.run([memlife, "trace", yaml_path, "-o", out] + args,
                           capture_output=True, text=True)
        if r.returncode:
            sys.exit("not ok - %s: memlife trace exit %d: %s" % (yaml_path, r.returncode, r.stderr.strip()[:300]))
        with open(out) as f:
            events = json.load(f)["traceEvents"]
    pts = {v: [] for v in COUNTERS.values()}
    for e in events:   # one process per rank ("pid"); world 1 here
        if e.get("ph") == "C" and e.get("name") in COUNTERS:
            pts[COUNTERS[e["name"]]].append((e["ts"], e["args"]["predicted"]))
    rows = []
    for k in range(n_ops):
        row = {}
        for name, p in pts.items():
            v = 0
            for ts, val in p:
                if ts <= k:
                    v = val
            row[name] = v
        rows.append(row)
    return rows


def main():
    memlife, run_path, yaml_path, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    with open(run_path) as f:
        run = json.load(f)
    s = run["schedules"][0]
    name = s["name"]
    checked = 0
    for rank in s["ranks"]:
        tl = [e for e in rank["measured"]["timeline"] if e.get("index") is not None]
        if not tl or "pool_used" not in tl[0]:
            print("not ok - %s: rank %d has no pool readings (not a GPU run?)" % (name, rank["rank"]))
            return 1
        pred = predicted(memlife, yaml_path, args, len(tl))
        for e in tl:
            k = e["index"]
            want = (pred[k]["allocated"], pred[k]["reserved"])
            got = (e["pool_used"], e["pool_reserved"])
            if want != got:
                print("not ok - %s: rank %d op %d (%s, line %d): measured allocated/reserved %d/%d, "
                      "predicted %d/%d" % (name, rank["rank"], k, e["op"], e["line"], got[0], got[1],
                                           want[0], want[1]))
                return 1
            checked += 1
    print("ok - %s: allocated and reserved exact at %d of %d ops on %d ranks"
          % (name, checked, checked, len(s["ranks"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
