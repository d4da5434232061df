/* SPDX-License-Identifier: MIT */
/* plan.c — expands a schedule into one rank's flat list of concrete operations (plan.h).
 *
 * One pass over the steps, recursing into repeat, region and expect_error bodies. Every
 * expression is evaluated for this (world, rank); views are resolved against the shape of the
 * latest alloc of their name in program order.
 *
 * A repeat without `index:` is unrolled without re-walking the body every iteration: no
 * expression can see its iteration number, so iteration 2 and every later one resolve exactly
 * alike (iteration 1 may differ only where a view refers to a name the body allocates again: the
 * first time it is the alloc before the repeat). Iterations 1 and 2 are expanded; 3.. are copies
 * of 2 with `iter` renumbered. A million-iteration repeat costs a memcpy, not a million walks.
 * A repeat with `index:` is walked once per iteration with its slot set to the iteration; each
 * op records the index values in scope (rank_plan.index_vals) for what is evaluated later (data
 * patterns, closed forms of checks). */
#include "ir/plan.h"
#include "base/pages.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t count, bytes;
    ml_dtype dtype;
    bool allocated;
} buf_shape;

typedef struct {
    const sched *s;
    int world, rank;
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
} expander;

/* Grows the op array to hold `need` ops. A schedule that fits under max_ops can still be more
 * than the machine holds (50 M ops of 88 bytes per rank): that is the schedule's problem, so it
 * is a diagnostic at the step that asked, not an abort. */
static int grow_ops(expander *x, size_t need, ml_mark mark) {
    if (need <= x->cap_ops)
        return 0;
    size_t cap = x->cap_ops ? x->cap_ops : 256;
    while (cap < need)
        cap *= 2;
    /* A recycled array that holds cap ops is used as it is, with its pages. */
    bool spare = x->spare_cap && cap <= x->spare_cap;
    if (spare)
        cap = x->spare_cap;
    x->spare_cap = 0;
    plan_op *ops = spare ? x->ops : realloc(x->ops, cap * sizeof *ops);
    if (ops)
        x->ops = ops;
    uint16_t *depth = ops ? realloc(x->depth, cap * sizeof *depth) : NULL;
    if (depth)
        x->depth = depth;
    size_t ni = x->s->n_index;
    int64_t *ivals = depth && ni ? realloc(x->ivals, cap * ni * sizeof *ivals) : NULL;
    if (ivals)
        x->ivals = ivals;
    if (!ops || !depth || (ni && !ivals)) {
        ml_error(x->d, x->s->file, mark, "plan of %zu ops does not fit in memory (%zu bytes asked)",
                 need, cap * (sizeof *ops + sizeof *depth));
        return -1;
    }
    x->cap_ops = cap;
    x->populated = spare ? cap : x->n_ops;
    return 0;
}

/* The ops array is written front to back: its pages are populated ahead of the writes, 2 MiB at
 * a time (pages.h), rather than faulted in one by one; never beyond the capacity, and never far
 * beyond what is used. */
#define POPULATE_AHEAD ((size_t)2 << 20)
static void populate_ahead(expander *x, size_t upto) {
    size_t step = POPULATE_AHEAD / sizeof *x->ops;
    size_t end = upto + step < x->cap_ops ? upto + step : x->cap_ops;
    ml_prefault(x->ops + x->populated, x->ops + end);
    x->populated = end;
}

static plan_op *emit(expander *x, plan_op_kind kind, const sched_step *step) {
    if (x->n_ops >= x->max_ops) {
        ml_error(x->d, x->s->file, step->mark, "plan expands to more than %zu ops", x->max_ops);
        return NULL;
    }
    if (x->n_ops >= x->cap_ops && grow_ops(x, x->n_ops + 1, step->mark) != 0)
        return NULL;   /* (the call only when full: it is made for every op) */
    if (x->n_ops >= x->populated)
        populate_ahead(x, x->n_ops + 1);
    plan_op *op = &x->ops[x->n_ops];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->step = step;
    op->iter = x->iter;
    op->region = x->region;
    x->depth[x->n_ops] = x->repeat_depth;
    if (x->s->n_index)
        memcpy(x->ivals + x->n_ops * x->s->n_index, x->slots + EXPR_SLOT_FIRST_LET + x->s->n_lets,
               x->s->n_index * sizeof *x->ivals);
    x->n_ops++;
    return op;
}

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

static src_at at_mark(ml_mark m) { return (src_at){.mark = m}; }

/* Part `part` of st: errors of its value point there (sched_part_mark). */
static src_at at(const sched_step *st, sched_at_part part) {
    return (src_at){.st = st, .part = part};
}

/* The offset or count of view v: errors of its value point inside the brackets. */
static src_at at_view(const sched_view *v, bool count) {
    return (src_at){.view = v, .count = count};
}

/* Where byte `offset` of the expression's text is (SCHED_FIRST_TOKEN: its first token). */
static ml_mark src_offset_mark(const expander *x, src_at w, const expr *e, size_t offset) {
    if (w.view)
        return sched_view_expr_mark(w.view, w.count, offset);
    if (!w.st)
        return w.mark;
    if (offset == SCHED_FIRST_TOKEN)
        return sched_part_mark(x->s, w.st, w.part);
    return sched_part_offset_mark(x->s, w.st, w.part, expr_text(e), offset);
}

static ml_mark src_mark(const expander *x, src_at w) {
    return src_offset_mark(x, w, NULL, SCHED_FIRST_TOKEN);
}

/* Evaluates e (a NULL e is `dflt`). Errors name the expression: "division by zero in 'M/0'", at
 * the token that failed where the text maps to the source one to one. */
