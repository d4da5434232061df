/* SPDX-License-Identifier: MIT */
/* test_torchalloc.c — the PyTorch caching-allocator model against the rules of
 * c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.11) and the worked example of docs/torch.md
 * (derived from those rules and matched byte for byte on an H200 with torch 2.11.0+cu130).
 * Every expected number says where it comes from: "fact sheet" (the worked example, measured),
 * "H200" (tests/torch/fixtures, measured), or the source rule it follows from. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "torch/torchalloc.h"

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

static torchalloc_conf conf(const char *text) {
    torchalloc_conf c;
    char err[256];
    size_t off;
    int rc = torchalloc_conf_parse(text, &c, &off, err, sizeof err);
    if (rc != 0)
        print_error("conf '%s': %s at %zu\n", text, err, off);
    assert_int_equal(rc, 0);
    return c;
}

static torchalloc *make(const char *text, uint64_t limit) {
    torchalloc_conf c = conf(text);
    torchalloc *ta = torchalloc_new(&c, limit);
    assert_non_null(ta);
    return ta;
}

static void expect(torchalloc *ta, uint64_t allocated, uint64_t reserved) {
    struct torchalloc_stats s;
    torchalloc_stats(ta, &s);
    assert_int_equal(s.allocated, allocated);
    assert_int_equal(s.reserved, reserved);
    /* the split of reserved - allocated always adds up */
    assert_int_equal(s.reserved - s.allocated, s.free_in_used_segments + s.whole_free_segments + s.pending_free);
}

typedef struct {
    uint64_t size[64], addr[64];
    size_t n;
} seglist;

static int seg_cb(void *user, const torchalloc_segment_info *s) {
    seglist *l = user;
    if (l->n < 64) {
        l->addr[l->n] = s->addr;
        l->size[l->n++] = s->size;
    }
    return 0;
}

static seglist segments(const torchalloc *ta) {
    seglist l;
    memset(&l, 0, sizeof l);
    torchalloc_walker w = {seg_cb, NULL, &l};
    size_t n = torchalloc_walk(ta, &w);
    assert_int_equal(n, l.n);
    return l;
}

static int64_t m(torchalloc *ta, uint64_t bytes, uint32_t stream) {
    int64_t id = torchalloc_malloc(ta, bytes, stream, NULL);
    assert_true(id >= 0);
    return id;
}

/* ---- the fact sheet's worked example ---- */

static void worked_example(void **state) {
    (void)state;
    torchalloc *ta = make("", 0);
    /* fact sheet, default config, measured on the H200 with torch 2.11 */
    int64_t a = m(ta, 1000, 0);
    expect(ta, 1024, 2097152);
    int64_t b = m(ta, 3 * MiB, 0);
    expect(ta, 3146752, 23068672);
    int64_t c = m(ta, 12 * MiB, 0);
    expect(ta, 15729664, 23068672);
    torchalloc_free(ta, b);
    expect(ta, 12583936, 23068672);
    int64_t d = m(ta, MiB + 1, 0);
    expect(ta, 13633024, 23068672);
    torchalloc_free(ta, a);
    expect(ta, 13632000, 23068672);
    int64_t e = m(ta, 25 * MiB, 0);
    expect(ta, 40894976, 50331648);
    /* fact sheet: segments 2 MiB, 20 MiB, 26 MiB (e's 1 MiB remainder is not > 1 MiB); the walk
     * is in address order: 26 MiB lowest, in a heap of its own, then the 2 MiB and 20 MiB ones
     * in the holes above the heaps, as the H200 placed them (torchplace.c;
     * tests/torch/fixtures/allocator/worked_example__default.json) */
    seglist l = segments(ta);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.size[0], 26 * MiB);
    assert_int_equal(l.size[1], 2 * MiB);
    assert_int_equal(l.size[2], 20 * MiB);
    (void)c;
    (void)d;
    (void)e;
    torchalloc_destroy(ta);
}

/* The address of the live segment of this size (the only one). */
static uint64_t seg_addr(const torchalloc *ta, uint64_t size) {
    seglist l = segments(ta);
    size_t found = 0;
    uint64_t a = 0;
    for (size_t k = 0; k < l.n; k++)
        if (l.size[k] == size) {
            found++;
            a = l.addr[k];
        }
    assert_int_equal(found, 1);
    return a;
}

/* The driver's placement (torchplace.c), offsets as the H200 measured them: the worked example's
 * 2 MiB segment, 20 MiB 74 MiB above it, 26 MiB 446 MiB below it (worked_example__default.json:
 * 0x7effa3e00000, 0x7effa8800000, 0x7eff88000000). */
static void placement_worked_example(void **state) {
    (void)state;
    torchalloc *ta = make("", 0);
    m(ta, 1000, 0);
    m(ta, 3 * MiB, 0);
    m(ta, 25 * MiB, 0);
    uint64_t a2 = seg_addr(ta, 2 * MiB);
    assert_int_equal(seg_addr(ta, 20 * MiB) - a2, 74 * MiB);
    assert_int_equal(a2 - seg_addr(ta, 26 * MiB), 446 * MiB);
    torchalloc_destroy(ta);
}

/* One stream a request, so that no cached block serves another: 12 MiB twice fills the 24 MiB
 * hole, the second right above the first; the third opens a heap (one 32 MiB chunk) just below
 * the region, the fourth takes its tail (sizes_large step 26: 12 MiB right above 10 MiB); 40
 * MiB gets two chunks below that heap, 20 MiB the tail of those. Released heaps' chunks serve
 * again (gc__limit1g step 21), except as a run a new heap would fill exactly with a live heap
 * right below it (torchplace.c). Offsets from the first. */
