#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Collect ground truth of PyTorch's CUDA caching allocator: replay fixtures.

Each sequence (hand-written below, or generated from a seed) is a list of steps: alloc, free,
record_stream, busy, sync, sync_device, empty_cache. Every (sequence, configuration) pair is
replayed in a FRESH python process, so the allocator starts empty, and after every step the
child reads memory_allocated(), memory_reserved(), memory_stats()['requested_bytes.all.current']
and the allocator trace entries the step added (segment events, and block events in "blocks").

Usage (on a machine with a CUDA GPU and PyTorch):
    python3 tests/torch/collect_allocator.py --out DIR [-j 8] [--only REGEX] [--list]

One JSON file per sequence x configuration is written to DIR, plus DIR/summary.json. A failing
sequence is recorded in the summary (and in its fixture's "error") and does not stop the others.
Only the standard library is needed in the parent; the child needs torch.

    python3 tests/torch/collect_allocator.py --batch --out DIR [-j 14] [--per-process 40] [--tar T]

replays the generated corpus (CORPUS: 500 sequences of 400 steps, 1660 fixtures) instead, many
sequences a process, one configuration a process, each sequence from an empty allocator (see
tests/torch/fixtures/allocator_corpus.md), and packs the fixtures and the summary into T.
"""
import argparse
import concurrent.futures
import json
import math
import os
import random
import re
import subprocess
import sys
import time

KiB = 1024
MiB = 1024 * 1024
GiB = 1024 * MiB

# Long enough that a stream spinning in torch.cuda._sleep cannot finish before the steps that
# follow a "busy" (each step is a few ms); every generated "busy" is followed by a "sync" of the
# same stream within a few steps, and the sync step records whether the stream was still busy.
BUSY_CYCLES = 300_000_000
# Batch mode's spin: about 25 ms, still many steps long (a step is about 1 ms); every sync after
# a busy records was_idle, which must be false for the fixture to hold.
BATCH_BUSY_CYCLES = 50_000_000

# ---------------------------------------------------------------------------------------------
# Sequence builders. A builder returns (description, steps); ids are assigned by the Seq helper.


class Seq:
    def __init__(self):
        self.steps = []
        self.next_id = 0
        self.live = []  # ids in allocation order

    def alloc(self, nbytes, stream=0):
        i = self.next_id
        self.next_id += 1
        self.steps.append({"op": "alloc", "id": i, "bytes": int(nbytes), "stream": stream})
        self.live.append(i)
        return i

    def free(self, i):
        self.steps.append({"op": "free", "id": i})
        self.live.remove(i)

    def free_all(self):
        for i in list(self.live):
            self.free(i)

    def record_stream(self, i, stream):
        self.steps.append({"op": "record_stream", "id": i, "stream": stream})

    def busy(self, stream):
        self.steps.append({"op": "busy", "stream": stream})

    def sync(self, stream):
        self.steps.append({"op": "sync", "stream": stream})

    def sync_device(self):
        self.steps.append({"op": "sync_device"})

    def empty_cache(self):
        self.steps.append({"op": "empty_cache"})

    def record_event(self, event, stream):
        self.steps.append({"op": "record_event", "event": event, "stream": stream})

    def sync_event(self, event):
        self.steps.append({"op": "sync_event", "event": event})


def seq_worked_example():
    s = Seq()
    a = s.alloc(1000)
    b = s.alloc(3 * MiB)
    s.alloc(12 * MiB)
    s.free(b)
    s.alloc(MiB + 1)
    s.free(a)
    s.alloc(25 * MiB)
    return "the worked example of docs/torch.md", s.steps


def seq_sizes_512():
    s = Seq()
    ids = [s.alloc(n) for n in (1, 511, 512, 513)]
    s.free(ids[1])
    s.alloc(512)          # takes the freed 512 block (best fit, same size)
    s.free(ids[3])
    s.alloc(1)            # 1024 block free: split to 512 + 512
    s.alloc(1024)
    s.free_all()
    s.alloc(1536)         # everything merged again
    s.alloc(2 * MiB - 1536)
    s.alloc(1)            # segment full: a second 2 MiB segment
    s.free_all()
    s.empty_cache()
    return "sizes around 512 B: 1, 511, 512, 513, reuse and split in the small pool", s.steps


def seq_sizes_1mib():
    s = Seq()
    sizes = [MiB - 512, MiB - 1, MiB, MiB + 1, MiB + 512, MiB - 513, MiB + 513]
    for n in sizes:
        i = s.alloc(n)
        s.free(i)
    ids = [s.alloc(n) for n in sizes]
    for i in ids[::2]:
        s.free(i)
    s.alloc(MiB)
    s.alloc(MiB + 1)
    s.alloc(512 * KiB)
    s.free_all()
    s.empty_cache()
    s.alloc(MiB)
    s.alloc(MiB)
    s.alloc(MiB)          # third 1 MiB in the small pool: a new 2 MiB segment
    s.alloc(MiB + 1)
    s.free_all()
    return "sizes around 1 MiB (the small/large pool boundary): 1 MiB -513..+513", s.steps


def seq_sizes_large():
    s = Seq()
    sizes = [2 * MiB, 10 * MiB - 1, 10 * MiB, 10 * MiB + 1, 20 * MiB, 25 * MiB,
             20 * MiB - 1, 20 * MiB + 1, 19 * MiB, 18 * MiB + 1, 21 * MiB + 1]
    for n in sizes:
        i = s.alloc(n)
        s.free(i)
    s.empty_cache()
    ids = [s.alloc(n) for n in sizes]
    for i in ids[1::2]:
        s.free(i)
    for n in (MiB + 1, 5 * MiB, 9 * MiB, 10 * MiB, 11 * MiB, 24 * MiB):
        s.alloc(n)
    s.free_all()
    s.alloc(200 * MiB)    # all cached blocks are smaller: new segment
    s.free_all()
    s.alloc(30 * MiB)
    s.empty_cache()       # 200 MiB segment released, the one holding 30 MiB stays
    s.free_all()
    s.empty_cache()
    return "sizes 2 MiB, 10 MiB +-1, 20 MiB, 25 MiB and the segment-size rule", s.steps


def seq_split_remainder():
    s = Seq()
    # 20 MiB segments from requests < 10 MiB; remainders of exactly 1 MiB, 1 MiB + 512, 2 MiB.
    a = s.alloc(9 * MiB)
    b = s.alloc(10 * MiB)       # remainder 1 MiB in the 20 MiB segment: not split (> 1 MiB needed)
    s.free(b)
    s.alloc(10 * MiB - 512)     # remainder 1 MiB + 512: split
    s.free(a)
    s.alloc(8 * MiB)
    s.free_all()
    c = s.alloc(21 * MiB)       # 22 MiB segment, 1 MiB remainder kept in the block
    s.free(c)
    s.alloc(20 * MiB)           # takes the 22 MiB block, remainder 2 MiB: split
    s.alloc(MiB + 512)          # fits the 2 MiB remainder
    s.alloc(MiB + 512)
    s.free_all()
    s.empty_cache()
    d = s.alloc(12 * MiB)
    s.alloc(3 * MiB)
    s.free(d)
    s.alloc(11 * MiB)           # the 12 MiB block, 1 MiB remainder: not split
    s.alloc(MiB)                # small pool
    s.free_all()
    return "large-pool split rule: remainder > 1 MiB strictly; the unsplit tail counts as allocated", s.steps


def seq_max_split():
    s = Seq()
    a = s.alloc(63 * MiB)
    b = s.alloc(64 * MiB)
    c = s.alloc(65 * MiB)
    d = s.alloc(100 * MiB)
    s.free(a)
    s.free(b)
    s.free(c)
    s.free(d)
    s.alloc(30 * MiB)           # below max_split: may not take blocks >= max_split
    s.alloc(63 * MiB)
    s.alloc(64 * MiB)           # >= max_split: may take 65 (larger by < 20 MiB), not 100
    s.alloc(90 * MiB)           # 100 is larger by 10 MiB: take it whole
    s.alloc(40 * MiB)
    s.free_all()
    s.alloc(150 * MiB)
    s.free_all()
    s.alloc(129 * MiB)          # 150 is larger by 21 MiB: not taken with max_split set
    s.free_all()
    s.empty_cache()
    return "requests around max_split_size_mb:64 (oversize rules); also run without the option", s.steps


def seq_roundup():
    s = Seq()
    sizes = [1, 513, 2049, 5000, MiB + 1, int(1.3 * MiB), 3 * MiB + 1, 5 * MiB, 6 * MiB + 7,
             9 * MiB, 10 * MiB + 1, 17 * MiB, 33 * MiB, 100 * MiB + 3, 129 * MiB]
    for n in sizes:
        s.alloc(n)
    s.free_all()
    for n in sizes[::-1]:
        s.alloc(n)
    s.free_all()
    return "sizes whose rounding differs under roundup_power2_divisions:4", s.steps


def seq_empty_cache():
    s = Seq()
    a = s.alloc(512)
    b = s.alloc(3 * MiB)
    c = s.alloc(30 * MiB)
    d = s.alloc(40 * MiB)
    s.empty_cache()             # nothing free: nothing released
    s.free(b)
    s.empty_cache()             # the 20 MiB segment is whole free: released
    s.free(d)
    s.alloc(10 * MiB)           # split of the free 40 MiB segment
    s.empty_cache()             # segment partly used: kept
    s.free(a)
    s.empty_cache()
    s.free(c)
    s.alloc(25 * MiB)
    s.free_all()
    s.empty_cache()
    s.alloc(MiB)
    s.empty_cache()
    s.free_all()
    s.empty_cache()
    return "torch.cuda.empty_cache() with whole-free, partly-used and busy segments", s.steps


def seq_streams():
    s = Seq()
    a = s.alloc(3 * MiB, stream=1)
    s.free(a)
    s.alloc(3 * MiB, stream=0)      # no reuse across streams: a new segment
    s.alloc(3 * MiB, stream=1)      # reuses stream 1's block
    s.alloc(1000, stream=2)
    b = s.alloc(1000, stream=1)
    s.free(b)
    s.alloc(1000, stream=2)
    s.alloc(1000, stream=1)
    s.alloc(30 * MiB, stream=2)
    s.alloc(30 * MiB, stream=0)
    s.free_all()
    s.alloc(30 * MiB, stream=1)     # stream 1 has only the 20 MiB segment free
    s.alloc(2 * MiB, stream=2)
    s.free_all()
    s.empty_cache()
    return "allocations on three streams (0 = default, 1, 2): no reuse across streams", s.steps


def seq_record_stream():
    s = Seq()
    # busy: the use-stream's event is still pending at the next malloc
    a = s.alloc(3 * MiB)
    s.busy(1)
    s.record_stream(a, 1)
    s.free(a)
    b = s.alloc(3 * MiB)            # a's block not reusable yet
    s.sync(1)
    c = s.alloc(3 * MiB)            # malloc processes the completed event first: a's block reused
    s.free(b)
    s.free(c)
    # sync before the next malloc: reusable
    d = s.alloc(5 * MiB)
    s.record_stream(d, 1)
    s.free(d)
    s.sync(1)
    s.alloc(5 * MiB)
    # block allocated on stream 1, used on 0 and 2
    e = s.alloc(700, stream=1)
    s.busy(2)
    s.record_stream(e, 2)
    s.record_stream(e, 0)
    s.free(e)
    s.alloc(700, stream=1)
    s.sync_device()
    s.alloc(700, stream=1)
    # busy use-stream, then empty_cache: empty_cache waits for the events and releases
    f = s.alloc(40 * MiB)
    s.busy(1)
    s.record_stream(f, 1)
    s.free(f)
    s.empty_cache()
    s.alloc(40 * MiB)
    s.free_all()
    s.sync_device()
    s.empty_cache()
    return "tensor.record_stream(s) then free: busy stream (deferred) vs synced (reused)", s.steps


def seq_oom():
    s = Seq()
    s.alloc(400 * MiB)
    b = s.alloc(400 * MiB)
    s.alloc(400 * MiB)              # over the 1 GiB limit: OOM
    s.free(b)
    s.alloc(300 * MiB)
    s.alloc(300 * MiB)              # OOM
    s.alloc(100 * MiB)
    s.free_all()
    s.alloc(1100 * MiB)             # bigger than the limit: OOM
    s.alloc(MiB)
    s.free_all()
    return "out-of-memory under a 1 GiB memory fraction", s.steps


def seq_oom_release():
    s = Seq()
    a = s.alloc(300 * MiB)
    b = s.alloc(300 * MiB)
    s.alloc(300 * MiB)
    s.free(a)
    s.free(b)
    s.alloc(500 * MiB)              # no cached block fits; cudaMalloc over the limit: release, retry
    s.alloc(3 * MiB)
    s.alloc(1000)
    s.alloc(200 * MiB)              # OOM
    s.free_all()
    return "the OOM retry path: release cached segments under a 1 GiB limit, then retry", s.steps


def seq_gc():
    s = Seq()
    ids = [s.alloc(100 * MiB) for _ in range(7)]
    for i in ids[:4]:
        s.free(i)
    s.alloc(150 * MiB)              # reserved 700 MiB > 0.6 limit: gc frees cached blocks first
    s.alloc(50 * MiB)
    s.alloc(120 * MiB)
    s.free_all()
    s.alloc(30 * MiB)
    s.alloc(250 * MiB)
    s.alloc(350 * MiB)
    s.alloc(3 * MiB)
    s.free_all()
    return "garbage_collection_threshold:0.6 under a 1 GiB limit", s.steps


def gen_churn(seed, nsteps, max_bytes, p_free, empty_cache_every=0):
    rng = random.Random(seed)
    s = Seq()
    while len(s.steps) < nsteps:
        if empty_cache_every and rng.random() < 1.0 / empty_cache_every:
            s.empty_cache()
            continue
        if s.live and rng.random() < p_free:
            s.free(rng.choice(s.live))
        else:
            n = int(math.exp(rng.uniform(0.0, math.log(max_bytes))))
            s.alloc(max(1, min(n, max_bytes)))
    return s.steps


def gen_stream_churn(seed, nsteps):
    """Three streams; record_stream with a busy or a synced use-stream; every busy is synced
    within a few steps so the outcome does not depend on timing, and no two streams are busy at
    once. A record_stream on an idle stream: its event completes before the next malloc."""
    rng = random.Random(seed)
    s = Seq()
    pending_sync = []  # [stream, steps_left]
    while len(s.steps) < nsteps:
        for p in list(pending_sync):
            p[1] -= 1
            if p[1] <= 0:
                s.sync(p[0])
                pending_sync.remove(p)
        r = rng.random()
        if s.live and r < 0.15:
            i = rng.choice(s.live)
            use = rng.choice([0, 1, 2])
            # at most one busy stream at a time: syncing one busy stream must not let another
            # busy stream finish too (two spins started together end together)
            if rng.random() < 0.5 and not pending_sync:
                s.busy(use)
                pending_sync.append([use, rng.randint(1, 4)])
            s.record_stream(i, use)
            s.free(i)
        elif s.live and r < 0.5:
            s.free(rng.choice(s.live))
        else:
            n = int(math.exp(rng.uniform(0.0, math.log(32 * MiB))))
            s.alloc(max(1, n), stream=rng.choice([0, 0, 1, 2]))
    for p in pending_sync:
        s.sync(p[0])
    return s.steps


def seq_churn(seed):
    return (f"random churn, seed {seed}: 350 steps, sizes log-uniform 1 B..64 MiB, "
            f"free a random live block with p=0.45", gen_churn(seed, 350, 64 * MiB, 0.45))


def seq_churn_ec(seed):
    return (f"random churn with empty_cache, seed {seed}: 300 steps, sizes 1 B..64 MiB",
            gen_churn(seed, 300, 64 * MiB, 0.45, empty_cache_every=25))


def seq_small_churn(seed):
    return (f"small-buffer churn, seed {seed}: 400 steps, sizes log-uniform 1 B..1 MiB",
            gen_churn(seed, 400, MiB, 0.45))


def seq_stream_churn(seed):
    return (f"three-stream churn with record_stream (busy/synced), seed {seed}: ~300 steps",
            gen_stream_churn(seed, 300))


# ---------------------------------------------------------------------------------------------
# The batch corpus (--batch): seeded generators of 400-step sequences, many per family; one
# process per configuration (and shard) replays them one after the other.

CORPUS_STEPS = 400
# The GPU machine hands back files of at most 16 MiB.
TAR_MAX = 16 * MiB - 64 * KiB
# Live bytes a generated sequence keeps at most (a free comes first above it): many processes
# share the GPU.
CORPUS_LIVE_CAP = 1536 * MiB

# Every pool, segment-size and rounding boundary: 512 B (the minimum block), 1 MiB (small pool /
# large pool; kSmallSize), 2 MiB (small segment; large rounding), 10 MiB (kMinLargeAlloc), 20 MiB
# (large segment), 64 MiB (max_split_size_mb:64), 84 MiB (64 + max_non_split_rounding), the
# roundup_power2_divisions:4 steps between powers of two, and a few powers of two.
EDGE_BASES = (512, 1024, 4096, 256 * KiB, 512 * KiB, MiB, MiB + 256 * KiB, MiB + 512 * KiB,
              2 * MiB, 2 * MiB + 512 * KiB, 3 * MiB, 4 * MiB, 5 * MiB, 6 * MiB, 8 * MiB,
              10 * MiB, 12 * MiB, 16 * MiB, 20 * MiB, 22 * MiB, 24 * MiB, 32 * MiB, 40 * MiB,
              48 * MiB, 64 * MiB, 84 * MiB, 128 * MiB)
EDGE_OFFSETS = (-512, -1, 0, 1, 512)


def log_uniform(rng, lo, hi):
    return max(lo, min(hi, int(math.exp(rng.uniform(math.log(lo), math.log(hi))))))


def gen_random(seed, size, p_free=0.45, p_burst=0.03, p_empty_cache=0.0, cap=CORPUS_LIVE_CAP,
               nsteps=CORPUS_STEPS):
    """Allocs of size(rng) bytes and frees of random live blocks (in random order, sometimes a
    burst of several), an empty_cache with probability p_empty_cache a step; the live bytes stay
    under cap."""
    rng = random.Random(seed)
    s = Seq()
    nbytes = {}
    while len(s.steps) < nsteps:
        r = rng.random()
        if r < p_empty_cache:
            s.empty_cache()
        elif s.live and (r < p_empty_cache + p_burst):
            for i in rng.sample(s.live, min(len(s.live), rng.randint(2, 8))):
                if len(s.steps) < nsteps:
                    s.free(i)
        elif s.live and (r < p_empty_cache + p_burst + p_free or sum(nbytes[i] for i in s.live) > cap):
            s.free(rng.choice(s.live))
        else:
            n = size(rng)
            nbytes[s.alloc(n)] = n
    return s.steps


def size_edge(rng):
    if rng.random() < 0.15:
        return log_uniform(rng, 1, 2 * MiB)
    return max(1, rng.choice(EDGE_BASES) + rng.choice(EDGE_OFFSETS))


def size_small(rng):
    r = rng.random()
    if r < 0.1:
        return rng.choice((MiB, MiB - 1, MiB - 512, 512 * KiB, 512, 513, 511))
    return log_uniform(rng, 1, MiB)


def size_mixed(rng):
    r = rng.random()
    if r < 0.15:
        return rng.choice((MiB, MiB, MiB - 512, MiB + 1, MiB + 512, 512 * KiB, 2 * MiB))
    if r < 0.6:
        return log_uniform(rng, 1, MiB)
    return log_uniform(rng, MiB + 1, 64 * MiB)


def size_max_split(rng):
    if rng.random() < 0.3:
        return max(1, rng.choice((32 * MiB, 44 * MiB, 63 * MiB, 64 * MiB, 65 * MiB, 84 * MiB,
                                  85 * MiB, 100 * MiB)) + rng.choice(EDGE_OFFSETS))
    return log_uniform(rng, 8 * MiB, 160 * MiB)


def size_roundup(rng):
    return log_uniform(rng, 1, 256 * MiB)


def size_limit(rng):
    if rng.random() < 0.2:
        return log_uniform(rng, 1, 4 * MiB)
    return log_uniform(rng, 4 * MiB, 300 * MiB)


def gen_streams_events(seed, nsteps=CORPUS_STEPS):
    """Three streams: allocs on each, record_stream of a live block for a stream that is busy
    (torch.cuda._sleep) or idle, then its free; a busy stream is waited for within a few steps
    by a sync of the stream, of an event recorded on it after the spin, or of the device. At
    most one stream is busy at a time, so that waiting for one cannot finish another."""
    rng = random.Random(seed)
    s = Seq()
    pending = None  # [stream, steps_left, event or None]
    next_event = 0
    while len(s.steps) < nsteps:
        if pending:
            pending[1] -= 1
            if pending[1] <= 0:
                stream, _, ev = pending
                if ev is not None:
                    s.sync_event(ev)
                elif rng.random() < 0.2:
                    s.sync_device()
                else:
                    s.sync(stream)
                pending = None
                continue
        r = rng.random()
        if s.live and r < 0.18:
            i = rng.choice(s.live)
            use = rng.choice([0, 1, 2])
            if rng.random() < 0.5 and not pending:
                s.busy(use)
                ev = None
                if rng.random() < 0.5:
                    ev = next_event % 4
                    next_event += 1
                s.record_stream(i, use)
                if ev is not None:
                    s.record_event(ev, use)
                pending = [use, rng.randint(1, 5), ev]
            else:
                s.record_stream(i, use)
            s.free(i)
        elif not pending and r < 0.2:
            s.empty_cache()
        elif s.live and r < 0.55:
            s.free(rng.choice(s.live))
        else:
            n = log_uniform(rng, 1, 32 * MiB) if rng.random() < 0.8 else rng.choice(EDGE_BASES)
            s.alloc(n, stream=rng.choice([0, 0, 1, 2]))
    steps = s.steps[:nsteps]
    if pending:
        steps.append({"op": "sync_device"})
    return steps


# family: (generator of seed -> steps, description, configurations, seeds)
CORPUS = [
    ("edges", lambda k: gen_random(1000 + k, size_edge),
     "sizes at every pool, segment and rounding edge (512 B .. 128 MiB) -512, -1, 0, +1, +512 B",
     ["default", "expandable", "rup4", "maxsplit64"], 110),
    ("small", lambda k: gen_random(2000 + k, size_small, p_burst=0.06),
     "small-block churn 1 B .. 1 MiB, frees in random order and in bursts",
     ["default", "expandable", "rup4"], 80),
    ("mixed", lambda k: gen_random(3000 + k, size_mixed),
     "mixed small and large: 1 B .. 1 MiB (often exactly 1 MiB), 1 MiB + 1 .. 64 MiB",
     ["default", "expandable", "rup4"], 110),
    ("streams", lambda k: gen_streams_events(4000 + k),
     "three streams, record_stream on busy and idle streams, events, sync, empty_cache",
     ["default", "expandable"], 60),
    ("empty_cache", lambda k: gen_random(5000 + k, size_mixed, p_empty_cache=0.05),
     "mixed churn with empty_cache about every 20 steps",
     ["default", "expandable", "maxsplit64"], 40),
    ("max_split", lambda k: gen_random(6000 + k, size_max_split),
     "sizes 8 .. 160 MiB around max_split_size_mb:64 and 64 + 20 MiB",
     ["maxsplit64", "default", "expandable"], 30),
    ("roundup", lambda k: gen_random(7000 + k, size_roundup),
     "sizes 1 B .. 256 MiB under roundup_power2_divisions",
     ["rup4", "rup8", "rupmix", "default"], 30),
    ("limit", lambda k: gen_random(8000 + k, size_limit, p_free=0.5),
     "sizes 4 .. 300 MiB (some small) under a 1 GiB memory fraction: gc threshold, out of memory",
     ["limit1g", "gc06_limit1g", "expandable_limit1g", "expandable_gc06_limit1g",
      "gc08_maxsplit64_limit1g"], 40),
]


def corpus_jobs():
    out = []
    for family, gen, desc, confs, n in CORPUS:
        for k in range(n):
            steps = gen(k)
            name = f"{family}_{k:03d}"
            for c in confs:
                out.append({"name": f"{name}__{c}", "sequence": name, "config": c,
                            "description": f"{desc}; seed {k}", "conf": CONFIGS[c]["conf"],
                            "limit": CONFIGS[c]["limit"], "steps": steps})
    return out


# ---------------------------------------------------------------------------------------------
# Configurations. limit: bytes for set_per_process_memory_fraction (fraction = limit / total).

CONFIGS = {
    "default": {"conf": "", "limit": None},
    "expandable": {"conf": "expandable_segments:True", "limit": None},
    "maxsplit64": {"conf": "max_split_size_mb:64", "limit": None},
    "rup4": {"conf": "roundup_power2_divisions:4", "limit": None},
    "limit1g": {"conf": "", "limit": GiB},
    "expandable_limit1g": {"conf": "expandable_segments:True", "limit": GiB},
    "gc06_limit1g": {"conf": "garbage_collection_threshold:0.6", "limit": GiB},
    "expandable_gc06_limit1g": {"conf": "expandable_segments:True,garbage_collection_threshold:0.6",
                                "limit": GiB},
    "rup8": {"conf": "roundup_power2_divisions:8", "limit": None},
    "rupmix": {"conf": "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", "limit": None},
    "gc08_maxsplit64_limit1g": {"conf": "garbage_collection_threshold:0.8,max_split_size_mb:64",
                                "limit": GiB},
}

BOTH = ["default", "expandable"]
SEQUENCES = [
    ("worked_example", seq_worked_example, BOTH),
    ("sizes_512", seq_sizes_512, BOTH + ["rup4"]),
    ("sizes_1mib", seq_sizes_1mib, BOTH + ["rup4"]),
    ("sizes_large", seq_sizes_large, BOTH + ["maxsplit64", "rup4"]),
    ("split_remainder", seq_split_remainder, BOTH),
    ("max_split", seq_max_split, BOTH + ["maxsplit64"]),
    ("roundup", seq_roundup, BOTH + ["rup4"]),
    ("empty_cache", seq_empty_cache, BOTH),
    ("streams", seq_streams, BOTH),
    ("record_stream", seq_record_stream, BOTH),
    ("oom", seq_oom, ["limit1g", "expandable_limit1g"]),
    ("oom_release", seq_oom_release, ["limit1g", "expandable_limit1g", "gc06_limit1g"]),
    ("gc", seq_gc, ["limit1g", "gc06_limit1g", "expandable_gc06_limit1g"]),
    ("churn_s1", lambda: seq_churn(1), BOTH + ["maxsplit64", "rup4"]),
    ("churn_s2", lambda: seq_churn(2), BOTH),
    ("churn_s3", lambda: seq_churn(3), BOTH),
    ("churn_ec_s4", lambda: seq_churn_ec(4), BOTH),
    ("small_churn_s5", lambda: seq_small_churn(5), BOTH + ["rup4"]),
    ("small_churn_s6", lambda: seq_small_churn(6), BOTH),
    ("stream_churn_s7", lambda: seq_stream_churn(7), BOTH),
    ("stream_churn_s8", lambda: seq_stream_churn(8), BOTH),
]


def jobs():
    out = []
    for name, builder, confs in SEQUENCES:
        desc, steps = builder()
        for c in confs:
            out.append({"name": f"{name}__{c}", "sequence": name, "config": c,
                        "description": desc, "conf": CONFIGS[c]["conf"],
                        "limit": CONFIGS[c]["limit"], "steps": steps})
    return out


# ---------------------------------------------------------------------------------------------
# The child: replays one job in this (fresh) process.

OOM_NUMBERS = re.compile(r"([0-9]+(?:\.[0-9]+)?) (bytes|KiB|MiB|GiB)")


# The figures of an out-of-memory message's first line: (key, the text around the number).
OOM_FIELDS = (
    ("tried_bytes_approx", r"Tried to allocate {}"),
    ("allocated_by_pytorch_approx", r"{} is allocated by PyTorch"),
    ("reserved_unallocated_approx", r"{} is reserved by PyTorch but unallocated"),
    ("allowed_approx", r"{} allowed"),
    ("process_in_use_approx", r"this process has {} memory in use"),
    ("device_free_approx", r"of which {} is free"),
)


def parse_oom(msg):
    unit = {"bytes": 1, "KiB": KiB, "MiB": MiB, "GiB": GiB}
    head = msg.split("\n")[0]
    out = {"numbers": [[float(v), u] for v, u in OOM_NUMBERS.findall(head)]}
    for key, around in OOM_FIELDS:
        m = re.search(around.format(r"([0-9.]+) (bytes|KiB|MiB|GiB)"), head)
        if m:
            out[key] = int(float(m.group(1)) * unit[m.group(2)])
    return out


def dump_fixture(result, f):
    """JSON with one step a line (small diffs when re-collected); "steps" comes last."""
    f.write("{\n")
    for k, v in result.items():
        if k != "steps":
            f.write(f" {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))},\n")
    f.write(' "steps": [\n')
    f.write(",\n".join("  " + json.dumps(st, separators=(",", ":")) for st in result.get("steps", [])))
    f.write("\n ]\n}\n")


FINAL_STATS = ("allocated_bytes.all.peak", "reserved_bytes.all.peak", "requested_bytes.all.peak",
               "allocated_bytes.all.current", "reserved_bytes.all.current",
               "requested_bytes.all.current", "num_alloc_retries", "num_ooms",
               "num_device_alloc", "num_device_free", "num_sync_all_streams",
               "segment.all.peak", "segment.all.current", "inactive_split_bytes.all.current",
               "oversize_allocations.peak", "oversize_segments.peak")


def new_result(job, torch):
    return {
        "name": job["name"], "sequence": job["sequence"], "config": job["config"],
        "description": job["description"],
        "torch": torch.__version__, "device": None, "conf": job["conf"],
        "env_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "limit": None,
        "fraction": None, "total_memory": None, "busy_cycles": BUSY_CYCLES,
        "allocator_settings": None, "steps": [], "final_stats": None, "error": None,
    }


class Device:
    """The GPU of this process: its allocator configuration (from the environment), memory
    fraction, streams and the allocator trace. One per process; Batch mode replays many
    sequences through it."""

    def __init__(self, torch, limit, nstreams, busy_cycles):
        self.torch = torch
        torch.cuda.init()
        self.dev = torch.device("cuda", 0)
        self.name = torch.cuda.get_device_properties(self.dev).name
        self.total = torch.cuda.mem_get_info(self.dev)[1]
        self.fraction = self.limit = None
        if limit:
            self.fraction = limit / self.total
            torch.cuda.set_per_process_memory_fraction(self.fraction, self.dev)
            self.limit = int(self.fraction * self.total)  # what the allocator computes (size_t of a double)
        self.busy_cycles = busy_cycles
        self.streams = [torch.cuda.default_stream(self.dev)]
        for _ in range(1, nstreams):
            self.streams.append(torch.cuda.Stream(self.dev))
        self.handle_to_index = {s.cuda_stream: i for i, s in enumerate(self.streams)}
        self.seen = 0
        self.settings = None
        self.start_history()

    def start_history(self):
        """(Re)start the allocator trace; a cleared trace keeps each step's snapshot small."""
        rec = self.torch.cuda.memory._record_memory_history
        try:
            rec(enabled=None)
            rec(enabled="all", context=None, stacks="python", max_entries=200_000, clear_history=True)
        except TypeError:
            try:
                rec(enabled="all", context=None, stacks="python", max_entries=200_000)
            except TypeError:
                rec(enabled="all", max_entries=200_000)
        self.seen = 0
        self.new_trace_entries()

    def new_trace_entries(self):
        snap = self.torch.cuda.memory._snapshot()
        traces = snap["device_traces"][0] if snap["device_traces"] else []
        if self.settings is None and "allocator_settings" in snap:
            self.settings = snap["allocator_settings"]
        new = traces[self.seen:]
        self.seen = len(traces)
        return new

    def fill(self, result):
        result["device"] = self.name
        result["total_memory"] = self.total
        result["fraction"] = self.fraction
        result["limit"] = self.limit
        result["busy_cycles"] = self.busy_cycles
        result["allocator_settings"] = self.settings

    def replay(self, job, result, write, compact=False):
        """Replays job's steps, appending one record a step to result["steps"]. compact: leave
        out what the step itself says (the alloc and free_requested trace entries, whose
        address and size are the step's addr and bytes, and the segment list that
        segment_detail repeats)."""
        torch, dev, streams = self.torch, self.dev, self.streams
        tensors, events = {}, {}
        stats = torch.cuda.memory_stats(dev)
        if stats.get("allocated_bytes.all.current", 0) or stats.get("reserved_bytes.all.current", 0):
            result["error"] = "allocator not empty at start"
            return
        for idx, st in enumerate(job["steps"]):
            rec = dict(st)
            op = st["op"]
            try:
                if op == "alloc":
                    with torch.cuda.stream(streams[st["stream"]]):
                        t = torch.empty(st["bytes"], dtype=torch.uint8, device=dev)
                    tensors[st["id"]] = t
                    rec["addr"] = t.data_ptr()
                    del t  # the dict holds the only reference: "free" must free it
                elif op in ("free", "record_stream") and st["id"] not in tensors:
                    rec["noop"] = "id not live (its alloc failed)"
                elif op == "free":
                    del tensors[st["id"]]
                elif op == "record_stream":
                    tensors[st["id"]].record_stream(streams[st["stream"]])
                elif op == "busy":
                    with torch.cuda.stream(streams[st["stream"]]):
                        torch.cuda._sleep(self.busy_cycles)
                elif op == "sync":
                    rec["was_idle"] = bool(streams[st["stream"]].query())
                    streams[st["stream"]].synchronize()
                elif op == "sync_device":
                    torch.cuda.synchronize(dev)
                elif op == "empty_cache":
                    torch.cuda.empty_cache()
                elif op == "record_event":
                    ev = events.setdefault(st["event"], torch.cuda.Event())
                    ev.record(streams[st["stream"]])
                elif op == "sync_event":
                    rec["was_idle"] = bool(events[st["event"]].query())
                    events[st["event"]].synchronize()
                else:
                    raise ValueError(f"unknown op {op!r}")
            except torch.cuda.OutOfMemoryError as e:
                msg = str(e)
                rec["oom"] = True
                rec["message"] = msg.split("\n")[0]
                rec["oom_parsed"] = parse_oom(msg)
            stats = torch.cuda.memory_stats(dev)  # memory_allocated() and memory_reserved() read these
            rec["allocated"] = stats.get("allocated_bytes.all.current", 0)
            rec["reserved"] = stats.get("reserved_bytes.all.current", 0)
            rec["requested"] = stats.get("requested_bytes.all.current", 0)
            segs, blocks = [], []
            for e in self.new_trace_entries():
                a = e.get("action")
                row = [a, e.get("size"), e.get("addr"),
                       self.handle_to_index.get(e.get("stream"), e.get("stream"))]
                if a in ("segment_alloc", "segment_free", "segment_map", "segment_unmap"):
                    segs.append(row)
                elif a == "snapshot" or (compact and a in ("alloc", "free_requested")):
                    continue
                else:
                    blocks.append(row)
            if not compact:
                rec["segments"] = [[a, sz] for a, sz, _, _ in segs]
            rec["segment_detail"] = segs
            rec["blocks"] = blocks
            result["steps"].append(rec)
            if write and idx % 50 == 49:
                write()
        torch.cuda.synchronize(dev)
        stats = torch.cuda.memory_stats(dev)
        result["final_stats"] = {k: stats.get(k) for k in FINAL_STATS}

    def reset(self):
        """Back to an empty allocator between two sequences: the caller dropped every tensor;
        wait for the streams (pending record_stream events), release every segment, clear the
        peaks and counters and the trace."""
        torch = self.torch
        torch.cuda.synchronize(self.dev)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(self.dev)
        torch.cuda.reset_accumulated_memory_stats(self.dev)
        self.start_history()


def nstreams_of(jobs):
    return 1 + max([st.get("stream", 0) for j in jobs for st in j["steps"]] or [0])


def child(job_path, out_path):
    import torch

    with open(job_path) as f:
        job = json.load(f)
    result = new_result(job, torch)

    def write():
        tmp = out_path + ".tmp"
        with open(tmp, "w") as f:
            dump_fixture(result, f)
        os.replace(tmp, out_path)

    try:
        d = Device(torch, job["limit"], nstreams_of([job]), BUSY_CYCLES)
        d.fill(result)
        d.replay(job, result, write)
    except Exception as e:  # record and keep what was collected
        import traceback
        result["error"] = f"{type(e).__name__}: {e}"
        result["traceback"] = traceback.format_exc()[-4000:]
    write()
    return 0 if result["error"] is None else 1


def child_batch(jobs_path, outdir):
    """Replays every job of jobs_path (one configuration: the environment's conf, one limit) in
    this one process, one after the other from an empty allocator; one fixture file each. The
    driver hands the same addresses out again after empty_cache, so each fixture's
    segment_detail (and "segment_addresses") records where its segments really were."""
    import torch

    with open(jobs_path) as f:
        jobs = json.load(f)
    d = Device(torch, jobs[0]["limit"], nstreams_of(jobs), BATCH_BUSY_CYCLES)
    failed = 0
    for job in jobs:
        result = new_result(job, torch)
        d.fill(result)
        result["batch"] = True
        try:
            d.replay(job, result, None, compact=True)
        except Exception as e:
            import traceback
            result["error"] = f"{type(e).__name__}: {e}"
            result["traceback"] = traceback.format_exc()[-4000:]
        result["segment_addresses"] = [r[2] for st in result["steps"]
                                       for r in st["segment_detail"] if r[0] == "segment_alloc"]
        try:
            d.reset()  # the replay's tensors are gone with it
            if torch.cuda.memory_reserved(d.dev) and result["error"] is None:
                result["error"] = "reserved not 0 after the sequence and empty_cache"
        except Exception as e:
            result["error"] = result["error"] or f"reset: {type(e).__name__}: {e}"
        failed += result["error"] is not None
        with open(os.path.join(outdir, job["name"] + ".json"), "w") as f:
            dump_fixture(result, f)
        print(f"{job['name']} {len(result['steps'])} {result['error']}", flush=True)
    return 0 if not failed else 1


# ---------------------------------------------------------------------------------------------
# The parent.

def run_child(flag, conf, args, timeout):
    """This script as a child process (--child / --child-batch) with PYTORCH_CUDA_ALLOC_CONF
    set to conf alone: (rc or "timeout", stderr tail)."""
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    env["PYTHONUNBUFFERED"] = "1"
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), flag, *args],
                           env=env, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stderr[-2000:]
    except subprocess.TimeoutExpired as e:
        return "timeout", (e.stderr or b"")[-2000:] if isinstance(e.stderr, bytes) else str(e.stderr)[-2000:]


