#!/usr/bin/env python3
"""fixture_to_yaml.py — one allocator fixture (tests/torch/fixtures/allocator/*.json, format in
that folder's README) as a memlife schedule, so that memlife's torch view replays what PyTorch
ran, one plan op per fixture step.

    fixture_to_yaml.py FIXTURE.json OUT.yaml   -> prints the number of steps written

Steps: alloc -> `alloc: {buf: tID, bytes: N, dtype: uint8, stream: S}`; free -> `free: tID`;
record_stream -> `record_stream: {buf: tID, stream: S}`; busy -> `compute: {stream: S}` (work
pending on S until a sync); sync -> `sync: {stream: S}`; sync_device -> `sync: device`;
empty_cache -> `empty_cache: {}`. Stream 0 is `default`, stream k > 0 is `sK`.

memlife stops at a predicted out-of-memory (an error, exit 2), so a fixture is written up to and
including its first alloc that failed in PyTorch; the caller checks that memlife reports the
out-of-memory exactly there. The fixture's `limit` (the memory fraction's allowed maximum) is
the schedule's `torch: {limit:}`, its conf the `torch: {conf:}`."""
import json
import sys


def stream_name(k):
    return "default" if k == 0 else "s%d" % k


def convert(fx):
    steps = fx["steps"]
    first_oom = next((i for i, s in enumerate(steps) if s.get("oom")), None)
    upto = len(steps) if first_oom is None else first_oom + 1
    streams = sorted({s["stream"] for s in steps[:upto] if "stream" in s and s["stream"] != 0})
    out = ["name: %s" % fx["name"], "world: 1", "dtype: uint8"]
    if streams:
        out.append("streams: [%s]" % ", ".join(stream_name(k) for k in streams))
    torch = ['conf: %s' % json.dumps(fx["conf"] or "")]
    if fx.get("limit"):
        torch.append("limit: %d" % fx["limit"])
    out.append("torch: {%s}" % ", ".join(torch))
    out.append("steps:")
    for s in steps[:upto]:
        op = s["op"]
        if op == "alloc":
            out.append("  - alloc: {buf: t%d, bytes: %d, stream: %s}" % (s["id"], s["bytes"], stream_name(s["stream"])))
        elif op == "free":
            out.append("  - free: t%d" % s["id"])
        elif op == "record_stream":
            out.append("  - record_stream: {buf: t%d, stream: %s}" % (s["id"], stream_name(s["stream"])))
        elif op == "busy":
            out.append("  - compute: {stream: %s}" % stream_name(s["stream"]))
        elif op == "sync":
            out.append("  - sync: {stream: %s}" % stream_name(s["stream"]))
        elif op == "sync_device":
            out.append("  - sync: device")
        elif op == "empty_cache":
            out.append("  - empty_cache: {}")
        else:
            raise SystemExit("%s: unknown op %r" % (fx["name"], op))
    return "\n".join(out) + "\n", upto, first_oom


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: fixture_to_yaml.py FIXTURE.json OUT.yaml")
    with open(sys.argv[1]) as f:
        fx = json.load(f)
    text, upto, first_oom = convert(fx)
    with open(sys.argv[2], "w") as f:
        f.write(text)
    # steps written, the index of the first OOM step (-1: none), steps in the fixture
    print(upto, -1 if first_oom is None else first_oom, len(fx["steps"]))


if __name__ == "__main__":
    main()