static void placement_heaps(void **state) {
    (void)state;
    torchalloc *ta = make("", 0);
    static const uint64_t mib[6] = {12, 12, 12, 12, 40, 20};
    int64_t id[6];
    for (uint32_t k = 0; k < 6; k++)
        id[k] = m(ta, mib[k] * MiB, k + 1);
    /* address order: 40 MiB (-584), 20 (-544), 12 (-520), 12 (-508), then the first 12 (0) and
     * the second (+12) in the hole */
    static const int64_t at[6] = {-584, -544, -520, -508, 0, 12};
    static const uint64_t size[6] = {40, 20, 12, 12, 12, 12};
    seglist l = segments(ta);
    assert_int_equal(l.n, 6);
    int64_t first = (int64_t)l.addr[4];
    for (size_t k = 0; k < 6; k++) {
        assert_int_equal(l.size[k], size[k] * MiB);
        assert_int_equal((int64_t)l.addr[k] - first, at[k] * (int64_t)MiB);
    }
    /* the first heap released: 30 MiB would fill its chunk exactly, the 40 MiB heap right below,
     * and goes below every heap instead (-616); with the 40 MiB heap released too, 64 MiB
     * takes two of the three free chunks there, the top ones (-552) */
    torchalloc_free(ta, id[2]);
    torchalloc_free(ta, id[3]);
    torchalloc_empty_cache(ta);
    m(ta, 30 * MiB, 7);
    assert_int_equal((int64_t)seg_addr(ta, 30 * MiB) - first, -616 * (int64_t)MiB);
    torchalloc_free(ta, id[4]);
    torchalloc_free(ta, id[5]);
    torchalloc_empty_cache(ta);
    m(ta, 64 * MiB, 8);
    assert_int_equal((int64_t)seg_addr(ta, 64 * MiB) - first, -552 * (int64_t)MiB);
    torchalloc_destroy(ta);
}

static void worked_example_expandable(void **state) {
    (void)state;
    torchalloc *ta = make("expandable_segments:True", 0);
    /* Earlier steps follow from the source: a maps one 2 MiB small page; b maps one 20 MiB
     * large page (map_block of 3 MiB rounds up to the page) and splits (remainder >= 512);
     * c takes the 17 MiB remainder; d takes b's freed 3 MiB block (smaller expandable size
     * than the 5 MiB tail block, whose next is unmapped).  The same numbers as without. */
    int64_t a = m(ta, 1000, 0);
    expect(ta, 1024, 2097152);
    int64_t b = m(ta, 3 * MiB, 0);
    expect(ta, 3146752, 23068672);
    m(ta, 12 * MiB, 0);
    expect(ta, 15729664, 23068672);
    torchalloc_free(ta, b);
    expect(ta, 12583936, 23068672);
    m(ta, MiB + 1, 0);
    expect(ta, 13633024, 23068672);
    torchalloc_free(ta, a);
    expect(ta, 13632000, 23068672);
    /* fact sheet: e takes the 5 MiB free tail plus one more 20 MiB page: 39846400 / 44040192 */
    m(ta, 25 * MiB, 0);
    expect(ta, 39846400, 44040192);
    /* snapshot view: one small segment (2 MiB) and one large mapped range (40 MiB) */
    seglist l = segments(ta);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.size[0], 2 * MiB);
    assert_int_equal(l.size[1], 40 * MiB);
    torchalloc_destroy(ta);
}

/* ---- sizes ---- */

static void round_and_segment_sizes(void **state) {
    (void)state;
    torchalloc_conf c = conf("");
    /* round_size: < 512 -> 512, else up to a multiple of 512 */
    assert_int_equal(torchalloc_round_size(&c, 1), 512);
    assert_int_equal(torchalloc_round_size(&c, 511), 512);
    assert_int_equal(torchalloc_round_size(&c, 512), 512);
    assert_int_equal(torchalloc_round_size(&c, 513), 1024);
    assert_int_equal(torchalloc_round_size(&c, MiB), MiB);
    assert_int_equal(torchalloc_round_size(&c, MiB + 1), MiB + 512);
    assert_int_equal(torchalloc_round_size(&c, 10 * MiB - 1), 10 * MiB);
    /* get_allocation_size: <= kSmallSize -> kSmallBuffer; < kMinLargeAlloc -> 20 MiB; else 2 MiB multiple */
    assert_int_equal(torchalloc_allocation_size(&c, MiB), 2 * MiB);
    assert_int_equal(torchalloc_allocation_size(&c, MiB + 512), 20 * MiB);
    assert_int_equal(torchalloc_allocation_size(&c, 10 * MiB - 512), 20 * MiB);
    assert_int_equal(torchalloc_allocation_size(&c, 10 * MiB), 10 * MiB);
    assert_int_equal(torchalloc_allocation_size(&c, 10 * MiB + 512), 12 * MiB);
    /* so 10 MiB - 1 B gets a 10 MiB segment and 10 MiB - 513 B a 20 MiB one */
    assert_int_equal(torchalloc_allocation_size(&c, torchalloc_round_size(&c, 10 * MiB - 1)), 10 * MiB);
    assert_int_equal(torchalloc_allocation_size(&c, torchalloc_round_size(&c, 10 * MiB - 513)), 20 * MiB);
    /* large_segment_size_mb:64 (2.11) replaces the 20 MiB tier and the large page */
    torchalloc_conf big = conf("large_segment_size_mb:64");
    assert_int_equal(torchalloc_allocation_size(&big, 3 * MiB), 64 * MiB);
    assert_int_equal(torchalloc_page_size(&big, 1), 64 * MiB);
    assert_int_equal(big.max_non_split_rounding, 64 * MiB); /* default follows large_segment_size */
}

