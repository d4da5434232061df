/* SPDX-License-Identifier: MIT */
/* torchalloc_int.h — the model's state, shared by torchalloc.c (malloc/free), torchtree.c (the
 * ordered free-block sets), torchwalk.c (stats and the snapshot walk), torchblock.c (blocks,
 * segments, streams, events) and torchrelease.c (releases).  Not a public header.
 *
 * Blocks and segments live in arrays addressed by index (never by pointer: the arrays grow by
 * realloc), with free lists, so an event costs no malloc.  Block ids handed to the caller are
 * block indices. */
#ifndef TORCHALLOC_INT_H
#define TORCHALLOC_INT_H

#include "torch/torchalloc.h"
#include "base/util.h"

enum { B_DEAD = 0, B_FREE, B_ALLOC, B_PENDING };
enum { T_BLOCKS = 0, T_UNMAPPED = 1 }; /* ordered by (stream,size,addr) / (stream,addr) */

/* One cache line a block: 64 bytes, the array 64-byte aligned (ta_new_block), so that a free's
 * visits to a block and its two neighbours cost a line each (72 bytes straddled two lines
 * mostly); the gc age base, read only by garbage collection, lives in ta->gc_base beside it. */
typedef struct tblk {
    /* hot: the tree key and links, in the first 32 bytes */
    uint64_t size, addr;
    uint32_t stream;          /* dense stream index into ta->st (the caller's id is st[].id) */
    int32_t prev, next;       /* neighbours within the segment, -1 */
    int32_t seg;
    int32_t uses;             /* stream_uses: list in ta->u, -1 */
    int32_t event_count;
    uint64_t requested;
    struct tleaf *leaf;       /* the leaf holding it while in a tree: erase needs no search */
    uint8_t state, mapped, large, in_tree; /* in_tree: 0 none, 1 blocks, 2 unmapped */
} tblk;
_Static_assert(sizeof(tblk) == 64, "a block is one cache line");
#define TA_LINE 64

typedef struct tseg {
    uint64_t addr;   /* base address */
    uint64_t vsize;  /* address range (== size for cudaMalloc segments) */
    uint64_t mapped; /* reserved bytes */
    uint64_t page;   /* expandable page size */
    uint32_t stream;
    uint8_t large, expandable, alive;
    int32_t head;    /* first block */
    int32_t lprev, lnext; /* live segments in address order */
    uint64_t heap, heap_end; /* the driver's address range it lies in (torchplace.c); 0 unplaced */
    uint32_t nactive; /* its allocated and pending blocks: torchalloc_stats' used or whole free */
} tseg;

typedef struct tuse {
    uint32_t stream;
    int32_t next;
} tuse;

typedef struct tevent {
    uint64_t value;
    int32_t block;
} tevent;

typedef struct tstream {
    uint32_t id;
    uint64_t submit, complete;
    tevent *q;
    size_t qhead, qlen, qcap;
} tstream;

/* An ordered set of blocks: sorted leaves of up to TT_LEAF keys under a sorted array of leaf
 * maxima, i.e. a B+tree of height two.  Keys are 128 bits, compared as (hi, lo):
 *   blocks:   hi = stream << 40 | size >> 9, lo = address   (sizes are multiples of 512)
 *   unmapped: hi = stream << 40,             lo = address
 * so one search touches a few contiguous cache lines instead of a pointer chain. */
#define TT_LEAF 8
/* Every slot from n on holds the sentinel key (UINT64_MAX, UINT64_MAX) and block -1, and the
 * arrays run on to 2 * TT_LEAF slots of sentinels: a search then counts over all TT_LEAF slots
 * and a shift moves a fixed TT_LEAF slots, with no loop that ends at n.  Loops to n (random)
 * mispredicted their end and each shift called memmove for a few bytes: callgrind's branch
 * simulation of tests/bench/torchalloc_bench.c counted 9.0 mispredicts per event before, 3.3
 * after.  Leaves of 8 took 6% fewer instructions than 16 and as much time (12: between). */
#define TT_SLOTS (2 * TT_LEAF)
typedef struct tkey {
    uint64_t hi, lo;
} tkey;
typedef struct tleaf {
    uint64_t hi[TT_SLOTS]; /* keys, split so a search reads one dense array */
    uint64_t lo[TT_SLOTS];
    int32_t v[TT_SLOTS];  /* block indices */
    int32_t n;
    int32_t idx;          /* position in ttree.leaf */
    struct tleaf *next_spare; /* in ttree.spare */
} tleaf;
/* The leaf maxima (max[i]: leaf i's largest key) are grouped by TT_GROUP, and sum[g] is the
 * largest of group g: a search counts the groups below the key (over the groups in use, a
 * count that changes seldom), then the maxima below it within one group, runs of independent
 * compares, where a binary search over the maxima was a chain of dependent loads (a fifth of
 * an insert's time, perf).  Past the last leaf, max[] (its capacity a multiple of TT_GROUP)
 * and sum[] hold sentinels.  Sets of more than TT_GROUP * TT_NSUM leaves search the maxima by
 * halves instead.  (The bench's sets have 30-50 leaves; groups of 8 beat 16 there.)  Those
 * counts compare hi words only, exact for the searches by (stream, size), whose key has lo 0;
 * an insert counts in its group with 128-bit compares (torchtree.c: leaf_lb). */
