/* SPDX-License-Identifier: MIT */
/* torchalloc.c — DeviceCachingAllocator's malloc / free / recordStream / emptyCache, step for
 * step as c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.11) has them; function names below are
 * PyTorch's.  See torchalloc.h for what is modelled and how completion is told. */
#include "base/checked.h"
#include "torch/torchalloc_int.h"

#include <stdlib.h>
#include <string.h>

/* Expandable segments reserve address space for 9/8 of the GPU's memory; any range larger
 * than a request works, so a fixed 1 TiB stands in for it. */
#define VSPACE ((uint64_t)1 << 40)

#define B(i) (ta->b[(i)])

void torchalloc_free(torchalloc *ta, int64_t id) {
    if (id < 0 || (uint64_t)id >= ta->nb || B(id).state != B_ALLOC)
        return;
    int32_t i = (int32_t)id;
    ta->cnt.allocated -= B(i).size;
    ta->cnt.num_frees++;
    ta_emit(ta, TORCHALLOC_EV_FREE_REQUESTED, B(i).addr, B(i).requested, B(i).stream);
    if (B(i).uses >= 0) {
        B(i).state = B_PENDING;
        ta_insert_events(ta, i);
    } else {
        ta_free_block(ta, i);
    }
}

void torchalloc_record_stream(torchalloc *ta, int64_t id, uint32_t stream) {
    if (id < 0 || (uint64_t)id >= ta->nb || B(id).state != B_ALLOC)
        return;
    int32_t i = (int32_t)id;
    stream = ta_sidx(ta, stream);
    if (B(i).stream == stream)
        return; /* uses on the allocation stream need no event */
    for (int32_t u = B(i).uses; u >= 0; u = ta->u[u].next)
        if (ta->u[u].stream == stream)
            return;
    int32_t u;
    if (ta->free_u >= 0) {
        u = ta->free_u;
        ta->free_u = ta->u[u].next;
    } else {
        ta_grow((void **)&ta->u, &ta->capu, ta->nu + 1, sizeof(tuse));
        u = (int32_t)ta->nu++;
    }
    ta->u[u].stream = stream;
    ta->u[u].next = B(i).uses;
    B(i).uses = u;
}

void torchalloc_stream_submit(torchalloc *ta, uint32_t stream) { ta_get_stream(ta, stream)->submit++; }

void torchalloc_stream_complete(torchalloc *ta, uint32_t stream) {
    tstream *s = ta_get_stream(ta, stream);
    s->complete = s->submit;
}

void torchalloc_stream_complete_upto(torchalloc *ta, uint32_t stream, uint64_t upto) {
    tstream *s = ta_get_stream(ta, stream);
    if (upto > s->complete)
        s->complete = upto > s->submit ? s->submit : upto;
}

void torchalloc_device_synchronize(torchalloc *ta) {
    for (size_t k = 0; k < ta->nst; k++)
        ta->st[k].complete = ta->st[k].submit;
}

uint64_t torchalloc_stream_submitted(const torchalloc *ta, uint32_t stream) {
    for (size_t k = 0; k < ta->nst; k++)
        if (ta->st[k].id == stream)
            return ta->st[k].submit;
    return 0;
}

/* ---- allocation path ---- */

static int allocatable(const torchalloc *ta, int32_t i) { return i >= 0 && ta->b[i].state == B_FREE; }

/* find_expandable_block: the lowest-address place in a segment of this stream and pool where
 * free and unmapped blocks together give `size` bytes; else a new expandable segment. */
