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

size_t torchalloc_walk(const torchalloc *ta, const torchalloc_walker *w) {
    size_t count = 0;
    for (int32_t sg = ta->seg_first; sg >= 0; sg = ta->s[sg].lnext) {
        const tseg *s = &ta->s[sg];
        int32_t head = next_mapped(ta, s->head);
        while (head >= 0) {
            torchalloc_segment_info si;
            int32_t after = run_info(ta, s, head, &si);
            count++;
            if (w && w->segment && w->segment(w->user, &si))
                return count;
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
                        return count;
                }
            }
            head = next_mapped(ta, after);
        }
    }
    return count;
}

/* torchalloc_stats' share of each listed segment: its free bytes, as part of a used segment or
 * as a whole free one. */
static int count_segment(void *user, const torchalloc_segment_info *si) {
    struct torchalloc_stats *out = user;
    if (si->active_size)
        out->free_in_used_segments += si->size - si->active_size;
    else
        out->whole_free_segments += si->size;
    return 0;
}

void torchalloc_stats(const torchalloc *ta, struct torchalloc_stats *out) {
    *out = ta->cnt;
    out->pending_free = ta->cnt.active - ta->cnt.allocated;
    /* the segment counts are over the snapshot's entries: the one walk that lists them */
    torchalloc_walker w = {.segment = count_segment, .user = out};
    out->segments = torchalloc_walk(ta, &w);
}

