/* SPDX-License-Identifier: MIT */
/* optimize_reorder.c — independent neighbouring steps change places where that lowers a peak.
 *
 * What it does now: in a run of consecutive alloc and free steps, every free moves ahead of the
 * allocs before it (a free before an alloc at the same point: the freed memory can serve the
 * alloc). A free does not pass an alloc of its own name, nor one whose `init: {copy: ...}` reads
 * the freed buffer; nothing else in such a run touches data, streams or synchronization, so the
 * swap keeps every dependency. Moving other steps (collectives, syncs, data steps) is left to
 * lifetimes, which moves only allocs and frees around them. */
#include "optimize/optimize_int.h"

static bool blocks(const opt_node *alloc, uint32_t freed) {
    const sched_step *st = &alloc->st;
    return st->u.alloc.buf == freed ||
           (st->u.alloc.init.kind == INIT_COPY && st->u.alloc.init.src->buf == freed);
}

static bool memory_step(const opt_node *n) {
    return n->st.kind == ST_ALLOC || n->st.kind == ST_FREE;
}

static void reorder_block(opt_ctx *c, opt_block *b) {
    for (size_t k = 0; k < b->n; k++)
        if (b->v[k].body.n)
            reorder_block(c, &b->v[k].body);
    opt_split_frees(c, b);
    for (size_t k = 1; k < b->n; k++) {
        if (b->v[k].st.kind != ST_FREE)
            continue;
        uint32_t freed = b->v[k].st.u.free.bufs[0];
        size_t j = k;
        while (j > 0 && b->v[j - 1].st.kind == ST_ALLOC && !blocks(&b->v[j - 1], freed) &&
               !b->v[j - 1].st.when && !b->v[k].st.when)
            j--;
        if (j == k || !memory_step(&b->v[j]))
            continue;
        opt_node f = b->v[k];
        opt_note(c, &f, "free of '%s' moved ahead of the alloc%s before it (line %u)",
                 opt_buf_name(c, freed), k - j > 1 ? "s" : "", f.orig_line);
        for (size_t m = k; m > j; m--)
            b->v[m] = b->v[m - 1];
        b->v[j] = f;
        c->changes++;
    }
}

void opt_reorder(opt_ctx *c, opt_block *b) { reorder_block(c, b); }
