/* torchalloc_int.h — the model's state, shared by torchalloc.c (malloc/free), torchtree.c (the
 * ordered free-block sets) and torchwalk.c (stats and the snapshot walk).  Not a public header.
 *
 * Blocks and segments live in arrays addressed by index (never by pointer: the arrays grow by
 * realloc), with free lists, so an event costs no malloc.  Block ids handed to the caller are
 * block indices. */
#ifndef TORCHALLOC_INT_H
#define TORCHALLOC_INT_H

#include "torch/torchalloc.h"

enum { B_DEAD = 0, B_FREE, B_ALLOC, B_PENDING };
enum { T_BLOCKS = 0, T_UNMAPPED = 1 }; /* ordered by (stream,size,addr) / (stream,addr) */

typedef struct tblk {
    uint64_t addr, size, requested;
    int64_t gc_base;          /* pool's get_free_blocks_call_count when inserted */
    uint32_t stream;
    int32_t prev, next;       /* neighbours within the segment, -1 */
    int32_t seg;
    int32_t l, r;             /* treap children while in a tree */
    uint32_t prio;
    int32_t uses;             /* stream_uses: list in ta->u, -1 */
    int32_t event_count;
    uint8_t state, mapped, large, in_tree; /* in_tree: 0 none, 1 blocks, 2 unmapped */
} tblk;

typedef struct tseg {
    uint64_t addr;   /* base address */
    uint64_t vsize;  /* address range (== size for cudaMalloc segments) */
    uint64_t mapped; /* reserved bytes */
    uint64_t page;   /* expandable page size */
    uint32_t stream;
    uint8_t large, expandable, alive;
    int32_t head;    /* first block */
    int32_t lprev, lnext; /* live segments in address order */
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

typedef struct tpool {
    int32_t blocks, unmapped; /* treap roots */
    int64_t gfb_count;        /* get_free_blocks_call_count */
} tpool;

struct torchalloc {
    torchalloc_conf c;
    uint64_t limit, capacity;
    tblk *b;
    size_t nb, capb;
    int32_t free_b;
    tseg *s;
    size_t ns, caps;
    int32_t free_s, seg_first, seg_last;
    tuse *u;
    size_t nu, capu;
    int32_t free_u;
    tstream *st;
    size_t nst, capst;
    size_t last_st;
    tpool pool[2];
    uint64_t next_addr;
    uint64_t pending_events;
    uint32_t rng;
    int32_t *scratch;
    size_t capscratch;
    torchalloc_hook hook;
    void *hook_user;
    /* stats */
    uint64_t allocated, allocated_peak, reserved, reserved_peak;
    uint64_t requested, requested_peak, active, active_peak;
    uint64_t num_allocs, num_frees, num_segment_allocs, num_segment_frees;
    uint64_t num_maps, num_unmaps, num_alloc_retries, num_ooms, num_sync_all_streams;
};

/* torchtree.c: treaps over block indices; a block is in at most one tree. */
void tt_insert(torchalloc *ta, int kind, int32_t *root, int32_t x);
void tt_erase(torchalloc *ta, int kind, int32_t *root, int32_t x);
int32_t tt_lower_size(const torchalloc *ta, int32_t root, uint32_t stream, uint64_t size);
int32_t tt_lower_stream(const torchalloc *ta, int32_t root, uint32_t stream);
int32_t tt_next(const torchalloc *ta, int kind, int32_t root, int32_t x);
int32_t tt_prev(const torchalloc *ta, int kind, int32_t root, int32_t x);
int32_t tt_max(const torchalloc *ta, int32_t root);
/* In-order indices into ta->scratch (grown as needed) from offset `at`; returns the count or
 * (size_t)-1 when memory runs out. */
size_t tt_collect(torchalloc *ta, int32_t root, size_t at);
int tt_reserve_scratch(torchalloc *ta, size_t n);

#endif
