/* SPDX-License-Identifier: MIT */
/* plan_shapes.c — the ranks that expand alike (plan.h): one expansion shared by every rank, ranks
 * that differ only in views' offsets (plan_offsets_*), ranks of one shape and of a subset shape
 * (plan_shapes_*, plan_absent_*). Moved out of plan.c; what it shares with the expander is in
 * plan_int.h. */
#include "ir/plan_int.h"

#include <stdlib.h>
#include <string.h>

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
    /* plan_sizes_new: the slots asked about instead of rank (on[0..n_on)), and allocs' bytes
     * and counts left out of the walk (sizes) */
    const int *on;
    int n_on;
    bool sizes;
} rank_memo;

static bool uses_any(const rank_memo *m, const expr *e) {
    if (!m->on)
        return expr_uses_slot(e, EXPR_SLOT_RANK);
    for (int k = 0; k < m->n_on; k++)
        if (expr_uses_slot(e, m->on[k]))
            return true;
    return false;
}

static bool uses_rank(rank_memo *m, const expr *e) {
    if (!e)
        return false;
    size_t h = ((uintptr_t)e >> 4) & 63;
    if (m->e[h] != e) {
        m->e[h] = e;
        m->uses[h] = uses_any(m, e);
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
        return (!m->sizes && (uses_rank(m, st->u.alloc.bytes) || uses_rank(m, st->u.alloc.count))) ||
               uses_rank(m, st->u.alloc.chunks) ||
               (st->u.alloc.init.kind == INIT_COPY && view_uses_rank(m, st->u.alloc.init.src));
    case ST_RELEASE:
        return uses_rank(m, st->u.release.keep);
    case ST_COLL:
        /* whens: a send or recv that some ranks drop: pairing reads every rank's ops
         * (the pipeline takes them rank by rank: rankshare.h) */
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
        int64_t delta;
        for (int r = 0; r < p->world && same; r++) {
            int local = plan_comm_rank(p->comms, op->u.coll.comm, r);   /* NCCL's slot */
            same = (local >= 0 && ml_coll_inplace_at(op->u.coll.coll, count, local, &delta) &&
                    diff == delta) == op->u.coll.in_place;
        }
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
            op->u.coll.in_place = coll_in_place(op, p->comms, rank);
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

/* ---- Other values of a let that only sizes read ----------------------------------------------
 *
 * A let enters plan_expand only through the slots: its own, and those of the lets after it
 * whose trees name it (or that a --set replaces: taken as naming it, unread). Call those the
 * let's slots. Where no expression plan_expand evaluates names one of them but allocs' bytes
 * and counts (steps_use_rank in sizes mode: `when:`s, repeat counts, views, roots, chunks and
 * compute times included), nor one evaluated beside the plan at the same values (the torch
 * limit and capacity, `link:`, `requires:`, the mesh and the communicators), the expansion at
 * another value walks the same steps in the same order with the same values, but for the bytes
 * and counts of the allocs whose trees name them (the sized allocs). Those also give the
 * buffer's shape that a view without a written count resolves against; so where no op names a
 * sized alloc's buffer before the next alloc of its name but a free or a record_stream (no
 * collective, init, copy, scale, check, compute or release: a release's chunks are cut from the
 * bytes), none has chunks, and no expect_error is in the plan (its refused op's message may
 * read a size), every other op is the same at every value. The expansion at another value is
 * then p's ops with the sized allocs' bytes and counts evaluated again, as expand_alloc does,
 * and the lets replaced; an evaluation that fails there is one plan_expand reports, so it is
 * left to it. Lint reads an alloc's bytes and count only for the views and releases of its
 * buffer (lint.c: view bounds, released chunks), so its verdicts are the same at every value. */
typedef struct {
    uint64_t bytes, count;
} plan_sized;

struct plan_sizes {
    ml_vec ops;               /* size_t: the sized allocs, increasing */
    ml_vec vals;              /* plan_sized: their values at the last plan_sizes_eval */
};

/* The lets that a --set replaces, by index (1: replaced). */
static void replaced_lets(const sched *s, const sched_params *params, bool *out) {
    for (size_t j = 0; params && j < params->n_set; j++) {
        const char *eq = strchr(params->set[j], '=');
        size_t len = eq ? (size_t)(eq - params->set[j]) : strlen(params->set[j]);
        for (uint32_t k = 0; k < s->n_lets; k++)
            if (strlen(s->lets[k].name) == len && !memcmp(s->lets[k].name, params->set[j], len))
                out[k] = true;
    }
}

/* What is evaluated beside the plan at the plan's values names none of memo's slots. */
static bool beside_plan_alike(const sched *s, const sched_params *params, rank_memo *m) {
    if (s->torch.limit && !(params && params->has_torch_limit) && uses_rank(m, s->torch.limit))
        return false;
    if (s->torch.capacity && !(params && params->has_torch_capacity) &&
        uses_rank(m, s->torch.capacity))
        return false;
    if (uses_rank(m, s->link_alpha_us) || uses_rank(m, s->link_busbw_gbps) ||
        uses_rank(m, s->requires_world))
        return false;
    for (uint32_t k = 0; k < s->n_mesh; k++)
        if (uses_rank(m, s->mesh[k].size))
            return false;
    for (uint32_t k = 0; k < s->n_comms; k++) {
        const sched_comm *c = &s->comms[k];
        if (uses_rank(m, c->color) || uses_rank(m, c->key))
            return false;
        for (uint32_t j = 0; j < c->n_ranks; j++)
            if (uses_rank(m, c->ranks[j]))
                return false;
    }
    return true;
}

/* The sized allocs of p, or NULL where some op names a sized alloc's buffer otherwise than by
 * a free or record_stream, a sized alloc has chunks, or an expect_error is among the ops. */
static plan_sizes *sized_allocs(const rank_plan *p, rank_memo *m) {
    uint32_t n_bufs = p->s->syms[SYM_BUFFER].n;
    bool *sized = ml_xcalloc(n_bufs + 1, sizeof *sized);   /* the buffer's latest alloc is */
    plan_sizes *z = ml_xcalloc(1, sizeof *z);
    ml_vec_init(&z->ops, sizeof(size_t));
    ml_vec_init(&z->vals, sizeof(plan_sized));
    ml_vec dyn;
    ml_vec_init(&dyn, sizeof(plan_access));
    bool ok = true;
    for (size_t i = 0; i < p->n_ops && ok; i++) {
        const plan_op *op = &p->ops[i];
        if (op->kind == OP_ALLOC) {
            const sched_step *st = op->step;
            bool is = uses_rank(m, st->u.alloc.bytes) || uses_rank(m, st->u.alloc.count);
            ok = !is || op->u.alloc.chunks == 0;
            if (op->u.alloc.buf < n_bufs)
                sized[op->u.alloc.buf] = is;
            if (is)
                *(size_t *)ml_vec_push(&z->ops) = i;
            continue;
        }
        if (op->kind == OP_EXPECT_BEGIN) {
            ok = false;
        } else if (op->kind == OP_RELEASE) {
            ok = op->u.release.buf >= n_bufs || !sized[op->u.release.buf];
        } else {
            plan_access fixed[PLAN_FIXED_ACCESSES];
            const plan_access *acc;
            size_t n = plan_op_accesses(p, op, fixed, &acc, &dyn);
            for (size_t k = 0; k < n && ok; k++)
                ok = acc[k].v->buf >= n_bufs || !sized[acc[k].v->buf];
        }
    }
    ml_vec_free(&dyn);
    free(sized);
    if (!ok) {
        plan_sizes_free(z);
        return NULL;
    }
    return z;
}

plan_sizes *plan_sizes_new(const rank_plan *p, const sched_params *params, int let) {
    const sched *s = p->s;
    if (p->kept_at || p->absent || let < 0 || (uint32_t)let >= s->n_lets)
        return NULL;
    bool *replaced = ml_xcalloc(s->n_lets, sizeof *replaced);
    replaced_lets(s, params, replaced);
    int *on = ml_xmalloc(s->n_lets * sizeof *on);
    rank_memo m = {.on = on, .n_on = 0, .sizes = true};
    on[m.n_on++] = EXPR_SLOT_FIRST_LET + let;
    for (uint32_t k = (uint32_t)let + 1; k < s->n_lets; k++)
        if (replaced[k] || uses_any(&m, s->lets[k].value))
            on[m.n_on++] = EXPR_SLOT_FIRST_LET + (int)k;
    /* The let's slots have one value on every rank at every value: none of them names rank,
     * nor a let that does (p's ranks may share one expansion at this value, and a size of
     * `rank * (M - 1)` would tell them apart at another). The let itself is the caller's
     * constant; any other let a --set replaces is taken as naming rank. */
    int *ranked = ml_xmalloc((s->n_lets + 1) * sizeof *ranked);
    rank_memo rm = {.on = ranked, .n_on = 0};
    ranked[rm.n_on++] = EXPR_SLOT_RANK;
    for (uint32_t k = 0; k < s->n_lets; k++)
        if ((int)k != let && (replaced[k] || uses_any(&rm, s->lets[k].value)))
            ranked[rm.n_on++] = EXPR_SLOT_FIRST_LET + (int)k;
    bool alike = true;
    for (int j = 1; j < m.n_on && alike; j++)
        for (int q = 1; q < rm.n_on && alike; q++)
            alike = on[j] != ranked[q];
    free(ranked);
    free(replaced);
    const sched_plan *pl = &s->plans[p->plan_index];
    plan_sizes *z = NULL;
    if (alike && !steps_use_rank(&m, pl->steps, pl->n) && beside_plan_alike(s, params, &m))
        z = sized_allocs(p, &m);
    free(on);
    return z;
}

int plan_sizes_eval(plan_sizes *z, const rank_plan *p, const int64_t *slots) {
    const sched *s = p->s;
    size_t n_slots = sched_n_slots(s);
    int64_t *at = ml_xmalloc(n_slots * sizeof *at);
    memcpy(at, p->slots, n_slots * sizeof *at);
    memcpy(at + EXPR_SLOT_FIRST_LET, slots + EXPR_SLOT_FIRST_LET, s->n_lets * sizeof *slots);
    /* a tree's value, where no repeat index can change it: a capture's thousands of sizes are a
     * handful of trees (the loader shares one among the steps that write the same text) */
    struct {
        const expr *e;
        int64_t v;
    } memo[64] = {{0}};
    z->vals.n = 0;
    int rc = 0;
    for (size_t k = 0; k < z->ops.n && rc == 0; k++) {
        const plan_op *op = &p->ops[ML_VEC_AT(&z->ops, size_t, k)];
        const sched_step *st = op->step;
        const expr *e = st->u.alloc.count ? st->u.alloc.count : st->u.alloc.bytes;
        size_t h = ((uintptr_t)e >> 4) & 63;
        uint32_t esize = ml_dtypes[op->u.alloc.dtype].size;
        int64_t v;
        if (!s->n_index && memo[h].e == e) {
            v = memo[h].v;
        } else {
            expr_error err;
            plan_op_slots(p, op, at);
            if (expr_eval(e, at, &v, &err) != 0) {
                rc = -1;
                break;
            }
            memo[h].e = e;
            memo[h].v = v;
        }
        /* expand_alloc's arithmetic; its errors are plan_expand's to report */
        if (v < 0 || (st->u.alloc.count && (uint64_t)v > UINT64_MAX / esize))
            rc = -1;
        else if (st->u.alloc.count)
            *(plan_sized *)ml_vec_push(&z->vals) = (plan_sized){(uint64_t)v * esize, (uint64_t)v};
        else
            *(plan_sized *)ml_vec_push(&z->vals) = (plan_sized){(uint64_t)v, (uint64_t)v / esize};
    }
    free(at);
    return rc;
}

void plan_sizes_apply(const plan_sizes *z, rank_plan *p, const int64_t *slots) {
    memcpy(p->slots + EXPR_SLOT_FIRST_LET, slots + EXPR_SLOT_FIRST_LET,
           p->s->n_lets * sizeof *slots);
    for (size_t k = 0; k < z->ops.n; k++) {
        plan_op *op = &p->ops[ML_VEC_AT(&z->ops, size_t, k)];
        const plan_sized *v = &ML_VEC_AT(&z->vals, plan_sized, k);
        op->u.alloc.bytes = v->bytes;
        op->u.alloc.count = v->count;
    }
}

size_t plan_sizes_count(const plan_sizes *z) { return z->ops.n; }

void plan_sizes_free(plan_sizes *z) {
    if (!z)
        return;
    ml_vec_free(&z->ops);
    ml_vec_free(&z->vals);
    free(z);
}
