/* SPDX-License-Identifier: MIT */
/* optimize_chunked.c — chunked release after an in-place ReduceScatter.
 *
 * When a ReduceScatter runs in place on the whole of buffer A (recv = A[rank*q : q], q =
 * count(A)/world on every rank) and everything that names A after it, up to its free, uses only
 * that slice, the other world-1 slices are dead once the collective has completed. A is then
 * allocated with `chunks: world` (one physical allocation per rank's slice: CUDA VMM on the cuda
 * backend, page ranges on host) and `release: {buf: A, keep: rank}` drops the others: after an
 * existing host sync that completes the collective when one comes before the next alloc, else
 * (only with --allow-host-syncs) after a `sync: {stream: S}` added right after it (lint's hazard
 * rule for frees holds for releases too). The measured result on H200 is in docs/design.md (peak M, then M/N).
 * Only where each chunk is a whole number of 2 MiB pages: the cuda backend refuses chunks that
 * are not a multiple of the allocation granularity (docs/cuda.md), and smaller chunks would
 * cost more device memory than they save. */
#include "optimize/optimize_int.h"

#include <stdlib.h>
#include <string.h>

/* Does every use of A in node n stay inside [lo, hi) on rank r? */
typedef struct {
    const opt_ctx *c;
    uint32_t buf;
    const sched_step *alloc;
    int rank;
    int64_t lo, hi;
    bool ok;
} slice_probe;

static void probe_view(void *ctx, sched_view *v) {
    slice_probe *p = ctx;
    int64_t off, cnt;
    if (v->buf != p->buf)
        return;
    if (opt_view_range(p->c, v, p->alloc, p->rank, &off, &cnt) != 0 || off < p->lo ||
        off + cnt > p->hi)
        p->ok = false;
}

static bool slice_only(const opt_ctx *c, opt_node *n, slice_probe *p) {
    switch (n->st.kind) {
    case ST_ALLOC:
        if (n->st.u.alloc.buf == p->buf)
            return false;
        break;
    case ST_RELEASE:
        if (n->st.u.release.buf == p->buf)
            return false;
        break;
    case ST_EXPECT_ERROR:
        if (opt_refs(n, p->buf))
            return false;
        break;
    default:
        break;
    }
    opt_each_view(&n->st, probe_view, p);
    for (size_t k = 0; k < n->body.n && p->ok; k++)
        p->ok &= slice_only(c, &n->body.v[k], p);
    return p->ok;
}

static bool frees(const opt_node *n, uint32_t buf) {
    if (n->st.kind != ST_FREE)
        return false;
    for (uint32_t k = 0; k < n->st.u.free.n; k++)
        if (n->st.u.free.bufs[k] == buf)
            return true;
    return false;
}

/* The in-place ReduceScatter at node i on the whole of A: the index of A's alloc, or SIZE_MAX. */
static size_t whole_inplace(opt_ctx *c, opt_block *b, size_t i) {
    const sched_step *st = &b->v[i].st;
    uint32_t A = st->u.coll.send.buf;
    /* chunks are ranks' shards of the world; a communicator's group has other shards */
    if (st->u.coll.recv.buf != A || st->when || st->u.coll.comm)
        return SIZE_MAX;
    size_t a = SIZE_MAX;
    for (size_t k = i; k-- > 0 && a == SIZE_MAX;)
        if (b->v[k].st.kind == ST_ALLOC && b->v[k].st.u.alloc.buf == A)
            a = k;
    if (a == SIZE_MAX || b->v[a].st.u.alloc.chunks)
        return SIZE_MAX;
    const sched_step *alloc = &b->v[a].st;
    for (int r = 0; r < c->world; r++) {
        int64_t n = opt_alloc_count(c, alloc, r), so, sc, ro, rc;
        uint64_t size = ml_dtypes[alloc->u.alloc.dtype].size;
        if (n <= 0 || n % c->world ||
            opt_view_range(c, &st->u.coll.send, alloc, r, &so, &sc) != 0 ||
            opt_view_range(c, &st->u.coll.recv, alloc, r, &ro, &rc) != 0 || so != 0 || sc != n ||
            rc != n / c->world || ro != r * rc || ((uint64_t)rc * size) % DEVMODEL_PAGE)
            return SIZE_MAX;
    }
    return a;
}

static void chunked_block(opt_ctx *c, opt_block *b) {
    for (size_t k = 0; k < b->n; k++)
        if (b->v[k].body.n)
            chunked_block(c, &b->v[k].body);
    for (size_t i = 0; i < b->n; i++) {
        const sched_step *st = &b->v[i].st;
        /* a collective whose in-place recv is the rank's slot of send (coll.h): ReduceScatter */
        if (st->kind != ST_COLL || ml_colls[st->u.coll.coll].inplace != INPLACE_RECV_IN_SEND)
            continue;
        size_t a = whole_inplace(c, b, i);
        if (a == SIZE_MAX)
            continue;
        uint32_t A = st->u.coll.send.buf;
        size_t limit = i + 1;
        bool ok = true;
        for (; limit < b->n && ok && !frees(&b->v[limit], A); limit++)
            for (int r = 0; r < c->world && ok; r++) {
                int64_t n = opt_alloc_count(c, &b->v[a].st, r);
                slice_probe p = {c, A, &b->v[a].st, r, r * (n / c->world),
                                 (r + 1) * (n / c->world), true};
                ok = slice_only(c, &b->v[limit], &p);
            }
        if (!ok)
            continue;
        uint64_t need;
        /* A release unmaps (cuMemUnmap), which no stream orders: the collective must be complete
         * at the host. Where the program has no such point before the end of A's life, one
         * would have to be added, a host sync that stops every stream: only with
         * --allow-host-syncs; else A stays one allocation, and the stage says why. */
        size_t p = opt_completion_point(b, a, i, limit, A, NULL, 0, &need);
        if (p == limit) {
            p = i;
            need = opt_async_streams(&b->v[i], A);
        }
        if (need && !c->allow_host_syncs) {
            snprintf(c->skipped, sizeof c->skipped, "'%s' stays one allocation: nothing completes "
                     "its reduce_scatter at the host before its end, a sync would be added "
                     "(--allow-host-syncs)", opt_buf_name(c, A));
            continue;
        }
        opt_node *an = &b->v[a];
        an->st.u.alloc.chunks = opt_expr(c, "world");
        opt_note(c, an, "allocated in world chunks: only this rank's slice is used after the "
                        "reduce_scatter, the other chunks are released");
        c->changes++;
        opt_block out = {0};
        for (size_t k = 0; k < b->n; k++) {
            opt_block_push(c, &out, &b->v[k]);
            if (k != p)
                continue;
            for (uint32_t u = 0; u < 64 && (need >> u); u++)
                if (need >> u & 1) {
                    opt_node s = opt_sync_node(c, u, "the reduce_scatter must complete before "
                                                     "chunks are released");
                    opt_block_push(c, &out, &s);
                }
            opt_node rel = {0};
            rel.st.kind = ST_RELEASE;
            rel.st.u.release.buf = A;
            rel.st.u.release.keep = opt_expr(c, "rank");
            opt_note(c, &rel, "added: releases every chunk of '%s' but this rank's",
                     opt_buf_name(c, A));
            c->changes++;
            opt_block_push(c, &out, &rel);
        }
        *b = out;
        i = p + 1;
    }
}

void opt_chunked(opt_ctx *c, opt_block *b) { chunked_block(c, b); }
