/* SPDX-License-Identifier: MIT */
/* torchplace.c — where the CUDA driver puts a new cudaMalloc segment, as far as the order of
 * segments goes: best fit breaks ties between equal free blocks in different segments by
 * address, so the model needs the driver's order, not its addresses (docs/torch.md,
 * Addresses).
 *
 * What the segment addresses recorded on an H100 and an H200 with PyTorch 2.11 show
 * (tests/torch/fixtures/allocator_corpus.tar.xz: 17263 segments in 1150 sequences; the 53
 * fixtures of tests/torch/fixtures/allocator/), the driver's placement as this file models it:
 *
 * - Address space comes in 32 MiB-aligned chunks.  A cudaMalloc of s bytes that finds no room
 *   gets a heap of ceil(s / 32 MiB) chunks of its own, at the highest place below the region
 *   where no live heap is (top-down: the first ones sit just below it, then each lower), and
 *   the segment at the heap's start.  A 300 MiB request gets 320 MiB of address space, a 20
 *   MiB one a 32 MiB chunk.  A free run that the heap would fill exactly, with a live heap
 *   right below it, is passed over: of the new heaps where that rule decides, 285 went lower
 *   and 51 took the run (counted given the recorded addresses, each placement from the
 *   measured state).
 * - A later segment that fits the free space left in a live heap (its tail, or what a freed
 *   segment left) goes there, at the lowest such address in any heap, never across a heap's
 *   end: a 12 MiB request after a 10 MiB one lies right above it (sizes_large step 26, 10 MiB
 *   above), a 2 MiB one takes the tail of a 24 MiB one.  A heap goes when its last segment is
 *   freed, and its chunks serve new heaps again (gc__limit1g step 21: 250 MiB over two freed
 *   100 MiB heaps).
 * - Above the heaps is the region the process had before its first cudaMalloc: in a PyTorch
 *   2.11 process with one stream it has a 2 MiB hole 414 MiB above the heaps' top and a 24 MiB
 *   one at 488 MiB (the first 2 MiB segment goes to the first, a first 20 MiB one to the
 *   second), lower heaps' space being lower addresses, so a hole is used only when no heap
 *   has room.  A process that made more streams first (the corpus's shards with the streams
 *   family) had other holes; so will one whose libraries cudaMalloc'd for themselves. With the
 *   recorded addresses the model needs none of this (torchalloc_set_segment_addresses).
 *
 * Replayed without their addresses, the corpus's 1150 sequences with cudaMalloc segments are
 * exact at 459952 of 460021 steps with this placement (3 sequences differ from some step on),
 * 458192 with "each new segment below the last" (22 differ): replay_check.py --no-addresses.
 * What it misses: where in a heap's free space a segment goes when there are several places
 * (empty_cache_018__default step 173: a 2 MiB segment at the top of a free space, not the
 * bottom of the lowest), and under a memory fraction with many releases it is right for 25 of
 * 62 segments of limit_033__gc08_maxsplit64_limit1g. */
#include "torch/torchalloc_int.h"

#include <stdlib.h>

#define MiB ((uint64_t)1 << 20)
#define CHUNK (32 * MiB)

/* The region above the heaps: its base (the heaps' top) and its holes, as offsets from it. */
#define REGION (((uint64_t)1 << 47) - ((uint64_t)4 << 30))
static const struct {
    uint64_t off, size;
} holes[] = {{414 * MiB, 2 * MiB}, {488 * MiB, 24 * MiB}};
#define NHOLES (sizeof holes / sizeof holes[0])

static int placed(const tseg *s) { return !s->expandable && s->heap_end; }

/* The lowest address in [lo, hi) that no live placed segment in it covers for `size` bytes,
 * walking the address-ordered segments from `k`; 0 if none, and then *gap (when not NULL)
 * grows to the largest free run of [lo, hi). */
static uint64_t room_in(const torchalloc *ta, int32_t k, uint64_t lo, uint64_t hi, uint64_t size,
                        uint64_t *gap) {
    uint64_t cur = lo;
    for (; k >= 0 && ta->s[k].addr < hi; k = ta->s[k].lnext) {
        const tseg *s = &ta->s[k];
        if (!placed(s) || s->addr + s->vsize <= lo)
            continue;
        if (s->addr >= cur && s->addr - cur >= size)
            return cur;
        if (gap && s->addr > cur && s->addr - cur > *gap)
            *gap = s->addr - cur;
        if (s->addr + s->vsize > cur)
            cur = s->addr + s->vsize;
    }
    if (hi > cur && hi - cur >= size)
        return cur;
    if (gap && hi > cur && hi - cur > *gap)
        *gap = hi - cur;
    return 0;
}

