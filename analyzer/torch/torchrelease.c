/* SPDX-License-Identifier: MIT */
/* torchrelease.c — giving memory back: release_block (cudaFree of a whole segment),
 * unmap_block (free pages of an expandable segment), release_blocks / release_cached_blocks
 * (emptyCache and the last OOM retry), release_available_cached_blocks (the oversize retry)
 * and garbage_collect_cached_blocks, as c10/cuda/CUDACachingAllocator.cpp (2.11) has them. */
#include "torch/torchalloc_int.h"

#include <stdlib.h>

#define B(i) (ta->b[(i)])

/* ---- releasing memory ---- */

/* release_block: cudaFree of a whole, unsplit, cudaMalloc'd segment. */
static void release_block(torchalloc *ta, int32_t i) {
    int32_t sg = B(i).seg;
    ta_emit(ta, TORCHALLOC_EV_SEGMENT_FREE, B(i).addr, B(i).size, B(i).stream);
    ta->cnt.reserved -= B(i).size;
    ta->cnt.num_segment_frees++;
    ta->plain_segs--;
    ta_tree_erase(ta, i);
    ta_drop_block(ta, i);
    ta_drop_seg(ta, sg);
}

/* unmap_block: unmap the pages wholly inside a free block of an expandable segment. */
static void unmap_block(torchalloc *ta, int32_t i) {
    tseg *s = &ta->s[B(i).seg];
    uint64_t page = s->page, off = B(i).addr - s->addr;
    uint64_t begin = (off + page - 1) / page, end = (off + B(i).size) / page;
    if (begin >= end)
        return;
    uint64_t uaddr = s->addr + begin * page, usize = (end - begin) * page;
    ta_tree_erase(ta, i);
    uint64_t before = uaddr - B(i).addr;
    if (before > 0) {
        ta_insert_blocks(ta, ta_split_piece(ta, i, B(i).addr, before, 1));
    }
    uint64_t after = B(i).size - before - usize;
    if (after > 0) {
        ta_insert_blocks(ta, ta_split_piece(ta, i, uaddr + usize, after, 0));
    }
    B(i).addr = uaddr;
    B(i).size = usize;
    B(i).mapped = 0;
    ta_try_merge(ta, i, B(i).prev);
    ta_try_merge(ta, i, B(i).next);
    ta_insert_unmapped(ta, i);
    ta->cnt.reserved -= usize;
    ta->s[B(i).seg].mapped -= usize;
    ta->cnt.num_unmaps++;
    ta_emit(ta, TORCHALLOC_EV_SEGMENT_UNMAP, uaddr, usize, B(i).stream);
}

/* release_blocks(pool): free unsplit segments, unmap free pages of expandable ones; an
 * expandable segment left with nothing mapped is released (release_expandable_segment). */
static void release_blocks(torchalloc *ta, int large) {
    size_t n = tt_collect(ta, &ta->pool[large].blocks, 0);
    size_t nun = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t i = ta->scratch[k];
        if (ta_seg_exp(ta, i))
            ta->scratch[nun++] = i; /* nun <= k: compacting in place is safe */
        else if (!ta_is_split(ta, i))
            release_block(ta, i);
    }
    for (size_t k = 0; k < nun; k++) {
        int32_t i = ta->scratch[k];
        unmap_block(ta, i);
        if (!ta_is_split(ta, i)) {
            int32_t sg = B(i).seg;
            ta_tree_erase(ta, i);
            ta_drop_block(ta, i);
            ta_drop_seg(ta, sg);
        }
    }
}

/* release_cached_blocks (no private pools): events first, then both pools. */
void ta_release_cached_blocks(torchalloc *ta) {
    ta_synchronize_and_free_events(ta);
    release_blocks(ta, 1);
    release_blocks(ta, 0);
}

void torchalloc_empty_cache(torchalloc *ta) { ta_release_cached_blocks(ta); }

/* release_available_cached_blocks: with max_split_size set, free the smallest oversize cached
 * block that covers the request, else the largest ones until enough is freed. */
int ta_release_available_cached_blocks(torchalloc *ta, int large, uint32_t stream, uint64_t size) {
    uint64_t msz = ta->c.max_split_size;
    if (msz == TORCHALLOC_UNLIMITED)
        return 0;
    ttree *t = &ta->pool[large].blocks;
    uint64_t key = size < msz ? msz : size;
    int32_t it = tt_lower_size(ta, t, stream, key);
    if (it < 0 || B(it).stream != stream || ta_seg_exp(ta, it)) {
        int32_t cur = it < 0 ? tt_max(t) : tt_prev(ta, t, it);
        uint64_t total = 0;
        while (cur >= 0 && total < key && B(cur).size >= msz && B(cur).stream == stream) {
            int32_t prv = tt_prev(ta, t, cur);
            if (!ta_seg_exp(ta, cur) && !ta_is_split(ta, cur)) {
                total += B(cur).size;
                release_block(ta, cur);
            }
            cur = prv;
        }
        return total >= key;
    }
    if (ta_is_split(ta, it))
        return 0; /* oversize blocks are never split; PyTorch would cudaFree mid-segment */
    release_block(ta, it);
    return 1;
}

/* garbage_collect_cached_blocks: free unsplit large cached blocks at least as old as the
 * average age (age: get_free_block calls on the pool since the block was cached) until reserved
 * is back under threshold * limit. */
void ta_garbage_collect(torchalloc *ta) {
    uint64_t thr = (uint64_t)(ta->c.garbage_collection_threshold * (double)ta->limit);
    if (ta->cnt.reserved <= thr)
        return;
    uint64_t target = ta->cnt.reserved - thr, reclaimed = 0;
    tpool *p = &ta->pool[1];
    uint64_t total_age = 0;
    int64_t count = 0;
    size_t n = tt_collect(ta, &p->blocks, 0);
    for (size_t k = 0; k < n; k++) {
        int32_t i = ta->scratch[k];
        if (!ta_is_split(ta, i)) {
            total_age += (uint64_t)(p->gfb_count - ta->gc_base[i]);
            count++;
        }
    }
    int freed = 1;
    while (reclaimed < target && freed && count > 0) {
        double age_thr = (double)total_age / (double)count;
        freed = 0;
        n = tt_collect(ta, &p->blocks, 0);
        for (size_t k = 0; k < n; k++) {
            int32_t i = ta->scratch[k];
            uint64_t age = (uint64_t)(p->gfb_count - ta->gc_base[i]);
            if (!ta_is_split(ta, i) && !ta_seg_exp(ta, i) && (double)age >= age_thr) {
                freed = 1;
                reclaimed += B(i).size;
                total_age -= age;
                count--;
                release_block(ta, i);
            }
        }
    }
}