static int32_t find_expandable_block(torchalloc *ta, int large, uint32_t stream, uint64_t size) {
    tpool *p = &ta->pool[large];
    for (int32_t it = tt_lower_stream(ta, &p->unmapped, stream); it >= 0 && B(it).stream == stream;
         it = tt_next(ta, &p->unmapped, it)) {
        int32_t c = it;
        if (allocatable(ta, B(c).prev))
            c = B(c).prev;
        uint64_t bytes = 0;
        for (int32_t b = c; bytes < size && allocatable(ta, b); b = B(b).next)
            bytes += B(b).size;
        if (bytes >= size)
            return c;
    }
    int32_t sg = ta_new_seg(ta, 0);
    tseg *s = &ta->s[sg];
    s->page = torchalloc_page_size(&ta->c, large);
    s->vsize = s->page * ((VSPACE + s->page - 1) / s->page);
    s->addr = ta->next_addr;
    s->stream = stream;
    s->large = (uint8_t)large;
    s->expandable = 1;
    ta->next_addr += (s->vsize + TORCHALLOC_KROUND_LARGE - 1) / TORCHALLOC_KROUND_LARGE * TORCHALLOC_KROUND_LARGE;
    int32_t c = ta_new_block(ta);
    B(c).addr = ta->s[sg].addr;
    B(c).size = ta->s[sg].vsize;
    B(c).stream = stream;
    B(c).seg = sg;
    B(c).large = (uint8_t)large;
    B(c).mapped = 0;
    ta->s[sg].head = c;
    ta_insert_unmapped(ta, c);
    return c;
}

/* map_block: map the pages covering the first `size` bytes of an unmapped block. */
static int map_block(torchalloc *ta, int32_t i, uint64_t size) {
    tseg *s = &ta->s[B(i).seg];
    uint64_t page = s->page, off = B(i).addr - s->addr;
    uint64_t begin = off / page, end = (off + size + page - 1) / page;
    uint64_t msize = (end - begin) * page, maddr = B(i).addr;
    if (msize == 0)
        return 1;
    if (ta->capacity && ta->cnt.reserved + msize > ta->capacity)
        return 0; /* cuMemCreate out of memory */
    ta_tree_erase(ta, i);
    B(i).mapped = 1;
    if (msize < B(i).size) {
        int32_t r = ta_split_piece(ta, i, B(i).addr + msize, B(i).size - msize, 0);
        B(r).mapped = 0;
        ta_insert_unmapped(ta, r);
        B(i).size = msize;
    }
    ta_try_merge(ta, i, B(i).prev);
    ta_try_merge(ta, i, B(i).next);
    ta_insert_blocks(ta, i);
    ta->cnt.reserved += msize;
    ta->s[B(i).seg].mapped += msize;
    ta_peak(ta->cnt.reserved, &ta->cnt.reserved_peak);
    ta->cnt.num_maps++;
    ta_emit(ta, TORCHALLOC_EV_SEGMENT_MAP, maddr, msize, B(i).stream);
    return 1;
}

static int32_t try_allocate_expandable_block(torchalloc *ta, int large, uint32_t stream, uint64_t size) {
    int32_t c = find_expandable_block(ta, large, stream, size);
    if (!B(c).mapped && !map_block(ta, c, B(c).size < size ? B(c).size : size))
        return -1;
    while (B(c).size < size) {
        uint64_t rem = size - B(c).size;
        int32_t nc = B(c).next;
        if (!map_block(ta, nc, rem < B(nc).size ? rem : B(nc).size))
            return -1;
        c = nc; /* nc absorbed c */
    }
    ta_tree_erase(ta, c);
    return c;
}

/* The new segment's one free block, the whole segment; counted and reported as cudaMalloc. */
static int32_t segment_block(torchalloc *ta, int32_t sg, int large, uint32_t stream, uint64_t asz) {
    int32_t i = ta_new_block(ta);
    B(i).addr = ta->s[sg].addr;
    B(i).size = asz;
    B(i).stream = stream;
    B(i).seg = sg;
    B(i).large = (uint8_t)large;
    ta->s[sg].head = i;
    ta->cnt.reserved += asz;
    ta_peak(ta->cnt.reserved, &ta->cnt.reserved_peak);
    ta->cnt.num_segment_allocs++;
    ta->plain_segs++;
    ta_emit(ta, TORCHALLOC_EV_SEGMENT_ALLOC, B(i).addr, asz, stream);
    return i;
}

void torchalloc_set_segment_addresses(torchalloc *ta, const uint64_t *addr, size_t n) {
    ta->seg_addr = n ? addr : NULL;
    ta->n_seg_addr = n;
}

