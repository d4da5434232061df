/* SPDX-License-Identifier: MIT */
/* view_device.c — the device view: what cudaMemGetInfo shows, by the page model (devmodel.c).
 * Chunked buffers (chunks >= 2) are physical allocations per chunk (devmodel_alloc_chunk); a
 * release returns every chunk but the one kept. */
#include "predict/view_model.h"

#include <stdlib.h>

typedef struct {
    bool live;
    uint32_t chunks;
    int64_t handle;            /* an unchunked buffer's */
    int64_t *chunk_handles;    /* [chunks] of a chunked one; -1 once released */
} dev_buf;

typedef struct {
    dev_buf *bufs;
    uint32_t n_bufs;
    devmodel *dev;
} dev_state;

static void *dev_open(const rank_plan *p, ml_diags *d) {
    dev_state *st = ml_xcalloc(1, sizeof *st);
    st->n_bufs = p->s->syms[SYM_BUFFER].n;
    st->bufs = ml_xcalloc(st->n_bufs + 1, sizeof *st->bufs);
    st->dev = devmodel_new();
    return st;
}

static void drop(dev_state *st, dev_buf *b) {
    if (b->chunks >= 2) {
        for (uint32_t k = 0; k < b->chunks; k++)
            if (b->chunk_handles[k] >= 0)
                devmodel_release(st->dev, b->chunk_handles[k]);
    } else {
        devmodel_release(st->dev, b->handle);
    }
    free(b->chunk_handles);
    *b = (dev_buf){0};
}

static int dev_apply(void *state, const rank_plan *p, size_t i, uint64_t *live, ml_diags *d) {
    dev_state *st = state;
    const plan_op *op = &p->ops[i];
    switch (op->kind) {
    case OP_ALLOC: {
        dev_buf *b = &st->bufs[op->u.alloc.buf];
        if (b->live)
            drop(st, b);   /* lint reports the alloc of a live name; keep the books balanced */
        uint32_t chunks = op->u.alloc.chunks;
        uint64_t bytes = op->u.alloc.bytes;
        *b = (dev_buf){.live = true, .chunks = chunks, .handle = -1};
        if (chunks < 2) {
            b->handle = devmodel_alloc(st->dev, bytes);
            break;
        }
        b->chunk_handles = ml_xmalloc(chunks * sizeof *b->chunk_handles);
        for (uint32_t k = 0; k < chunks; k++)
            b->chunk_handles[k] = devmodel_alloc_chunk(st->dev, pred_chunk_bytes(bytes, chunks, k));
        break;
    }
    case OP_FREE:
        if (st->bufs[op->u.free.buf].live)
            drop(st, &st->bufs[op->u.free.buf]);
        break;
    case OP_RELEASE: {
        dev_buf *b = &st->bufs[op->u.release.buf];
        uint32_t keep = op->u.release.keep;
        if (!b->live || b->chunks < 2 || keep >= b->chunks)
            break;
        for (uint32_t k = 0; k < b->chunks; k++)
            if (k != keep && b->chunk_handles[k] >= 0) {
                devmodel_release(st->dev, b->chunk_handles[k]);
                b->chunk_handles[k] = -1;
            }
        break;
    }
    default:
        break;
    }
    live[VIEW_DEVICE] = devmodel_bytes(st->dev);
    return 0;
}

static void dev_bounds(void *state, uint64_t *lo, uint64_t *hi) {
    devmodel_bounds(((dev_state *)state)->dev, lo, hi);
}

static void dev_close(void *state) {
    dev_state *st = state;
    if (!st)
        return;
    for (uint32_t k = 0; k < st->n_bufs; k++)
        free(st->bufs[k].chunk_handles);
    free(st->bufs);
    devmodel_free(st->dev);
    free(st);
}

const pred_view_model pred_view_device = {
    dev_open, dev_apply, dev_bounds, NULL, dev_close,
    PRED_KIND(OP_ALLOC) | PRED_KIND(OP_FREE) | PRED_KIND(OP_RELEASE), NULL, NULL};