static void roundup_power2_divisions(void **state) {
    (void)state;
    /* single form: 4 divisions everywhere (roundup_power2_next_division) */
    torchalloc_conf c = conf("roundup_power2_divisions:4");
    assert_int_equal(torchalloc_round_size(&c, 1200), 1536);  /* 1200 <= 512*4: plain 512 rounding */
    assert_int_equal(torchalloc_round_size(&c, 2048), 2048);  /* a power of two stays */
    assert_int_equal(torchalloc_round_size(&c, 3000), 3072);  /* 2048 + k*512 */
    assert_int_equal(torchalloc_round_size(&c, MiB + 1), MiB + 256 * KiB);
    assert_int_equal(torchalloc_round_size(&c, 5 * MiB + 1), 6 * MiB); /* 4 MiB + k*1 MiB */
    /* 1 division is no rounding */
    torchalloc_conf one = conf("roundup_power2_divisions:1");
    assert_int_equal(torchalloc_round_size(&one, 5 * MiB + 1), 5 * MiB + 512);
    /* list form: boundaries in MiB; 256:1 fills intervals below 256 MiB too, >:8 the rest */
    torchalloc_conf l = conf("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
    assert_int_equal(l.roundup_power2_divisions[0], 1);
    assert_int_equal(l.roundup_power2_divisions[8], 1);
    assert_int_equal(l.roundup_power2_divisions[9], 2);
    assert_int_equal(l.roundup_power2_divisions[10], 4);
    assert_int_equal(l.roundup_power2_divisions[11], 8);
    assert_int_equal(l.roundup_power2_divisions[15], 8);
    assert_int_equal(torchalloc_round_size(&l, 100 * MiB + 1), 100 * MiB + 512);
    assert_int_equal(torchalloc_round_size(&l, 600 * MiB), 768 * MiB);       /* 512 + k*256 MiB */
    assert_int_equal(torchalloc_round_size(&l, 1536 * MiB + 1), 1792 * MiB); /* 1 GiB + k*256 MiB */
    assert_int_equal(torchalloc_round_size(&l, 3 * GiB + 1), 3 * GiB + 256 * MiB); /* 2 GiB + k*256 MiB */
}

/* ---- oversize and split rules ---- */

static void oversize_rules(void **state) {
    (void)state;
    torchalloc *ta = make("max_split_size_mb:40", 0);
    int64_t a = m(ta, 80 * MiB, 0);
    torchalloc_free(ta, a);
    /* 60 MiB >= max_split: the cached 80 MiB block is >= 60 + max_non_split_rounding (20 MiB): new segment */
    int64_t b = m(ta, 60 * MiB, 0);
    expect(ta, 60 * MiB, 140 * MiB);
    torchalloc_free(ta, b);
    /* 61 MiB: best fit is the 80 MiB block (60 is too small), 80 < 61 + 20: taken whole, no split
     * (should_split needs request < max_split) */
    m(ta, 61 * MiB, 0);
    expect(ta, 80 * MiB, 140 * MiB);
    /* 30 MiB < max_split never takes a block >= max_split: the free 60 MiB block is refused */
    m(ta, 30 * MiB, 0);
    expect(ta, 110 * MiB, 170 * MiB);
    torchalloc_destroy(ta);
}

static void split_remainder_edge(void **state) {
    (void)state;
    torchalloc *ta = make("", 0);
    /* 19 MiB rounds to a 20 MiB segment; remainder exactly 1 MiB is not > kSmallSize: no split */
    int64_t a = m(ta, 19 * MiB, 0);
    expect(ta, 20 * MiB, 20 * MiB);
    torchalloc_free(ta, a);
    torchalloc_empty_cache(ta);
    expect(ta, 0, 0);
    /* 19 MiB - 512: remainder 1 MiB + 512 > 1 MiB: split, the block is the rounded size */
    m(ta, 19 * MiB - 512, 0);
    expect(ta, 19 * MiB - 512, 20 * MiB);
    m(ta, MiB, 0); /* 1 MiB is small-pool: its own 2 MiB segment, not the large remainder */
    expect(ta, 20 * MiB - 512, 22 * MiB);
    torchalloc_destroy(ta);
    /* small pool: a remainder of exactly 512 B is split off (>= kMinBlockSize) */
    ta = make("", 0);
    m(ta, MiB, 0);
    m(ta, MiB - 512, 0);
    expect(ta, 2 * MiB - 512, 2 * MiB);
    m(ta, 1, 0); /* fits the 512 B remainder */
    expect(ta, 2 * MiB, 2 * MiB);
    torchalloc_destroy(ta);
}

/* ---- streams ---- */

static void no_cross_stream_reuse(void **state) {
    (void)state;
    torchalloc *ta = make("", 0);
    int64_t a = m(ta, MiB, 0);
    torchalloc_free(ta, a);
    /* free blocks are per stream: stream 1 gets its own 2 MiB segment */
    m(ta, MiB, 1);
    expect(ta, MiB, 4 * MiB);
    /* stream 0 reuses its own */
    m(ta, MiB, 0);
    expect(ta, 2 * MiB, 4 * MiB);
    torchalloc_destroy(ta);
}

/* The segments' address order (torchalloc_set_segment_order, order_ties): order_decides.yaml's
 * steps (tests/cli/torch), its comment working out both orders. Two 20 MiB segments each with a
 * free 2 MiB tail; a 1.5 MiB request ties. */
static uint64_t order_case_at(int upwards, const uint64_t *addrs, size_t naddrs,
                              uint64_t *ties_at_c, uint64_t *reserved) {
    torchalloc *ta = make("", 0);
    torchalloc_set_segment_order(ta, upwards);
    torchalloc_set_segment_addresses(ta, addrs, naddrs);
    torchalloc_watch_ties(ta, 1);
    int64_t x = -1;
    for (int k = 0; k < 4; k++) {   /* a, x in S1; b, y in S2 */
        int64_t id = m(ta, 9 * MiB, 0);
        if (k == 1)
            x = id;
    }
    struct torchalloc_stats s;
    torchalloc_stats(ta, &s);
    assert_int_equal(s.order_ties, 0);   /* each 9 MiB had one fitting block or none */
    m(ta, MiB + MiB / 2, 0);             /* c: the 2 MiB tails of S1 and S2 */
    torchalloc_stats(ta, &s);
    *ties_at_c = s.order_ties;
    torchalloc_free(ta, x);
    m(ta, 8 * MiB + MiB / 2, 0);         /* d */
    torchalloc_stats(ta, &s);
    *reserved = s.reserved;
    torchalloc_destroy(ta);
    return s.allocated;
}

static uint64_t order_case(int upwards, uint64_t *ties_at_c, uint64_t *reserved) {
    return order_case_at(upwards, NULL, 0, ties_at_c, reserved);
}

/* torchalloc_set_segment_addresses: the caller's addresses decide the tie, as the driver's
 * placement did for a snapshot. S1 made first at 1 GiB, S2 at 2 GiB: S1 lies lower, c takes its
 * tail, as "above" does (38 MiB); S1 at 2 GiB, S2 at 1 GiB: as "below" (37.5 MiB), whichever
 * order set_segment_order says. A listed address overlapping a live segment (S2 at 1 GiB + 10
 * MiB, inside S1's 20 MiB) is not used: S2 goes below every live one, as "below". */
typedef struct {
    uint64_t a[4];
    size_t n;
} walk_addrs;

static int collect_segment_addr(void *user, const torchalloc_segment_info *s) {
    walk_addrs *w = user;
    if (w->n < 4)
        w->a[w->n++] = s->addr;
    return 0;
}

static void segment_addresses(void **state) {
    (void)state;
    uint64_t ties, reserved;
    const uint64_t up[] = {GiB, 2 * GiB}, down[] = {2 * GiB, GiB}, overlap[] = {GiB, GiB + 10 * MiB};
    assert_int_equal(order_case_at(0, up, 2, &ties, &reserved), 38 * MiB);
    assert_int_equal(order_case_at(1, down, 2, &ties, &reserved), 29 * MiB + 8 * MiB + MiB / 2);
    assert_int_equal(order_case_at(0, overlap, 2, &ties, &reserved), 29 * MiB + 8 * MiB + MiB / 2);
    assert_int_equal(reserved, 40 * MiB);
    /* the walk lists them in address order, past the list too: a third segment goes below */
    torchalloc *ta = make("", 0);
    torchalloc_set_segment_addresses(ta, down, 2);
    for (int k = 0; k < 3; k++)
        m(ta, 20 * MiB, 0);
    walk_addrs wa = {.n = 0};
    torchalloc_walker w = {.segment = collect_segment_addr, .user = &wa};
    const uint64_t *seen = wa.a;
    assert_int_equal(torchalloc_walk(ta, &w), 3);
    assert_true(seen[0] < GiB);
    assert_int_equal(seen[1], GiB);
    assert_int_equal(seen[2], 2 * GiB);
    torchalloc_destroy(ta);
}

static void segment_order_ties(void **state) {
    (void)state;
    uint64_t ties, reserved;
    /* below (the default): c in S2, d splits S1's free 11 MiB: 29 + 8.5 MiB */
    assert_int_equal(order_case(0, &ties, &reserved), 29 * MiB + 8 * MiB + MiB / 2);
    assert_int_equal(ties, 1);
    assert_int_equal(reserved, 40 * MiB);
    /* above: c in S1, d takes the 9 MiB beside it whole: 29 + 9 MiB */
    assert_int_equal(order_case(1, &ties, &reserved), 38 * MiB);
    assert_int_equal(ties, 1);
    assert_int_equal(reserved, 40 * MiB);
    /* equal sizes within one segment are no tie: two free 2 MiB blocks of one 20 MiB segment */
    torchalloc *ta = make("", 0);
    torchalloc_watch_ties(ta, 1);
    int64_t id[5];
    for (int k = 0; k < 5; k++)
        id[k] = m(ta, 2 * MiB, 0);
    torchalloc_free(ta, id[1]);
    torchalloc_free(ta, id[3]);
    m(ta, 2 * MiB, 0);
    struct torchalloc_stats s;
    torchalloc_stats(ta, &s);
    assert_int_equal(s.order_ties, 0);
    assert_int_equal(s.segments, 1);
    torchalloc_destroy(ta);
    /* not watched (the default): the tie is not counted, the choice the same */
    ta = make("", 0);
    for (int k = 0; k < 4; k++)
        m(ta, 9 * MiB, 0);
    m(ta, MiB + MiB / 2, 0);
    torchalloc_stats(ta, &s);
    assert_int_equal(s.order_ties, 0);
    assert_int_equal(s.allocated, 38 * MiB);
    torchalloc_destroy(ta);
}

static int completed;
static void count_completed(void *user, torchalloc_action a, uint64_t addr, uint64_t size, uint32_t stream) {
    (void)user;
    (void)addr;
    (void)size;
    (void)stream;
    if (a == TORCHALLOC_EV_FREE_COMPLETED)
        completed++;
}

static void record_stream_delays_reuse(void **state) {
    (void)state;
    torchalloc *ta = make("", 0);
    torchalloc_set_hook(ta, count_completed, NULL);
    completed = 0;
    int64_t b = m(ta, 12 * MiB, 0); /* a 12 MiB segment, unsplit */
    torchalloc_record_stream(ta, b, 1);
    torchalloc_stream_submit(ta, 1); /* work on stream 1 still running */
    torchalloc_free(ta, b);
    expect(ta, 0, 12 * MiB); /* allocated drops at free() */
    assert_int_equal(completed, 0);
    /* the event on stream 1 has not completed: b is not in the pool, a new segment is made */
    int64_t c = m(ta, 12 * MiB, 0);
    expect(ta, 12 * MiB, 24 * MiB);
    torchalloc_free(ta, c);
    assert_int_equal(completed, 1); /* c had no stream uses */
    torchalloc_stream_complete(ta, 1);
    struct torchalloc_stats s;
    torchalloc_stats(ta, &s);
    assert_int_equal(s.pending_free, 12 * MiB); /* completion is only looked at in malloc */
    assert_int_equal(completed, 1);
    /* next malloc: process_events returns b first; best fit among equal sizes is the lower
     * address: b's segment, which the driver put at the bottom of a 24 MiB hole and c's right
     * above it (torchplace.c) */
    int64_t d = m(ta, 12 * MiB, 0);
    assert_int_equal(completed, 2);
    expect(ta, 12 * MiB, 24 * MiB);
    assert_int_equal(d, b); /* b's block came back to the pool and, the lower one, was handed out */
    int64_t e = m(ta, 12 * MiB, 0);
    assert_int_equal(e, c); /* and c's block is the other 12 MiB block, reused without growth */
    expect(ta, 24 * MiB, 24 * MiB);
    torchalloc_free(ta, e);
    /* nothing submitted since the last completion: the event is complete at once, the block
     * returns at the next malloc */
    torchalloc_record_stream(ta, d, 1);
    torchalloc_free(ta, d);
    torchalloc_stats(ta, &s);
    assert_int_equal(s.pending_free, 12 * MiB);
    m(ta, 1000, 0);
    torchalloc_stats(ta, &s);
    assert_int_equal(s.pending_free, 0);
    torchalloc_destroy(ta);
}

/* ---- releasing ---- */

static void empty_cache_frees_only_whole_segments(void **state) {
    (void)state;
    torchalloc *ta = make("", 0);
    int64_t a = m(ta, 1000, 0);
    m(ta, 1000, 0); /* same 2 MiB segment as a */
    int64_t c = m(ta, 12 * MiB, 0);
    m(ta, 12 * MiB, 0);
    torchalloc_free(ta, a);
    torchalloc_free(ta, c);
    torchalloc_empty_cache(ta);
    /* c's segment was wholly free: gone; the small segment still holds b */
    expect(ta, 1024 + 12 * MiB, 2 * MiB + 12 * MiB);
    torchalloc_destroy(ta);
}

static void oom_retry_then_real_oom(void **state) {
    (void)state;
    torchalloc *ta = make("", 40 * MiB);
    int64_t a = m(ta, 12 * MiB, 0);
    int64_t b = m(ta, 12 * MiB, 0);
    torchalloc_free(ta, a);
    torchalloc_free(ta, b);
    /* 24 MiB cached + 30 MiB > 40 MiB: the last retry releases the cached segments, then fits */
    m(ta, 30 * MiB, 0);
    expect(ta, 30 * MiB, 30 * MiB);
    struct torchalloc_stats s;
    torchalloc_stats(ta, &s);
    assert_int_equal(s.num_alloc_retries, 1);
    /* 30 + 12 > 40 and nothing is cached: out of memory */
    torchalloc_oom oom;
    assert_int_equal(torchalloc_malloc(ta, 12 * MiB, 0, &oom), -1);
    assert_int_equal(oom.requested, 12 * MiB);
    assert_int_equal(oom.alloc_size, 12 * MiB);
    assert_int_equal(oom.allocated, 30 * MiB);
    assert_int_equal(oom.reserved, 30 * MiB);
    assert_int_equal(oom.limit, 40 * MiB);
    torchalloc_destroy(ta);
}

static void release_available_oversize(void **state) {
    (void)state;
    torchalloc *ta = make("max_split_size_mb:20", 100 * MiB);
    int64_t a = m(ta, 50 * MiB, 0);
    int64_t b = m(ta, 40 * MiB, 0);
    torchalloc_free(ta, a);
    torchalloc_free(ta, b);
    /* 15 MiB < max_split refuses the cached oversize blocks; 90 + 16 > 100, so
     * release_available_cached_blocks frees the smallest block >= max_split (40 MiB) only */
    m(ta, 15 * MiB, 0);
    expect(ta, 16 * MiB, 66 * MiB);
    seglist l = segments(ta);
    assert_int_equal(l.n, 2);   /* address order: the 16 MiB segment fits the hole above the heaps */
    assert_int_equal(l.size[0], 50 * MiB);
    assert_int_equal(l.size[1], 16 * MiB);
    torchalloc_destroy(ta);
}

/* release_available_cached_blocks (CUDACachingAllocator.cpp, 2.11) when no single cached block
 * covers the request: "free multiple oversize blocks, starting with the largest" while
 * totalReleased < the request, only blocks >= max_split_size of the stream; then alloc_block
 * again with isRetry false, so num_alloc_retries stays 0 (the H200's f_retry sidecar: 0 after
 * 15 such releases). Cached: 24, 30, 44 MiB and a 2 MiB small segment (100 MiB, limit 120);
 * 60 MiB fits no block and 100 + 60 > 120: 44 then 30 go (74 >= 60), 24 and the small segment
 * stay, 26 + 60 = 86 MiB. release_cached_blocks would have left 60 MiB. */
static void release_available_largest_first(void **state) {
    (void)state;
    torchalloc *ta = make("max_split_size_mb:20", 120 * MiB);
    int64_t id[4] = {m(ta, 24 * MiB, 0), m(ta, 30 * MiB, 0), m(ta, 44 * MiB, 0), m(ta, 1000, 0)};
    for (int k = 0; k < 4; k++)
        torchalloc_free(ta, id[k]);
    m(ta, 60 * MiB, 0);
    expect(ta, 60 * MiB, 86 * MiB);
    struct torchalloc_stats s;
    torchalloc_stats(ta, &s);
    assert_int_equal(s.num_alloc_retries, 0);
    assert_int_equal(s.num_segment_frees, 2);
    torchalloc_destroy(ta);
}

static void garbage_collection_by_age(void **state) {
    (void)state;
    /* threshold 0.5 of 80 MiB = 40 MiB */
    torchalloc *ta = make("garbage_collection_threshold:0.5", 80 * MiB);
    int64_t a = m(ta, 20 * MiB, 0); /* large get_free_block call 1 */
    torchalloc_free(ta, a);         /* cached at count 1 */
    m(ta, 1000, 0);                 /* small pool: its own counter */
    int64_t b = m(ta, 24 * MiB, 0); /* call 2: 20 MiB block too small */
    torchalloc_free(ta, b);         /* cached at count 2 */
    /* call 3: ages 2 and 1, average 1.5; reserved 46 MiB > 40 MiB, target 6 MiB: only a (age 2)
     * is freed, then 30 MiB is allocated: 46 - 20 + 30 */
    m(ta, 30 * MiB, 0);
    expect(ta, 30 * MiB + 1024, 56 * MiB);
    seglist l = segments(ta);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.size[1], 24 * MiB);
    torchalloc_destroy(ta);
    /* without a limit gc never acts (set_fraction): both stay, 2 + 20 + 24 + 30 */
    ta = make("garbage_collection_threshold:0.5", 0);
    a = m(ta, 20 * MiB, 0);
    torchalloc_free(ta, a);
    m(ta, 1000, 0);
    b = m(ta, 24 * MiB, 0);
    torchalloc_free(ta, b);
    m(ta, 30 * MiB, 0);
    expect(ta, 30 * MiB + 1024, 76 * MiB);
    torchalloc_destroy(ta);
}