def run_job(job, outdir, tmpdir, timeout):
    job_path = os.path.join(tmpdir, job["name"] + ".job.json")
    out_path = os.path.join(outdir, job["name"] + ".json")
    with open(job_path, "w") as f:
        json.dump(job, f)
    t0 = time.time()
    rc, err = run_child("--child", job["conf"], [job_path, out_path], timeout)
    info = {"name": job["name"], "rc": rc, "seconds": round(time.time() - t0, 2), "steps": 0,
            "planned_steps": len(job["steps"]), "error": None}
    try:
        with open(out_path) as f:
            res = json.load(f)
        info["steps"] = len(res["steps"])
        info["error"] = res.get("error")
        info["ooms"] = sum(1 for s in res["steps"] if s.get("oom"))
    except Exception as e:
        info["error"] = f"no result file ({e}); stderr: {err}"
    if rc != 0 and not info["error"]:
        info["error"] = f"rc {rc}; stderr: {err}"
    return info


def run_shard(shard, jobs, outdir, tmpdir, timeout):
    """One process replays the jobs of one configuration; (shard, rc, seconds, stderr tail)."""
    jobs_path = os.path.join(tmpdir, f"shard{shard:03d}.jobs.json")
    with open(jobs_path, "w") as f:
        json.dump(jobs, f)
    t0 = time.time()
    rc, err = run_child("--child-batch", jobs[0]["conf"], [jobs_path, outdir], timeout)
    return shard, rc, round(time.time() - t0, 1), err


