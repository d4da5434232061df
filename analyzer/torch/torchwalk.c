/* SPDX-License-Identifier: MIT */
/* torchwalk.c — stats and the segment/block walk.  The walk lists segments as
 * DeviceCachingAllocator::snapshot() does: a cudaMalloc segment is one entry; an expandable
 * segment is one entry per run of mapped blocks (a head is a block whose prev is absent or
 * unmapped), so a memory_viz snapshot written from it matches PyTorch's. */
#include "torch/torchalloc_int.h"

#include <string.h>

static torchalloc_block_state state_of(const tblk *b) {
    return b->state == B_ALLOC ? TORCHALLOC_BLOCK_ACTIVE_ALLOCATED
           : b->state == B_PENDING ? TORCHALLOC_BLOCK_ACTIVE_PENDING_FREE
                                   : TORCHALLOC_BLOCK_INACTIVE;
}

/* Fills the segment info for the mapped run starting at block `head`; returns the block after
 * the run (-1 at the segment's end). */
static int32_t run_info(const torchalloc *ta, const tseg *s, int32_t head, torchalloc_segment_info *si) {
    memset(si, 0, sizeof *si);
    si->addr = ta->b[head].addr;
    si->stream = ta->st[s->stream].id;
    si->pool = s->large ? TORCHALLOC_POOL_LARGE : TORCHALLOC_POOL_SMALL;
    si->expandable = s->expandable;
    int32_t i = head;
    for (; i >= 0 && ta->b[i].mapped; i = ta->b[i].next) {
        const tblk *b = &ta->b[i];
        si->size += b->size;
        si->nblocks++;
        if (b->state == B_ALLOC)
            si->allocated_size += b->size;
        if (b->state == B_ALLOC || b->state == B_PENDING) {
            si->active_size += b->size;
            si->requested_size += b->requested;
        }
    }
    return i;
}

static int32_t next_mapped(const torchalloc *ta, int32_t i) {
    while (i >= 0 && !ta->b[i].mapped)
        i = ta->b[i].next;
    return i;
}

/* The entries of segment sg; returns how many, with *stop set when a callback ended the walk. */
static size_t walk_entries(const torchalloc *ta, int32_t sg, const torchalloc_walker *w, int *stop) {
    size_t count = 0;
    const tseg *s = &ta->s[sg];
    int32_t head = next_mapped(ta, s->head);
    while (head >= 0) {
        torchalloc_segment_info si;
        int32_t after = run_info(ta, s, head, &si);
        count++;
        if (w && w->segment && w->segment(w->user, &si))
            return *stop = 1, count;
        if (w && w->block) {
            for (int32_t i = head; i != after; i = ta->b[i].next) {
                const tblk *b = &ta->b[i];
                torchalloc_block_info bi;
                bi.addr = b->addr;
                bi.size = b->size;
                bi.state = state_of(b);
                bi.requested = bi.state == TORCHALLOC_BLOCK_INACTIVE ? 0 : b->requested;
                bi.id = bi.state == TORCHALLOC_BLOCK_INACTIVE ? -1 : i;
                if (w->block(w->user, &si, &bi))
                    return *stop = 1, count;
            }
        }
        head = next_mapped(ta, after);
    }
    return count;
}

static void walk_segment(const torchalloc *ta, int32_t sg, const torchalloc_walker *w) {
    int stop = 0;
    walk_entries(ta, sg, w, &stop);
}

size_t torchalloc_walk(const torchalloc *ta, const torchalloc_walker *w) {
    size_t count = 0;
    int stop = 0;
    for (int32_t sg = ta->seg_first; sg >= 0 && !stop; sg = ta->s[sg].lnext)
        count += walk_entries(ta, sg, w, &stop);
    return count;
}

/* torchalloc_stats' share of each listed run of an expandable segment: its free bytes, as part
 * of a used entry or as a whole free one, and its size and active bytes, which the cudaMalloc
 * segments' share leaves out. */
typedef struct {
    struct torchalloc_stats *out;
    uint64_t size, active;
} exp_share;

static int count_run(void *user, const torchalloc_segment_info *si) {
    exp_share *e = user;
    if (si->active_size)
        e->out->free_in_used_segments += si->size - si->active_size;
    else
        e->out->whole_free_segments += si->size;
    e->size += si->size;
    e->active += si->active_size;
    e->out->segments++;
    return 0;
}

/* Each cudaMalloc segment is one entry, its bytes used while it holds an active block: kept as
 * blocks change state (ta_seg_active), so that the stats cost no walk.  An expandable segment
 * lists one entry per mapped run, which maps, unmaps and merges reshape: those few segments (one
 * per stream and pool) are walked. */
void torchalloc_counters(const torchalloc *ta, struct torchalloc_stats *out) {
    *out = ta->cnt;
    out->pending_free = ta->cnt.active - ta->cnt.allocated;
}

void torchalloc_stats(const torchalloc *ta, struct torchalloc_stats *out) {
    torchalloc_counters(ta, out);
    exp_share e = {out, 0, 0};
    if (ta->c.expandable_segments) {
        torchalloc_walker w = {.segment = count_run, .user = &e};
        for (int32_t sg = ta->seg_first; sg >= 0; sg = ta->s[sg].lnext)
            if (ta->s[sg].expandable)
                walk_segment(ta, sg, &w);
    }
    /* the rest of reserved and active lies in cudaMalloc segments */
    out->free_in_used_segments += ta->used_seg_bytes - (ta->cnt.active - e.active);
    out->whole_free_segments += ta->cnt.reserved - e.size - ta->used_seg_bytes;
    out->segments += ta->plain_segs;
}