/* A new segment record at address a, linked into the address-ordered list of live segments. */
static int32_t new_seg_at(torchalloc *ta, uint64_t a) {
    int32_t after = -1;   /* the live segment just below */
    for (int32_t k = ta->seg_first; k >= 0 && ta->s[k].addr < a; k = ta->s[k].lnext)
        after = k;
    int32_t sg = ta_new_seg(ta, after < 0);
    tseg *s = &ta->s[sg];
    s->addr = a;
    if (after >= 0 && s->lprev != after) {   /* ta_new_seg appended it: move it after `after` */
        ta->seg_last = s->lprev;
        ta->s[s->lprev].lnext = -1;
        s->lprev = after;
        s->lnext = ta->s[after].lnext;
        ta->s[s->lnext].lprev = sg;
        ta->s[after].lnext = sg;
    }
    return sg;
}

static int32_t cuda_segment(torchalloc *ta, int32_t sg, int large, uint32_t stream, uint64_t asz) {
    tseg *s = &ta->s[sg];
    s->vsize = s->mapped = asz;
    s->stream = stream;
    s->large = (uint8_t)large;
    return segment_block(ta, sg, large, stream, asz);
}

/* A new cudaMalloc segment at the caller's next address (torchalloc_set_segment_addresses),
 * linked into the address-ordered segment list; -1 when the list is used up or the address
 * would overlap a live segment (the caller's list is not the model's history). */
static int32_t alloc_listed_segment(torchalloc *ta, int large, uint32_t stream, uint64_t asz) {
    if (ta->seg_made >= ta->n_seg_addr)
        return -1;
    uint64_t a = ta->seg_addr[ta->seg_made];
    if (a > ML_BYTES_MAX - asz)
        return -1;
    for (int32_t k = ta->seg_first; k >= 0; k = ta->s[k].lnext) {
        const tseg *o = &ta->s[k];
        if (a < o->addr + o->vsize && o->addr < a + asz)
            return -1;
    }
    ta->seg_made++;
    return cuda_segment(ta, new_seg_at(ta, a), large, stream, asz);
}

/* A new cudaMalloc segment where the driver would put it (torchplace.c); -1 where it finds
 * no room. */
static int32_t alloc_placed_segment(torchalloc *ta, int large, uint32_t stream, uint64_t asz) {
    uint64_t heap, heap_end, a = ta_place_segment(ta, asz, &heap, &heap_end);
    if (!a)
        return -1;
    int32_t sg = new_seg_at(ta, a);
    ta->s[sg].heap = heap;
    ta->s[sg].heap_end = heap_end;
    return cuda_segment(ta, sg, large, stream, asz);
}

/* alloc_block: a new segment of alloc_size (cudaMalloc), or expandable pages. */
static int32_t alloc_block(torchalloc *ta, int large, uint32_t stream, uint64_t size, uint64_t asz, int retry) {
    if (retry)
        ta->cnt.num_alloc_retries++;
    if (ta->limit && ta_sat_add(ta->cnt.reserved, asz) > ta->limit)
        return -1;
    /* Without a limit or capacity the model still never reserves past 2^63-1 bytes, the bound
     * of every byte count (base/checked.h): such a request is an OOM, not a wrapped sum. */
    if (ta_sat_add(ta->cnt.reserved, asz) > ML_BYTES_MAX)
        return -1;
    if (ta->c.expandable_segments)
        return try_allocate_expandable_block(ta, large, stream, size);
    if (ta->capacity && ta_sat_add(ta->cnt.reserved, asz) > ta->capacity)
        return -1;
    if (ta->seg_addr) {
        int32_t i = alloc_listed_segment(ta, large, stream, asz);
        if (i >= 0)
            return i;
    } else if (!ta->segments_up) {
        /* Where the driver puts it decides which of two equal free blocks best fit takes (the
         * lower address): churn_s1__rup4 step 129 (tests/torch/fixtures) has two free 10 MiB
         * blocks, in the segments made at steps 6 and 21, and PyTorch took the later one, which
         * the driver had put 570 MiB lower; increasing addresses took the other and were off
         * by 1 MiB from step 137. */
        int32_t i = alloc_placed_segment(ta, large, stream, asz);
        if (i >= 0)
            return i;
    }
    /* The other order (torchalloc_set_segment_order), segments past a caller's list, and
     * requests with no room left below the placement's region: each new segment below (or,
     * upwards, above) the ones before it. */
    int32_t sg = ta_new_seg(ta, !ta->segments_up);
    tseg *s = &ta->s[sg];
    s->vsize = s->mapped = asz;
    s->stream = stream;
    s->large = (uint8_t)large;
    uint64_t span = (asz + TORCHALLOC_KROUND_LARGE - 1) / TORCHALLOC_KROUND_LARGE *
                    TORCHALLOC_KROUND_LARGE;
    if (ta->segments_up) {   /* the other order (torchalloc_set_segment_order): upwards */
        s->addr = ta->next_addr;
        ta->next_addr += span;
    } else {
        ta->down_addr += span;
        s->addr = ((uint64_t)1 << 47) - ta->down_addr;
    }
    if (ta->seg_addr || !ta->segments_up) {   /* below every live segment, placed ones included */
        for (int32_t k = ta->seg_first; k >= 0; k = ta->s[k].lnext)
            if (k != sg && ta->s[k].addr < s->addr + span)
                s->addr = ta->s[k].addr > span ? ta->s[k].addr - span : 0;
        ta->seg_made += ta->seg_addr != NULL;
    }
    return segment_block(ta, sg, large, stream, asz);
}