static void expandable_empty_cache_unmaps(void **state) {
    (void)state;
    torchalloc *ta = make("expandable_segments:True", 0);
    int64_t a = m(ta, 30 * MiB, 0); /* maps two 20 MiB pages */
    int64_t b = m(ta, 5 * MiB, 0);  /* fits the mapped 10 MiB tail */
    expect(ta, 35 * MiB, 40 * MiB);
    torchalloc_free(ta, a);
    torchalloc_empty_cache(ta);
    /* pages wholly inside the free [0,30 MiB) range: page 0 only; page 1 still holds b */
    expect(ta, 5 * MiB, 20 * MiB);
    torchalloc_free(ta, b);
    torchalloc_empty_cache(ta);
    expect(ta, 0, 0);
    assert_int_equal(segments(ta).n, 0);
    torchalloc_destroy(ta);
}

/* ---- config errors ---- */

static void conf_error(const char *text, const char *msg, size_t offset) {
    torchalloc_conf c;
    char err[256];
    size_t off = 12345;
    assert_int_equal(torchalloc_conf_parse(text, &c, &off, err, sizeof err), -1);
    assert_string_equal(err, msg);
    assert_int_equal(off, offset);
}

static void config_errors(void **state) {
    (void)state;
    conf_error("foo:1", "unknown key 'foo' in PYTORCH_CUDA_ALLOC_CONF", 0);
    conf_error("expandable_segments:True, foo:1", "unknown key 'foo' in PYTORCH_CUDA_ALLOC_CONF", 26);
    /* parseMaxSplitSize: >= large_segment_size in MiB (20) */
    conf_error("max_split_size_mb:10", "CachingAllocator option max_split_size_mb too small, must be >= 20", 18);
    conf_error("large_segment_size_mb:64,max_split_size_mb:40",
               "CachingAllocator option max_split_size_mb too small, must be >= 64", 43);
    conf_error("max_non_split_rounding_mb:19",
               "CachingAllocator option max_non_split_rounding_mb too small, must be >= 20", 26);
    conf_error("large_segment_size_mb:10", "CachingAllocator option large_segment_size_mb must be > 10 MB", 22);
    conf_error("max_split_size_mb:abc", "invalid value 'abc' for max_split_size_mb (std::stoull: no conversion)", 18);
    /* ConfigTokenizer::toBool */
    conf_error("expandable_segments:yes", "Expected 'True' or 'False' at index 2 in ConfigTokenizer but got 'yes'", 20);
    conf_error("garbage_collection_threshold:1.5", "garbage_collect_threshold is invalid, set it in (0.0, 1.0)", 29);
    conf_error("roundup_power2_divisions:3", "For roundups, the divisions has to be power of 2 ", 25);
    conf_error("roundup_power2_divisions:[256:3]",
               "For roundups, the divisions has to be power of 2 or 0 to disable roundup ", 30);
    conf_error("roundup_power2_divisions:[300:2]", "For roundups, the intervals have to be power of 2 ", 26);
    conf_error("roundup_power2_divisions:[256:2", "Expected closing bracket ']' in ConfigTokenizer but reached end of config", 30);
    conf_error("pinned_num_register_threads:3", "Number of register threads has to be power of 2, got 3", 28);
    conf_error("backend:cudaMallocAsync", "backend cudaMallocAsync is not modelled (only the native caching allocator)", 8);
    conf_error("expandable_segments", "missing ':' and value after 'expandable_segments' in PYTORCH_CUDA_ALLOC_CONF", 0);
    conf_error("expandable_segments:True;max_split_size_mb:40",
               "Expected 'True' or 'False' at index 2 in ConfigTokenizer but got 'True;max_split_size_mb'", 20);
    /* 2.5 had no large_segment_size_mb */
    torchalloc_conf c;
    char err[256];
    size_t off;
    assert_int_equal(torchalloc_conf_parse_version("large_segment_size_mb:64", TORCHALLOC_V2_5, &c, &off, err, sizeof err), -1);
    assert_string_equal(err, "unknown key 'large_segment_size_mb' in PYTORCH_CUDA_ALLOC_CONF");
    assert_int_equal(off, 0);
}

