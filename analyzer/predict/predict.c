/* SPDX-License-Identifier: MIT */
/* predict.c — live bytes of one rank after every op, in the requested and device views.
 *
 * One accounting function (acct_apply) moves the state across an op; the first pass records the
 * timeline, steady and peaks, a second pass replays up to the peak ops to list the buffers live
 * there (cheaper than keeping a live set per op). Linear in ops, plus the device model's
 * near-constant work per small block.
 *
 * Requested: the sum of live buffer sizes; a chunked buffer counts its live chunks (release drops
 * the others). Device: the page model (devmodel.c); chunked buffers (chunks >= 2) are physical
 * allocations per chunk (devmodel_alloc_chunk). Chunk k of `bytes` in n chunks holds
 * min(c, bytes - k*c) bytes with c = ceil(bytes / n), as the chunked allocator cuts them.
 *
 * The op(s) of the step an expect_error wraps are refused before they run: they change nothing. */
#include "predict/analyzer.h"
#include "base/pages.h"
#include "base/checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bool live, released;
    uint64_t bytes;            /* requested bytes live now */
    uint64_t alloc_bytes;
    uint32_t chunks;           /* >= 2: chunked */
    int64_t handle;            /* device handle of an unchunked buffer */
    int64_t *chunk_handles;    /* [chunks] of a chunked one; -1 once released */
    size_t alloc_op;           /* for alloc order */
} pred_buf;

typedef struct {
    pred_buf *bufs;
    uint32_t n_bufs;
    devmodel *dev;             /* NULL: requested view only (the replay) */
    uint64_t requested;
    const sched_step *refused; /* ops of this step right after an expect marker are skipped */
} acct;

static uint64_t chunk_bytes(uint64_t bytes, uint32_t chunks, uint32_t k) {
    uint64_t c = bytes / chunks + (bytes % chunks != 0);
    uint64_t start = (uint64_t)k * c;
    return start >= bytes ? 0 : (bytes - start < c ? bytes - start : c);
}

static void acct_init(acct *a, const rank_plan *p, bool device) {
    memset(a, 0, sizeof *a);
    a->n_bufs = p->s->syms[SYM_BUFFER].n;
    a->bufs = ml_xcalloc(a->n_bufs + 1, sizeof *a->bufs);
    if (device)
        a->dev = devmodel_new();
}

static void buf_drop(acct *a, pred_buf *b) {
    a->requested = ml_bytes_sub(a->requested, b->bytes);
    if (a->dev) {
        if (b->chunks >= 2) {
            for (uint32_t k = 0; k < b->chunks; k++)
                if (b->chunk_handles[k] >= 0)
                    devmodel_release(a->dev, b->chunk_handles[k]);
        } else {
            devmodel_release(a->dev, b->handle);
        }
    }
    free(b->chunk_handles);
    b->chunk_handles = NULL;
    b->live = false;
    b->bytes = 0;
}

static void acct_free(acct *a) {
    for (uint32_t k = 0; k < a->n_bufs; k++)
        free(a->bufs[k].chunk_handles);
    free(a->bufs);
    devmodel_free(a->dev);
}

static void acct_alloc(acct *a, const plan_op *op, size_t index) {
    pred_buf *b = &a->bufs[op->u.alloc.buf];
    if (b->live)
        buf_drop(a, b);   /* lint reports the alloc of a live name; keep the books balanced */
    uint32_t chunks = op->u.alloc.chunks;
    *b = (pred_buf){.live = true, .bytes = op->u.alloc.bytes, .alloc_bytes = op->u.alloc.bytes,
                    .chunks = chunks, .handle = -1, .alloc_op = index};
    ml_bytes_add(a->requested, b->bytes, &a->requested);   /* past 2^63-1: predict_rank stops */
    if (!a->dev)
        return;
    if (chunks < 2) {
        b->handle = devmodel_alloc(a->dev, b->bytes);
        return;
    }
    b->chunk_handles = ml_xmalloc(chunks * sizeof *b->chunk_handles);
    for (uint32_t k = 0; k < chunks; k++)
        b->chunk_handles[k] = devmodel_alloc_chunk(a->dev, chunk_bytes(b->alloc_bytes, chunks, k));
}

