#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Replay allocator fixtures through a reference model of the caching-allocator rules (docs/torch.md) and compare.

The model covers segments that are not expandable: default, max_split_size_mb,
roundup_power2_divisions, and a memory fraction without garbage_collection_threshold (the OOM
retry frees every whole-free segment, then tries again). Fixtures with expandable segments or a
gc threshold are skipped. Per step it compares allocated, reserved, requested and the multiset of
segment events. Standard library only; no GPU.

    python3 tests/torch/check_model.py [DIR]      (default: tests/torch/fixtures/allocator)

Two facts the model needs beyond the fact sheet (both seen on the H200, torch 2.11.0+cu130):
- requested_bytes.all.current of a block freed after record_stream drops when the block is
  really freed (free_completed, at a later malloc or empty_cache), while memory_allocated drops
  at the free itself;
- an event recorded on a stream that is not busy has completed by the next malloc (the fixtures
  leave at least a few hundred microseconds between steps).
Ties among free blocks of equal size go to the lowest address; the model takes each new
segment's address from the fixture's own segment_alloc event.
"""
import glob
import json
import os
import sys

MiB = 1 << 20


def parse_conf(conf):
    out = {}
    for kv in filter(None, conf.split(",")):
        k, v = kv.split(":")
        out[k.strip()] = v.strip()
    return out


def round_size(size, divisions):
    if size < 512:
        return 512
    if divisions > 1 and size > 512 * divisions:
        if size & (size - 1) == 0:
            return size
        floor = 1 << (size.bit_length() - 1)
        step = floor // divisions
        if step == 0:
            return floor << 1
        low = size & ~(step - 1)
        return size if low == size else low + step
    return (size + 511) // 512 * 512


def segment_size(rounded):
    if rounded <= MiB:
        return 2 * MiB
    if rounded < 10 * MiB:
        return 20 * MiB
    return (rounded + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)


class Block:
    def __init__(self, seg, addr, size):
        self.seg, self.addr, self.size = seg, addr, size
        self.allocated = False
        self.pending = False       # freed, waiting for record_stream events
        self.requested = 0
        self.stream = 0
        self.uses = set()          # streams named by record_stream
        self.waiting_on = set()    # of those, the ones busy when it was freed


class Model:
    def __init__(self, conf, limit):
        c = parse_conf(conf)
        self.divisions = int(c.get("roundup_power2_divisions", 0))
        self.max_split = int(c["max_split_size_mb"]) * MiB if "max_split_size_mb" in c else 1 << 62
        self.limit = limit
        self.segments = []         # each: {"size", "stream", "pool", "blocks": [Block by address]}
        self.pending = []
        self.busy = set()
        self.allocated = self.reserved = self.requested = 0
        self.events = []           # segment events of the current step
        self.fake_addr = 1 << 48

    def _free_segments(self):
        for s in list(self.segments):
            b = s["blocks"]
            if len(b) == 1 and not b[0].allocated and not b[0].pending:
                self.segments.remove(s)
                self.reserved -= s["size"]
                self.events.append(("segment_free", s["size"]))

    def _release(self, blk):
        """Return a block to its pool, merging with free neighbours."""
        blocks = blk.seg["blocks"]
        i = blocks.index(blk)
        for j in (i + 1, i - 1):
            if 0 <= j < len(blocks):
                n = blocks[j]
                if not n.allocated and not n.pending:
                    if j < i:
                        blk.addr = n.addr
                    blk.size += n.size
                    blocks.remove(n)
                    i = blocks.index(blk)

    def _process_events(self, all_done=False):
        for b in list(self.pending):
            if all_done or not b.waiting_on:
                b.pending = False
                self.pending.remove(b)
                self.requested -= b.requested
                self._release(b)

    def malloc(self, nbytes, stream, real_segments):
        self._process_events()
        r = round_size(nbytes, self.divisions)
        pool = "small" if r <= MiB else "large"
        free = [b for s in self.segments if s["pool"] == pool and s["stream"] == stream
                for b in s["blocks"] if not b.allocated and not b.pending and b.size >= r]
        blk = min(free, key=lambda b: (b.size, b.addr)) if free else None
        if blk is not None and ((r < self.max_split and blk.size >= self.max_split) or
                                (r >= self.max_split and blk.size >= r + 20 * MiB)):
            blk = None
        if blk is None:
            size = segment_size(r)
            if self.limit is not None and self.reserved + size > self.limit:
                self._free_segments()
                if self.reserved + size > self.limit:
                    return None
            addr = next((e[2] for e in real_segments if e[0] == "segment_alloc" and e[1] == size), None)
            if addr is None:
                addr, self.fake_addr = self.fake_addr, self.fake_addr + size + (1 << 32)
            seg = {"size": size, "stream": stream, "pool": pool, "blocks": []}
            blk = Block(seg, addr, size)
            seg["blocks"].append(blk)
            self.segments.append(seg)
            self.reserved += size
            self.events.append(("segment_alloc", size))
        rest = blk.size - r
        if (pool == "small" and rest >= 512) or (pool == "large" and r < self.max_split and rest > MiB):
            tail = Block(blk.seg, blk.addr + r, rest)
            blocks = blk.seg["blocks"]
            blocks.insert(blocks.index(blk) + 1, tail)
            blk.size = r
        blk.allocated, blk.requested, blk.stream, blk.uses = True, nbytes, stream, set()
        self.allocated += blk.size
        self.requested += nbytes
        return blk

    def free(self, blk):
        blk.allocated = False
        self.allocated -= blk.size
        if blk.uses:
            blk.pending = True
            blk.waiting_on = blk.uses & self.busy
            self.pending.append(blk)
        else:
            self.requested -= blk.requested
            self._release(blk)

    def sync(self, stream=None):
        if stream is None:
            self.busy.clear()
        else:
            self.busy.discard(stream)
        for b in self.pending:
            if stream is None:
                b.waiting_on.clear()
            else:
                b.waiting_on.discard(stream)

    def empty_cache(self):
        self._process_events(all_done=True)
        self._free_segments()


def check(fx):
    """Mismatching steps of one fixture, or None when the model does not cover its config."""
    c = parse_conf(fx["conf"])
    if "expandable_segments" in c or "garbage_collection_threshold" in c:
        return None
    m = Model(fx["conf"], fx["limit"])
    live, bad = {}, []
    for k, st in enumerate(fx["steps"]):
        m.events = []
        op = st["op"]
        if op == "alloc":
            blk = m.malloc(st["bytes"], st["stream"], st.get("segment_detail", []))
            if (blk is None) != bool(st.get("oom")):
                bad.append((k, "model oom" if blk is None else "device oom"))
            if blk is not None:
                live[st["id"]] = blk
        elif op == "free" and st["id"] in live:
            m.free(live.pop(st["id"]))
        elif op == "record_stream" and st["id"] in live:
            if st["stream"] != live[st["id"]].stream:
                live[st["id"]].uses.add(st["stream"])
        elif op == "busy":
            m.busy.add(st["stream"])
        elif op == "sync":
            m.sync(st["stream"])
        elif op == "sync_device":
            m.sync()
        elif op == "empty_cache":
            m.empty_cache()
        got = (m.allocated, m.reserved, m.requested, sorted(m.events))
        want = (st["allocated"], st["reserved"], st["requested"],
                sorted(tuple(e) for e in st["segments"]))
        if got != want:
            bad.append((k, op, "model", got, "device", want))
    return bad


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures", "allocator")
    checked = failed = 0
    for f in sorted(glob.glob(os.path.join(d, "*.json"))):
        if os.path.basename(f) == "summary.json":
            continue
        with open(f) as fh:
            bad = check(json.load(fh))
        if bad is None:
            continue
        checked += 1
        if bad:
            failed += 1
            print(f"{os.path.basename(f)}: {len(bad)} steps differ; first: {bad[0]}")
    print(f"{checked} fixtures checked against the model, {failed} differ")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