static void config_accepts(void **state) {
    (void)state;
    /* keys PyTorch accepts that do not change sizing, whitespace dropped by the tokenizer */
    torchalloc_conf c = conf(" backend : native , release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:True,"
                             "pinned_num_register_threads:8,pinned_use_background_threads:False,"
                             "graph_capture_record_stream_reuse:True,pinned_reserve_segment_size_mb:64,"
                             "expandable_segments:True,max_split_size_mb:512,max_non_split_rounding_mb:40,"
                             "garbage_collection_threshold:0.6,per_process_memory_fraction:0.5,");
    assert_int_equal(c.expandable_segments, 1);
    assert_int_equal(c.max_split_size, 512 * MiB);
    assert_int_equal(c.max_non_split_rounding, 40 * MiB);
    assert_true(c.garbage_collection_threshold == 0.6);
    assert_true(c.per_process_memory_fraction == 0.5);
    assert_int_equal(c.pinned_num_register_threads, 8);
    torchalloc_conf d = conf(NULL);
    assert_int_equal(d.max_split_size, TORCHALLOC_UNLIMITED);
    assert_int_equal(d.large_segment_size, 20 * MiB);
}

/* ---- measured on the H200 ---- */

/* Ground truth collected for this model on one H200 with torch 2.11.0+cu130 (2026-12-01):
 * each scenario ran in a fresh process with PYTORCH_CUDA_ALLOC_CONF = conf, and, where limit is
 * set, torch.cuda.set_per_process_memory_fraction(limit / total_memory); "m NAME BYTES" is
 * torch.empty(BYTES, dtype=torch.uint8, device="cuda"), "f NAME" drops it, "e" is
 * torch.cuda.empty_cache().  expect lists memory_allocated() memory_reserved() after each op
 * ("OOM" where torch raised OutOfMemoryError); segs the sorted total_size of
 * torch.cuda.memory_snapshot()'s segments at the end. */
