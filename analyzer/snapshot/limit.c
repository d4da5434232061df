/* SPDX-License-Identifier: MIT */
/* limit.c — which limit or capacity reproduces a snapshot's partial releases (limit.h). */
#include "snapshot/limit.h"
#include "base/checked.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>

/* garbage_collect_cached_blocks: gc_threshold = (size_t)(threshold * (double)allowed_max). */
static uint64_t gc_floor(double gc, uint64_t l) { return (uint64_t)(gc * (double)l); }

/* The smallest L with gc_floor(L) >= x: from the quotient, then a step or two either way for the
 * double product's rounding (its error is below one unit here: L < 2^63, gc < 1). */
static uint64_t gc_min_reaching(double gc, uint64_t x) {
    double q = ceil((double)x / gc);
    uint64_t l = q >= (double)ML_BYTES_MAX ? (uint64_t)ML_BYTES_MAX : (uint64_t)q;
    while (l > 0 && gc_floor(gc, l - 1) >= x)
        l--;
    while (l < (uint64_t)ML_BYTES_MAX && gc_floor(gc, l) < x)
        l++;
    return l;
}

static void raise_lo(limit_interval *iv, uint64_t v, size_t at) {
    if (v > iv->lo) {
        iv->lo = v;
        iv->lo_at = at;
    }
}

static void lower_hi(limit_interval *iv, uint64_t v, size_t at) {
    if (v < iv->hi) {
        iv->hi = v;
        iv->hi_at = at;
    }
}

int limit_interval_find(const limit_fact *f, size_t n, double gc, bool max_split,
                        limit_interval *iv, size_t *at) {
    *iv = (limit_interval){.lo = 1, .hi = (uint64_t)ML_BYTES_MAX, .lo_at = SIZE_MAX,
                           .hi_at = SIZE_MAX};
    for (size_t k = 0; k < n; k++) {
        const limit_fact *x = &f[k];
        /* the segment was given: alloc_block's "reserved + size > L" was false */
        raise_lo(iv, (uint64_t)x->reserved + (uint64_t)x->size, x->at);
        if (x->run_start >= 0 && x->run_partial) {
            /* a partial release before it: the first alloc_block failed (reserved + size > L),
             * or, under a fraction with garbage collection, GC found reserved over
             * gc_floor(L); either bounds L from above */
            uint64_t fail_hi = (uint64_t)x->run_start + (uint64_t)x->size - 1;
            uint64_t hi = fail_hi;
            if (gc > 0) {
                uint64_t gc_hi = gc_min_reaching(gc, (uint64_t)x->run_start) - 1;
                hi = gc_hi > fail_hi ? gc_hi : fail_hi;
                /* Without max_split_size the partial run is GC alone (a failed alloc_block would
                 * go on to release_cached_blocks: every cached segment). GC frees until it has
                 * reclaimed reserved - gc_floor(L); with large cached segments left it got
                 * there: gc_floor(L) >= run_start - run_bytes. */
                if (!max_split && x->large_cached_after)
                    raise_lo(iv, gc_min_reaching(gc, (uint64_t)(x->run_start - x->run_bytes)),
                             x->at);
            }
            lower_hi(iv, hi, x->at);
        } else if (x->run_start < 0 && gc > 0 && x->large_cached_before) {
            /* GC was called with a freeable segment and freed none: reserved <= gc_floor(L) */
            raise_lo(iv, gc_min_reaching(gc, (uint64_t)x->reserved), x->at);
        }
        if (iv->lo > iv->hi) {
            *at = x->at;
            return -1;
        }
    }
    return 0;
}

/* reserved from the model's own segment events, as they happen */
static void count_reserved(void *user, torchalloc_action a, uint64_t addr, uint64_t size,
                           uint32_t stream) {
    (void)addr;
    (void)stream;
    int64_t *r = user;
    if (a == TORCHALLOC_EV_SEGMENT_ALLOC || a == TORCHALLOC_EV_SEGMENT_MAP)
        *r += (int64_t)size;
    else if (a == TORCHALLOC_EV_SEGMENT_FREE || a == TORCHALLOC_EV_SEGMENT_UNMAP)
        *r -= (int64_t)size;
}

size_t limit_verify(const torchalloc_conf *conf, bool is_limit, uint64_t value,
                    const uint64_t *addrs, size_t naddrs, const limit_step *s, size_t n,
                    uint32_t nbufs, uint32_t nevents, int64_t *got) {
    torchalloc *ta = torchalloc_new(conf, is_limit ? value : 0);
    if (!ta)
        ml_out_of_memory(sizeof(torchalloc_conf));
    if (!is_limit)
        torchalloc_set_capacity(ta, value);
    torchalloc_set_segment_addresses(ta, addrs, naddrs);
    int64_t reserved = 0;
    torchalloc_set_hook(ta, count_reserved, &reserved);
    int64_t *block = ml_xmalloc(((size_t)nbufs + 1) * sizeof *block);
    uint32_t *ev_stream = ml_xmalloc(((size_t)nevents + 1) * sizeof *ev_stream);
    uint64_t *ev_upto = ml_xcalloc((size_t)nevents + 1, sizeof *ev_upto);
    size_t bad = SIZE_MAX;
    for (uint32_t k = 0; k <= nbufs; k++)
        block[k] = -1;
    for (uint32_t k = 0; k <= nevents; k++)
        ev_stream[k] = UINT32_MAX;
    /* the same calls as view_torch.c's torch_step for the ops an import writes */
    for (size_t i = 0; i < n && bad == SIZE_MAX; i++) {
        const limit_step *p = &s[i];
        switch (p->op) {
        case LIMIT_ALLOC:
            block[p->buf] = torchalloc_malloc(ta, (uint64_t)p->bytes, p->stream, NULL);
            break;
        case LIMIT_FREE:
            torchalloc_free(ta, block[p->buf]);
            block[p->buf] = -1;
            break;
        case LIMIT_RECORD_STREAM: torchalloc_record_stream(ta, block[p->buf], p->stream); break;
        case LIMIT_SUBMIT: torchalloc_stream_submit(ta, p->stream); break;
        case LIMIT_RECORD:
            ev_stream[p->event] = p->stream;
            ev_upto[p->event] = torchalloc_stream_submitted(ta, p->stream);
            break;
        case LIMIT_SYNC_EVENT:
            if (ev_stream[p->event] != UINT32_MAX)
                torchalloc_stream_complete_upto(ta, ev_stream[p->event], ev_upto[p->event]);
            break;
        case LIMIT_EMPTY_CACHE: torchalloc_empty_cache(ta); break;
        }
        if (p->op == LIMIT_ALLOC && block[p->buf] < 0) {
            *got = -1;
            bad = i;
        } else if (p->want >= 0 && reserved != p->want) {
            *got = reserved;
            bad = i;
        }
    }
    free(block);
    free(ev_stream);
    free(ev_upto);
    torchalloc_destroy(ta);
    return bad;
}