def fixture_info(job, outdir):
    info = {"name": job["name"], "steps": 0, "planned_steps": len(job["steps"]), "error": None}
    try:
        with open(os.path.join(outdir, job["name"] + ".json")) as f:
            res = json.load(f)
        info["steps"] = len(res["steps"])
        info["error"] = res.get("error")
        info["ooms"] = sum(1 for s in res["steps"] if s.get("oom"))
        info["idle_syncs"] = sum(1 for s in res["steps"]
                                 if s["op"] in ("sync", "sync_event") and s.get("was_idle"))
    except Exception as e:
        info["error"] = f"no result file ({e})"
    return info


def main_batch(a, todo):
    """--batch: the jobs grouped by configuration, each group cut into shards of at most
    --per-process jobs, -j processes at a time; then summary.json and, with --tar, one
    .tar.gz of the fixtures and the summary."""
    os.makedirs(a.out, exist_ok=True)
    tmpdir = os.path.join(a.out, ".jobs")
    os.makedirs(tmpdir, exist_ok=True)
    shards = []
    for conf in dict.fromkeys(j["config"] for j in todo):
        group = [j for j in todo if j["config"] == conf]
        for i in range(0, len(group), a.per_process):
            shards.append(group[i:i + a.per_process])
    shards.sort(key=lambda g: -sum(len(j["steps"]) for j in g))
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = [ex.submit(run_shard, k, g, a.out, tmpdir, a.timeout) for k, g in enumerate(shards)]
        for fut in concurrent.futures.as_completed(futs):
            k, rc, secs, err = fut.result()
            print(f"shard {k:3d} {shards[k][0]['config']:28s} {len(shards[k]):3d} sequences "
                  f"{secs:6.1f}s rc {rc}{'' if rc == 0 else ' ' + err[-300:]}", flush=True)
    for f in os.listdir(tmpdir):
        os.remove(os.path.join(tmpdir, f))
    os.rmdir(tmpdir)
    infos = sorted((fixture_info(j, a.out) for j in todo), key=lambda i: i["name"])
    ok = [i for i in infos if not i["error"]]
    summary = {"fixtures": len(infos), "ok": len(ok), "failed": len(infos) - len(ok),
               "steps": sum(i["steps"] for i in infos),
               "idle_syncs": sum(i.get("idle_syncs", 0) for i in infos),
               "seconds": round(time.time() - t0, 1), "jobs": infos}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{summary['fixtures']} fixtures ({summary['ok']} ok, {summary['failed']} failed), "
          f"{summary['steps']} steps, {summary['idle_syncs']} syncs found the stream idle, "
          f"{summary['seconds']} s")
    if a.tar:
        import tarfile
        names = sorted(n for n in os.listdir(a.out) if n.endswith(".json"))
        with tarfile.open(a.tar, "w:gz", compresslevel=9) as tf:
            for name in names:
                tf.add(os.path.join(a.out, name), arcname=name)
        if os.path.getsize(a.tar) > TAR_MAX:
            # xz finds what one sequence's configurations share (gzip's window is 32 KiB);
            # `tar xf` and tarfile's "r:*" tell the compression from the content
            with tarfile.open(a.tar, "w:xz", preset=9) as tf:
                for name in names:
                    tf.add(os.path.join(a.out, name), arcname=name)
            print(f"{a.tar}: over {TAR_MAX} bytes with gzip: written with xz")
        print(f"{a.tar}: {os.path.getsize(a.tar)} bytes")
    sys.exit(0 if not summary["failed"] else 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output folder for the fixtures")
    ap.add_argument("-j", "--jobs", type=int, default=8, help="processes at a time (one GPU is shared)")
    ap.add_argument("--only", help="regex on fixture names")
    ap.add_argument("--list", action="store_true", help="list the fixtures and their step counts")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--batch", action="store_true",
                    help="the generated corpus (CORPUS), many sequences per process")
    ap.add_argument("--per-process", type=int, default=40, help="--batch: sequences per process")
    ap.add_argument("--tar", help="--batch: also pack the fixtures and summary into this .tar.gz")
    ap.add_argument("--child", nargs=2, metavar=("JOB", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--child-batch", nargs=2, metavar=("JOBS", "OUTDIR"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        sys.exit(child(*a.child))
    if a.child_batch:
        sys.exit(child_batch(*a.child_batch))
    todo = corpus_jobs() if a.batch else jobs()
    if a.only:
        todo = [j for j in todo if re.search(a.only, j["name"])]
    if a.list:
        for j in todo:
            print(f"{j['name']:40s} {len(j['steps']):4d} steps  conf={j['conf']!r} limit={j['limit']}")
        print(f"{len(todo)} fixtures, {sum(len(j['steps']) for j in todo)} steps")
        return
    if not a.out:
        ap.error("--out is required")
    if a.batch:
        main_batch(a, todo)
    os.makedirs(a.out, exist_ok=True)
    tmpdir = os.path.join(a.out, ".jobs")
    os.makedirs(tmpdir, exist_ok=True)
    t0 = time.time()
    infos = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = {ex.submit(run_job, j, a.out, tmpdir, a.timeout): j for j in todo}
        for fut in concurrent.futures.as_completed(futs):
            try:
                info = fut.result()
            except Exception as e:
                info = {"name": futs[fut]["name"], "error": f"parent: {e}", "steps": 0}
            infos.append(info)
            status = "ok" if not info["error"] else "FAIL " + str(info["error"])[:200]
            print(f"{info['name']:40s} {info['steps']:4d} steps {info.get('seconds', 0):6.1f}s {status}",
                  flush=True)
    for f in os.listdir(tmpdir):
        os.remove(os.path.join(tmpdir, f))
    os.rmdir(tmpdir)
    infos.sort(key=lambda i: i["name"])
    ok = [i for i in infos if not i["error"]]
    summary = {"fixtures": len(infos), "ok": len(ok), "failed": len(infos) - len(ok),
               "steps": sum(i["steps"] for i in infos), "seconds": round(time.time() - t0, 1),
               "jobs": infos}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{summary['fixtures']} fixtures ({summary['ok']} ok, {summary['failed']} failed), "
          f"{summary['steps']} steps, {summary['seconds']} s")
    sys.exit(0 if not summary["failed"] else 1)


if __name__ == "__main__":
    main()