#define TT_GROUP 8
#define TT_NSUM 32
/* up to this many groups, a search counts over that many sums, sentinels included, a fixed
 * count (torchtree.c: group_lb_hi); the bench's sets have 4 to 7 groups */
#define TT_SUM_FIXED 8
_Static_assert(TT_SUM_FIXED <= TT_NSUM, "sum[] holds TT_SUM_FIXED groups");
typedef struct ttree {
    int kind;
    tleaf **leaf;
    tkey *max;
    size_t nleaf, cap;
    tkey sum[TT_NSUM];
    tleaf *spare;         /* emptied leaves, for reuse (torchtree.c: new_leaf) */
} ttree;

typedef struct tpool {
    ttree blocks, unmapped;
    int64_t gfb_count;        /* get_free_blocks_call_count */
} tpool;

struct torchalloc {
    torchalloc_conf c;
    uint64_t limit, capacity;
    tblk *b;                   /* TA_LINE aligned */
    int64_t *gc_base;          /* per block: pool's get_free_blocks_call_count when inserted */
    size_t nb, capb;
    int32_t free_b;
    tseg *s;
    size_t ns, caps;
    int32_t free_s, seg_first, seg_last;
    /* At least the largest free gap inside any live heap below the region (torchplace.c): a
     * request larger than it skips the walk over the heaps. UINT64_MAX: not known. */
    uint64_t heap_gap;
    /* Until a segment is dropped (heaps_split), the live heaps below the region are one run
     * [region - heaps_span, region), each new one right below the last (torchplace.c). */
    uint64_t heaps_span;
    bool heaps_split;
    tuse *u;
    size_t nu, capu;
    int32_t free_u;
    tstream *st;
    size_t nst, capst;
    size_t last_st;
    tpool pool[2];
    uint64_t next_addr;        /* expandable segments: upwards from 2^45 */
    uint64_t down_addr;        /* cudaMalloc segments past a caller's list: downwards from 2^47 */
    uint64_t pending_events;
    int32_t *scratch;
    size_t capscratch;
    torchalloc_hook hook;
    void *hook_user;
    /* memory_stats()' counters, kept in the public struct so that torchalloc_stats copies
     * them whole; its walk-derived fields (free_in_used_segments, whole_free_segments,
     * pending_free, segments) stay 0 here and are filled by torchalloc_stats */
    struct torchalloc_stats cnt;
    /* cudaMalloc segments' share of those walk-derived fields, kept as blocks change state so
     * that torchalloc_stats costs no walk (predict asks after every event): the bytes of the
     * segments holding an active block, and how many segments there are */
    uint64_t used_seg_bytes;
    uint64_t plain_segs;
    /* last, so the hot fields above keep their places (tests/bench: a few percent otherwise) */
    int segments_up;           /* torchalloc_set_segment_order: new cudaMalloc segments above */
    int watch_ties;            /* torchalloc_watch_ties: count order_ties */
    const uint64_t *seg_addr;  /* torchalloc_set_segment_addresses: the caller's, not owned */
    size_t n_seg_addr;
    size_t seg_made;           /* cudaMalloc segments made so far: the next one's index there */
};

/* torchblock.c: shared helpers (PyTorch's names, ta_ prefixed); the few on every event are
 * static inline at the end of this header. */
int32_t ta_new_block(torchalloc *ta);
void ta_drop_seg(torchalloc *ta, int32_t i);
void ta_splice(torchalloc *ta, int32_t x, int32_t before, int32_t after); /* Block::splice */
/* A piece split off block i: a new block [addr, addr + size) of i's stream, segment and pool,
 * spliced just before i (before != 0) or just after it; i itself is left as it is. */
int32_t ta_split_piece(torchalloc *ta, int32_t i, uint64_t addr, uint64_t size, int before);
int ta_is_split(const torchalloc *ta, int32_t i);
uint64_t ta_try_merge(torchalloc *ta, int32_t dst, int32_t src); /* try_merge_blocks */
void ta_synchronize_and_free_events(torchalloc *ta);
/* torchplace.c: the address of a new cudaMalloc segment of `size` bytes and the range it
 * lies in; 0 where there is no room below the model's region. */
uint64_t ta_place_segment(torchalloc *ta, uint64_t size, uint64_t *heap, uint64_t *heap_end);
/* A placed segment s is about to go: the gap it leaves in its heap joins the bound. */
void ta_place_dropped(torchalloc *ta, const tseg *s);
/* torchrelease.c */
void ta_release_cached_blocks(torchalloc *ta);
int ta_release_available_cached_blocks(torchalloc *ta, int large, uint32_t stream, uint64_t size);
void ta_garbage_collect(torchalloc *ta);