static const struct {
    const char *name, *conf;
    uint64_t limit;
    const char *ops, *expect, *segs;
} h200[] = {
    {"worked", "", 0ull, "m a 1000;m b 3145728;m c 12582912;f b;m d 1048577;f a;m e 26214400",
     "1024 2097152;3146752 23068672;15729664 23068672;12583936 23068672;13633024 23068672;13632000 23068672;40894976 50331648",
     "2097152 20971520 27262976"},
    {"worked_exp", "expandable_segments:True", 0ull, "m a 1000;m b 3145728;m c 12582912;f b;m d 1048577;f a;m e 26214400",
     "1024 2097152;3146752 23068672;15729664 23068672;12583936 23068672;13633024 23068672;13632000 23068672;39846400 44040192",
     "2097152 41943040"},
    {"lss64", "large_segment_size_mb:64", 0ull, "m a 3145728;m b 33554432",
     "3145728 67108864;36700160 67108864",
     "67108864"},
    {"lss64_exp", "expandable_segments:True,large_segment_size_mb:64", 0ull, "m a 3145728;m b 83886080",
     "3145728 67108864;87031808 134217728",
     "134217728"},
    {"gc", "garbage_collection_threshold:0.5", 83886080ull, "m a 20971520;f a;m x 1000;m b 25165824;f b;m c 31457280",
     "20971520 20971520;0 20971520;1024 23068672;25166848 48234496;1024 48234496;31458304 58720256",
     "2097152 25165824 31457280"},
    {"nogc", "garbage_collection_threshold:0.5", 0ull, "m a 20971520;f a;m x 1000;m b 25165824;f b;m c 31457280",
     "20971520 20971520;0 20971520;1024 23068672;25166848 48234496;1024 48234496;31458304 79691776",
     "2097152 20971520 25165824 31457280"},
    {"relavail", "max_split_size_mb:20", 104857600ull, "m a 52428800;m b 41943040;f a;f b;m c 15728640",
     "52428800 52428800;94371840 94371840;41943040 94371840;0 94371840;16777216 69206016",
     "16777216 52428800"},
    {"oversize", "max_split_size_mb:40", 0ull, "m a 83886080;f a;m b 62914560;f b;m c 63963136;m d 31457280",
     "83886080 83886080;0 83886080;62914560 146800640;0 146800640;83886080 146800640;115343360 178257920",
     "31457280 62914560 83886080"},
    {"divlist", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", 0ull, "m a 629145600;m b 104857601",
     "805306368 805306368;910164480 912261120",
     "106954752 805306368"},
    {"div4", "roundup_power2_divisions:4", 0ull, "m a 5242881;m b 1049000;m c 3000",
     "6291456 20971520;7602176 20971520;7605248 23068672",
     "2097152 20971520"},
    {"split19", "", 0ull, "m a 19922944;f a;e;m b 19922432;m c 1048576",
     "20971520 20971520;0 20971520;0 0;19922432 20971520;20971008 23068672",
     "2097152 20971520"},
    {"expunmap", "expandable_segments:True", 0ull, "m a 31457280;m b 5242880;f a;e;f b;e",
     "31457280 41943040;36700160 41943040;5242880 41943040;5242880 20971520;0 20971520;0 0",
     ""},
    {"oom", "", 41943040ull, "m a 12582912;m b 12582912;f a;f b;m c 31457280;m d 12582912",
     "12582912 12582912;25165824 25165824;12582912 25165824;0 25165824;31457280 31457280;OOM 31457280 31457280",
     "31457280"},
    {"nonsplit40", "max_split_size_mb:40,max_non_split_rounding_mb:40", 0ull, "m a 83886080;f a;m b 50331648",
     "83886080 83886080;0 83886080;83886080 83886080",
     "83886080"},
};

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void h200_scenarios(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof h200 / sizeof h200[0]; k++) {
        torchalloc *ta = make(h200[k].conf, h200[k].limit);
        char names[16][8];
        int64_t ids[16];
        int n = 0;
        const char *op = h200[k].ops, *ex = h200[k].expect;
        while (*op) {
            char buf[64], kind = 0, name[8] = "";
            unsigned long long bytes = 0;
            size_t len = strcspn(op, ";");
            assert_true(len < sizeof buf);
            memcpy(buf, op, len);
            buf[len] = 0;
            assert_true(sscanf(buf, " %c %7s %llu", &kind, name, &bytes) >= 1);
            int oom = 0;
            if (kind == 'm') {
                int64_t id = torchalloc_malloc(ta, bytes, 0, NULL);
                oom = id < 0;
                if (!oom) {
                    memcpy(names[n], name, sizeof name);
                    ids[n++] = id;
                }
            } else if (kind == 'f') {
                for (int i = 0; i < n; i++)
                    if (!strcmp(names[i], name)) {
                        torchalloc_free(ta, ids[i]);
                        names[i][0] = 0;
                    }
            } else {
                torchalloc_empty_cache(ta);
            }
            unsigned long long ea, er;
            int eoom = strncmp(ex, "OOM ", 4) == 0;
            assert_int_equal(sscanf(ex + (eoom ? 4 : 0), "%llu %llu", &ea, &er), 2);
            struct torchalloc_stats st;
            torchalloc_stats(ta, &st);
            if (st.allocated != ea || st.reserved != er || oom != eoom)
                print_error("%s: after '%s' model %llu %llu%s, H200 %llu %llu%s\n", h200[k].name, buf,
                            (unsigned long long)st.allocated, (unsigned long long)st.reserved, oom ? " OOM" : "", ea, er,
                            eoom ? " OOM" : "");
            assert_int_equal(st.allocated, ea);
            assert_int_equal(st.reserved, er);
            assert_int_equal(oom, eoom);
            op = strchr(op, ';');
            ex = strchr(ex, ';');
            if (!op)
                break;
            assert_non_null(ex);
            op++;
            ex++;
        }
        seglist l = segments(ta);
        qsort(l.size, l.n, sizeof l.size[0], cmp_u64);
        char got[512] = "";
        for (size_t i = 0; i < l.n; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", i ? " " : "", (unsigned long long)l.size[i]);
        assert_string_equal(got, h200[k].segs);
        torchalloc_destroy(ta);
    }
}

