/* SPDX-License-Identifier: MIT */
/* view_requested.c — the requested view: the sum of live buffer sizes as requested (PyTorch's
 * requested_bytes, not memory_allocated, which counts rounded blocks). A chunked buffer counts
 * its live chunks: release drops all but the one kept. */
#include "base/checked.h"
#include "predict/view_model.h"

#include <stdlib.h>

typedef struct {
    bool live, released;
    uint64_t bytes, alloc_bytes;
    uint32_t chunks;
} req_buf;

typedef struct {
    req_buf *bufs;
    uint64_t total;
} req_state;

static void *req_open(const rank_plan *p, ml_diags *d) {
    req_state *st = ml_xcalloc(1, sizeof *st);
    st->bufs = ml_xcalloc(p->s->syms[SYM_BUFFER].n + 1, sizeof *st->bufs);
    return st;
}

static int req_apply(void *state, const rank_plan *p, size_t i, uint64_t *live, ml_diags *d) {
    req_state *st = state;
    const plan_op *op = &p->ops[i];
    switch (op->kind) {
    case OP_ALLOC: {
        req_buf *b = &st->bufs[op->u.alloc.buf];
        if (b->live)
            st->total = ml_bytes_sub(st->total, b->bytes);   /* lint reports the alloc of a live name */
        *b = (req_buf){true, false, op->u.alloc.bytes, op->u.alloc.bytes, op->u.alloc.chunks};
        ml_bytes_add(st->total, b->bytes, &st->total);   /* past 2^63-1 it saturates: predict_rank stops */
        break;
    }
    case OP_FREE: {
        req_buf *b = &st->bufs[op->u.free.buf];
        if (b->live)
            st->total = ml_bytes_sub(st->total, b->bytes);
        b->live = false;
        b->bytes = 0;
        break;
    }
    case OP_RELEASE: {
        req_buf *b = &st->bufs[op->u.release.buf];
        uint32_t keep = op->u.release.keep;
        if (!b->live || b->released || b->chunks < 2 || keep >= b->chunks)
            break;   /* one chunk keeps everything; the rest lint reports */
        uint64_t kept = pred_chunk_bytes(b->alloc_bytes, b->chunks, keep);
        st->total = ml_bytes_sub(st->total, b->bytes - kept);
        b->bytes = kept;
        b->released = true;
        break;
    }
    default:
        break;   /* collectives, syncs, data ops, allocator ops: no bytes of their own */
    }
    live[VIEW_REQUESTED] = st->total;
    return 0;
}

static void req_close(void *state) {
    req_state *st = state;
    if (st)
        free(st->bufs);
    free(st);
}

const pred_view_model pred_view_requested = {
    req_open, req_apply, NULL, NULL, req_close,
    PRED_KIND(OP_ALLOC) | PRED_KIND(OP_FREE) | PRED_KIND(OP_RELEASE), NULL, NULL};
