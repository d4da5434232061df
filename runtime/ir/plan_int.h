/* SPDX-License-Identifier: MIT */
/* plan_int.h — what plan.c (the expander) and plan_shapes.c (the ranks that expand alike) share:
 * the expander, the evaluation of its expressions (eval, eval_size, and where their errors
 * point) and NCCL's in-place rule (coll_in_place). Internal to runtime/ir/plan*.c; the API is
 * plan.h. The small hot helpers are static inline so that each file keeps them inlined into its
 * callers. */
#ifndef MEMLIFE_PLAN_INT_H
#define MEMLIFE_PLAN_INT_H

#include "ir/plan.h"

typedef struct {
    uint64_t count, bytes;
    ml_dtype dtype;
    bool allocated;
} buf_shape;

typedef struct {
    const sched *s;
    int world, rank;
    const ml_comms *comms;    /* NULL: the world only */
    int64_t *slots;           /* a repeat index's slot is set while its body is walked */
    size_t max_ops;
    ml_diags *d;

    plan_op *ops;
    size_t n_ops, cap_ops;
    uint16_t *depth;          /* per op: the repeat depth whose iteration its `iter` holds */
    int64_t *ivals;           /* per op: s->n_index index values (NULL when the file has none) */
    size_t populated;         /* ops[0, populated) have their pages (ml_prefault) */
    plan_view *extra;
    size_t n_extra, cap_extra;
    buf_shape *bufs;          /* by buffer symbol */

    uint32_t iter, region;
    uint16_t repeat_depth;
    /* Iterations of repeats with `index:` walked so far: each is a walk of the body even where
     * it emits nothing (its steps' `when:`s false), so they are held to max_ops like ops are:
     * nested indexed repeats over empty bodies are refused, not walked for hours. */
    uint64_t indexed_walks;
    bool has_p2p;             /* a send or recv op was emitted */
    bool timed_compute;       /* a compute with a time or flops was emitted */
    size_t spare_cap;         /* ops is a recycled array of this many ops (plan_limits), 0: not */
    /* Values of expressions evaluated since the slots last changed (eval): an expression is a
     * function of the slots alone, and the loader shares one tree among the steps that write
     * the same text, so a million steps evaluate a handful of trees. A repeat index's slot
     * changing starts a new generation (memo_gen); an entry of an older one is stale. */
    struct {
        const expr *e;        /* NULL: empty */
        uint32_t gen;
        int64_t v;
    } memo[64];
    uint32_t memo_gen;
    /* plan_when_at: the occurrences of `when:`s that name rank, a memo of which trees do (a
     * handful of distinct trees: the loader shares them), and the depth of expect_errors and
     * groups around the step being expanded */
    ml_vec when_at;
    struct {
        const expr *e;
        bool uses;
    } when_memo[16];
    uint32_t guard;
    struct {
        const sched_step *st; /* NULL: empty */
        uint64_t ops;
    } min_memo[64];           /* plan.c's nested_min_ops */
} expander;

/* Where an evaluated expression is written: a step's part or a view's offset or count, whose
 * tokens an error can point at (sched_part_offset_mark, sched_view_expr_mark), or just a mark.
 * The part's mark is looked up (a search in the side table) only when an error needs it: every
 * alloc, `when:` and repeat is evaluated here. */
typedef struct {
    ml_mark mark;             /* st and view NULL */
    const sched_step *st;     /* NULL: view or mark */
    sched_at_part part;
    const sched_view *view;   /* NULL: st or mark */
    bool count;               /* view: its count, else its offset */
} src_at;

/* The offset or count of view v: errors of its value point inside the brackets. */
static inline src_at at_view(const sched_view *v, bool count) {
    return (src_at){.view = v, .count = count};
}

/* Where byte `offset` of the expression's text is (SCHED_FIRST_TOKEN: its first token). */
static inline ml_mark src_offset_mark(const expander *x, src_at w, const expr *e, size_t offset) {
    if (w.view)
        return sched_view_expr_mark(w.view, w.count, offset);
    if (!w.st)
        return w.mark;
    if (offset == SCHED_FIRST_TOKEN)
        return sched_part_mark(x->s, w.st, w.part);
    return sched_part_offset_mark(x->s, w.st, w.part, expr_text(e), offset);
}

static inline ml_mark src_mark(const expander *x, src_at w) {
    return src_offset_mark(x, w, NULL, SCHED_FIRST_TOKEN);
}

/* Evaluates e (a NULL e is `dflt`). Errors name the expression: "division by zero in 'M/0'", at
 * the token that failed where the text maps to the source one to one. */
static inline int eval(expander *x, const expr *e, int64_t dflt, src_at w, int64_t *out) {
    if (!e) {
        *out = dflt;
        return 0;
    }
    size_t h = ((uintptr_t)e >> 4) & 63;
    if (x->memo[h].e == e && x->memo[h].gen == x->memo_gen) {
        *out = x->memo[h].v;
        return 0;
    }
    expr_error err;
    if (expr_eval(e, x->slots, out, &err) < 0) {   /* not kept: each use reports it */
        ml_error(x->d, x->s->file, src_offset_mark(x, w, e, err.offset), "%s in '%s'", err.msg, expr_text(e));
        return -1;
    }
    x->memo[h].e = e;
    x->memo[h].gen = x->memo_gen;
    x->memo[h].v = *out;
    return 0;
}

/* As eval, for a value that may not be negative (sizes, counts, offsets). */
static inline int eval_size(expander *x, const expr *e, int64_t dflt, src_at w, const char *what,
                            uint64_t *out) {
    int64_t v;
    if (eval(x, e, dflt, w, &v) < 0)
        return -1;
    if (v < 0) {
        ml_error(x->d, x->s->file, src_mark(x, w), "%s is negative (%lld): '%s'", what,
                 (long long)v, expr_text(e));
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* NCCL's in-place rule for a collective's resolved views on `rank` (coll.h). */
static inline bool coll_in_place(const plan_op *op, const ml_comms *comms, int rank) {
    const plan_view *s = &op->u.coll.send, *r = &op->u.coll.recv;
    int64_t delta;
    int local = plan_comm_rank(comms, op->u.coll.comm, rank);   /* NCCL's offset: its rank */
    return s->buf == r->buf && local >= 0 &&
           ml_coll_inplace_at(op->u.coll.coll, plan_coll_count(op), local, &delta) &&
           (int64_t)r->offset - (int64_t)s->offset == delta;
}

#endif