static int eval(expander *x, const expr *e, int64_t dflt, src_at w, int64_t *out) {
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
static int eval_size(expander *x, const expr *e, int64_t dflt, src_at w, const char *what,
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

/* A scale's factor num/den: den > 0 after the sign moves to num, reduced by their gcd; 0 is an
 * error (an integer expression that truncated, `(1/world)*2`, is the likely cause). */
static int eval_factor(expander *x, const sched_step *st, int64_t *num, int64_t *den) {
    const expr *e = st->u.scale.factor;
    ml_mark at = st->u.scale.by_mark.line ? st->u.scale.by_mark : st->mark;
    if (eval(x, e, 1, at_mark(at), num) < 0 || eval(x, st->u.scale.den, 1, at_mark(at), den) < 0)
        return -1;
    if (*den == 0 || *den == INT64_MIN || *num == INT64_MIN) {
        ml_error(x->d, x->s->file, at, "%s in the scale factor '%s'",
                 *den == 0 ? "division by zero" : "overflow", expr_text(e));
        return -1;
    }
    if (*num == 0) {
        ml_error(x->d, x->s->file, at,
                 "scale factor '%s' is 0 (an integer expression truncates; write the fraction as "
                 "the outermost '/': by: 1/world)", expr_text(e));
        return -1;
    }
    if (*den < 0) {
        *num = -*num;
        *den = -*den;
    }
    int64_t a = *num < 0 ? -*num : *num, b = *den;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    *num /= a;
    *den /= a;
    return 0;
}

static int resolve_view(expander *x, const sched_view *v, plan_view *out) {
    static const buf_shape never = {0};
    const buf_shape *b = v->buf < x->s->syms[SYM_BUFFER].n ? &x->bufs[v->buf] : &never;
    out->buf = v->buf;
    out->dtype = b->allocated ? b->dtype : x->s->dtype;
    out->whole = !v->offset && !v->count;
    if (out->whole) {   /* what the evaluations below give without expressions */
        out->offset = 0;
        out->count = b->count;
        return 0;
    }
    if (eval_size(x, v->offset, 0, at_view(v, false), "view offset", &out->offset) < 0)
        return -1;
    uint64_t rest = b->count > out->offset ? b->count - out->offset : 0;
    return eval_size(x, v->count, (int64_t)rest, at_view(v, true), "view count", &out->count);
}

static int expand_steps(expander *x, const sched_step *steps, uint32_t n);

static int expand_alloc(expander *x, const sched_step *st) {
    uint32_t esize = ml_dtypes[st->u.alloc.dtype].size;
    uint64_t bytes, count, chunks = 0;
    src_at size_at = at(st, SCHED_AT_SIZE);
    if (st->u.alloc.count) {
        if (eval_size(x, st->u.alloc.count, 0, size_at, "alloc count", &count) < 0)
            return -1;
        if (count > UINT64_MAX / esize) {
            ml_error(x->d, x->s->file, src_mark(x, size_at),
                     "alloc of '%s': %llu elements overflow 64-bit bytes",
                     sched_sym_name(x->s, SYM_BUFFER, st->u.alloc.buf), (unsigned long long)count);
            return -1;
        }
        bytes = count * esize;
    } else {
        if (eval_size(x, st->u.alloc.bytes, 0, size_at, "alloc bytes", &bytes) < 0)
            return -1;
        count = bytes / esize;   /* a tail that is not a whole element is allocated but not viewed */
    }
    if (st->u.alloc.chunks) {
        src_at chunks_at = at(st, SCHED_AT_CHUNKS);
        if (eval_size(x, st->u.alloc.chunks, 0, chunks_at, "alloc chunks", &chunks) < 0)
            return -1;
        if (chunks < 1 || chunks > UINT32_MAX) {
            ml_error(x->d, x->s->file, src_mark(x, chunks_at),
                     "alloc of '%s' asks for %llu chunks (1 to %u)",
                     sched_sym_name(x->s, SYM_BUFFER, st->u.alloc.buf), (unsigned long long)chunks,
                     UINT32_MAX);
            return -1;
        }
    }
    plan_op *op = emit(x, OP_ALLOC, st);
    if (!op)
        return -1;
    op->u.alloc.buf = st->u.alloc.buf;
    op->u.alloc.bytes = bytes;
    op->u.alloc.count = count;
    op->u.alloc.dtype = st->u.alloc.dtype;
    op->u.alloc.chunks = (uint32_t)chunks;
    x->bufs[st->u.alloc.buf] = (buf_shape){count, bytes, st->u.alloc.dtype, true};
    if (st->u.alloc.init.kind == INIT_NONE)
        return 0;
    op = emit(x, OP_INIT, st);
    if (!op)
        return -1;
    op->u.init.dst = (plan_view){.buf = st->u.alloc.buf, .offset = 0, .count = count,
                                 .dtype = st->u.alloc.dtype, .whole = true};
    if (st->u.alloc.init.kind == INIT_COPY)
        return resolve_view(x, st->u.alloc.init.src, &op->u.init.src);
    return 0;
}

/* NCCL's in-place rule for a collective's resolved views on `rank` (coll.h). */
static bool coll_in_place(const plan_op *op, int rank) {
    const plan_view *s = &op->u.coll.send, *r = &op->u.coll.recv;
    return s->buf == r->buf && (int64_t)r->offset - (int64_t)s->offset ==
                                   ml_colls[op->u.coll.coll].inplace_recv_minus_send(
                                       plan_coll_count(op), rank);
}

static int expand_coll(expander *x, const sched_step *st) {
    plan_op *op = emit(x, OP_COLL, st);
    if (!op)
        return -1;
    ml_coll c = st->u.coll.coll;
    x->has_p2p |= ml_colls[c].p2p;
    op->u.coll.coll = c;
    op->u.coll.op = st->u.coll.op;
    op->u.coll.stream = st->u.coll.stream;
    if (resolve_view(x, &st->u.coll.send, &op->u.coll.send) < 0 ||
        resolve_view(x, &st->u.coll.recv, &op->u.coll.recv) < 0)
        return -1;
    if (ml_colls[c].has_root || ml_colls[c].p2p) {   /* the root, or a send/recv's peer */
        int64_t root;
        if (eval(x, st->u.coll.root, 0, at(st, SCHED_AT_ROOT), &root) < 0)
            return -1;
        if (root < -1 || root > INT32_MAX)
            root = -1;   /* outside any world: lint reports it with the collective's contract */
        op->u.coll.root = (int)root;
    }
    op->u.coll.in_place = coll_in_place(op, x->rank);
    return 0;
}

static int expand_compute(expander *x, const sched_step *st) {
    plan_op *op = emit(x, OP_COMPUTE, st);
    if (!op)
        return -1;
    uint32_t nr = st->u.compute.n_reads, nw = st->u.compute.n_writes;
    x->timed_compute |= st->u.compute.time_us || st->u.compute.flops;
    op->u.compute.stream = st->u.compute.stream;
    op->u.compute.first_view = (uint32_t)x->n_extra;
    op->u.compute.n_reads = nr;
    op->u.compute.n_writes = nw;
    size_t need = x->n_extra + nr + nw;
    if (need > x->cap_extra) {
        size_t cap = x->cap_extra ? x->cap_extra : 64;
        while (cap < need)
            cap *= 2;
        plan_view *v = ml_xrealloc(x->extra, cap * sizeof *v);
        x->extra = v;
        x->cap_extra = cap;
    }
    for (uint32_t k = 0; k < nr + nw; k++) {
        const sched_view *v = k < nr ? &st->u.compute.reads[k] : &st->u.compute.writes[k - nr];
        plan_view *pv = &x->extra[x->n_extra++];
        memset(pv, 0, sizeof *pv);
        if (resolve_view(x, v, pv) < 0)
            return -1;
    }
    return 0;
}

static int resolve_operand(expander *x, const sched_operand *o, plan_view *v, int64_t *roll) {
    memset(v, 0, sizeof *v);
    *roll = 0;
    if (o->kind != OPD_VIEW) {
        v->buf = SCHED_NO_SYM;   /* a closed form: as long as the other side */
        return 0;
    }
    if (resolve_view(x, &o->view, v) < 0)
        return -1;
    return eval(x, o->roll_shards, 0, at_mark(o->mark), roll);
}

/* A repeat with an index: every iteration walked, with the index's slot set. */
static int expand_indexed(expander *x, const sched_step *st, uint64_t count) {
    int64_t *slot = &x->slots[st->u.repeat.index_slot];
    int64_t saved = *slot;
    int rc = 0;
    for (uint64_t k = 0; k < count && rc == 0; k++) {
        if (k > UINT32_MAX) {   /* iter is 32 bits; max_ops refuses long before */
            ml_error(x->d, x->s->file, sched_part_mark(x->s, st, SCHED_AT_COUNT),
                     "repeat of more than 2^32 iterations");
            rc = -1;
            break;
        }
        x->iter = (uint32_t)k;
        *slot = (int64_t)k;
        x->memo_gen++;
        rc = expand_steps(x, st->u.repeat.steps, st->u.repeat.n);
    }
    *slot = saved;
    x->memo_gen++;
    return rc;
}

/* Unrolls a repeat: iterations 0 and 1 by walking, the rest by copying iteration 1. */
static int expand_repeat(expander *x, const sched_step *st) {
    uint64_t count;
    if (eval_size(x, st->u.repeat.count, 0, at(st, SCHED_AT_COUNT), "repeat count", &count) < 0)
        return -1;
    if (count == 0)
        return 0;
    uint32_t saved_iter = x->iter;
    uint16_t depth = ++x->repeat_depth;
    int rc = 0;
    if (st->u.repeat.index_slot >= 0) {
        rc = expand_indexed(x, st, count);
        x->iter = saved_iter;
        x->repeat_depth--;
        return rc;
    }
    x->iter = 0;
    if (expand_steps(x, st->u.repeat.steps, st->u.repeat.n) < 0)
        goto out_err;
    if (count == 1)
        goto out;
    size_t start = x->n_ops;
    x->iter = 1;
    if (expand_steps(x, st->u.repeat.steps, st->u.repeat.n) < 0)
        goto out_err;
    size_t len = x->n_ops - start;
    if (len && (count - 2 > (x->max_ops - x->n_ops) / len)) {
        ml_error(x->d, x->s->file, sched_part_mark(x->s, st, SCHED_AT_COUNT),   /* the count */
                 "repeat of %llu iterations expands to more than %zu ops",
                 (unsigned long long)count, x->max_ops);
        goto out_err;
    }
    if (grow_ops(x, x->n_ops + (size_t)(count - 2) * len, st->mark) != 0)
        goto out_err;
    if (x->n_ops + (size_t)(count - 2) * len > x->populated)
        populate_ahead(x, x->n_ops + (size_t)(count - 2) * len);
    for (uint64_t k = 2; k < count && len; k++) {
        plan_op *dst = x->ops + x->n_ops;
        memcpy(dst, x->ops + start, len * sizeof *dst);
        memcpy(x->depth + x->n_ops, x->depth + start, len * sizeof *x->depth);
        if (x->s->n_index)
            memcpy(x->ivals + x->n_ops * x->s->n_index, x->ivals + start * x->s->n_index,
                   len * x->s->n_index * sizeof *x->ivals);
        for (size_t j = 0; j < len; j++)
            if (x->depth[start + j] == depth)
                dst[j].iter = (uint32_t)k;   /* beyond 2^32 iterations max_ops has refused */
        x->n_ops += len;
    }
    goto out;
out_err:
    rc = -1;
out:
    x->iter = saved_iter;
    x->repeat_depth--;
    return rc;
}

static int expand_region(expander *x, const sched_step *st) {
    uint32_t saved = x->region;
    x->region = st->u.region.name;
    plan_op *op = emit(x, OP_REGION_BEGIN, st);
    int rc = -1;
    if (op) {
        op->u.region.region = st->u.region.name;
        if (expand_steps(x, st->u.region.steps, st->u.region.n) == 0 &&
            (op = emit(x, OP_REGION_END, st)) != NULL) {
            op->u.region.region = st->u.region.name;
            rc = 0;
        }
    }
    x->region = saved;
    return rc;
}

static int expand_step_body(expander *x, const sched_step *st);

/* True when `when:` tree e names rank (a memo by tree: this is asked at every such step). */
static bool when_names_rank(expander *x, const expr *e) {
    size_t h = ((uintptr_t)e >> 4) & 15;
    if (x->when_memo[h].e != e) {
        x->when_memo[h].e = e;
        x->when_memo[h].uses = expr_uses_slot(e, EXPR_SLOT_RANK);
    }
    return x->when_memo[h].uses;
}

static int expand_step(expander *x, const sched_step *st) {
    bool occurrence = false;   /* of a `when:` another rank may lack (plan_shapes_absent) */
    size_t lo = x->n_ops;
    if (st->when) {
        int64_t on;
        if (eval(x, st->when, 1, at(st, SCHED_AT_WHEN), &on) < 0)
            return -1;
        if (!on)
            return 0;
        occurrence = when_names_rank(x, st->when);
    }
    int rc = expand_step_body(x, st);   /* its one call: inlined */
    if (occurrence && rc == 0)
        *(plan_when_at *)ml_vec_push(&x->when_at) =
            (plan_when_at){st->when, lo, x->n_ops, x->guard};
    return rc;
}

static int expand_step_body(expander *x, const sched_step *st) {
    plan_op *op;
    switch (st->kind) {
    case ST_ALLOC:
        return expand_alloc(x, st);
    case ST_FREE:
        for (uint32_t k = 0; k < st->u.free.n; k++) {
            if (!(op = emit(x, OP_FREE, st)))
                return -1;
            op->u.free.buf = st->u.free.bufs[k];
            op->u.free.mark = st->u.free.marks ? st->u.free.marks[k] : st->mark;
        }
        return 0;
    case ST_RELEASE: {
        uint64_t keep;
        if (eval_size(x, st->u.release.keep, 0, at(st, SCHED_AT_KEEP), "release keep",
                      &keep) < 0)
            return -1;
        if (!(op = emit(x, OP_RELEASE, st)))
            return -1;
        op->u.release.buf = st->u.release.buf;
        op->u.release.keep = keep > UINT32_MAX ? UINT32_MAX : (uint32_t)keep;  /* lint: range */
        return 0;
    }
    case ST_COLL:
        return expand_coll(x, st);
    case ST_SYNC:
        if (!(op = emit(x, OP_SYNC, st)))
            return -1;
        op->u.sync.kind = st->u.sync.kind;
        op->u.sync.stream = st->u.sync.stream;
        op->u.sync.event = st->u.sync.event;
        return 0;
    case ST_RECORD:
    case ST_WAIT:
        if (!(op = emit(x, st->kind == ST_RECORD ? OP_RECORD : OP_WAIT, st)))
            return -1;
        op->u.event.event = st->u.event.event;
        op->u.event.stream = st->u.event.stream;
        return 0;
    case ST_RECORD_STREAM:
        if (!(op = emit(x, OP_RECORD_STREAM, st)))
            return -1;
        op->u.record_stream.buf = st->u.record_stream.buf;
        op->u.record_stream.stream = st->u.record_stream.stream;
        return 0;
    case ST_EMPTY_CACHE:
        return emit(x, OP_EMPTY_CACHE, st) ? 0 : -1;
    case ST_REPEAT:
        return expand_repeat(x, st);
    case ST_REGION:
        return expand_region(x, st);
    case ST_GROUP:
        x->guard++;
        if (!emit(x, OP_GROUP_BEGIN, st) || expand_steps(x, st->u.group.steps, st->u.group.n) < 0)
            return -1;
        x->guard--;
        return emit(x, OP_GROUP_END, st) ? 0 : -1;
    case ST_INIT:
        if (!(op = emit(x, OP_INIT, st)) || resolve_view(x, &st->u.init.dst, &op->u.init.dst) < 0)
            return -1;
        if (st->u.init.init.kind == INIT_COPY)
            return resolve_view(x, st->u.init.init.src, &op->u.init.src);
        return 0;
    case ST_COPY:
        if (!(op = emit(x, OP_COPY, st)))
            return -1;
        op->u.copy.stream = st->u.copy.stream;
        if (resolve_view(x, &st->u.copy.src, &op->u.copy.src) < 0)
            return -1;
        return resolve_view(x, &st->u.copy.dst, &op->u.copy.dst);
    case ST_SCALE:
        if (!(op = emit(x, OP_SCALE, st)))
            return -1;
        op->u.scale.stream = st->u.scale.stream;
        if (resolve_view(x, &st->u.scale.buf, &op->u.scale.buf) < 0)
            return -1;
        return eval_factor(x, st, &op->u.scale.factor, &op->u.scale.den);
    case ST_COMPUTE:
        return expand_compute(x, st);
    case ST_CHECK:
        if (!(op = emit(x, OP_CHECK, st)))
            return -1;
        if (resolve_operand(x, &st->u.check->a, &op->u.check.a, &op->u.check.roll_a) < 0)
            return -1;
        return resolve_operand(x, &st->u.check->b, &op->u.check.b, &op->u.check.roll_b);
    case ST_EXPECT_ERROR:
        /* The marker, then the wrapped step's op(s); lint checks that the op after the marker
         * is the wrapped step's (a `when:` on the wrapped step may have dropped it). */
        if (!(op = emit(x, OP_EXPECT_BEGIN, st)))
            return -1;
        op->u.expect.error = st->u.expect_error.error;
        x->guard++;
        if (expand_steps(x, st->u.expect_error.step, 1) < 0)
            return -1;
        x->guard--;
        return 0;
    case ST_KIND_COUNT:
        break;
    }
    ml_error(x->d, x->s->file, st->mark, "unknown step kind %d", (int)st->kind);
    return -1;
}

static int expand_steps(expander *x, const sched_step *steps, uint32_t n) {
    for (uint32_t k = 0; k < n; k++)
        if (expand_step(x, &steps[k]) < 0)
            return -1;
    return 0;
}

int plan_expand(const sched *s, int plan_index, const sched_params *p, int world, int rank,
                const plan_limits *limits, rank_plan *out, ml_diags *d) {
    memset(out, 0, sizeof *out);
    if (plan_index < 0 || (uint32_t)plan_index >= s->n_plans || world <= 0 || rank < 0 ||
        rank >= world) {
        ml_mark nowhere = {0, 0};
        ml_error(d, s->file, nowhere, "no plan %d for rank %d of world %d", plan_index, rank,
                 world);
        return -1;
    }
    size_t n_slots = sched_n_slots(s);
    int64_t *slots = ml_xcalloc(n_slots, sizeof *slots);
    buf_shape *bufs = ml_xcalloc(s->syms[SYM_BUFFER].n + 1, sizeof *bufs);
    slots[EXPR_SLOT_WORLD] = world;
    slots[EXPR_SLOT_RANK] = rank;
    if (sched_eval_lets(s, p, world, rank, slots, d) < 0) {
        free(slots);
        free(bufs);
        return -1;
    }
    expander x = {
        .s = s, .world = world, .rank = rank, .slots = slots, .d = d, .bufs = bufs,
        .max_ops = limits && limits->max_ops ? limits->max_ops : 50000000,
        .region = SCHED_NO_SYM,
    };
    ml_vec_init(&x.when_at, sizeof(plan_when_at));
    if (limits && limits->recycle && limits->recycle->ops) {   /* grow_ops takes it */
        x.ops = limits->recycle->ops;
        x.spare_cap = limits->recycle->cap_ops;
        x.extra = limits->recycle->extra;   /* grows as it would from empty */
        x.cap_extra = limits->recycle->cap_extra;
        *limits->recycle = (plan_recycle){0};
    }
    /* One allocation for a flat schedule: growing by doubling re-faults every page once per
     * step of growth, which costs more than the walk itself at a million ops. */
    static const sched_params no_params = {0};
    const sched_params *tp = p ? p : &no_params;
    out->torch = (plan_torch){.on = s->torch.present || tp->torch_conf || tp->has_torch_limit ||
                                    tp->has_torch_capacity,
                              .conf = tp->torch_conf ? tp->torch_conf : s->torch.conf,
                              .conf_from_file = !tp->torch_conf && s->torch.conf,
                              .conf_mark = s->torch.conf_mark,
                              .limit = tp->has_torch_limit ? tp->torch_limit : 0,
                              .capacity = tp->has_torch_capacity ? tp->torch_capacity : 0,
                              .addresses = s->torch.addresses,
                              .n_addresses = s->torch.n_addresses};
    /* the file's sizes, each unless its option replaced it */
    const struct {
        expr *e;
        bool given;
        const char *what;
        uint64_t *out;
    } sizes[] = {{s->torch.limit, tp->has_torch_limit, "torch limit", &out->torch.limit},
                 {s->torch.capacity, tp->has_torch_capacity, "torch capacity",
                  &out->torch.capacity}};
    for (size_t k = 0; k < ML_ARRAY_LEN(sizes); k++)
        if (!sizes[k].given && sizes[k].e &&
            eval_size(&x, sizes[k].e, 0, at_mark(s->torch.mark), sizes[k].what,
                      sizes[k].out) < 0) {
            free(slots);
            free(bufs);
            return -1;
        }
    uint64_t guess = s->n_steps_total + s->n_steps_total / 8 + 16;
    const sched_plan *pl = &s->plans[plan_index];
    int rc = grow_ops(&x, guess < x.max_ops ? (size_t)guess : x.max_ops, pl->mark);
    if (rc == 0)
        rc = expand_steps(&x, pl->steps, pl->n);
    free(bufs);
    free(x.depth);
    if (rc < 0) {
        ml_vec_free(&x.when_at);
        free(x.ops);
        free(x.extra);
        free(x.ivals);
        free(slots);
        return -1;
    }
    out->index_vals = x.ivals;
    out->s = s;
    out->plan_index = plan_index;
    out->world = world;
    out->rank = rank;
    out->slots = slots;
    out->ops = x.ops;
    out->n_ops = x.n_ops;
    out->extra_views = x.extra;
    out->n_extra_views = x.n_extra;
    out->cap_ops = x.cap_ops;
    out->cap_extra_views = x.cap_extra;
    out->has_p2p = x.has_p2p;
    out->timed_compute = x.timed_compute;
    out->timed_known = true;
    out->when_at = x.when_at.items;
    out->n_when_at = x.when_at.n;
    return 0;
}

void plan_free(rank_plan *p) {
    if (!p)
        return;
    free(p->slots);
    if (!p->borrowed) {
        free(p->ops);
        free(p->extra_views);
        free(p->index_vals);
        free(p->kept_at);
        free(p->when_at);
    }
    memset(p, 0, sizeof *p);
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* A compact plan without its summary cannot answer: its ops are gone. */
static void need_summary(const rank_plan *p) {
    if (!p->summary)
        ml_internal_error("rank %d's compact plan was compacted without its summary", p->rank);
}

uint32_t plan_first_colls(const rank_plan *p, ml_coll order[COLL_COUNT]) {
    if (p->kept_at) {
        need_summary(p);
        memcpy(order, p->first_colls, p->n_first_colls * sizeof *order);
        return p->n_first_colls;
    }
    plan_colls_acc a = {0};
    for (size_t k = 0; k < p->n_ops; k++)
        plan_first_colls_add(&a, &p->ops[k]);
    memcpy(order, a.order, a.n * sizeof *order);
    return a.n;
}


bool plan_timed_compute(const rank_plan *p) {
    if (p->kept_at) {
        need_summary(p);
        return p->timed_compute;
    }
    /* the expansion's answer while every op it emitted is there: no pass over a million ops,
     * each compute's step a cache miss (a rank with absent computes lacks some: it counts) */
    if (p->timed_known && !p->absent)
        return p->timed_compute;
    for (size_t k = 0; k < p->n_ops; k++) {
        const plan_op *op = &p->ops[k];
        if (op->kind == OP_COMPUTE && (op->step->u.compute.time_us || op->step->u.compute.flops))
            return true;
    }
    return false;
}

static void compact(rank_plan *p, const size_t *keep, size_t n_keep, plan_recycle *spare);

void plan_compact(rank_plan *p, const size_t *keep, size_t n_keep, bool summary,
                  plan_recycle *spare) {
    if (summary) {
        p->n_first_colls = plan_first_colls(p, p->first_colls);
        p->timed_compute = plan_timed_compute(p);
    }
    p->summary = summary;
    compact(p, keep, n_keep, spare);
}

void plan_compact_with(rank_plan *p, const size_t *keep, size_t n_keep,
                       const plan_colls_acc *colls, plan_recycle *spare) {
    if (!colls || colls->ops != p->n_ops || p->kept_at) {
        plan_compact(p, keep, n_keep, true, spare);
        return;
    }
    memcpy(p->first_colls, colls->order, colls->n * sizeof *p->first_colls);
    p->n_first_colls = colls->n;
    p->timed_compute = plan_timed_compute(p);
    p->summary = true;
    compact(p, keep, n_keep, spare);
}

static void compact(rank_plan *p, const size_t *keep, size_t n_keep, plan_recycle *spare) {
    size_t *at = ml_xcalloc(n_keep ? n_keep : 1, sizeof *at);
    size_t n = 0;
    for (size_t k = 0; k < n_keep; k++)
        if (keep[k] < p->n_ops)
            at[n++] = keep[k];
    qsort(at, n, sizeof *at, cmp_size);
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (m == 0 || at[m - 1] != at[k])
            at[m++] = at[k];
    plan_op *ops = ml_xcalloc(m ? m : 1, sizeof *ops);
    for (size_t k = 0; k < m; k++)
        ops[k] = p->ops[at[k]];
    if (p->absent) {   /* the rank's own indices and count, as its own expansion has them */
        for (size_t k = 0; k < m; k++) {
            if (ops[k].kind == OP_ABSENT)
                ml_internal_error("rank %d keeps op %zu, which it lacks", p->rank, at[k]);
            at[k] = plan_own_index(p, at[k]);
        }
        p->n_ops -= p->absent_ops;
        p->absent = NULL;
        p->n_absent = p->absent_ops = 0;
    }
    if (p->borrowed) {
        /* plan_share's: the arrays stay with their owner; the kept ops are p's own */
    } else if (spare && !spare->ops) {
        *spare = (plan_recycle){.ops = p->ops, .cap_ops = p->cap_ops, .extra = p->extra_views,
                                .cap_extra = p->cap_extra_views};
    } else {
        free(p->ops);
        free(p->extra_views);
    }
    if (!p->borrowed)
        free(p->when_at);
    p->when_at = NULL;   /* op ranges of the whole expansion */
    p->n_when_at = 0;
    p->extra_views = NULL;   /* a compute's views: what walks the ops reads them */
    p->n_extra_views = p->cap_extra_views = 0;
    if (!p->borrowed)   /* per op: what runs the ops reads them; a compact plan runs nothing */
        free(p->index_vals);
    p->index_vals = NULL;
    p->borrowed = false;
    p->ops = ops;
    p->cap_ops = m;
    p->kept_at = at;
    p->n_kept = m;
}

const plan_op *plan_op_at_kept(const rank_plan *p, size_t i) {
    size_t lo = 0, hi = p->n_kept;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->kept_at[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == p->n_kept || p->kept_at[lo] != i)   /* plan_compact kept what reports name */
        ml_internal_error("op %zu of rank %d's compact plan was not kept", i, p->rank);
    return &p->ops[lo];
}

const plan_view *plan_compute_views(const rank_plan *p, const plan_op *op, uint32_t *n_reads,
                                    uint32_t *n_writes) {
    *n_reads = op->u.compute.n_reads;
    *n_writes = op->u.compute.n_writes;
    if (!p->extra_views)   /* compute steps with no views: NULL + 0 is undefined in C */
        return NULL;
    return p->extra_views + op->u.compute.first_view;
}

static ml_mark operand_mark(const sched_operand *o) {
    return o->kind == OPD_VIEW ? o->view.mark : o->mark;
}

const sched_view *plan_sched_view(const plan_op *op, uint32_t k) {
    const sched_step *st = op->step;
    switch (op->kind) {
    case OP_COLL:   /* a send or recv names one view, in both */
        return k ? &st->u.coll.recv : &st->u.coll.send;
    case OP_COPY:
        return k ? &st->u.copy.dst : &st->u.copy.src;
    case OP_SCALE:
        return &st->u.scale.buf;
    case OP_INIT:
        if (st->kind == ST_INIT)
            return k ? st->u.init.init.src : &st->u.init.dst;
        return k ? st->u.alloc.init.src : NULL;
    case OP_CHECK: {
        const sched_operand *o = k ? &st->u.check->b : &st->u.check->a;
        return o->kind == OPD_VIEW ? &o->view : NULL;
    }
    case OP_COMPUTE:
        if (k < st->u.compute.n_reads)
            return &st->u.compute.reads[k];
        if (k - st->u.compute.n_reads < st->u.compute.n_writes)
            return &st->u.compute.writes[k - st->u.compute.n_reads];
        return NULL;
    default:
        return NULL;
    }
}

ml_mark plan_view_mark(const sched *s, const plan_op *op, uint32_t k) {
    const sched_step *st = op->step;
    switch (op->kind) {
    case OP_COLL:
    case OP_COPY:
    case OP_SCALE:
        return plan_sched_view(op, k)->mark;
    case OP_INIT:
        if (st->kind != ST_INIT && !k)
            return sched_part_mark(s, st, SCHED_AT_BUF);
        /* an init that copies nothing has no source view: the zero mark its inline view had */
        return plan_sched_view(op, k) ? plan_sched_view(op, k)->mark : (ml_mark){0};
    case OP_CHECK:
        return operand_mark(k ? &st->u.check->b : &st->u.check->a);
    case OP_COMPUTE: {
        const sched_view *v = plan_sched_view(op, k);
        return v ? v->mark : st->mark;
    }
    case OP_FREE:
        return op->u.free.mark;
    case OP_ALLOC:
    case OP_RELEASE:
    case OP_RECORD_STREAM:
        return sched_part_mark(s, st, SCHED_AT_BUF);
    default:
        return st->mark;
    }
}

size_t plan_op_accesses(const rank_plan *p, const plan_op *op,
                        plan_access fixed[PLAN_FIXED_ACCESSES], const plan_access **out,
                        ml_vec *dyn) {
    *out = fixed;
    switch (op->kind) {
    case OP_COLL:
        /* A send only reads its buffer, a recv only overwrites it (both name one view). */
        if (ml_colls[op->u.coll.coll].p2p == P2P_SEND) {
            fixed[0] = (plan_access){&op->u.coll.send, true, false, false};
            return 1;
        }
        if (ml_colls[op->u.coll.coll].p2p == P2P_RECV) {
            fixed[0] = (plan_access){&op->u.coll.recv, false, true, true};
            return 1;
        }
        fixed[0] = (plan_access){&op->u.coll.send, true, false, false};
        fixed[1] = (plan_access){&op->u.coll.recv, op->u.coll.in_place, true, true};
        return 2;
    case OP_COPY:
        fixed[0] = (plan_access){&op->u.copy.src, true, false, false};
        fixed[1] = (plan_access){&op->u.copy.dst, false, true, true};
        return 2;
    case OP_SCALE:
        fixed[0] = (plan_access){&op->u.scale.buf, true, true, true};
        return 1;
    case OP_INIT:
        fixed[0] = (plan_access){&op->u.init.dst, false, true, true};
        fixed[1] = (plan_access){&op->u.init.src, true, false, false};
        return op->u.init.src.count ? 2 : 1;
    case OP_CHECK:
        fixed[0] = (plan_access){&op->u.check.a, true, false, false};
        fixed[1] = (plan_access){&op->u.check.b, true, false, false};
        return 2;
    case OP_COMPUTE: {
        uint32_t nr, nw;
        const plan_view *v = plan_compute_views(p, op, &nr, &nw);
        return plan_compute_accesses(v, nr, nw, out, dyn);
    }
    default:
        return 0;
    }
}

size_t plan_compute_accesses(const plan_view *v, uint32_t n_reads, uint32_t n_writes,
                             const plan_access **out, ml_vec *dyn) {
    /* written in place, not pushed one by one: lint and the floor ask this of every compute
     * op, and ml_vec_push's call and zeroing were most of its cost */
    size_t n = (size_t)n_reads + n_writes;
    if (n > dyn->cap) {
        size_t cap = dyn->cap ? dyn->cap : 8;
        while (cap < n)
            cap *= 2;
        dyn->items = ml_xrealloc(dyn->items, cap * sizeof(plan_access));
        dyn->cap = cap;
    }
    plan_access *a = dyn->items;
    for (size_t k = 0; k < n; k++)
        a[k] = (plan_access){&v[k], k < n_reads, k >= n_reads, false};
    dyn->n = n;
    *out = a;
    return n;
}

/* ---- One expansion for every rank ----------------------------------------------------------
 *
 * What rank an expansion is for enters plan_expand in exactly two places: the rank slot that
 * expressions read (directly as `rank`, or through a let or a --set override computed from it),
 * and NCCL's in-place rule of a collective whose send and recv share a buffer (RS is in place
 * iff recv == send + rank*recvcount, AG iff send == recv + rank*sendcount: a plain
 * `reduce_scatter: {buf: x}` is in place on rank 0 only, without any `rank` in the file).
 * So p's ops are every rank's ops when (1) no expression that plan_expand evaluates names rank
 * (nor those the time model evaluates with the rank's slots: compute times, `link:`),
 * (2) every let has the same value on every rank, and (3) each same-buffer collective's in-place
 * flag is the same on every rank. Everything else plan_expand reads (steps, world, let values,
 * buffer shapes from earlier ops) is then the same too, and so is every evaluation, error
 * included. Expressions it does not evaluate (data patterns, closed-form checks) may use rank:
 * the executor reads them with the rank's own slots, which plan_share gives each rank. */

/* A tiny memo: the loader shares one tree among the steps that write the same expression, so
 * a million steps name a handful of distinct trees. */
typedef struct {
    const expr *e[64];
    bool uses[64];
    bool seen[64];            /* whens: a `when:` tree already in `whens` */
    /* plan_offsets_new: a view's offset may name rank where its count is written (the loader
     * writes both, but without one resolve_view counts what remains after the offset) */
    bool offsets;
    /* plan_shapes_new: a `when:` may name rank where it names nothing that varies inside an
     * expansion (when_is_shape); such trees are gathered here (repeats possible, see seen).
     * NULL: a `when:` naming rank is refused like any expression. */
    ml_vec *whens;            /* const expr * */
    const sched *s;           /* whens: for the slot layout */
} rank_memo;

static bool uses_rank(rank_memo *m, const expr *e) {
    if (!e)
        return false;
    size_t h = ((uintptr_t)e >> 4) & 63;
    if (m->e[h] != e) {
        m->e[h] = e;
        m->uses[h] = expr_uses_slot(e, EXPR_SLOT_RANK);
        m->seen[h] = false;
    }
    return m->uses[h];
}

/* A `when:` tree e that names rank, in memo's whens mode: true (e gathered) when its value is
 * one per rank, the same at every step it is evaluated: it names rank, world and lets only,
 * whose values are fixed for an expansion (lets agree on every rank, expands_alike's (2)). A
 * repeat's index (the slots after the lets, sched_n_slots) changes inside the expansion, and
 * `i` is a data pattern's element: either refuses. */
static bool when_is_shape(rank_memo *m, const expr *e) {
    size_t h = ((uintptr_t)e >> 4) & 63;   /* uses_rank has just filled the entry */
    if (m->seen[h])
        return true;
    int first_index = EXPR_SLOT_FIRST_LET + (int)m->s->n_lets;
    bool varies = expr_uses_slot(e, EXPR_SLOT_INDEX);
    for (uint32_t k = 0; k < m->s->n_index && !varies; k++)
        varies = expr_uses_slot(e, first_index + (int)k);
    if (varies)
        return false;
    *(const expr **)ml_vec_push(m->whens) = e;
    m->seen[h] = true;
    return true;
}

static bool view_uses_rank(rank_memo *m, const sched_view *v) {
    if (m->offsets && v->count)
        return uses_rank(m, v->count);
    return uses_rank(m, v->offset) || uses_rank(m, v->count);
}

static bool steps_use_rank(rank_memo *m, const sched_step *steps, uint32_t n);

/* True when an expression plan_expand evaluates for st names rank (every one it may evaluate:
 * a step whose `when:` is false is dropped on every rank alike, so counting it is only
 * cautious). */
static bool step_uses_rank(rank_memo *m, const sched_step *st) {
    if (uses_rank(m, st->when) && !(m->whens && when_is_shape(m, st->when)))
        return true;
    switch (st->kind) {
    case ST_ALLOC:
        return uses_rank(m, st->u.alloc.bytes) || uses_rank(m, st->u.alloc.count) ||
               uses_rank(m, st->u.alloc.chunks) ||
               (st->u.alloc.init.kind == INIT_COPY && view_uses_rank(m, st->u.alloc.init.src));
    case ST_RELEASE:
        return uses_rank(m, st->u.release.keep);
    case ST_COLL:
        /* whens: a send or recv that some ranks drop: pairing reads every rank's ops
         * (pipeline.c takes them rank by rank) */
        if (m->whens && ml_colls[st->u.coll.coll].p2p)
            return true;
        return view_uses_rank(m, &st->u.coll.send) || view_uses_rank(m, &st->u.coll.recv) ||
               uses_rank(m, st->u.coll.root);
    case ST_REPEAT:
        return uses_rank(m, st->u.repeat.count) ||
               steps_use_rank(m, st->u.repeat.steps, st->u.repeat.n);
    case ST_REGION:
        return steps_use_rank(m, st->u.region.steps, st->u.region.n);
    case ST_GROUP:
        return steps_use_rank(m, st->u.group.steps, st->u.group.n);
    case ST_INIT:
        return view_uses_rank(m, &st->u.init.dst) ||
               (st->u.init.init.kind == INIT_COPY && view_uses_rank(m, st->u.init.init.src));
    case ST_COPY:
        return view_uses_rank(m, &st->u.copy.src) || view_uses_rank(m, &st->u.copy.dst);
    case ST_SCALE:
        return view_uses_rank(m, &st->u.scale.buf) || uses_rank(m, st->u.scale.factor) ||
               uses_rank(m, st->u.scale.den);
    case ST_COMPUTE:
        /* its time is evaluated by the time model, with the rank's slots (timemodel.c) */
        if (uses_rank(m, st->u.compute.time_us) || uses_rank(m, st->u.compute.flops))
            return true;
        for (uint32_t k = 0; k < st->u.compute.n_reads; k++)
            if (view_uses_rank(m, &st->u.compute.reads[k]))
                return true;
        for (uint32_t k = 0; k < st->u.compute.n_writes; k++)
            if (view_uses_rank(m, &st->u.compute.writes[k]))
                return true;
        return false;
    case ST_CHECK: {
        const sched_operand *o[2] = {&st->u.check->a, &st->u.check->b};
        for (int k = 0; k < 2; k++)
            if (o[k]->kind == OPD_VIEW &&
                (view_uses_rank(m, &o[k]->view) || uses_rank(m, o[k]->roll_shards)))
                return true;
        return false;
    }
    case ST_EXPECT_ERROR:
        return steps_use_rank(m, st->u.expect_error.step, 1);
    case ST_FREE:
    case ST_SYNC:
    case ST_RECORD:
    case ST_WAIT:
    case ST_RECORD_STREAM:
    case ST_EMPTY_CACHE:
        return false;
    case ST_KIND_COUNT:
        break;
    }
    return true;   /* a kind this walk does not know: assume the worst */
}

static bool steps_use_rank(rank_memo *m, const sched_step *steps, uint32_t n) {
    for (uint32_t k = 0; k < n; k++)
        if (step_uses_rank(m, &steps[k]))
            return true;
    return false;
}

/* (1) and (2) for p (memo->offsets: but for views' offsets). */
static bool expands_alike(const rank_plan *p, const sched_params *params, rank_memo *memo) {
    const sched *s = p->s;
    if (p->world <= 1)
        return false;
    const sched_plan *pl = &s->plans[p->plan_index];
    if (steps_use_rank(memo, pl->steps, pl->n))
        return false;
    if (s->torch.limit && !(params && params->has_torch_limit) && uses_rank(memo, s->torch.limit))
        return false;   /* each rank's allocator has its own limit */
    if (s->torch.capacity && !(params && params->has_torch_capacity) &&
        uses_rank(memo, s->torch.capacity))
        return false;
    if (uses_rank(memo, s->link_alpha_us) || uses_rank(memo, s->link_busbw_gbps))
        return false;   /* the time model evaluates `link:` with each rank's slots */
    /* (2) lets, overrides included; one that fails on some rank fails the shortcut, and the
     * per-rank expansion then reports it as before. */
    size_t n_slots = EXPR_SLOT_FIRST_LET + s->n_lets;
    int64_t *slots = ml_xcalloc(n_slots, sizeof *slots);
    ml_diags quiet;
    ml_diags_init(&quiet);
    bool same = true;
    for (int r = 0; r < p->world && same; r++) {
        if (r == p->rank)
            continue;
        same = sched_eval_lets(s, params, p->world, r, slots, &quiet) == 0 &&
               memcmp(slots + EXPR_SLOT_FIRST_LET, p->slots + EXPR_SLOT_FIRST_LET,
                      s->n_lets * sizeof *slots) == 0;
    }
    ml_diags_free(&quiet);
    free(slots);
    return same;
}

bool plan_rank_invariant(const rank_plan *p, const sched_params *params) {
    rank_memo memo = {0};
    bool same = expands_alike(p, params, &memo);
    /* (3) in-place flags. Each same-buffer collective is tried on every rank: no more work than
     * the per-rank expansions this replaces. */
    for (size_t i = 0; i < p->n_ops && same; i++) {
        const plan_op *op = &p->ops[i];
        if (op->kind != OP_COLL || op->u.coll.send.buf != op->u.coll.recv.buf)
            continue;
        int64_t diff = (int64_t)op->u.coll.recv.offset - (int64_t)op->u.coll.send.offset;
        uint64_t count = plan_coll_count(op);
        for (int r = 0; r < p->world && same; r++)
            same = (diff == ml_colls[op->u.coll.coll].inplace_recv_minus_send(count, r)) ==
                   op->u.coll.in_place;
    }
    return same;
}

void plan_share(const rank_plan *src, int rank, rank_plan *out) {
    *out = *src;
    out->rank = rank;
    out->borrowed = true;
    size_t n_slots = sched_n_slots(src->s);
    out->slots = ml_xmalloc(n_slots * sizeof *out->slots);
    memcpy(out->slots, src->slots, n_slots * sizeof *out->slots);
    out->slots[EXPR_SLOT_RANK] = rank;
}

/* ---- Ranks that differ only in views' offsets ----------------------------------------------
 *
 * With memo.offsets, (1) lets a view's offset name rank where the view's count is written: the
 * offset is then the only value of the op that depends on the rank (a resolved view's count is
 * its written count, its dtype and buffer come from the steps; nothing else plan_expand
 * evaluates names rank, and the lets agree by (2)). So every rank's ops are p's with those
 * offsets evaluated for the rank, with its own slots and the op's repeat-index values
 * (index_vals), and every same-buffer collective's in-place flag taken again by NCCL's rule,
 * which reads the offsets and the rank. Those are the entries: in op order, and within an op
 * in the order plan_expand resolves its views (plan_sched_view's k), so that the first offset
 * that fails on a rank is the one its own expansion stops at, with the same message. */
enum { PLAN_AT_IN_PLACE = UINT32_MAX };   /* an entry's k: the op's in-place flag */

typedef struct {
    size_t op;
    uint32_t k;                           /* the view (plan_sched_view), or PLAN_AT_IN_PLACE */
    /* What plan_offsets_apply reads, kept here so that it reads neither the step (to find the
     * view) nor, for a compute's view, the op: at a million ops each was a cache miss */
    const sched_view *view;               /* plan_sched_view(op, k): its marks, for errors */
    const expr *offset;                   /* view->offset */
    size_t extra;                         /* a compute's view: its index in extra_views; else
                                             SIZE_MAX (resolved_view) */
} offset_entry;

struct plan_offsets {
    ml_vec at;                            /* offset_entry */
    ml_vec ops;                           /* size_t: the entries' ops, each once (plan_offsets_ops) */
};

/* The k-th view of op as plan_expand resolved it (plan_sched_view's order), NULL where there is
 * none (an alloc's own buffer, a closed-form check operand, an init that copies nothing). */
static plan_view *resolved_view(rank_plan *p, plan_op *op, uint32_t k) {
    const sched_step *st = op->step;
    switch (op->kind) {
    case OP_COLL:
        return k ? &op->u.coll.recv : &op->u.coll.send;
    case OP_COPY:
        return k ? &op->u.copy.dst : &op->u.copy.src;
    case OP_SCALE:
        return &op->u.scale.buf;
    case OP_INIT: {
        sched_init_kind copy = st->kind == ST_INIT ? st->u.init.init.kind : st->u.alloc.init.kind;
        if (k && copy != INIT_COPY)
            return NULL;
        return k ? &op->u.init.src : st->kind == ST_INIT ? &op->u.init.dst : NULL;
    }
    case OP_CHECK:
        return plan_sched_view(op, k) ? (k ? &op->u.check.b : &op->u.check.a) : NULL;
    case OP_COMPUTE:
        return &p->extra_views[op->u.compute.first_view + k];
    default:
        return NULL;
    }
}

/* True when the k-th view of op, where the op holds it, is whole (no offset or count written):
 * read from the op alone (an init's views and a check's operands are the op's either way). */
static bool op_view_whole(const rank_plan *p, const plan_op *op, uint32_t k) {
    switch (op->kind) {
    case OP_COLL:
        return (k ? &op->u.coll.recv : &op->u.coll.send)->whole;
    case OP_COPY:
        return (k ? &op->u.copy.dst : &op->u.copy.src)->whole;
    case OP_SCALE:
        return op->u.scale.buf.whole;
    case OP_INIT:
        return (k ? &op->u.init.src : &op->u.init.dst)->whole;
    case OP_CHECK:
        return (k ? &op->u.check.b : &op->u.check.a)->whole;
    case OP_COMPUTE:
        return p->extra_views[op->u.compute.first_view + k].whole;
    default:
        return false;
    }
}

/* How many views plan_sched_view and resolved_view may name for op. */
static uint32_t op_view_slots(const plan_op *op) {
    switch (op->kind) {
    case OP_COLL:
    case OP_COPY:
    case OP_INIT:
    case OP_CHECK:
        return 2;
    case OP_SCALE:
        return 1;
    case OP_COMPUTE:
        return op->u.compute.n_reads + op->u.compute.n_writes;
    default:
        return 0;
    }
}

/* The entries of p, whose (1) and (2) hold by memo (its offsets mode). */
static plan_offsets *offsets_of(const rank_plan *p, rank_memo *memo) {
    plan_offsets *o = ml_xcalloc(1, sizeof *o);
    ml_vec_init(&o->at, sizeof(offset_entry));
    ml_vec_init(&o->ops, sizeof(size_t));
    for (size_t i = 0; i < p->n_ops; i++) {
        plan_op *op = &p->ops[i];
        size_t before = o->at.n;
        uint32_t n = op_view_slots(op);
        for (uint32_t k = 0; k < n; k++) {
            /* a whole view has no offset (resolve_view): its step need not be read, which at
             * a million steps is a cache miss each */
            if (op_view_whole(p, op, k))
                continue;
            const sched_view *v = plan_sched_view(op, k);
            if (v && uses_rank(memo, v->offset) && resolved_view((rank_plan *)p, op, k))
                *(offset_entry *)ml_vec_push(&o->at) = (offset_entry){
                    i, k, v, v->offset,
                    op->kind == OP_COMPUTE ? op->u.compute.first_view + k : SIZE_MAX};
        }
        if (op->kind == OP_COLL && op->u.coll.send.buf == op->u.coll.recv.buf)
            *(offset_entry *)ml_vec_push(&o->at) =
                (offset_entry){i, PLAN_AT_IN_PLACE, NULL, NULL, SIZE_MAX};
        if (o->at.n > before)
            *(size_t *)ml_vec_push(&o->ops) = i;
    }
    return o;
}

plan_offsets *plan_offsets_new(const rank_plan *p, const sched_params *params) {
    rank_memo memo = {.offsets = true};
    if (p->kept_at || !expands_alike(p, params, &memo))
        return NULL;
    return offsets_of(p, &memo);
}

/* ---- Ranks of one shape ----------------------------------------------------------------------
 *
 * With memo.whens as well, (1) also lets a step's `when:` name rank where the tree names
 * nothing else that varies inside an expansion (when_is_shape: rank, world and lets only), and
 * refuses send and recv. Such a tree has one value per rank; what plan_expand does with it is
 * keep or drop the step, by whether it is 0. A rank's shape is the list of those truth values,
 * one per distinct tree (the loader shares a tree among the steps that write the same text:
 * a million steps give a handful). Two ranks of one shape then expand to the same ops but for
 * the views' offsets and in-place flags: every `when:` keeps or drops the same steps on both
 * (those that name rank by the shape, the others by (1)), so the same steps are walked in the
 * same order; every other value is one for all ranks by (1) and (2), but for the offsets that
 * name rank, which offsets_of finds in the ops as for plan_offsets_new. A rank's expansion is
 * then its shape's first rank's (the base) with plan_offsets_apply, whose first failing offset
 * is the one that rank's own expansion stops at (every other evaluation succeeded on the base
 * and gives the same value; the `when:`s gave their values here). Ranks of different shapes
 * each have a base of their own, expanded for itself, with its own entries (op indices of its
 * ops). */
enum { PLAN_MAX_SHAPE_WHENS = 64 };   /* a shape is a 64-bit mask */

struct plan_shapes {
    rank_memo memo;           /* offsets mode, for offsets_of of each base */
    int world;
    int *first;               /* [world]: the least rank of each rank's shape */
    const expr **whens;       /* the trees, by address (a mask's bit k is whens[k]) */
    size_t n_whens;
    uint64_t *mask;           /* [world]: each rank's shape */
};

typedef struct {
    uint64_t mask;
    int rank;
} rank_shape;

static int cmp_rank_shape(const void *a, const void *b) {
    const rank_shape *x = a, *y = b;
    if (x->mask != y->mask)
        return x->mask < y->mask ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;
    return (x > y) - (x < y);
}

/* Each rank's shape as a mask over the trees whens[0..n) (n <= 64), evaluated with p's slots
 * and the rank; false where one fails on some rank (the per-rank expansions then report it, if
 * that step is reached at all). */
static bool shape_masks(const rank_plan *p, const expr *const *whens, size_t n, rank_shape *out) {
    size_t n_slots = sched_n_slots(p->s);
    int64_t *slots = ml_xmalloc(n_slots * sizeof *slots);
    memcpy(slots, p->slots, n_slots * sizeof *slots);
    bool ok = true;
    for (int r = 0; r < p->world && ok; r++) {
        slots[EXPR_SLOT_RANK] = r;
        out[r] = (rank_shape){0, r};
        for (size_t k = 0; k < n && ok; k++) {
            int64_t v;
            expr_error err;
            ok = expr_eval(whens[k], slots, &v, &err) == 0;
            if (ok && v)
                out[r].mask |= (uint64_t)1 << k;
        }
    }
    free(slots);
    return ok;
}

plan_shapes *plan_shapes_new(const rank_plan *p, const sched_params *params) {
    if (p->kept_at)
        return NULL;
    ml_vec whens;
    ml_vec_init(&whens, sizeof(const expr *));
    plan_shapes *sh = ml_xcalloc(1, sizeof *sh);
    sh->memo = (rank_memo){.offsets = true, .whens = &whens, .s = p->s};
    bool ok = expands_alike(p, params, &sh->memo);
    sh->memo.whens = NULL;   /* from here on it answers offsets_of */
    size_t n = 0;
    if (ok && whens.n) {   /* each tree once (the memo's collisions may repeat one) */
        qsort(whens.items, whens.n, sizeof(const expr *), cmp_ptr);
        const expr **w = whens.items;
        for (size_t k = 0; k < whens.n; k++)
            if (n == 0 || w[n - 1] != w[k])
                w[n++] = w[k];
    }
    rank_shape *rs = ok && n <= PLAN_MAX_SHAPE_WHENS
                         ? ml_xcalloc((size_t)p->world, sizeof *rs) : NULL;
    ok = rs && shape_masks(p, whens.items, n, rs);
    if (!ok) {
        ml_vec_free(&whens);
        free(rs);
        free(sh);
        return NULL;
    }
    sh->whens = whens.items;   /* sorted by address, each once */
    sh->n_whens = n;
    sh->mask = ml_xmalloc((size_t)p->world * sizeof *sh->mask);
    for (int r = 0; r < p->world; r++)
        sh->mask[rs[r].rank] = rs[r].mask;
    /* in (mask, rank) order, each run's first rank is its shape's least */
    qsort(rs, (size_t)p->world, sizeof *rs, cmp_rank_shape);
    sh->world = p->world;
    sh->first = ml_xmalloc((size_t)p->world * sizeof *sh->first);
    for (int k = 0, first = 0; k < p->world; k++) {
        if (k == 0 || rs[k].mask != rs[k - 1].mask)
            first = rs[k].rank;
        sh->first[rs[k].rank] = first;
    }
    free(rs);
    return sh;
}

int plan_shape(const plan_shapes *sh, int rank) {
    if (rank < 0 || rank >= sh->world)
        ml_internal_error("rank %d of a world of %d has no shape", rank, sh->world);
    return sh->first[rank];
}

plan_offsets *plan_shapes_offsets(plan_shapes *sh, const rank_plan *base) {
    if (base->kept_at || base->world != sh->world)
        ml_internal_error("rank %d's plan is not a whole expansion of its shape", base->rank);
    return offsets_of(base, &sh->memo);
}

void plan_shapes_free(plan_shapes *sh) {
    if (!sh)
        return;
    free(sh->first);
    free(sh->whens);
    free(sh->mask);
    free(sh);
}

/* ---- Ranks of a subset shape -----------------------------------------------------------------
 *
 * Rank r's `when:`s that are true all true on base b (mask(r) within mask(b)): r's own expansion
 * walks the steps b's walked, in the same order, less those under an occurrence of a `when:`
 * true on b and false on r (the shape's trees have one value per rank, the others one for all
 * ranks: plan_shapes_new), and every value it evaluates is b's but for the offsets that name
 * rank, as for a rank of b's shape, with one exception: what resolve_view reads of earlier ops
 * (the buffers' latest allocs). The fast case takes only absent ops that are computes, which
 * allocate nothing, so every later view resolves as on b; and no op's value depends on how many
 * ops came before it. So r's ops are b's with the absent ranges taken out, the rest in order,
 * each op's index less the absent ops before it (plan_own_index), and offsets as po gives them
 * (an absent op among po's ops is refused: its offset, evaluated on r, could fail where r's own
 * expansion never evaluates it). Refused too: an occurrence inside an expect_error (the wrapped
 * step's ops are what its marker refuses and what lint's contract reads) or a group (send and
 * recv pair across ranks: plan_shapes_new refuses them anyway). */
struct plan_absent {
    int base;
    uint64_t drop;            /* mask(b) less mask(r): the trees whose occurrences are absent */
    plan_range *r;            /* merged, increasing */
    size_t n, ops;
    bool timed;               /* some absent compute has a `time:` or `flops:` */
};

static int cmp_range(const void *a, const void *b) {
    const plan_range *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Bit of tree e in sh's masks, or -1. */
static int when_bit(const plan_shapes *sh, const expr *e) {
    size_t lo = 0, hi = sh->n_whens;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)sh->whens[mid] < (uintptr_t)e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sh->n_whens && sh->whens[lo] == e ? (int)lo : -1;
}

plan_absent *plan_shapes_absent(const plan_shapes *sh, const rank_plan *base,
                                const plan_offsets *po, int rank) {
    if (base->kept_at || base->world != sh->world || rank < 0 || rank >= sh->world)
        return NULL;
    uint64_t mb = sh->mask[base->rank], mr = sh->mask[rank];
    if (mr == mb || (mr & ~mb))
        return NULL;
    plan_absent *a = ml_xcalloc(1, sizeof *a);
    a->base = base->rank;
    a->drop = mb & ~mr;
    bool ok = true;
    ml_vec rs;
    ml_vec_init(&rs, sizeof(plan_range));
    for (size_t k = 0; k < base->n_when_at && ok; k++) {
        const plan_when_at *w = &base->when_at[k];
        int bit = when_bit(sh, w->when);
        ok = bit >= 0;
        if (ok && (a->drop >> bit & 1) && w->hi > w->lo) {
            ok = !w->guarded;
            *(plan_range *)ml_vec_push(&rs) = (plan_range){w->lo, w->hi, 0};
        }
    }
    /* nested occurrences (a `when:` under another) came inner first: in order, merged */
    plan_range *r = rs.items;
    size_t n = 0;
    if (ok && rs.n)
        qsort(r, rs.n, sizeof *r, cmp_range);
    for (size_t k = 0; ok && k < rs.n; k++) {
        if (n && r[k].lo <= r[n - 1].hi) {
            if (r[k].hi > r[n - 1].hi)
                r[n - 1].hi = r[k].hi;
        } else {
            r[n++] = r[k];
        }
    }
    size_t before = 0;
    for (size_t k = 0; ok && k < n; k++) {
        r[k].before = before;
        before += r[k].hi - r[k].lo;
        for (size_t i = r[k].lo; i < r[k].hi && ok; i++) {
            const plan_op *op = &base->ops[i];
            ok = op->kind == OP_COMPUTE;
            a->timed = a->timed ||
                       (ok && (op->step->u.compute.time_us || op->step->u.compute.flops));
        }
    }
    if (ok && po) {   /* no absent op among po's (both increasing) */
        size_t nm;
        const size_t *moved = plan_offsets_ops(po, &nm);
        for (size_t k = 0, j = 0; k < nm && ok; k++) {
            while (j < n && r[j].hi <= moved[k])
                j++;
            ok = j == n || moved[k] < r[j].lo;
        }
    }
    if (!ok || n == 0) {
        ml_vec_free(&rs);
        free(a);
        return NULL;
    }
    a->r = r;
    a->n = n;
    a->ops = before;
    return a;
}

bool plan_absent_timed(const plan_absent *a) { return a->timed; }

bool plan_shape_within(const plan_shapes *sh, int rank, int base) {
    if (rank < 0 || rank >= sh->world || base < 0 || base >= sh->world)
        return false;
    return sh->mask[rank] != sh->mask[base] && !(sh->mask[rank] & ~sh->mask[base]);
}

bool plan_absent_fits(const plan_absent *a, const plan_shapes *sh, int rank) {
    return plan_shape_within(sh, rank, a->base) &&
           (sh->mask[a->base] & ~sh->mask[rank]) == a->drop;
}

size_t *plan_when_ops(const rank_plan *base, const size_t *ops, size_t n, size_t *out_n) {
    /* the occurrences' ranges in order of lo (they are, but for a `when:` under another,
     * recorded after its inner ones), merged; then merged with ops, both increasing: no sort
     * of every op (a sort of 12,500 was 7 M instructions at 100,000 steps) */
    size_t nr = base->n_when_at;
    plan_range *r = ml_xmalloc((nr ? nr : 1) * sizeof *r);
    bool sorted = true;
    for (size_t k = 0; k < nr; k++) {
        r[k] = (plan_range){base->when_at[k].lo, base->when_at[k].hi, 0};
        sorted = sorted && (k == 0 || r[k - 1].lo <= r[k].lo);
    }
    if (!sorted)
        qsort(r, nr, sizeof *r, cmp_range);
    size_t m = 0, total = n;
    for (size_t k = 0; k < nr; k++) {
        if (m && r[k].lo <= r[m - 1].hi) {
            if (r[k].hi > r[m - 1].hi)
                r[m - 1].hi = r[k].hi;
        } else {
            r[m++] = r[k];
        }
    }
    for (size_t k = 0; k < m; k++)
        total += r[k].hi - r[k].lo;
    size_t *all = ml_xmalloc((total ? total : 1) * sizeof *all);
    size_t u = 0, j = 0;
    for (size_t k = 0; k < m; k++)
        for (size_t i = r[k].lo; i < r[k].hi; i++) {
            for (; j < n && ops[j] < i; j++)
                all[u++] = ops[j];
            j += j < n && ops[j] == i;
            all[u++] = i;
        }
    for (; j < n; j++)
        all[u++] = ops[j];
    free(r);
    *out_n = u;
    return all;
}

void plan_absent_apply(const plan_absent *a, rank_plan *p) {
    for (size_t k = 0; k < a->n; k++)
        for (size_t i = a->r[k].lo; i < a->r[k].hi; i++)
            p->ops[i].kind = OP_ABSENT;
    p->absent = a->r;
    p->n_absent = a->n;
    p->absent_ops = a->ops;
}

void plan_absent_restore(const plan_absent *a, rank_plan *p) {
    for (size_t k = 0; k < a->n; k++)
        for (size_t i = a->r[k].lo; i < a->r[k].hi; i++)
            p->ops[i].kind = OP_COMPUTE;   /* every absent op was one (plan_shapes_absent) */
    p->absent = NULL;
    p->n_absent = p->absent_ops = 0;
}

void plan_absent_free(plan_absent *a) {
    if (!a)
        return;
    free(a->r);
    free(a);
}

size_t plan_own_index(const rank_plan *p, size_t i) {
    if (i == SIZE_MAX || !p->absent)
        return i;
    size_t lo = 0, hi = p->n_absent;   /* the first range that ends after i */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->absent[mid].hi <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < p->n_absent && p->absent[lo].lo <= i)
        ml_internal_error("op %zu of rank %d is one it lacks", i, p->rank);
    if (lo == 0)
        return i;
    const plan_range *r = &p->absent[lo - 1];
    return i - (r->before + (r->hi - r->lo));
}

#define OFFSETS_AHEAD 8   /* entries: how far ahead plan_offsets_apply asks for ops */

int plan_offsets_apply(const plan_offsets *o, rank_plan *p, int rank, ml_diags *d) {
    size_t n_slots = sched_n_slots(p->s);
    int64_t *slots = ml_xmalloc(n_slots * sizeof *slots);
    memcpy(slots, p->slots, n_slots * sizeof *slots);
    slots[EXPR_SLOT_RANK] = rank;
    expander x = {.s = p->s, .world = p->world, .rank = rank, .slots = slots, .d = d};
    int rc = 0;
    size_t last = SIZE_MAX;
    for (size_t e = 0; e < o->at.n && rc == 0; e++) {
        const offset_entry *at = &ML_VEC_AT(&o->at, offset_entry, e);
        /* one op in a dozen, over ~100 MB at a million ops: each a cache miss unless asked
         * for ahead (a hint; the entries are in op order) */
        if (e + OFFSETS_AHEAD < o->at.n)
            __builtin_prefetch(&p->ops[ML_VEC_AT(&o->at, offset_entry, e + OFFSETS_AHEAD).op]);
        plan_op *op = &p->ops[at->op];   /* not read for a compute's view */
        if (at->k == PLAN_AT_IN_PLACE) {
            op->u.coll.in_place = coll_in_place(op, rank);
            continue;
        }
        if (at->op != last && p->s->n_index) {
            plan_op_slots(p, op, slots);   /* the op's repeat indices, as emit saw them */
            x.memo_gen++;
        }
        last = at->op;
        plan_view *pv = at->extra != SIZE_MAX ? &p->extra_views[at->extra]
                                              : resolved_view(p, op, at->k);
        rc = eval_size(&x, at->offset, 0, at_view(at->view, false), "view offset", &pv->offset);
    }
    free(slots);
    return rc;
}

/* n items of `size` bytes from src, in an array of their own (NULL for none). */
static void *copy_array(const void *src, size_t n, size_t size) {
    if (!src || !n)
        return NULL;
    void *a = ml_xmalloc(n * size);
    memcpy(a, src, n * size);
    return a;
}

void plan_copy(const rank_plan *src, int rank, rank_plan *out) {
    plan_share(src, rank, out);
    out->borrowed = false;
    out->ops = copy_array(src->ops, src->n_ops, sizeof *src->ops);
    out->cap_ops = out->ops ? src->n_ops : 0;
    out->extra_views = copy_array(src->extra_views, src->n_extra_views, sizeof *src->extra_views);
    out->cap_extra_views = out->extra_views ? src->n_extra_views : 0;
    out->index_vals = copy_array(src->index_vals, src->n_ops * src->s->n_index,
                                 sizeof *src->index_vals);
    out->when_at = copy_array(src->when_at, src->n_when_at, sizeof *src->when_at);
}

const size_t *plan_offsets_ops(const plan_offsets *o, size_t *n) {
    *n = o->ops.n;
    return o->ops.items;
}

void plan_offsets_free(plan_offsets *o) {
    if (!o)
        return;
    ml_vec_free(&o->at);
    ml_vec_free(&o->ops);
    free(o);
}

void plan_op_slots(const rank_plan *p, const plan_op *op, int64_t *slots) {
    size_t ni = p->s->n_index;
    if (!ni || !p->index_vals)
        return;
    size_t k = (size_t)(op - p->ops);
    memcpy(slots + EXPR_SLOT_FIRST_LET + p->s->n_lets, p->index_vals + k * ni, ni * sizeof *slots);
}
