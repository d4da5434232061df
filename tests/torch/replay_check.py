#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""replay_check.py [--no-addresses] [-q] [-j N] MEMLIFE FIXTURE... — replays each allocator fixture
through memlife's torch view (the schedule from fixture_to_yaml.py, predicted by `memlife
trace`, whose counters `torch allocated bytes` / `torch reserved bytes` give the value after
every op) and requires allocated and reserved equal to PyTorch's at every step. At a step where
PyTorch ran out of memory, `memlife predict` of the schedule up to it must also report the
out-of-memory at that step's line (exit 2); the replay goes on past it with fixture_to_yaml.py's
stand-in. Prints one TAP-like line per fixture and a summary line with the exact-step counts.
The schedule gives the model the segments' recorded addresses, and then every block must also
lie where PyTorch put it (`memlife export`'s trace; not with expandable segments, whose ranges
the model invents); --no-addresses leaves them out (the model's own guess of the driver's
placement). -j N: N fixtures at a time. -q: a line only for a fixture that differs, and the
summary as one ok / not ok line."""
import concurrent.futures
import json
import trace_counters
import os
import pickle
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_to_yaml  # noqa: E402

COUNTERS = {"torch allocated bytes": "allocated", "torch reserved bytes": "reserved"}


def predicted_values(memlife, yaml_path, n_ops, tmp):
    """Per op k: {allocated, reserved} after it, from the trace's counters (trace_counters.py)."""
    out = os.path.join(tmp, "trace.json")
    r = subprocess.run([memlife, "trace", yaml_path, "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    with open(out) as f:
        trace = json.load(f)
    tracks = {name: trace_counters.per_op(trace["traceEvents"], counter)
              for counter, name in COUNTERS.items()}
    values = [{name: trace_counters.value_after(v, k) for name, v in tracks.items()}
              for k in range(n_ops)]
    return values, ""


def model_addresses(memlife, yaml_path, n_head, tmp):
    """Per alloc step k: the address the model gave the block, from `memlife export`'s
    device_traces (each entry framed by its schedule line)."""
    out = os.path.join(tmp, "model.pickle")
    r = subprocess.run([memlife, "export", "--memory-viz", yaml_path, "-o", out, "-q"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    with open(out, "rb") as f:
        traces = pickle.load(f)["device_traces"][0]
    return {e["frames"][0]["line"] - n_head - 1: e["addr"] for e in traces if e["action"] == "alloc"}, ""


def first_address_difference(memlife, fx, yaml_path, n_head, tmp):
    """Given the segments' recorded addresses, every block must be where PyTorch put it: the
    first alloc step where the model's address differs, or None. Expandable segments map pages
    into a range the model invents, so they are not compared."""
    got, err = model_addresses(memlife, yaml_path, n_head, tmp)
    if got is None:
        return "memlife export failed: " + err
    for k, s in enumerate(fx["steps"]):
        if s["op"] == "alloc" and not s.get("oom") and got.get(k) != s["addr"]:
            return "step %d (alloc %d B): PyTorch's block at %#x, the model's at %s" % (
                k, s["bytes"], s["addr"], "%#x" % got[k] if k in got else "none")
    return None


def replay(memlife, path, tmp):
    """(exact steps, steps, first difference or None, whether block addresses were compared)."""
    with open(path) as f:
        fx = json.load(f)
    text, ooms, n_head = fixture_to_yaml.convert(fx)
    steps = fx["steps"]
    yaml_path = os.path.join(tmp, "s.yaml")
    with open(yaml_path, "w") as f:
        f.write(text)
    values, err = predicted_values(memlife, yaml_path, len(steps), tmp)
    if values is None:
        return 0, len(steps), "memlife trace failed: " + err, False
    ok_steps, first_bad = 0, None
    for k, s in enumerate(steps):
        want = (s["allocated"], s["reserved"])
        got = (values[k]["allocated"], values[k]["reserved"])
        good = want == got
        if good and k in ooms:   # the out-of-memory itself: memlife must predict it, there
            with open(yaml_path, "w") as f:
                f.write(fixture_to_yaml.prefix(fx, k))
            r = subprocess.run([memlife, "predict", yaml_path], capture_output=True, text=True)
            where = "%s:%d:" % (yaml_path, n_head + k + 1)
            good = r.returncode == 2 and where in r.stderr and "would run out of memory" in r.stderr
            if not good and first_bad is None:
                first_bad = "step %d: PyTorch ran out of memory, memlife: exit %d %s" % (
                    k, r.returncode, r.stderr.strip()[:200])
        elif not good and first_bad is None:
            first_bad = "step %d (%s): allocated/reserved %d/%d, predicted %d/%d" % (
                k, s["op"], want[0], want[1], got[0], got[1])
        ok_steps += good
    addressed = fixture_to_yaml.ADDRESSES and "expandable_segments:True" not in (fx["conf"] or "")
    if first_bad is None and addressed:
        with open(yaml_path, "w") as f:
            f.write(text)
        first_bad = first_address_difference(memlife, fx, yaml_path, n_head, tmp)
    return ok_steps, len(steps), first_bad, addressed


def main():
    args = sys.argv[1:]
    jobs = 1
    quiet = False
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt == "--no-addresses":
            fixture_to_yaml.ADDRESSES = False
        elif opt == "-q":
            quiet = True
        elif opt == "-j":
            jobs = int(args.pop(0))
        else:
            raise SystemExit("usage: replay_check.py [--no-addresses] [-q] [-j N] MEMLIFE FIXTURE...")
    memlife, fixtures = args[0], args[1:]
    total_ok = total = ooms = 0
    failed = placed = 0

    def one(path):
        with tempfile.TemporaryDirectory() as tmp:
            with open(path) as f:
                n_oom = sum(1 for s in json.load(f)["steps"] if s.get("oom"))
            return (path, n_oom) + replay(memlife, path, tmp)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        for path, n_oom, ok_steps, checked, bad, addressed in ex.map(one, fixtures):
            name = os.path.basename(path)[:-5]
            total_ok += ok_steps
            total += checked
            ooms += n_oom
            if bad:
                failed += 1
                print("not ok - torch replay %s: %d/%d steps exact; first: %s" % (name, ok_steps, checked, bad))
            else:
                placed += addressed
                if quiet:
                    continue
                print("ok - torch replay %s: %d/%d steps exact%s%s" % (
                    name, ok_steps, checked,
                    " (%d out-of-memory predicted at their step)" % n_oom if n_oom else "",
                    ", every block at PyTorch's address" if addressed else ""))
    summary = ("torch replay: %d of %d steps exact in %d fixtures (%d fixtures differ); %d of them "
               "out-of-memory steps, each predicted at its line; every block at PyTorch's address in "
               "%d fixtures" % (total_ok, total, len(fixtures), failed, ooms, placed))
    if quiet:   # one line for them all; a fixture that differs has its own line above
        print("%s - %s" % ("not ok" if failed else "ok", summary))
    else:
        print("# " + summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