static void acct_release(acct *a, const plan_op *op) {
    pred_buf *b = &a->bufs[op->u.release.buf];
    uint32_t keep = op->u.release.keep;
    if (!b->live || b->released || b->chunks < 2 || keep >= b->chunks)
        return;   /* one chunk keeps everything; the rest lint reports */
    for (uint32_t k = 0; k < b->chunks; k++) {
        if (k == keep)
            continue;
        a->requested = ml_bytes_sub(a->requested, chunk_bytes(b->alloc_bytes, b->chunks, k));
        if (a->dev) {
            devmodel_release(a->dev, b->chunk_handles[k]);
            b->chunk_handles[k] = -1;
        }
    }
    b->bytes = chunk_bytes(b->alloc_bytes, b->chunks, keep);
    b->released = true;
}

/* The one accounting function: the state after ops[i]. */
static void acct_apply(acct *a, const rank_plan *p, size_t i) {
    const plan_op *op = &p->ops[i];
    if (a->refused && op->step == a->refused)
        return;
    a->refused = NULL;
    switch (op->kind) {
    case OP_EXPECT_BEGIN:
        a->refused = op->step->u.expect_error.step;
        break;
    case OP_ALLOC:
        acct_alloc(a, op, i);
        break;
    case OP_FREE:
        if (a->bufs[op->u.free.buf].live)
            buf_drop(a, &a->bufs[op->u.free.buf]);
        break;
    case OP_RELEASE:
        acct_release(a, op);
        break;
    default:
        break;   /* collectives, syncs, data ops: no memory of their own in either view */
    }
}

static int cmp_alloc_op(const void *x, const void *y, void *ctx) {
    const pred_buf *bufs = ctx;
    size_t a = bufs[*(const uint32_t *)x].alloc_op, b = bufs[*(const uint32_t *)y].alloc_op;
    return a < b ? -1 : a > b;
}

static void snapshot_live(const acct *a, uint32_t **out, uint32_t *n) {
    uint32_t count = 0;
    for (uint32_t k = 0; k < a->n_bufs; k++)
        count += a->bufs[k].live;
    uint32_t *syms = ml_xmalloc((count ? count : 1) * sizeof *syms);
    count = 0;
    for (uint32_t k = 0; k < a->n_bufs; k++)
        if (a->bufs[k].live)
            syms[count++] = k;
    qsort_r(syms, count, sizeof *syms, cmp_alloc_op, a->bufs);
    *out = syms;
    *n = count;
}

/* Replays up to each view's peak op and lists the buffers live there. */
static void peak_live_sets(const rank_plan *p, pred_rank *out) {
    size_t first = out->peak_op[VIEW_REQUESTED] < out->peak_op[VIEW_DEVICE]
                       ? VIEW_REQUESTED : VIEW_DEVICE;
    size_t order[VIEW_COUNT] = {first, 1 - first};
    acct a;
    acct_init(&a, p, false);
    size_t next = 0;
    for (size_t k = 0; k < VIEW_COUNT; k++) {
        size_t v = order[k];
        if (out->peak_op[v] == SIZE_MAX)
            continue;
        for (; next <= out->peak_op[v]; next++)
            acct_apply(&a, p, next);
        snapshot_live(&a, &out->peak_live[v], &out->n_peak_live[v]);
    }
    acct_free(&a);
}

/* "FILE:L:C: error: live requested bytes on rank 0 exceed 2^63-1 at alloc 'b'": the bound of
 * every byte count (base/checked.h), at the op that crossed it. */