/* record_stream measured on the H200 (torch 2.11.0+cu130): a 12 MiB tensor freed after
 * record_stream(s) while s runs torch.cuda._sleep; then torch.cuda.synchronize().  Each expect()
 * is memory_allocated, memory_reserved, and active_bytes.all.current as measured. */
static void expect_active(torchalloc *ta, uint64_t allocated, uint64_t reserved, uint64_t active) {
    expect(ta, allocated, reserved);
    struct torchalloc_stats st;
    torchalloc_stats(ta, &st);
    assert_int_equal(st.active, active);
}

static void h200_record_stream(void **state) {
    (void)state;
    torchalloc *ta = make("", 0);
    const uint32_t s = 7; /* the side stream */
    int64_t a = m(ta, 12 * MiB, 0);
    expect_active(ta, 12582912, 12582912, 12582912);
    torchalloc_stream_submit(ta, s); /* _sleep enqueued on s */
    torchalloc_record_stream(ta, a, s);
    torchalloc_free(ta, a);
    expect_active(ta, 0, 12582912, 12582912);
    int64_t b = m(ta, 12 * MiB, 0); /* a is still pending: a new segment */
    expect_active(ta, 12582912, 25165824, 25165824);
    torchalloc_device_synchronize(ta);
    expect_active(ta, 12582912, 25165824, 25165824); /* not looked at until the next malloc */
    int64_t x = m(ta, 1000, 0);
    expect_active(ta, 12583936, 27262976, 12583936);
    int64_t c = m(ta, 12 * MiB, 0); /* takes a's block */
    expect_active(ta, 25166848, 27262976, 25166848);
    torchalloc_free(ta, b);
    torchalloc_free(ta, c);
    torchalloc_free(ta, x);
    torchalloc_empty_cache(ta);
    expect_active(ta, 0, 0, 0);
    int64_t e = m(ta, 12 * MiB, 0);
    torchalloc_free(ta, e);
    expect_active(ta, 0, 12582912, 0);
    m(ta, 12 * MiB, s); /* no cross-stream reuse */
    expect_active(ta, 12582912, 25165824, 12582912);
    int64_t g = m(ta, 1000, 0);
    torchalloc_record_stream(ta, g, s); /* s idle: its event is complete at once */
    torchalloc_free(ta, g);
    expect_active(ta, 12582912, 27262976, 12583936);
    m(ta, 1000, 0);
    expect_active(ta, 12583936, 27262976, 12583936);
    torchalloc_destroy(ta);
}

/* ---- invariants under a random schedule ---- */

typedef struct {
    uint64_t seg_total, alloc_total, nalloc;
    uint64_t seg_addr, seg_size, cursor, blocks_size;
    uint64_t nseg, free_in_used, whole_free; /* torchalloc_stats' walk-derived fields, walked */
    int last_inactive, bad;
} inv;

