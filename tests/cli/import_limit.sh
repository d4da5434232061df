#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife import of snapshots whose allocator gave back only some cached segments:
# garbage collection under a memory fraction, or release_available_cached_blocks before the
# retry of a failed cudaMalloc (analyzer/snapshot/limit.h). Such a run of segment_free events is
# no empty_cache step; the import infers the one constant (limit or capacity) under which the
# torch model makes the same releases, writes it into `torch:` with the interval the trace
# admits in a header comment, and checks it by replaying the steps. The snapshots are made by
# memlife's own model (`memlife export --memory-viz` of a schedule with a known constant) or by
# hand; each interval is worked out below from the rules of PyTorch 2.11's malloc
# (c10/cuda/CUDACachingAllocator.cpp):
#   alloc_block fails when reserved + alloc_size > L;
#   garbage_collect_cached_blocks runs at a malloc that found no cached block, when reserved >
#   (size_t)(threshold * L), and frees unsplit large cached blocks at least as old as the average
#   (age: get_free_block calls on the pool since the block was cached) until reserved is back
#   under that threshold.
. "$(dirname "$0")/lib.bash"

# want_header FILE LINE: the import's header holds LINE
want_header() { grep -qF -- "$2" "$1"; }

# (1) Garbage collection: threshold 0.6 under limit 120 MiB. a, x, b of 20 MiB (60 MiB reserved),
# a and x freed, c = 30 MiB needs a segment: reserved 60 MiB <= 0.6 * L, no GC, 90 MiB. c freed;
# d = 40 MiB: 90 MiB > 0.6 * L, GC: a and x (age 2 >= the average 5/3; c's age is 1) go,
# reclaiming 40 MiB >= its target, c's stays: 2 of the 3 cached segments, then d's segment.
# The interval: entry 10 (c's segment_alloc, 20 MiB cached, no GC): (size_t)(0.6 * L) >= 60 MiB,
# L >= 104857600; entry 16 (d's, after GC from 90 MiB): (size_t)(0.6 * L) < 90 MiB,
# L <= 157286399 (0.6 * 157286400 is 94371840 = 90 MiB in double arithmetic). The middle is
# 104857600 + (157286399 - 104857600) / 2 = 131071999.
cat >"$TMP/gc.yaml" <<'EOF'
name: gc
world: 1
torch: {conf: "garbage_collection_threshold:0.6", limit: 120MiB}
steps:
  - alloc: {buf: a, bytes: 20MiB}
  - alloc: {buf: x, bytes: 20MiB}
  - alloc: {buf: b, bytes: 20MiB}
  - free: a
  - free: x
  - alloc: {buf: c, bytes: 30MiB}
  - free: c
  - alloc: {buf: d, bytes: 40MiB}
EOF
# (2) The oversize release: max_split_size_mb:32, the device full at 150 MiB (capacity: no
# fraction, no GC). a = 40 MiB, b = 80 MiB (120 MiB), both freed; c = 50 MiB fits neither (40 <
# 50; 80 >= 50 + 20 MiB, max_non_split_rounding), and 120 + 50 MiB > L: the retry frees the
# smallest oversize block that covers it, b's, not a's; 40 + 50 MiB fit. The interval: entry 2
# (b's segment_alloc) L >= 40 + 80 MiB = 125829120; entry 9 (c's, after the release from 120
# MiB) 120 + 50 MiB > L, L <= 178257919; the middle 152043519.
cat >"$TMP/retry.yaml" <<'EOF'
name: retry
world: 1
torch: {conf: "max_split_size_mb:32", capacity: 150MiB}
steps:
  - alloc: {buf: a, bytes: 40MiB}
  - alloc: {buf: b, bytes: 80MiB}
  - free: a
  - free: b
  - alloc: {buf: c, bytes: 50MiB}