static uint64_t expandable_size(const torchalloc *ta, int32_t i) {
    int32_t n = ta->b[i].next;
    return ta->b[i].size + (n >= 0 && !ta->b[n].mapped ? ta->b[n].size : 0);
}

/* The next key after the best fit `it` (at cur) of the same (stream, size) in another segment
 * would have been taken had the segments lain the other way round: a tie the address order
 * broke.  One compare in the leaf when the next size differs: the slot after the last holds the
 * sentinel, and only a leaf's last key looks at the next leaf's first (no leaf but a lone last
 * one is empty, torchtree.c).  Only while watched (torchalloc_watch_ties): watching costs
 * tests/bench/torchalloc_bench.c 1.5% more instructions (valgrind lackey, 1 M events, 672027
 * ties in 10 M), where equal small blocks in different segments are common. */
static void count_tie(torchalloc *ta, const ttree *t, const tcur *cur, int32_t it) {
    const tleaf *l = t->leaf[cur->li];
    uint64_t hi = l->hi[cur->s], at = 0;
    if (l->hi[cur->s + 1] == hi)
        at = l->lo[cur->s + 1];
    else if (cur->s + 1 == l->n && cur->li + 1 < t->nleaf && t->leaf[cur->li + 1]->hi[0] == hi)
        at = t->leaf[cur->li + 1]->lo[0];
    /* another segment: the next block's address (its key, in cache) outside this one's */
    const tseg *sg = &ta->s[B(it).seg];
    if (at && (at < sg->addr || at - sg->addr >= sg->vsize))
        ta->cnt.order_ties++;
}

/* get_free_block: lower bound on (stream, size); expandable blocks compare by the size they can
 * grow to; then the two oversize rules. */
static int32_t get_free_block(torchalloc *ta, int large, uint32_t stream, uint64_t size, int gc) {
    tpool *p = &ta->pool[large];
    if (gc)
        p->gfb_count++;
    tcur cur;
    int32_t it = tt_lower_size_cur(ta, &p->blocks, stream, size, &cur);
    int moved = 0;
    if (it < 0 || B(it).stream != stream)
        return -1;
    /* only expandable_segments makes expandable segments: else no load of it's segment */
    if (ta->c.expandable_segments && ta_seg_exp(ta, it)) {
        int32_t nx = tt_next(ta, &p->blocks, it);
        while (ta_seg_exp(ta, it) && nx >= 0 && B(nx).stream == stream && expandable_size(ta, nx) < expandable_size(ta, it)) {
            it = nx;
            moved = 1;
            nx = tt_next(ta, &p->blocks, it);
        }
    }
    uint64_t msz = ta->c.max_split_size;
    if (size < msz && B(it).size >= msz)
        return -1;
    if (size >= msz && B(it).size >= ta_sat_add(size, ta->c.max_non_split_rounding))
        return -1;
    if (moved) {
        tt_erase(ta, &p->blocks, it);
    } else {
        if (ta->watch_ties)
            count_tie(ta, &p->blocks, &cur, it);
        tt_erase_cur(ta, &p->blocks, &cur, it);
    }
    return it;
}

