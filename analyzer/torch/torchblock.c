/* SPDX-License-Identifier: MIT */
/* torchblock.c — the caching allocator model's state and its lowest steps (torchalloc_int.h):
 * blocks, segments, streams, the ordered free sets, events, creating and destroying a model.
 * A file of its own so that calls go one way: torchalloc.c (malloc / free / recordStream) over
 * torchrelease.c (releasing cached blocks, garbage collection) over this file. */
#include "torch/torchalloc_int.h"

#include <stdlib.h>
#include <string.h>

#define B(i) (ta->b[(i)])

/* ---- arrays ---- */

void ta_grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return;
    size_t n = *cap ? *cap * 2 : 256;
    while (n < need)
        n *= 2;
    size_t bytes;
    if (__builtin_mul_overflow(n, elem, &bytes))
        ml_out_of_memory(SIZE_MAX);
    *p = ml_xrealloc(*p, bytes);   /* out of host memory: nothing sensible to predict */
    *cap = n;
}

/* ta->b doubled into a fresh TA_LINE-aligned array (realloc keeps only 16-byte alignment),
 * and ta->gc_base with it */
static void grow_blocks(torchalloc *ta) {
    size_t n = ta->capb ? ta->capb * 2 : 256, bytes;
    if (__builtin_mul_overflow(n, sizeof(tblk), &bytes))
        ml_out_of_memory(SIZE_MAX);
    tblk *nb = aligned_alloc(TA_LINE, bytes); /* bytes: a multiple of TA_LINE, as C11 asks */
    if (!nb)
        ml_out_of_memory(bytes);
    if (ta->nb)
        memcpy(nb, ta->b, ta->nb * sizeof(tblk));
    free(ta->b);
    ta->b = nb;
    ta->gc_base = ml_xrealloc(ta->gc_base, n * sizeof *ta->gc_base); /* n * 8 < bytes */
    ta->capb = n;
}

int32_t ta_new_block(torchalloc *ta) {
    int32_t i;
    if (ta->free_b >= 0) {
        i = ta->free_b;
        ta->free_b = B(i).next;
    } else {
        if (ta->nb >= INT32_MAX)
            ml_internal_error("torch model: more than %d blocks", INT32_MAX);
        if (ta->nb == ta->capb)
            grow_blocks(ta);
        i = (int32_t)ta->nb++;
    }
    memset(&B(i), 0, sizeof(tblk));
    B(i).prev = B(i).next = B(i).uses = B(i).seg = -1;
    B(i).state = B_FREE;
    B(i).mapped = 1;
    return i;
}

/* front: the new segment's address is below every live one (cudaMalloc segments, see
 * alloc_block in torchalloc.c), so it goes first in address order; else above every one
 * (expandable segments). */
int32_t ta_new_seg(torchalloc *ta, int front) {
    int32_t i;
    if (ta->free_s >= 0) {
        i = ta->free_s;
        ta->free_s = ta->s[i].lnext;
    } else {
        if (ta->ns >= INT32_MAX)
            ml_internal_error("torch model: more than %d segments", INT32_MAX);
        ta_grow((void **)&ta->s, &ta->caps, ta->ns + 1, sizeof(tseg));
        i = (int32_t)ta->ns++;
    }
    tseg *s = &ta->s[i];
    memset(s, 0, sizeof *s);
    s->alive = 1;
    s->head = -1;
    if (front) {
        s->lprev = -1;
        s->lnext = ta->seg_first;
        if (ta->seg_first >= 0)
            ta->s[ta->seg_first].lprev = i;
        else
            ta->seg_last = i;
        ta->seg_first = i;
        return i;
    }
    s->lnext = -1;
    s->lprev = ta->seg_last;
    if (ta->seg_last >= 0)
        ta->s[ta->seg_last].lnext = i;
    else
        ta->seg_first = i;
    ta->seg_last = i;
    return i;
}