EOF
# (3) The same under garbage_collection_threshold:0.6 as well, still a full device and no
# fraction (GC then does nothing): a limit is tried first and fails, since under any limit the
# segment events admit (125829120..209715199: 0.6 L < 120 MiB below 200 MiB) GC would free both
# cached segments before c (reserved 120 MiB over 0.6 L, a's and b's ages equal); the capacity of
# (2) reproduces it.
sed 's/max_split_size_mb:32/garbage_collection_threshold:0.6,max_split_size_mb:32/' "$TMP/retry.yaml" >"$TMP/retry_gc.yaml"
# name, kind, constant, lo, hi, lo entry, hi entry, first partial run, the schedule's own
# constant (120 MiB, 150 MiB), which the interval the import writes must contain
CASES="gc limit 131071999 104857600 157286399 10 16 14 125829120
retry capacity 152043519 125829120 178257919 2 9 8 157286400
retry_gc capacity 152043519 125829120 178257919 2 9 8 157286400"
while read -r name kind value lo hi lo_at hi_at first truth; do
    run export --memory-viz "$TMP/$name.yaml" -o "$TMP/$name.pickle"
    [ "$RC" = 0 ] || { not_ok "export $name" "exit $RC: $(head -2 "$TMP/err")"; continue; }
    run import "$TMP/$name.pickle" -o "$TMP/$name.imp.yaml"
    y="$TMP/$name.imp.yaml"
    if [ "$RC" = 0 ] && grep -q "^torch: {conf: '[^']*', $kind: $value, addresses: \[[0-9, ]*\]}\$" "$y" &&
        want_header "$y" "# 1 time (first at device_traces[0][$first]) the allocator gave back only some cached" &&
        want_header "$y" "under $kind $value, one of $lo..$hi bytes," &&
        want_header "$y" "(entry $lo_at bounds them from below, entry $hi_at from"; then
        ok "import $name: $kind $value of $lo..$hi (entries $lo_at, $hi_at)"
    else
        not_ok "import $name" "exit $RC: $(head -2 "$TMP/err") $(grep -m1 '^torch' "$y" 2>/dev/null)"
    fi
    got=$(sed -n "s/.* one of \([0-9]*\)\.\.\([0-9]*\) bytes,\$/\1 \2/p" "$y")
    read -r glo ghi <<<"$got"
    [ -n "$glo" ] && [ "$glo" -le "$truth" ] && [ "$truth" -le "$ghi" ] \
        && ok "import $name: the written interval $glo..$ghi holds the schedule's $truth" \
        || not_ok "import $name: interval" "'$got' against $truth"
    run check -q "$y"
    [ "$RC" = 0 ] && ok "check $name: every expectation holds" \
        || not_ok "check $name" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
    if command -v python3 >/dev/null; then
        python3 tests/torch/import_replay.py "$MEMLIFE" "$TMP/$name.pickle" "$y" 0
    fi
done <<<"$CASES"

# Hand-made traces of (2) that no constant explains: one line naming the entry, exit 2, no file.
if command -v python3 >/dev/null; then
    python3 - "$TMP" <<'PY'
import pickle, sys
out, MiB, S = sys.argv[1], 1 << 20, 0x7f0000000000
A, B, C, D = S, S - 80 * MiB, S - 200 * MiB, S - 400 * MiB
def ev(a, addr, size):
    return {"action": a, "addr": addr, "size": size, "stream": 0, "frames": []}
def seg(addr, size, state):
    return {"device": 0, "address": addr, "total_size": size, "stream": 0, "segment_type": "large",
            "segment_pool_id": (0, 0), "is_expandable": False,
            "blocks": [{"address": addr, "size": size, "requested_size": size, "state": state}]}
settings = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:32", "max_split_size": 32 * MiB,
            "expandable_segments": False}
head = [ev("segment_alloc", A, 40 * MiB), ev("alloc", A, 40 * MiB),
        ev("segment_alloc", B, 80 * MiB), ev("alloc", B, 80 * MiB),
        ev("free_requested", A, 40 * MiB), ev("free_completed", A, 40 * MiB),
        ev("free_requested", B, 80 * MiB), ev("free_completed", B, 80 * MiB)]
def dump(name, trace, segments):
    with open(f"{out}/{name}.pickle", "wb") as f:
        pickle.dump({"segments": segments, "device_traces": [trace], "allocator_settings": settings}, f)
# (a) then a 100 MiB segment: 90 + 100 MiB needs L >= 199229440 at entry 11, but the release
# before entry 9 needs L <= 178257919 (the device's memory grew?)
dump("grew", head + [ev("segment_free", B, 80 * MiB), ev("segment_alloc", C, 50 * MiB),
                     ev("alloc", C, 50 * MiB), ev("segment_alloc", D, 100 * MiB), ev("alloc", D, 100 * MiB)],
     [seg(A, 40 * MiB, "inactive"), seg(C, 50 * MiB, "active_allocated"),
      seg(D, 100 * MiB, "active_allocated")])
# (b) the retry freed a's 40 MiB segment, not b's: 80 + 50 MiB fit, L in 136314880..178257919,
# but under any such capacity the model frees b's (the smallest oversize block covering 50 MiB)
# and has 90 MiB after entry 10, where the snapshot has 130 MiB
dump("other", head + [ev("segment_free", A, 40 * MiB), ev("segment_alloc", C, 50 * MiB),
                      ev("alloc", C, 50 * MiB)],
     [seg(B, 80 * MiB, "inactive"), seg(C, 50 * MiB, "active_allocated")])
PY
    bad() {
        rm -f "$TMP/bad.yaml"
        run import "$TMP/$2.pickle" -o "$TMP/bad.yaml"
        if [ "$RC" = 2 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -qxF -- "$TMP/$2.pickle: error: $3" "$TMP/err" &&
            [ ! -e "$TMP/bad.yaml" ]; then ok "import refuses: $1"; else
            not_ok "import refuses: $1" "exit $RC: $(head -2 "$TMP/err")"; fi
    }
    bad "no capacity admits every segment event" grew "device_traces[0][11]: no capacity reproduces the releases: this segment_alloc needs one of at least 199229440 bytes, the release before entry 9 one of at most 178257919 (the device's free memory changed under the program?)"
    bad "the admitted capacities do not reproduce the release" other "device_traces[0][10]: no capacity reproduces the trace: the segment events admit 136314880..178257919 bytes, and with 157286399 the torch model's reserved after it is 94371840 bytes, the snapshot's 136314880 (the device's free memory changed under the program?)"
else
    echo "skip - hand-made release traces: no python3"
fi
