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
 * patterns, closed forms of checks).
 *
 * The ranks that expand alike (one expansion for many ranks: plan_share, plan_offsets_*,
 * plan_shapes_*, plan_absent_*) are in plan_shapes.c; what the two share is in plan_int.h. */
#include "ir/plan_int.h"
#include "base/checked.h"
#include "base/pages.h"

#include <stdlib.h>
#include <string.h>

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

static src_at at_mark(ml_mark m) { return (src_at){.mark = m}; }

/* Part `part` of st: errors of its value point there (sched_part_mark). */
static src_at at(const sched_step *st, sched_at_part part) {
    return (src_at){.st = st, .part = part};
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
        if (chunks < 1 || chunks > PLAN_MAX_CHUNKS) {
            ml_error(x->d, x->s->file, src_mark(x, chunks_at),
                     "alloc of '%s' asks for %llu chunks (1 to %u)",
                     sched_sym_name(x->s, SYM_BUFFER, st->u.alloc.buf), (unsigned long long)chunks,
                     PLAN_MAX_CHUNKS);
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

static int expand_coll(expander *x, const sched_step *st) {
    plan_op *op = emit(x, OP_COLL, st);
    if (!op)
        return -1;
    ml_coll c = st->u.coll.coll;
    x->has_p2p |= ml_colls[c].p2p;
    op->u.coll.coll = c;
    op->u.coll.op = st->u.coll.op;
    op->u.coll.comm = st->u.coll.comm;
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
    op->u.coll.in_place = coll_in_place(op, x->comms, x->rank);
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
        if (++x->indexed_walks > x->max_ops) {
            ml_error(x->d, x->s->file, sched_part_mark(x->s, st, SCHED_AT_COUNT),
                     "repeats with index: walk more than %zu iterations in all", x->max_ops);
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

static uint64_t min_ops(expander *x, const sched_step *steps, uint32_t n);

/* A repeat's count as min_ops may take it: known before its body is walked, that is naming no
 * repeat index (an inner index's slot holds a stale value then) and evaluating cleanly; else 0. */
static uint64_t known_count(const expander *x, const expr *e) {
    size_t first = EXPR_SLOT_FIRST_LET + (size_t)x->s->n_lets;
    for (size_t k = 0; k < x->s->n_index; k++)
        if (expr_uses_slot(e, (int)(first + k)))
            return 0;
    int64_t v;
    expr_error err;
    return expr_eval(e, x->slots, &v, &err) == 0 && v > 0 ? (uint64_t)v : 0;
}

/* At least how many ops a step with sub-steps emits; memoized by step, since a nested repeat
 * is asked once for every walk of the repeats around it and its answer does not change during
 * an expansion (it reads world, rank and lets only). */
static uint64_t nested_min_ops(expander *x, const sched_step *st) {
    size_t h = ((uintptr_t)st >> 4) & (ML_ARRAY_LEN(x->min_memo) - 1);
    if (x->min_memo[h].st == st)
        return x->min_memo[h].ops;
    uint64_t ops = 0;
    switch (st->kind) {
    case ST_REPEAT:
        ml_mul_u64_checked(known_count(x, st->u.repeat.count),
                           min_ops(x, st->u.repeat.steps, st->u.repeat.n), &ops);
        break;
    case ST_REGION:
        ml_add_u64_checked(2, min_ops(x, st->u.region.steps, st->u.region.n), &ops);
        break;
    case ST_GROUP:
        ml_add_u64_checked(2, min_ops(x, st->u.group.steps, st->u.group.n), &ops);
        break;
    default:   /* ST_EXPECT_ERROR: the marker and its step */
        ml_add_u64_checked(1, min_ops(x, st->u.expect_error.step, 1), &ops);
        break;
    }
    x->min_memo[h].st = st;
    x->min_memo[h].ops = ops;
    return ops;
}

/* A lower bound of the ops steps emit on this rank, from what is known before walking them: a
 * step with a `when:` may emit none, a repeat whose count is not known (known_count) counts as
 * none, every other step emits at least one op (a free one per name). Saturates at UINT64_MAX
 * and stops adding past max_ops. expand_repeat holds a repeat's count times its body's bound to
 * max_ops before walking the body, so that a product of counts (60 nested repeats of 2) is
 * refused at once, not after 50 M ops have been written. */
static uint64_t min_ops(expander *x, const sched_step *steps, uint32_t n) {
    uint64_t total = 0;
    for (uint32_t k = 0; k < n && total <= x->max_ops; k++) {
        const sched_step *st = &steps[k];
        uint64_t ops = 1;
        if (st->when)
            ops = 0;
        else if (st->kind == ST_FREE)
            ops = st->u.free.n;
        else if (st->kind == ST_REPEAT || st->kind == ST_REGION || st->kind == ST_GROUP ||
                 st->kind == ST_EXPECT_ERROR)
            ops = nested_min_ops(x, st);
        ml_add_u64_checked(total, ops, &total);
    }
    return total;
}

/* Unrolls a repeat: iterations 0 and 1 by walking, the rest by copying iteration 1. */
static int expand_repeat(expander *x, const sched_step *st) {
    uint64_t count;
    if (eval_size(x, st->u.repeat.count, 0, at(st, SCHED_AT_COUNT), "repeat count", &count) < 0)
        return -1;
    if (count == 0)
        return 0;
    uint64_t each = min_ops(x, st->u.repeat.steps, st->u.repeat.n), least;
    ml_mul_u64_checked(count, each, &least);
    if (least > x->max_ops - x->n_ops) {
        char body[64] = "";   /* where the count alone does not say it: the product */
        if (each > 1)
            snprintf(body, sizeof body, " of at least %llu ops each", (unsigned long long)each);
        ml_error(x->d, x->s->file, sched_part_mark(x->s, st, SCHED_AT_COUNT),   /* the count */
                 "repeat of %llu iterations%s expands to more than %zu ops",
                 (unsigned long long)count, body, x->max_ops);
        return -1;
    }
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
    size_t first = x->n_ops, first_when = x->when_at.n;
    if (expand_steps(x, st->u.repeat.steps, st->u.repeat.n) < 0)
        goto out_err;
    /* An iteration that emitted nothing changed nothing later ones read (views resolve against
     * allocs, which are ops): every other iteration emits nothing too. Without this, nested
     * repeats around an empty body (a count of 0, `when:`s false) walk 2^depth times. */
    if (count == 1 || (x->n_ops == first && x->when_at.n == first_when))
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
    const ml_comms *comms = NULL;
    if (s->n_comms > 1 && !(comms = sched_comms(s, p, world, d))) {
        free(slots);
        free(bufs);
        return -1;
    }
    out->comms = comms;   /* before the torch sizes' evaluation: out is zeroed on failure */
    expander x = {
        .s = s, .world = world, .rank = rank, .comms = comms, .slots = slots, .d = d, .bufs = bufs,
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
    free(p->comm_uses);   /* the summary's: p's own, borrowed or not */
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

uint32_t plan_comm_first_uses(const rank_plan *p, plan_comm_use **out) {
    *out = NULL;
    if (p->kept_at) {
        need_summary(p);
        if (!p->comms) {   /* the world's uses are the first collectives */
            ml_coll order[COLL_COUNT];
            uint32_t n = plan_first_colls(p, order);
            *out = n ? ml_xcalloc(n, sizeof **out) : NULL;
            for (uint32_t k = 0; k < n; k++)
                (*out)[k] = (plan_comm_use){0, (uint8_t)order[k]};
            return n;
        }
        if (p->n_comm_uses) {
            *out = ml_xcalloc(p->n_comm_uses, sizeof **out);
            memcpy(*out, p->comm_uses, p->n_comm_uses * sizeof **out);
        }
        return p->n_comm_uses;
    }
    uint32_t n_comms = p->comms ? ml_comms_count(p->comms) : 1;
    bool *seen = ml_xcalloc((size_t)n_comms * COLL_COUNT, sizeof *seen);
    uint32_t n = 0, cap = 0;
    bool skip = false;   /* the op after an expect_error's marker: refused before NCCL sees it */
    for (size_t k = 0; k < p->n_ops; k++) {
        const plan_op *op = &p->ops[k];
        if (skip) {
            skip = false;
            continue;
        }
        if (op->kind == OP_EXPECT_BEGIN) {
            skip = true;
            continue;
        }
        if (op->kind != OP_COLL || op->u.coll.comm >= n_comms)
            continue;
        bool *s = &seen[(size_t)op->u.coll.comm * COLL_COUNT + op->u.coll.coll];
        if (*s)
            continue;
        *s = true;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            *out = ml_xrealloc(*out, cap * sizeof **out);
        }
        (*out)[n++] = (plan_comm_use){op->u.coll.comm, (uint8_t)op->u.coll.coll};
    }
    free(seen);
    return n;
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

/* The summary's uses per communicator: a pass over the ops only where there are communicators. */
static void keep_comm_uses(rank_plan *p) {
    if (!p->comms)
        return;
    plan_comm_use *u;
    uint32_t n = plan_comm_first_uses(p, &u);
    free(p->comm_uses);
    p->comm_uses = u;
    p->n_comm_uses = n;
}

void plan_compact(rank_plan *p, const size_t *keep, size_t n_keep, bool summary,
                  plan_recycle *spare) {
    if (summary) {
        p->n_first_colls = plan_first_colls(p, p->first_colls);
        p->timed_compute = plan_timed_compute(p);
        keep_comm_uses(p);
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
    keep_comm_uses(p);
    p->summary = true;
    compact(p, keep, n_keep, spare);
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
