#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""segment_order.py SNAPSHOT.pickle [--swap I,J] [--values FILE] — which free block PyTorch's
caching allocator chose when two segments offered one of the same size, and what the segments'
address order did to memory_allocated later.

PyTorch breaks a tie between free blocks of equal size on one stream by the lower address, and a
segment's address is whatever cudaMalloc returned in that process. memlife's torch view cannot
know those addresses: it puts each new segment below the older ones (the order the H200 fixtures
showed for the large pool). A re-run of an imported snapshot through `--backend torch` is a
different process, with other device memory around it (NCCL's communicator, the streams made
before the baseline), so cudaMalloc may order the segments otherwise and a tie may go the other
way; memory_allocated then differs later, when the blocks the tie left behind are merged and
split (a large block is split only when more than 1 MiB remains).

The snapshot's trace (recorded from process start, as `_dump_snapshot` writes it, or as the torch
driver writes it with MEMLIFE_TORCH_SNAPSHOT=FILE) is replayed through the reference model of
check_model.py twice: with the trace's own segment addresses (every block address the model
picks must then be the trace's: the count that differ is printed), and with memlife's order
(each new segment lowest). Steps are numbered as `memlife import` numbers them: one per alloc
and one per free (at free_completed). Prints:

    SNAPSHOT: 827 allocs, 0 block addresses differ from the trace
    large segments on stream S by creation: #10 20 MiB at 0x7f3176000000, ...
    tie at step 506 (3145728 B, 4194304 B free in #10 and #18): the trace's addresses take #18, memlife's #18
    memlife's order: allocated and reserved equal at all 1534 steps

--swap I,J exchanges the addresses of segments I and J (creation indices) before the replay
(what-if: "had cudaMalloc put #10 below #18"); --orders replays every order of the first
stream's large segments at the same addresses and counts the outcomes, naming a pair whose
order alone decides between two; --values FILE writes the replay's [allocated,
reserved] after every step as JSON; --measured RUN.json compares the replay with what a
`memlife run --backend torch --format json` measured after every op (exit 1 at a difference).
Standard library and pickle only (the snapshots are the project's own files or its own run's);
no GPU."""
import itertools
import json
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_model as cm  # noqa: E402  (the reference rules, one copy)


def load_trace(path):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    trace = snap["device_traces"][0]
    if any(e["action"] in ("segment_map", "segment_unmap") for e in trace):
        sys.exit("%s: expandable segments (segment_map): their blocks have no segment order to "
                 "choose by; not covered" % path)
    held = sum(s["total_size"] for s in snap["segments"] if s.get("device", 0) == 0)
    made = sum(e["size"] if e["action"] == "segment_alloc" else -e["size"]
               for e in trace if e["action"] in ("segment_alloc", "segment_free"))
    if held != made:
        sys.exit("%s: %d bytes of segments were not made in the trace (recording began late): "
                 "not covered" % (path, held - made))
    return trace


def replay(trace, seg_addr):
    """Steps of trace through the model, new segment k at seg_addr(k). Returns the values after
    every step, the block address each alloc got (None where it was not the trace's), the ties
    between segments as (step, request, size, [segment indices], index taken) and the large
    segments as (index, size, stream, address)."""
    m = cm.Model("", None)
    live, values, got, ties, large = {}, [], [], [], []
    index_of = {}   # id(segment dict) -> creation index
    pending = {}
    for e in trace:
        a = e["action"]
        if a == "alloc":
            r = cm.round_size(e["size"], 0)
            pool = "small" if r <= cm.MiB else "large"
            free = [b for s in m.segments if s["pool"] == pool and s["stream"] == e["stream"]
                    for b in s["blocks"] if not b.allocated and not b.pending and b.size >= r]
            tie = None
            if free:
                best = min(b.size for b in free)
                segs = sorted({index_of[id(b.seg)] for b in free if b.size == best})
                if len(segs) > 1:
                    tie = (len(values), e["size"], best, segs)
            n = len(m.segments)
            new_seg = [("segment_alloc", cm.segment_size(r), seg_addr(n))]
            blk = m.malloc(e["size"], e["stream"], new_seg)
            if len(m.segments) > n:
                index_of[id(m.segments[-1])] = n
                if pool == "large":
                    large.append((n, m.segments[-1]["size"], e["stream"], blk.addr))
            if tie:
                ties.append(tie + (index_of[id(blk.seg)],))
            live[e["addr"]] = blk
            got.append(blk.addr == e["addr"])
            values.append((m.allocated, m.reserved))
        elif a == "free_requested":
            pending[e["addr"]] = True
        elif a == "free_completed":
            if not pending.pop(e["addr"], False):
                sys.exit("free_completed of 0x%x without its free_requested: not covered"
                         % e["addr"])
            m.free(live.pop(e["addr"]))
            values.append((m.allocated, m.reserved))
        elif a not in ("segment_alloc", "segment_free"):
            sys.exit("trace action '%s' is not covered (a plain alloc/free trace only)" % a)
        if pending and a == "alloc":
            sys.exit("an alloc between a free_requested and its free_completed: not covered")
    return values, got, ties, large


def order_outcomes(trace, addrs, large, own):
    """--orders: every order of the large segments of the first stream that has them, placed
    at the same addresses; the outcomes (equal to the trace's replay, or the first difference)
    and each pair of segments whose relative order alone decides between two outcomes."""
    stream = min(s for _, _, s, _ in large)
    segs = [k for k, _, s, _ in large if s == stream]
    slots = sorted(addrs[k] for k in segs)
    outcome = {}
    for perm in itertools.permutations(range(len(segs))):
        trial = list(addrs)
        for j, k in enumerate(segs):
            trial[k] = slots[perm[j]]
        vals = replay(trace, lambda n: trial[n] if n < len(trial) else None)[0]
        first = next((k for k in range(len(own)) if vals[k] != own[k]), None)
        outcome[perm] = "equal to the trace's" if first is None else \
            "step %d: %d/%d" % (first, vals[first][0], vals[first][1])
    kinds = sorted(set(outcome.values()))
    for kind in kinds:
        print("orders: %d of %d %s" % (list(outcome.values()).count(kind), len(outcome), kind))
    for a, b in itertools.combinations(range(len(segs)), 2):
        split = {kind: {p[a] < p[b] for p, o in outcome.items() if o == kind} for kind in kinds}
        if len(kinds) == 2 and all(len(v) == 1 for v in split.values()) and \
                split[kinds[0]] != split[kinds[1]]:
            below = kinds[0] if split[kinds[0]] == {True} else kinds[1]
            print("orders: #%d below #%d decides: %s" % (segs[a], segs[b], below))


def against_run(path, own):
    """--measured RUN.json: memory_allocated / memory_reserved after every op of a
    `memlife run --backend torch --format json` (rank 0's timeline: pool_used, pool_reserved)
    against this replay. 0 when equal at every op, 1 otherwise."""
    with open(path) as f:
        run = json.load(f)
    try:
        tl = run["schedules"][0]["ranks"][0]["measured"]["timeline"]
    except (KeyError, IndexError, TypeError):
        print("measured: %s is not a `memlife run --format json` result" % path)
        return 1
    rows = [e for e in tl if e.get("index") is not None and "pool_used" in e]
    if not rows:
        print("measured: %s has no pool readings (not a GPU run?)" % path)
        return 1
    for e in rows:
        k = e["index"]
        got = (e["pool_used"], e["pool_reserved"])
        if k >= len(own) or tuple(own[k]) != got:
            print("measured: op %d differs: measured %d/%d, this replay %s" % (
                k, got[0], got[1], "%d/%d" % tuple(own[k]) if k < len(own) else "none"))
            return 1
    print("measured: allocated and reserved equal to this replay at all %d ops" % len(rows))
    return 0


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__.split("\n\n")[0])
    path, swap, values_out, orders, measured = args[0], None, None, False, None
    rest = args[1:]
    while rest:
        opt = rest.pop(0)
        if opt == "--swap" and rest:
            swap = tuple(int(x) for x in rest.pop(0).split(","))
        elif opt == "--orders":
            orders = True
        elif opt == "--values" and rest:
            values_out = rest.pop(0)
        elif opt == "--measured" and rest:
            measured = rest.pop(0)
        else:
            sys.exit("segment_order.py: unknown option '%s'" % opt)
    trace = load_trace(path)
    addrs = [e["addr"] for e in trace if e["action"] == "segment_alloc"]
    if swap:
        i, j = swap
        addrs[i], addrs[j] = addrs[j], addrs[i]
    own, got, ties, large = replay(trace, lambda k: addrs[k] if k < len(addrs) else None)
    # memlife's order: every new segment below all older ones (view_torch's address order)
    mem, _, mties, _ = replay(trace, lambda k: (1 << 46) - (k + 1) * (1 << 32))
    name = os.path.basename(path)
    print("%s: %d allocs, %d block addresses differ from the trace%s"
          % (name, len(got), got.count(False), " (after --swap %d,%d)" % swap if swap else ""))
    for stream in sorted({s for _, _, s, _ in large}):
        print("large segments on stream %d by creation: %s" % (stream, ", ".join(
            "#%d %d MiB at 0x%x" % (k, size >> 20, ad) for k, size, s, ad in large if s == stream)))
    taken = {t[0]: t[4] for t in mties}
    for step, req, size, segs, took in ties:
        # the large pool only: a small block is split whenever 512 B remain, so which one a
        # small request takes never changes memory_allocated
        if cm.round_size(req, 0) > cm.MiB:
            print("tie at step %d (%d B, %d B free in %s): the %s addresses take #%d, %s"
                  % (step, req, size, " and ".join("#%d" % s for s in segs),
                     "swapped" if swap else "trace's", took,
                     "memlife's #%d" % taken[step] if step in taken else "memlife's has no tie"))
    first = next((k for k in range(len(own)) if own[k] != mem[k]), None)
    if first is None:
        print("memlife's order: allocated and reserved equal at all %d steps" % len(own))
    else:
        print("memlife's order: allocated first differs at step %d: %d vs %d (reserved %d vs %d)"
              % (first, mem[first][0], own[first][0], mem[first][1], own[first][1]))
    if orders:
        order_outcomes(trace, addrs, large, own)
    if measured:
        return against_run(measured, own)
    if values_out:
        with open(values_out, "w") as f:
            json.dump(own, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