void ta_drop_seg(torchalloc *ta, int32_t i) {
    tseg *s = &ta->s[i];
    ta_place_dropped(ta, s);
    if (s->lprev >= 0)
        ta->s[s->lprev].lnext = s->lnext;
    else
        ta->seg_first = s->lnext;
    if (s->lnext >= 0)
        ta->s[s->lnext].lprev = s->lprev;
    else
        ta->seg_last = s->lprev;
    s->alive = 0;
    s->lnext = ta->free_s;
    ta->free_s = i;
}

tstream *ta_find_stream(torchalloc *ta, uint32_t id) {
    for (size_t i = 0; i < ta->nst; i++)
        if (ta->st[i].id == id) {
            ta->last_st = i;
            return &ta->st[i];
        }
    ta_grow((void **)&ta->st, &ta->capst, ta->nst + 1, sizeof(tstream));
    tstream *s = &ta->st[ta->nst];
    memset(s, 0, sizeof *s);
    s->id = id;
    ta->last_st = ta->nst++;
    return s;
}

/* Block::ta_splice(before, after) */
void ta_splice(torchalloc *ta, int32_t x, int32_t before, int32_t after) {
    B(x).prev = before;
    if (before >= 0)
        B(before).next = x;
    else
        ta->s[B(x).seg].head = x;
    B(x).next = after;
    if (after >= 0)
        B(after).prev = x;
}

int32_t ta_split_piece(torchalloc *ta, int32_t i, uint64_t addr, uint64_t size, int before) {
    int32_t f = ta_new_block(ta);
    B(f).addr = addr;
    B(f).size = size;
    B(f).stream = B(i).stream;
    B(f).seg = B(i).seg;
    B(f).large = B(i).large;
    if (before)
        ta_splice(ta, f, B(i).prev, i);
    else
        ta_splice(ta, f, i, B(i).next);
    return f;
}

int ta_is_split(const torchalloc *ta, int32_t i) { return ta->b[i].prev >= 0 || ta->b[i].next >= 0; }

/* try_merge_blocks(dst, src): src must be free, event-free, use-free, of dst's mappedness.
 * from_prev: src is dst's prev (else its next), a constant where free_block inlines it: a test
 * of it in one shared copy mispredicted (callgrind --branch-sim: 192 k in 1 M events). */
static inline uint64_t merge_from(torchalloc *ta, int32_t dst, int32_t src, int from_prev) {
    if (src < 0 || B(src).state != B_FREE || B(dst).mapped != B(src).mapped)
        return 0;
    ta_tree_erase(ta, src);
    if (from_prev) {
        B(dst).addr = B(src).addr;
        B(dst).prev = B(src).prev;
        if (B(dst).prev >= 0)
            B(B(dst).prev).next = dst;
        else
            ta->s[B(dst).seg].head = dst;
    } else {
        B(dst).next = B(src).next;
        if (B(dst).next >= 0)
            B(B(dst).next).prev = dst;
    }
    uint64_t sz = B(src).size;
    B(dst).size += sz;
    ta_drop_block(ta, src);
    return sz;
}

uint64_t ta_try_merge(torchalloc *ta, int32_t dst, int32_t src) {
    return merge_from(ta, dst, src, src >= 0 && B(dst).prev == src);
}

/* ---- lifecycle ---- */

torchalloc *torchalloc_new(const torchalloc_conf *c, uint64_t limit_bytes) {
    torchalloc *ta = calloc(1, sizeof *ta);
    if (!ta)
        return NULL;
    if (c)
        ta->c = *c;
    else
        torchalloc_conf_default(&ta->c, TORCHALLOC_V2_11);
    ta->limit = limit_bytes;
    ta->free_b = ta->free_s = ta->free_u = -1;
    ta->seg_first = ta->seg_last = -1;
    ta->heap_gap = UINT64_MAX;
    for (int i = 0; i < 2; i++) {
        tt_init(&ta->pool[i].blocks, T_BLOCKS);
        tt_init(&ta->pool[i].unmapped, T_UNMAPPED);
    }
    ta->next_addr = (uint64_t)1 << 45; /* a plausible device address, 2 MiB aligned */
    return ta;
}