/* torchtree.c.  A block is in at most one tree; its key fields must not change while it is. */
#define TT_MAX_SIZE ((uint64_t)1 << 48) /* sizes must stay below 2^49 for the key packing */
void tt_init(ttree *t, int kind);
void tt_free(ttree *t);
void tt_insert(torchalloc *ta, ttree *t, int32_t x);
void tt_erase(torchalloc *ta, ttree *t, int32_t x);
int32_t tt_lower_size(const torchalloc *ta, const ttree *t, uint32_t stream, uint64_t size);
/* The same remembering where it was found, and erasing there without a second search. */
typedef struct tcur {
    size_t li;
    int32_t s;
} tcur;
int32_t tt_lower_size_cur(const torchalloc *ta, const ttree *t, uint32_t stream, uint64_t size, tcur *c);
void tt_erase_cur(torchalloc *ta, ttree *t, const tcur *c, int32_t x);
int32_t tt_lower_stream(const torchalloc *ta, const ttree *t, uint32_t stream);
int32_t tt_next(const torchalloc *ta, const ttree *t, int32_t x);
int32_t tt_prev(const torchalloc *ta, const ttree *t, int32_t x);
int32_t tt_max(const ttree *t);
/* In-order indices into ta->scratch (grown as needed) from offset `at`; returns the count. */
size_t tt_collect(torchalloc *ta, const ttree *t, size_t at);
void tt_reserve_scratch(torchalloc *ta, size_t n);

/* ---- The model's lowest steps (torchblock.c), shared by malloc/free and the releases ---- */
void ta_free_block(torchalloc *ta, int32_t i);
void ta_insert_events(torchalloc *ta, int32_t i);
/* Grows *p to hold `need` items of elem bytes (doubling); out of memory exits 3 (util.h). */
void ta_grow(void **p, size_t *cap, size_t need, size_t elem);
tstream *ta_find_stream(torchalloc *ta, uint32_t id); /* ta_get_stream's search and append */
int32_t ta_new_seg(torchalloc *ta, int front);   /* front: placed below every live segment */
void ta_process_events(torchalloc *ta);
/* Hot and tiny: inline in every file. */
static inline void ta_peak(uint64_t cur, uint64_t *pk) {
    if (cur > *pk)
        *pk = cur;
}
static inline uint64_t ta_sat_add(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
/* The helpers every malloc and free calls, a few instructions each: inline here, since calls
 * across the model's files cost about 6% of an event otherwise (callgrind, tests/bench). */
/* stream: the dense index; the hook gets the caller's id */
static inline void ta_emit(torchalloc *ta, torchalloc_action a, uint64_t addr, uint64_t size, uint32_t stream) {
    if (ta->hook)
        ta->hook(ta->hook_user, a, addr, size, ta->st[stream].id);
}
/* the stream of this id (created at its first use); the last one used is checked first */
static inline tstream *ta_get_stream(torchalloc *ta, uint32_t id) {
    if (ta->last_st < ta->nst && ta->st[ta->last_st].id == id)
        return &ta->st[ta->last_st];
    return ta_find_stream(ta, id);
}
static inline uint32_t ta_sidx(torchalloc *ta, uint32_t id) { return (uint32_t)(ta_get_stream(ta, id) - ta->st); }
static inline void ta_drop_block(torchalloc *ta, int32_t i) {
    ta->b[i].state = B_DEAD;
    ta->b[i].next = ta->free_b;
    ta->free_b = i;
}
static inline int ta_seg_exp(const torchalloc *ta, int32_t i) { return ta->s[ta->b[i].seg].expandable; }
/* Block i turns active (allocated) or inactive (free again): its segment's active count, and
 * for a cudaMalloc segment whether its bytes count as used (torchalloc_stats). */
static inline void ta_seg_active(torchalloc *ta, int32_t i) {
    tseg *s = &ta->s[ta->b[i].seg];
    if (s->nactive++ == 0 && !s->expandable)
        ta->used_seg_bytes += s->vsize;
}
static inline void ta_seg_inactive(torchalloc *ta, int32_t i) {
    tseg *s = &ta->s[ta->b[i].seg];
    if (--s->nactive == 0 && !s->expandable)
        ta->used_seg_bytes -= s->vsize;
}
/* BlockPool::insert_into_blocks: also stamps the gc age base. */
static inline void ta_insert_blocks(torchalloc *ta, int32_t i) {
    tpool *p = &ta->pool[ta->b[i].large];
    ta->gc_base[i] = p->gfb_count;
    tt_insert(ta, &p->blocks, i);
}
static inline void ta_insert_unmapped(torchalloc *ta, int32_t i) { tt_insert(ta, &ta->pool[ta->b[i].large].unmapped, i); }
/* from whichever set holds it */
static inline void ta_tree_erase(torchalloc *ta, int32_t i) {
    tpool *p = &ta->pool[ta->b[i].large];
    if (ta->b[i].in_tree == 1)
        tt_erase(ta, &p->blocks, i);
    else if (ta->b[i].in_tree == 2)
        tt_erase(ta, &p->unmapped, i);
}

#endif
