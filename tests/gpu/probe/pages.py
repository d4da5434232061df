#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pages.py — replays alloc/free sequences with cudaMalloc / cudaFree (ctypes, libcudart only)
and after every step records the device's used bytes (cudaMemGetInfo, relative to the start of
the sequence) and the address cudaMalloc returned. Sizes sit at the driver's 2 MiB edges: 2 MiB
plus or minus 1 B .. 4 KiB, 1 MiB plus or minus 512 B, multiples of 2 MiB plus or minus 1 B, mixed
with small blocks, and a seeded churn of them.

Writes one fixture per sequence into DIR (default tests/gpu/fixtures/pages):
    # pages fixture NAME: ...
    alloc ID BYTES ADDR USED      (ADDR hex as returned, USED bytes above the sequence's start)
    free ID USED
Every sequence frees what it allocated, and the device must come back to its start.
"""
import ctypes
import os
import random
import sys

KiB, MiB = 1 << 10, 1 << 20
P = 2 * MiB


def sequences():
    seqs = {}
    # Each edge size alone: alloc, free.
    edge = [P - 4 * KiB, P - 512, P - 1, P, P + 1, P + 512, P + 4 * KiB,
            MiB - 512, MiB - 1, MiB, MiB + 1, MiB + 512,
            2 * P - 1, 2 * P + 1, 3 * P - 1, 3 * P + 1, 4 * P + 1, 16 * P + 1]
    s = []
    for k, b in enumerate(edge):
        s += [("alloc", k, b), ("free", k)]
    seqs["edge_alone"] = s
    # Edge sizes kept live together, then freed in allocation order.
    s = [("alloc", k, b) for k, b in enumerate(edge)] + [("free", k) for k in range(len(edge))]
    seqs["edge_together"] = s
    # Sizes just above 2 MiB with small blocks after: does a tail share a page with them?
    s, k = [], 0
    for big in (P + 1, P + 4 * KiB, 2 * P + 1, P + MiB):
        s.append(("alloc", k, big)); k += 1
        for _ in range(4):
            s.append(("alloc", k, 256 * KiB)); k += 1
    s += [("free", j) for j in range(k)]
    seqs["above_2mib_then_small"] = s
    # Small blocks first, then edge sizes, frees in reverse and interleaved.
    s, k = [], 0
    for b in (4 * KiB, 100 * KiB, MiB - 512, MiB + 512, P - 4 * KiB, P + 1, 512, MiB, P - 1, 3 * P + 1):
        s.append(("alloc", k, b)); k += 1
    for j in (1, 3, 5, 7, 9, 0, 2, 4, 6, 8):
        s.append(("free", j))
    seqs["small_then_edges"] = s
    # Halves: pairs and triples of 1 MiB +- 512 B in one page or two.
    s, k = [], 0
    for b in (MiB - 512, MiB - 512, MiB, MiB, MiB + 512, MiB + 512, MiB - 512, MiB + 1):
        s.append(("alloc", k, b)); k += 1
    for j in (0, 2, 4, 6, 1, 3, 5, 7):
        s.append(("free", j))
    seqs["halves"] = s
    # Seeded churn over the edge sizes and small blocks: 300 steps.
    rng = random.Random(22)
    sizes = edge + [512, 4 * KiB, 64 * KiB, 300 * KiB, 700 * KiB]
    live, s, k = [], [], 0
    for _ in range(300):
        if live and (len(live) > 12 or rng.random() < 0.45):
            j = live.pop(rng.randrange(len(live)))
            s.append(("free", j))
        else:
            s.append(("alloc", k, rng.choice(sizes)))
            live.append(k)
            k += 1
    s += [("free", j) for j in live]
    seqs["churn_edges"] = s
    # Held out (written after the model was fitted to the sequences above): a churn of sizes
    # log-uniform from 1 B to 64 MiB (as the 92.75% run), one of small blocks only, and
    # the edge sizes again under another seed.
    def churn(seed, n, pick, cap):
        rng = random.Random(seed)
        live, s, k = [], [], 0
        for _ in range(n):
            if live and (len(live) > cap or rng.random() < 0.45):
                s.append(("free", live.pop(rng.randrange(len(live)))))
            else:
                s.append(("alloc", k, pick(rng)))
                live.append(k)
                k += 1
        return s + [("free", j) for j in live]
    seqs["heldout_mix64"] = churn(5, 400, lambda r: max(1, int(2 ** r.uniform(0, 26))), 24)
    seqs["heldout_small"] = churn(9, 300, lambda r: r.randint(1, 3 * MiB // 2), 24)
    seqs["heldout_edges"] = churn(23, 300, lambda r: r.choice(sizes), 16)
    return seqs


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/gpu/fixtures/pages"
    os.makedirs(out_dir, exist_ok=True)
    cudart = None
    for n in ("libcudart.so.13", "/usr/local/cuda/lib64/libcudart.so.13", "libcudart.so"):
        try:
            cudart = ctypes.CDLL(n)
            break
        except OSError:
            pass
    assert cudart, "no libcudart"
    assert cudart.cudaSetDevice(0) == 0 and cudart.cudaFree(None) == 0

    def used():
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        assert cudart.cudaMemGetInfo(ctypes.byref(f), ctypes.byref(t)) == 0
        return t.value - f.value

    for name, seq in sequences().items():
        base = used()
        ptrs = {}
        lines = ["# pages fixture %s: cudaMalloc/cudaFree on one H200, used = cudaMemGetInfo "
                 "total - free above the start, after every step (tests/gpu/probe/pages.py)" % name]
        for st in seq:
            if st[0] == "alloc":
                p = ctypes.c_void_p()
                rc = cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(st[2]))
                assert rc == 0, "cudaMalloc %d: %d" % (st[2], rc)
                ptrs[st[1]] = p
                lines.append("alloc %d %d 0x%x %d" % (st[1], st[2], p.value, used() - base))
            else:
                assert cudart.cudaFree(ptrs.pop(st[1])) == 0
                lines.append("free %d %d" % (st[1], used() - base))
        end = used() - base
        lines.append("# end %d" % end)
        with open(os.path.join(out_dir, name + ".txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print("%s: %d steps, end %d" % (name, len(seq), end))
    return 0


if __name__ == "__main__":
    sys.exit(main())