static void bytes_overflow(const rank_plan *p, size_t i, const char *what, ml_diags *d) {
    const plan_op *op = &p->ops[i];
    char at[200];
    if (op->kind == OP_ALLOC)
        snprintf(at, sizeof at, "alloc '%s'", p->s->syms[SYM_BUFFER].names[op->u.alloc.buf]);
    else
        snprintf(at, sizeof at, "op %zu (%s)", i,
                 op->kind == OP_COLL ? ml_colls[op->u.coll.coll].name : plan_op_names[op->kind]);
    ml_error(d, p->s->file, plan_op_mark(op), "%s%s bytes on rank %d exceed %s at %s",
             strcmp(what, "floor") ? "live " : "", what, p->rank, ML_BYTES_MAX_TEXT, at);
}

int predict_rank(const rank_plan *p, pred_rank *out, ml_diags *d) {
    memset(out, 0, sizeof *out);
    out->rank = p->rank;
    out->peak_op[VIEW_REQUESTED] = out->peak_op[VIEW_DEVICE] = SIZE_MAX;
    out->timeline = ml_xmalloc((p->n_ops ? p->n_ops : 1) * sizeof *out->timeline);
    out->n_timeline = p->n_ops;
    ml_prefault(out->timeline, out->timeline + p->n_ops);   /* every point is written next */
    acct a;
    acct_init(&a, p, true);
    uint64_t lo_max = 0, hi_max = 0;
    for (size_t i = 0; i < p->n_ops; i++) {
        acct_apply(&a, p, i);
        uint64_t live[VIEW_COUNT] = {a.requested, devmodel_bytes(a.dev)};
        if (live[VIEW_REQUESTED] > ML_BYTES_MAX || live[VIEW_DEVICE] > ML_BYTES_MAX) {
            bytes_overflow(p, i, live[VIEW_REQUESTED] > ML_BYTES_MAX ? "requested" : "device",
                           d);
            acct_free(&a);
            return -1;
        }
        pred_point *pt = &out->timeline[i];
        pt->op = i;
        for (int v = 0; v < VIEW_COUNT; v++) {
            pt->live[v] = live[v];
            if (live[v] > out->peak[v]) {
                out->peak[v] = live[v];
                out->peak_op[v] = i;
            }
        }
        /* The driver's device peak lies between the highest lower bound and the highest upper
         * bound over all ops; both equal the model's peak wherever it is exact. */
        uint64_t lo, hi;
        devmodel_bounds(a.dev, &lo, &hi);
        lo_max = lo > lo_max ? lo : lo_max;
        hi_max = hi > hi_max ? hi : hi_max;
    }
    out->steady[VIEW_REQUESTED] = a.requested;
    out->steady[VIEW_DEVICE] = devmodel_bytes(a.dev);
    out->device_peak_lo = lo_max;
    out->device_peak_hi = hi_max;
    out->device_exact = lo_max == hi_max;
    acct_free(&a);
    peak_live_sets(p, out);
    size_t floor_op = 0;
    out->floor = floor_rank(p, &floor_op);
    if (out->floor > ML_BYTES_MAX) {
        bytes_overflow(p, floor_op < p->n_ops ? floor_op : p->n_ops - 1, "floor", d);
        return -1;
    }
    return 0;
}

void predict_rank_shared(const rank_plan *p, const pred_rank *same, pred_rank *out) {
    /* Everything predict_rank computes comes from the ops alone, except what names the rank. */
    *out = *same;
    out->rank = p->rank;
    for (int v = 0; v < VIEW_COUNT; v++) {
        uint32_t n = same->n_peak_live[v];
        out->peak_live[v] = same->peak_live[v] ? ml_xcalloc(n ? n : 1, sizeof(uint32_t)) : NULL;
        if (n)
            memcpy(out->peak_live[v], same->peak_live[v], n * sizeof(uint32_t));
    }
    out->floor = floor_rank(p, NULL);   /* NCCL's in-place slot is the rank's own */
}

void pred_rank_free(pred_rank *r) {
    if (!r)
        return;
    free(r->timeline);
    for (int v = 0; v < VIEW_COUNT; v++)
        free(r->peak_live[v]);
    memset(r, 0, sizeof *r);
}