void ta_place_dropped(torchalloc *ta, const tseg *s) {
    ta->heaps_split = true;   /* its heap may go: free_run's walk from now on */
    /* the gap it leaves is at most its heap: a bound, made exact again by the next full walk */
    if (placed(s) && s->heap < REGION && s->heap_end - s->heap > ta->heap_gap)
        ta->heap_gap = s->heap_end - s->heap;
}

/* The first segment at or above the region (the holes' neighbours), from the top down: the
 * heaps lie below it, and a walk from the lowest segment would pass every one of them. */
static int32_t region_first(const torchalloc *ta) {
    int32_t first = -1;
    for (int32_t k = ta->seg_last; k >= 0 && ta->s[k].addr >= REGION; k = ta->s[k].lprev)
        first = k;
    return first;
}

/* The start of the highest run of `span` bytes below the region that no live heap overlaps,
 * passing over a run it would fill exactly, a live heap right below it. The live heaps are taken
 * once, in address order (the segments' list is, and a heap's segments are neighbours in it),
 * and walked down from the top with the run: each heap is passed once, where asking every
 * segment again at each step down made a placement among thousands of segments (a step near
 * its limit, freeing and retrying) quadratic. */
typedef struct {
    uint64_t lo, hi;
} heap_span;

static uint64_t free_run(const torchalloc *ta, uint64_t span) {
    heap_span *h = NULL;
    size_t n = 0, cap = 0;
    for (int32_t k = ta->seg_first; k >= 0; k = ta->s[k].lnext) {
        const tseg *s = &ta->s[k];
        if (!placed(s) || s->heap >= REGION || (n && h[n - 1].lo == s->heap))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            h = ml_xrealloc(h, cap * sizeof *h);
        }
        h[n++] = (heap_span){s->heap, s->heap_end};
    }
    uint64_t top = REGION, found = 0;
    size_t j = n;   /* the heaps [0, j) start below top */
    for (;;) {
        if (span > top)
            break;
        uint64_t lo = top - span;
        while (j > 0 && h[j - 1].lo >= top)
            j--;
        size_t i = j;
        uint64_t clash = top;   /* the lowest start of the heaps that [lo, top) overlaps */
        while (i > 0 && h[i - 1].hi > lo)
            clash = h[--i].lo;
        if (clash != top) {
            top = clash;
            continue;
        }
        if (i > 0 && h[i - 1].hi == lo) {   /* a run it would fill exactly: passed over */
            top = h[i - 1].lo;
            continue;
        }
        found = lo;
        break;
    }
    free(h);
    return found;
}

uint64_t ta_place_segment(torchalloc *ta, uint64_t size, uint64_t *heap, uint64_t *heap_end) {
    /* room in a live heap: heaps in address order, each walked from its lowest segment; none
     * where the request is larger than every gap (ta->heap_gap, exact after a walk that found
     * no room: a step near its limit asks again and again for more than any heap has) */
    if (size <= ta->heap_gap) {
        uint64_t largest = 0;
        for (int32_t k = ta->seg_first; k >= 0; k = ta->s[k].lnext) {
            const tseg *s = &ta->s[k];
            if (!placed(s) || s->heap >= REGION ||
                (s->lprev >= 0 && placed(&ta->s[s->lprev]) && ta->s[s->lprev].heap == s->heap))
                continue; /* not the first segment of its heap */
            uint64_t a = room_in(ta, k, s->heap, s->heap_end, size, &largest);
            if (a) {
                *heap = s->heap;
                *heap_end = s->heap_end;
                return a;
            }
        }
        ta->heap_gap = largest;
    }
    int32_t above = region_first(ta);
    for (size_t h = 0; h < NHOLES; h++) {
        uint64_t a = room_in(ta, above, REGION + holes[h].off, REGION + holes[h].off + holes[h].size,
                             size, NULL);
        if (a) {
            *heap = REGION;
            *heap_end = REGION + holes[NHOLES - 1].off + holes[NHOLES - 1].size;
            return a;
        }
    }
    uint64_t span = (size + CHUNK - 1) / CHUNK * CHUNK;
    if (span < size)
        return 0;
    /* Heaps made only by this walk and none gone are one run below the region: the walk from
     * the region's base passes every one of them and stops below the lowest (no heap there to
     * pass over), or finds no room, where the span is above that lowest start. So its answer is
     * known without it: a placement among thousands of heaps (a long captured step) each
     * walked them all. */
    uint64_t low = REGION - ta->heaps_span;
    uint64_t a = ta->heaps_split ? free_run(ta, span) : span <= low ? low - span : 0;
    if (a && !ta->heaps_split)
        ta->heaps_span += span;
    if (a) {
        *heap = a;
        *heap_end = a + span;
        if (span - size > ta->heap_gap)   /* the new heap's tail is a gap of its own */
            ta->heap_gap = span - size;
    }
    return a;
}