void torchalloc_destroy(torchalloc *ta) {
    if (!ta)
        return;
    for (size_t i = 0; i < ta->nst; i++)
        free(ta->st[i].q);
    free(ta->st);
    free(ta->b);
    free(ta->gc_base);
    free(ta->s);
    free(ta->u);
    free(ta->scratch);
    for (int i = 0; i < 2; i++) {
        tt_free(&ta->pool[i].blocks);
        tt_free(&ta->pool[i].unmapped);
    }
    free(ta);
}

void torchalloc_set_capacity(torchalloc *ta, uint64_t bytes) { ta->capacity = bytes; }

void torchalloc_set_hook(torchalloc *ta, torchalloc_hook fn, void *user) {
    ta->hook = fn;
    ta->hook_user = user;
}

const char *torchalloc_action_name(torchalloc_action a) {
    static const char *const names[] = {"alloc",        "free_requested", "free_completed", "segment_alloc",
                                        "segment_free", "segment_map",    "segment_unmap",  "oom"};
    return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "?";
}

/* ---- free path ---- */

/* free_block: back to the pool, merged with free neighbours. */
void ta_free_block(torchalloc *ta, int32_t i) {
    ta_emit(ta, TORCHALLOC_EV_FREE_COMPLETED, B(i).addr, B(i).requested, B(i).stream);
    ta->cnt.active -= B(i).size;
    ta->cnt.requested -= B(i).requested;
    B(i).requested = 0;
    B(i).state = B_FREE;
    ta_seg_inactive(ta, i);
    merge_from(ta, i, B(i).prev, 1);
    merge_from(ta, i, B(i).next, 0);
    ta_insert_blocks(ta, i);
}

/* insert_events: one event per use-stream, at that stream's current submit count. */
void ta_insert_events(torchalloc *ta, int32_t i) {
    int32_t u = B(i).uses;
    while (u >= 0) {
        tstream *s = &ta->st[ta->u[u].stream];
        ta_grow((void **)&s->q, &s->qcap, s->qlen + 1, sizeof(tevent));
        s->q[s->qlen].value = s->submit;
        s->q[s->qlen++].block = i;
        B(i).event_count++;
        ta->pending_events++;
        int32_t nx = ta->u[u].next;
        ta->u[u].next = ta->free_u;
        ta->free_u = u;
        u = nx;
    }
    B(i).uses = -1;
}

static void event_done(torchalloc *ta, int32_t blk) {
    ta->pending_events--;
    if (--B(blk).event_count == 0)
        ta_free_block(ta, blk);
}

static void compact_queue(tstream *s) {
    if (s->qhead == s->qlen)
        s->qhead = s->qlen = 0;
}

/* process_events: per stream, FIFO, stop at the first event not yet complete. */
void ta_process_events(torchalloc *ta) {
    if (ta->pending_events == 0)
        return;
    for (size_t k = 0; k < ta->nst; k++) {
        while (ta->st[k].qhead < ta->st[k].qlen && ta->st[k].q[ta->st[k].qhead].value <= ta->st[k].complete) {
            int32_t blk = ta->st[k].q[ta->st[k].qhead++].block;
            event_done(ta, blk);
        }
        compact_queue(&ta->st[k]);
    }
}

/* synchronize_and_free_events: wait for every event (the stream is complete up to it). */
void ta_synchronize_and_free_events(torchalloc *ta) {
    ta->cnt.num_sync_all_streams++;
    for (size_t k = 0; k < ta->nst; k++) {
        while (ta->st[k].qhead < ta->st[k].qlen) {
            tevent e = ta->st[k].q[ta->st[k].qhead++];
            if (ta->st[k].complete < e.value)
                ta->st[k].complete = e.value;
            event_done(ta, e.block);
        }
        compact_queue(&ta->st[k]);
    }
}