static int inv_seg(void *user, const torchalloc_segment_info *s) {
    inv *v = user;
    if (v->seg_size && v->blocks_size != v->seg_size)
        v->bad = 1; /* the previous segment's blocks did not tile it */
    v->seg_total += s->size;
    v->nseg++;
    if (s->active_size)
        v->free_in_used += s->size - s->active_size;
    else
        v->whole_free += s->size;
    v->seg_addr = v->cursor = s->addr;
    v->seg_size = s->size;
    v->blocks_size = 0;
    v->last_inactive = 0;
    if (s->addr % (2 * MiB))
        v->bad = 2;
    return 0;
}

static int inv_block(void *user, const torchalloc_segment_info *s, const torchalloc_block_info *b) {
    inv *v = user;
    (void)s;
    if (b->addr != v->cursor)
        v->bad = 3; /* blocks are contiguous */
    v->cursor += b->size;
    v->blocks_size += b->size;
    int inactive = b->state == TORCHALLOC_BLOCK_INACTIVE;
    if (inactive && v->last_inactive)
        v->bad = 4; /* two free neighbours were not merged */
    v->last_inactive = inactive;
    if (b->state == TORCHALLOC_BLOCK_ACTIVE_ALLOCATED) {
        v->alloc_total += b->size;
        v->nalloc++;
        if (b->size % 512 || b->requested > b->size)
            v->bad = 5;
    }
    return 0;
}

static void check_invariants(torchalloc *ta, size_t nlive) {
    inv v;
    memset(&v, 0, sizeof v);
    torchalloc_walker w = {inv_seg, inv_block, &v};
    torchalloc_walk(ta, &w);
    if (v.seg_size && v.blocks_size != v.seg_size)
        v.bad = 1;
    struct torchalloc_stats st;
    torchalloc_stats(ta, &st);
    assert_int_equal(v.bad, 0);
    assert_int_equal(v.seg_total, st.reserved);
    assert_int_equal(v.alloc_total, st.allocated);
    assert_int_equal(v.nalloc, nlive);
    /* the counters alone are the stats less the three segment fields */
    struct torchalloc_stats c;
    torchalloc_counters(ta, &c);
    c.free_in_used_segments = st.free_in_used_segments;
    c.whole_free_segments = st.whole_free_segments;
    c.segments = st.segments;
    assert_memory_equal(&c, &st, sizeof c);
    /* the stats keep these as blocks change state; the walk recounts them */
    assert_int_equal(v.nseg, st.segments);
    assert_int_equal(v.free_in_used, st.free_in_used_segments);
    assert_int_equal(v.whole_free, st.whole_free_segments);
    assert_int_equal(st.reserved - st.allocated, st.free_in_used_segments + st.whole_free_segments + st.pending_free);
    assert_true(st.reserved <= st.reserved_peak && st.allocated <= st.allocated_peak);
}

static void random_schedule(const char *text, uint64_t limit, int streams) {
    torchalloc *ta = make(text, limit);
    int64_t live[512];
    size_t n = 0;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int e = 0; e < 40000; e++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned op = (unsigned)(x % 100);
        uint32_t st = (uint32_t)((x >> 8) % (uint64_t)streams);
        if (op < 45 && n < 512) {
            uint64_t sz = (x >> 20) % 4 == 0 ? (x >> 24) % (64 * MiB) : (x >> 24) % (2 * MiB);
            int64_t id = torchalloc_malloc(ta, sz, st, NULL);
            if (id >= 0)
                live[n++] = id;
        } else if (op < 90 && n) {
            size_t k = (size_t)((x >> 16) % n);
            if (streams > 1 && (x >> 40) % 4 == 0) {
                torchalloc_record_stream(ta, live[k], (st + 1) % (uint32_t)streams);
                torchalloc_stream_submit(ta, (st + 1) % (uint32_t)streams);
            }
            torchalloc_free(ta, live[k]);
            live[k] = live[--n];
        } else if (op < 97) {
            torchalloc_stream_complete(ta, st);
        } else if (op < 98) {
            torchalloc_empty_cache(ta);
        } else {
            torchalloc_device_synchronize(ta);
        }
        if (e % 97 == 0)
            check_invariants(ta, n);
    }
    check_invariants(ta, n);
    while (n)
        torchalloc_free(ta, live[--n]);
    torchalloc_empty_cache(ta);
    expect(ta, 0, 0); /* everything returns */
    torchalloc_destroy(ta);
}

static void random_schedules_keep_invariants(void **state) {
    (void)state;
    /* the model's own consistency: segments tile, free neighbours merge, stats add up, and
     * everything comes back after the last free and empty_cache */
    random_schedule("", 0, 1);
    random_schedule("", 0, 3);
    random_schedule("expandable_segments:True", 0, 3);
    random_schedule("max_split_size_mb:24,roundup_power2_divisions:[1:2,64:4,>:8]", 0, 2);
    random_schedule("garbage_collection_threshold:0.6", 2 * GiB, 2);
    random_schedule("garbage_collection_threshold:0.6,max_split_size_mb:32", 1 * GiB, 1);
    random_schedule("expandable_segments:True,large_segment_size_mb:64", 1 * GiB, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(worked_example),
        cmocka_unit_test(worked_example_expandable),
        cmocka_unit_test(placement_worked_example),
        cmocka_unit_test(placement_heaps),
        cmocka_unit_test(round_and_segment_sizes),
        cmocka_unit_test(roundup_power2_divisions),
        cmocka_unit_test(oversize_rules),
        cmocka_unit_test(split_remainder_edge),
        cmocka_unit_test(no_cross_stream_reuse),
        cmocka_unit_test(segment_order_ties),
        cmocka_unit_test(segment_addresses),
        cmocka_unit_test(record_stream_delays_reuse),
        cmocka_unit_test(empty_cache_frees_only_whole_segments),
        cmocka_unit_test(oom_retry_then_real_oom),
        cmocka_unit_test(release_available_oversize),
        cmocka_unit_test(release_available_largest_first),
        cmocka_unit_test(garbage_collection_by_age),
        cmocka_unit_test(expandable_empty_cache_unmaps),
        cmocka_unit_test(config_errors),
        cmocka_unit_test(config_accepts),
        cmocka_unit_test(random_schedules_keep_invariants),
        cmocka_unit_test(h200_scenarios),
        cmocka_unit_test(h200_record_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
