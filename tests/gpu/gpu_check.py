#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gpu_check.py — reads the JSON reports of `memlife run --backend cuda` and prints one TAP-style
line per acceptance item: `ok - NAME: facts` or `not ok - NAME: why`. Used by tests/gpu/*.sh and,
through them, by tools/gpu_session.sh on the GPU machine. Exit status is 0 whatever the verdict
(the line carries it); 2 only for a usage error.

JSON may be written FILE#K: schedule K of a report that holds several (one run of several files).

  gpu_check.py lifetime NAME RC JSON WORLD STEADY_MIB PEAK_MIB
      exit 0; every rank's measured requested steady/peak exactly STEADY/PEAK MiB; the measured
      device view equal to the predicted device view on every rank.
  gpu_check.py device NAME RC JSON WORLD
      exit 0; measured = predicted on every rank, requested and device views.
  gpu_check.py async NAME RC JSON WORLD STEADY_MIB PEAK_MIB
      requested exact, pool statistics present with used_high = PEAK; device view reported as a
      second line (device = prediction), exit 0 or 1 accepted for the first line.
  gpu_check.py contracts NAME WORLD JSON...
      each of the chapter's contracts that WORLD admits (CONTRACTS) has WORLD passing rank rows
      and no row fails anywhere.
"""
import json
import sys

MIB = 1 << 20
# The chapter's five contracts and the worlds each needs: its file's `requires: {world: ...}`
# (a roll of one shard is the identity, sum and max agree on one rank, 1003 = 17 * 59). At world N
# each contract that the world admits has N passing rank rows: 5 x N at N = 2, 4, 8 (10, 20, 40);
# at N = 1 exact-sum and padding-trim only, 2 x 1 = 2 (the other three files are refused, exit 2).
CONTRACTS = [
    ("exact-sum-equivalence", lambda n: True),
    ("wrong-shard-order-rejected", lambda n: n >= 2),
    ("wrong-reduction-op-rejected", lambda n: n >= 2),
    ("padding-and-trim-equivalence", lambda n: True),
    ("nondivisible-without-padding-rejected", lambda n: 1003 % n != 0),
]


def contracts_at(world):
    return [c for c, needs in CONTRACTS if needs(world)]


def mib(b):
    if b is None:
        return "-"
    return str(b // MIB) if b % MIB == 0 else "%.3f" % (b / MIB)


def load(path):
    path = path.split("#")[0]
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise Failure("no JSON report (%s)" % e)
    if not doc.get("schedules"):
        raise Failure("report has no schedules")
    return doc


class Failure(Exception):
    pass


def ranks_of(doc, world, path=""):
    """Rank rows of the report's first schedule, or of schedule K for a path written FILE#K."""
    k = int(path.split("#")[1]) if "#" in path else 0
    if k >= len(doc["schedules"]):
        raise Failure("report has %d schedules, no schedule %d" % (len(doc["schedules"]), k))
    sch = doc["schedules"][k]
    ranks = sch.get("ranks") or []
    if len(ranks) != world:
        raise Failure("%d rank rows, want %d" % (len(ranks), world))
    for r in ranks:
        if not r.get("measured"):
            raise Failure("rank %s has no measured section" % r.get("rank"))
    return ranks


def first_difference(path):
    """What made a written report fail (exit 1): a measured/predicted mismatch, an expectation,
    a check row; "" when there is no report (runtime failures write none)."""
    try:
        with open(path.split("#")[0]) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return ""
    for s in doc.get("schedules") or []:
        for r in s.get("ranks") or []:
            if r.get("mismatch"):
                return "rank %s: %s" % (r.get("rank"), r["mismatch"])
        for e in s.get("expectations") or []:
            if not e.get("pass"):
                return "expectation %s %s on rank %s (line %s): expected %s, got %s" % (
                    e.get("view"), e.get("what"), e.get("rank"), e.get("line"),
                    e.get("expected"), e.get("got"))
        for c in s.get("checks") or []:
            if c.get("status") != "pass":
                return "check %s rank %s: %s" % (c.get("name"), c.get("rank"), c.get("detail"))
    return ""


def want_rc(rc, allowed, path=None):
    if rc not in allowed:
        why = first_difference(path) if path else ""
        raise Failure("exit %d, want %s%s" % (rc, " or ".join(map(str, allowed)),
                                             "; " + why if why else ""))


def requested_exact(ranks, steady, peak):
    for r in ranks:
        m = r["measured"]["requested"]
        if m["steady"] != steady or m["peak"] != peak:
            raise Failure("rank %d requested %s/%s MiB, want %s/%s MiB" % (
                r["rank"], mib(m["steady"]), mib(m["peak"]), mib(steady), mib(peak)))


def device_equal(ranks):
    for r in ranks:
        d = r["measured"].get("device")
        p = r["device"]
        if not d:
            raise Failure("rank %d has no device reading" % r["rank"])
        if d["steady"] != p["steady"] or d["peak"] != p["peak"]:
            raise Failure("rank %d device %s/%s MiB measured, %s/%s MiB predicted%s" % (
                r["rank"], mib(d["steady"]), mib(d["peak"]), mib(p["steady"]), mib(p["peak"]),
                "" if p.get("exact", True) else " (model inexact: %s..%s MiB)" % (
                    mib(p.get("peak_lo")), mib(p.get("peak_hi")))))


def facts(ranks):
    r0 = ranks[0]
    m = r0["measured"]
    d = m.get("device") or {}
    return "requested %s/%s MiB, device %s/%s MiB = predicted, communicator %s MiB (rank 0)" % (
        mib(m["requested"]["steady"]), mib(m["requested"]["peak"]), mib(d.get("steady")),
        mib(d.get("peak")), mib(m.get("communicator_bytes")))


def lifetime(name, rc, path, world, steady, peak):
    want_rc(rc, [0], path)
    ranks = ranks_of(load(path), world, path)
    requested_exact(ranks, steady * MIB, peak * MIB)
    device_equal(ranks)
    return facts(ranks)


def device(name, rc, path, world):
    want_rc(rc, [0], path)
    ranks = ranks_of(load(path), world, path)
    for r in ranks:
        m, p = r["measured"]["requested"], r["requested"]
        if m["steady"] != p["steady"] or m["peak"] != p["peak"]:
            raise Failure("rank %d requested %d/%d B measured, %d/%d B predicted" % (
                r["rank"], m["steady"], m["peak"], p["steady"], p["peak"]))
    device_equal(ranks)
    return facts(ranks)


def async_pool(name, rc, path, world, steady, peak):
    want_rc(rc, [0, 1])   # 1: expectations or device view differ; the second line says which
    ranks = ranks_of(load(path), world, path)
    requested_exact(ranks, steady * MIB, peak * MIB)
    for r in ranks:
        pool = r["measured"].get("pool")
        if not pool:
            raise Failure("rank %d reports no pool statistics" % r["rank"])
        if pool["used_high"] != peak * MIB:
            raise Failure("rank %d pool used_high %s MiB, want %s MiB" % (
                r["rank"], mib(pool["used_high"]), mib(peak * MIB)))
    pool = ranks[0]["measured"]["pool"]
    line = "requested %d/%d MiB; pool used %s/%s MiB, reserved %s/%s MiB (current/high, rank 0)" % (
        steady, peak, mib(pool["used_current"]), mib(pool["used_high"]),
        mib(pool["reserved_current"]), mib(pool["reserved_high"]))
    print("ok - %s: %s" % (name, line))
    try:
        device_equal(ranks)
        print("ok - %s device view = prediction: %s" % (name, facts(ranks)))
    except Failure as e:
        print("not ok - %s device view = prediction: %s" % (name, e))
    return None


def contracts(name, world, paths):
    rows = []
    for p in paths:
        for s in load(p)["schedules"]:
            rows.extend(s.get("checks") or [])
    bad = [r for r in rows if r.get("status") != "pass"]
    if bad:
        r = bad[0]
        raise Failure("%d failing rows, first: %s rank %s: %s" % (
            len(bad), r.get("name"), r.get("rank"), r.get("detail")))
    counted = 0
    want = contracts_at(world)
    for c in want:
        n = sum(1 for r in rows if r.get("name") == c and r.get("status") == "pass")
        if n != world:
            raise Failure("contract %s has %d passing rank rows, want %d" % (c, n, world))
        counted += n
    return "%d rank rows PASS (%d contracts x %d ranks), %d check rows in all" % (
        counted, len(want), world, len(rows))


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    kind, name = argv[1], argv[2]
    try:
        if kind == "lifetime":
            text = lifetime(name, int(argv[3]), argv[4], int(argv[5]), int(argv[6]), int(argv[7]))
        elif kind == "device":
            text = device(name, int(argv[3]), argv[4], int(argv[5]))
        elif kind == "async":
            text = async_pool(name, int(argv[3]), argv[4], int(argv[5]), int(argv[6]), int(argv[7]))
        elif kind == "contracts":
            text = contracts(name, int(argv[3]), argv[4:])
        else:
            print("unknown check kind %r" % kind, file=sys.stderr)
            return 2
    except Failure as e:
        print("not ok - %s: %s" % (name, e))
        return 0
    except (KeyError, TypeError, IndexError, ValueError) as e:
        print("not ok - %s: report lacks an expected field (%r)" % (name, e))
        return 0
    if text is not None:
        print("ok - %s: %s" % (name, text))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