void torchalloc_set_segment_order(torchalloc *ta, int upwards) { ta->segments_up = upwards != 0; }
void torchalloc_watch_ties(torchalloc *ta, int on) { ta->watch_ties = on != 0; }

static int should_split(const torchalloc *ta, int32_t i, uint64_t size) {
    uint64_t rem = ta->b[i].size - size;
    if (!ta->b[i].large || ta->c.expandable_segments)
        return rem >= TORCHALLOC_KMIN_BLOCK;
    return size < ta->c.max_split_size && rem > TORCHALLOC_KSMALL_SIZE;
}

/* alloc_found_block: the front `size` bytes become the allocation, the rest stays cached. */
static int32_t alloc_found_block(torchalloc *ta, int32_t i, uint64_t size, uint64_t orig, int split) {
    if (split) {
        int32_t f = ta_split_piece(ta, i, B(i).addr, size, 1);
        B(i).addr += size;
        B(i).size -= size;
        ta_insert_blocks(ta, i);
        i = f;
    }
    B(i).state = B_ALLOC;
    ta_seg_active(ta, i);
    B(i).requested = orig;
    ta->cnt.allocated += B(i).size;
    ta->cnt.active += B(i).size;
    ta->cnt.requested += orig;
    ta_peak(ta->cnt.allocated, &ta->cnt.allocated_peak);
    ta_peak(ta->cnt.active, &ta->cnt.active_peak);
    ta_peak(ta->cnt.requested, &ta->cnt.requested_peak);
    ta->cnt.num_allocs++;
    ta_emit(ta, TORCHALLOC_EV_ALLOC, B(i).addr, orig, B(i).stream);
    return i;
}

int64_t torchalloc_malloc(torchalloc *ta, uint64_t requested, uint32_t stream_id, torchalloc_oom *oom) {
    ta_process_events(ta);
    uint32_t stream = ta_sidx(ta, stream_id);
    uint64_t size = torchalloc_round_size(&ta->c, requested);
    int large = size > TORCHALLOC_KSMALL_SIZE;
    uint64_t asz = 0; /* the segment size: computed only when no cached block serves (its
                         branches mispredicted 108 k times in 1 M events, callgrind) */
    int gc = ta->limit && ta->c.garbage_collection_threshold > 0.0;
    int32_t i = requested > TT_MAX_SIZE ? -1 : get_free_block(ta, large, stream, size, gc);
    /* trigger_free_memory_callbacks: none registered in the model */
    if (i < 0)
        asz = torchalloc_allocation_size(&ta->c, size);
    if (i < 0 && requested <= TT_MAX_SIZE) {
        if (gc)
            ta_garbage_collect(ta);
        i = alloc_block(ta, large, stream, size, asz, 0);
        if (i < 0 && ta_release_available_cached_blocks(ta, large, stream, size))
            i = alloc_block(ta, large, stream, size, asz, 0);
        if (i < 0) {
            ta_release_cached_blocks(ta);
            i = alloc_block(ta, large, stream, size, asz, 1);
        }
    }
    if (i < 0) {
        uint64_t lim = ta->limit ? ta->limit : ta->capacity;
        ta->cnt.num_ooms++;
        ta_emit(ta, TORCHALLOC_EV_OOM, lim > ta->cnt.reserved ? lim - ta->cnt.reserved : 0, size, stream);
        if (oom) {
            oom->requested = requested;
            oom->rounded = size;
            oom->alloc_size = asz;
            oom->allocated = ta->cnt.allocated;
            oom->reserved = ta->cnt.reserved;
            oom->limit = lim;
            oom->stream = stream_id;
        }
        return -1;
    }
    return alloc_found_block(ta, i, size, requested, should_split(ta, i, size));
}
