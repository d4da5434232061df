#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fixture_to_yaml.py — one allocator fixture (tests/torch/fixtures/allocator/*.json, format in
that folder's README) as a memlife schedule, so that memlife's torch view replays what PyTorch
ran, one plan op per fixture step.

    fixture_to_yaml.py FIXTURE.json OUT.yaml   -> prints the number of steps written

Steps: alloc -> `alloc: {buf: tID, bytes: N, dtype: uint8, stream: S}`; free -> `free: tID`;
record_stream -> `record_stream: {buf: tID, stream: S}`; busy -> `compute: {stream: S}` (work
pending on S until a sync); sync -> `sync: {stream: S}`; sync_device -> `sync: device`;
empty_cache -> `empty_cache: {}`; record_event -> `record: {event: eK, stream: S}`; sync_event
-> `sync: {event: eK}`. Stream 0 is `default`, stream k > 0 is `sK`. The segments' recorded
addresses (segment_detail's segment_alloc entries) become `torch: {addresses: [...]}`.

memlife stops at a predicted out-of-memory (an error, exit 2), while PyTorch raises, the program
catches it and goes on. So convert() gives two things: the schedule up to each failing alloc
(`prefix(k)`: memlife must report the out-of-memory at its line), and a schedule of every step
in which a failing alloc stands as `empty_cache: {}` and a free of its tensor as `compute: {}`
(no allocator effect). The stand-in is exact, not a guess: before PyTorch gives up it has freed
every cached segment (the out-of-memory path releases them all, then fails), which is what
empty_cache does when no stream work is pending (none is in these fixtures; the converter
refuses one where some is). The fixture's `limit` (the memory fraction's allowed maximum) is the
schedule's `torch: {limit:}`, its conf the `torch: {conf:}`."""
import json
import sys


def stream_name(k):
    return "default" if k == 0 else "s%d" % k


# replay_check.py --no-addresses clears it: the model's own guess of the driver's placement
ADDRESSES = True


def segment_addresses(steps):
    """The cudaMalloc segments' addresses in the order they were made (the trace's
    segment_alloc entries): in one process the driver hands the addresses of released segments
    out again, so a sequence replayed after others (collect_allocator.py --batch) has its
    segments wherever they were, not each below the last."""
    return [d[2] for s in steps for d in s.get("segment_detail", [])
            if d[0] == "segment_alloc" and d[2] is not None]


def header(fx, steps):
    streams = sorted({s["stream"] for s in steps if "stream" in s and s["stream"] != 0})
    events = sorted({s["event"] for s in steps if "event" in s})
    out = ["name: %s" % fx["name"], "world: 1", "dtype: uint8"]
    if streams:
        out.append("streams: [%s]" % ", ".join(stream_name(k) for k in streams))
    if events:
        out.append("events: [%s]" % ", ".join("e%d" % k for k in events))
    torch = ['conf: %s' % json.dumps(fx["conf"] or "")]
    if fx.get("limit"):
        torch.append("limit: %d" % fx["limit"])
    addrs = segment_addresses(steps) if ADDRESSES else []
    if addrs:
        torch.append("addresses: [%s]" % ", ".join("0x%x" % a for a in addrs))
    out.append("torch: {%s}" % ", ".join(torch))
    out.append("steps:")
    return out


def step_line(fx, s, failed):
    """The schedule line of fixture step s; failed: ids whose alloc failed (stand-ins)."""
    op = s["op"]
    if op == "alloc":
        if s.get("oom"):
            return "  - empty_cache: {}   # PyTorch: out of memory, every cached segment freed"
        return "  - alloc: {buf: t%d, bytes: %d, stream: %s}" % (s["id"], s["bytes"], stream_name(s["stream"]))
    if op in ("free", "record_stream") and s["id"] in failed:
        return "  - compute: {}   # %s of a tensor whose alloc failed: nothing" % op
    if op == "free":
        return "  - free: t%d" % s["id"]
    if op == "record_stream":
        return "  - record_stream: {buf: t%d, stream: %s}" % (s["id"], stream_name(s["stream"]))
    if op == "busy":
        return "  - compute: {stream: %s}" % stream_name(s["stream"])
    if op == "sync":
        return "  - sync: {stream: %s}" % stream_name(s["stream"])
    if op == "sync_device":
        return "  - sync: device"
    if op == "empty_cache":
        return "  - empty_cache: {}"
    if op == "record_event":
        return "  - record: {event: e%d, stream: %s}" % (s["event"], stream_name(s["stream"]))
    if op == "sync_event":
        return "  - sync: {event: e%d}" % s["event"]
    raise SystemExit("%s: unknown op %r" % (fx["name"], op))


def convert(fx):
    """(the schedule of every step with stand-ins, [k of every failing alloc], lines before the
    steps) — prefix(fx, k) is the schedule that must run out of memory at step k."""
    steps = fx["steps"]
    ooms = [i for i, s in enumerate(steps) if s.get("oom")]
    if ooms and any(s["op"] in ("busy", "record_stream", "record_event") for s in steps):
        raise SystemExit("%s: an out-of-memory with stream work: empty_cache is no stand-in" % fx["name"])
    failed = {steps[i]["id"] for i in ooms}
    head = header(fx, steps)
    lines = head + [step_line(fx, s, failed) for s in steps]
    return "\n".join(lines) + "\n", ooms, len(head)


def prefix(fx, k):
    """Steps 0..k-1 as convert() writes them, then step k's alloc itself."""
    steps = fx["steps"]
    failed = {s["id"] for s in steps[:k] if s.get("oom")}
    s = steps[k]
    lines = header(fx, steps) + [step_line(fx, x, failed) for x in steps[:k]]
    lines.append("  - alloc: {buf: t%d, bytes: %d, stream: %s}" % (s["id"], s["bytes"], stream_name(s["stream"])))
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: fixture_to_yaml.py FIXTURE.json OUT.yaml")
    with open(sys.argv[1]) as f:
        fx = json.load(f)
    text, ooms, _ = convert(fx)
    with open(sys.argv[2], "w") as f:
        f.write(text)
    # steps written, then the indexes of the steps where PyTorch ran out of memory
    print(len(fx["steps"]), *ooms)


if __name__ == "__main__":
    main()
