/* SPDX-License-Identifier: MIT */
/* floor.c — the memory floor of one rank's plan: the requested bytes that must be live at some
 * point by data dependence alone, whatever the schedule does with allocs, frees and syncs.
 *
 * Definition. A byte of buffer b is *needed* after op i when a later op reads it before any
 * later op overwrites it, or when b is still live at the end of the plan (the final buffers are
 * the schedule's result; after a release only the kept chunk is). An op *accesses* the views it
 * reads or writes. At each data op i (collective, copy, scale, compute, init, check; the op an
 * expect_error refuses does not run and is skipped) the bytes that must exist are
 *     B(i) = sum over buffers b of |needed_after_i(b) ∪ accessed_i(b)|  -  inplace(i)
 * where inplace(i) is what NCCL's in-place rule lets an out-of-place collective share:
 *   - ReduceScatter: the recv bytes, when this rank's slice of the send view (recv = send +
 *     rank*recvcount, where NCCL would write in place) is not needed after the op;
 *   - AllGather: the send bytes, when they are not needed after the op (they can live in the
 *     recv view's rank slice, where in-place AllGather reads them);
 *   - AllReduce, Broadcast, Reduce: the send bytes, when they are not needed after the op.
 * The floor is the maximum of B(i) over the data ops and of the needed bytes at the end.
 *
 * Overwrites: a collective's recv view, an init's and a copy's destination are overwritten
 * entirely. A compute's `writes` are *not* taken as overwrites: compute stands for user work
 * with no data effect (it may accumulate, as FSDP's gradient fold does), so its writes are
 * accesses only. scale reads and writes its view.
 *
 * B(i) never exceeds the requested bytes live at op i in a lint-clean plan (every byte counted
 * is inside a live buffer), so floor <= peak, and peak - floor is how far the plan is from what
 * its data flow allows. Needed bytes are kept as byte intervals per buffer, computed in one
 * backward pass; a buffer with more than FLOOR_MAX_RANGES disjoint needed ranges merges its
 * two closest (an over-estimate inside a live buffer, so still at most the peak). */
#include "predict/analyzer.h"
#include "base/checked.h"

#include <stdlib.h>
#include <string.h>

#define FLOOR_MAX_RANGES 32
#define FLOOR_AHEAD 8   /* ops: how far down the backward pass asks for ops ahead of use */

typedef struct {
    uint64_t lo, hi;   /* [lo, hi) in bytes */
} range;

typedef struct {
    range *r;
    uint32_t n, cap;
    uint64_t total;    /* sum of hi - lo */
} range_set;

static void set_clear(range_set *s) {
    s->n = 0;
    s->total = 0;
}

static void set_reserve(range_set *s, uint32_t n) {
    if (n <= s->cap)
        return;
    uint32_t cap = s->cap ? s->cap * 2 : 4;
    while (cap < n)
        cap *= 2;
    s->r = ml_xrealloc(s->r, cap * sizeof *s->r);
    s->cap = cap;
}

/* Merges the two ranges with the smallest gap (over-estimate, see above). */
static void set_squeeze(range_set *s) {
    uint32_t best = 0;
    for (uint32_t k = 1; k + 1 < s->n; k++)
        if (s->r[k + 1].lo - s->r[k].hi < s->r[best + 1].lo - s->r[best].hi)
            best = k;
    s->total += s->r[best + 1].lo - s->r[best].hi;
    s->r[best].hi = s->r[best + 1].hi;
    memmove(&s->r[best + 1], &s->r[best + 2], (s->n - best - 2) * sizeof *s->r);
    s->n--;
}

static void set_add(range_set *s, uint64_t lo, uint64_t hi) {
    if (lo >= hi)
        return;
    uint32_t k = 0;
    while (k < s->n && s->r[k].hi < lo)
        k++;
    uint32_t j = k;
    while (j < s->n && s->r[j].lo <= hi) {
        lo = s->r[j].lo < lo ? s->r[j].lo : lo;
        hi = s->r[j].hi > hi ? s->r[j].hi : hi;
        s->total -= s->r[j].hi - s->r[j].lo;
        j++;
    }
    /* ranges k..j-1 merge into one */
    if (j == k) {
        set_reserve(s, s->n + 1);
        memmove(&s->r[k + 1], &s->r[k], (s->n - k) * sizeof *s->r);
        s->n++;
    } else if (j > k + 1) {
        memmove(&s->r[k + 1], &s->r[j], (s->n - j) * sizeof *s->r);
        s->n -= j - k - 1;
    }
    s->r[k] = (range){lo, hi};
    s->total += hi - lo;
    if (s->n > FLOOR_MAX_RANGES)
        set_squeeze(s);
}

static void set_sub(range_set *s, uint64_t lo, uint64_t hi) {
    if (lo >= hi)
        return;
    uint32_t out = 0;
    range split = {0, 0};
    for (uint32_t k = 0; k < s->n; k++) {
        range r = s->r[k];
        if (r.hi <= lo || r.lo >= hi) {
            s->r[out++] = r;
            continue;
        }
        s->total -= r.hi - r.lo;
        if (r.lo < lo) {
            s->r[out++] = (range){r.lo, lo};
            s->total += lo - r.lo;
        }
        if (r.hi > hi)
            split = (range){hi, r.hi};   /* at most one range sticks out past hi */
    }
    s->n = out;
    if (split.hi > split.lo)
        set_add(s, split.lo, split.hi);
}

/* Bytes of [lo, hi) already in s. */
static uint64_t set_overlap(const range_set *s, uint64_t lo, uint64_t hi) {
    uint64_t n = 0;
    for (uint32_t k = 0; k < s->n; k++) {
        uint64_t a = s->r[k].lo > lo ? s->r[k].lo : lo, b = s->r[k].hi < hi ? s->r[k].hi : hi;
        if (a < b)
            n += b - a;
    }
    return n;
}

/* ---- one rank ---------------------------------------------------------------------------------*/

typedef struct {
    range_set *need;           /* by buffer symbol */
    uint32_t n_bufs;
    uint64_t total;            /* sum of need[b].total */
} floor_state;

static uint64_t view_lo(const plan_view *v) { return v->offset * ml_dtypes[v->dtype].size; }
static uint64_t view_hi(const plan_view *v) { return view_lo(v) + plan_view_bytes(v); }
static bool has_buf(const floor_state *f, const plan_view *v) {
    return v->buf != SCHED_NO_SYM && v->buf < f->n_bufs && v->count;
}

/* An access of a buffer (has_buf), its byte range computed once: the loops below look at each
 * access of an op several times, at every op of a million. */
typedef struct {
    uint32_t buf;
    bool read, overwrite;
    uint64_t lo, hi;   /* [lo, hi) in bytes */
} floor_access;

/* The accesses of acc[0..n) that touch a buffer, in order, into fa (room for n); how many. */
static size_t floor_accesses(const floor_state *f, const plan_access *acc, size_t n,
                             floor_access *fa) {
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (has_buf(f, acc[k].v))
            fa[m++] = (floor_access){acc[k].v->buf, acc[k].read, acc[k].overwrite,
                                     view_lo(acc[k].v), view_hi(acc[k].v)};
    return m;
}

/* |need(b) ∪ accessed(b)| - |need(b)| summed over the op's accesses (views of one buffer may
 * overlap each other: a scratch set per buffer keeps it exact). */
static uint64_t access_extra(floor_state *f, const floor_access *fa, size_t n,
                             range_set *scratch) {
    uint64_t extra = 0;
    for (size_t k = 0; k < n; k++) {
        /* alone: every view of this buffer in the op is this one's bytes (the common case: a
         * single view, or an in-place collective's send and recv): no scratch set needed */
        uint64_t lo = fa[k].lo, hi = fa[k].hi;
        bool first = true, alone = true;
        for (size_t j = 0; j < n; j++)
            if (j != k && fa[j].buf == fa[k].buf) {
                if (j < k)
                    first = false;
                else if (fa[j].lo != lo || fa[j].hi != hi)
                    alone = false;
            }
        if (!first)
            continue;
        const range_set *need = &f->need[fa[k].buf];
        if (alone) {
            ml_bytes_add(extra, (hi - lo) - set_overlap(need, lo, hi), &extra);
            continue;
        }
        set_clear(scratch);
        for (size_t j = k; j < n; j++)
            if (fa[j].buf == fa[k].buf)
                set_add(scratch, fa[j].lo, fa[j].hi);
        for (uint32_t r = 0; r < scratch->n; r++)
            ml_bytes_add(extra, (scratch->r[r].hi - scratch->r[r].lo) -
                                    set_overlap(need, scratch->r[r].lo, scratch->r[r].hi),
                         &extra);
    }
    return extra;
}

static bool needed(const floor_state *f, const plan_view *v, uint64_t lo, uint64_t hi) {
    return has_buf(f, v) && set_overlap(&f->need[v->buf], lo, hi) > 0;
}

/* What NCCL's in-place rule lets an out-of-place collective share (see the top comment). */
static uint64_t inplace_share(const floor_state *f, const plan_op *op, int rank) {
    const plan_view *s = &op->u.coll.send, *r = &op->u.coll.recv;
    if (op->u.coll.in_place || !has_buf(f, s) || !has_buf(f, r))
        return 0;
    /* A shard-of-rank collective (coll.h's data flow) runs in place with recv at the rank's slot
     * of send: only that slot can be shared. Every other one shares the whole send. */
    if (ml_colls[op->u.coll.coll].flow.shard_of_rank) {
        uint64_t slot = view_lo(s) + (uint64_t)rank * plan_view_bytes(r);
        return needed(f, s, slot, slot + plan_view_bytes(r)) ? 0 : plan_view_bytes(r);
    }
    return needed(f, s, view_lo(s), view_hi(s)) ? 0 : plan_view_bytes(s);
}

static void apply_accesses(floor_state *f, const floor_access *fa, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (fa[k].overwrite && !fa[k].read) {
            range_set *s = &f->need[fa[k].buf];
            f->total = ml_bytes_sub(f->total, s->total);
            set_sub(s, fa[k].lo, fa[k].hi);
            ml_bytes_add(f->total, s->total, &f->total);
        }
    for (size_t k = 0; k < n; k++)
        if (fa[k].read) {
            range_set *s = &f->need[fa[k].buf];
            f->total = ml_bytes_sub(f->total, s->total);
            set_add(s, fa[k].lo, fa[k].hi);
            ml_bytes_add(f->total, s->total, &f->total);
        }
}

/* ---- the forward facts: what is live at the end, which ops are refused ----------------------- */

typedef struct {
    bool live;
    uint64_t bytes;
    uint32_t chunks, keep;
    bool released;
} endbuf;

struct floor_forward {
    endbuf *b;          /* by buffer symbol */
    uint32_t n_bufs;
    bool *refused;      /* [n_ops]; NULL while no op is refused (the common case: no array) */
};

floor_forward *floor_forward_new(const rank_plan *p) {
    floor_forward *f = ml_xcalloc(1, sizeof *f);
    f->n_bufs = p->s->syms[SYM_BUFFER].n;
    f->b = ml_xcalloc(f->n_bufs + 1, sizeof *f->b);
    return f;
}

void floor_forward_op(floor_forward *f, const rank_plan *p, size_t i, bool refused) {
    const plan_op *op = &p->ops[i];
    if (refused) {
        if (!f->refused)
            f->refused = ml_xcalloc(p->n_ops, sizeof *f->refused);
        f->refused[i] = true;
    } else if (op->kind == OP_ALLOC && op->u.alloc.buf < f->n_bufs) {
        f->b[op->u.alloc.buf] = (endbuf){true, op->u.alloc.bytes, op->u.alloc.chunks, 0, false};
    } else if (op->kind == OP_FREE && op->u.free.buf < f->n_bufs) {
        f->b[op->u.free.buf].live = false;
    } else if (op->kind == OP_RELEASE && op->u.release.buf < f->n_bufs &&
               f->b[op->u.release.buf].chunks >= 2) {
        f->b[op->u.release.buf].released = true;
        f->b[op->u.release.buf].keep = op->u.release.keep;
    }
}

void floor_forward_free(floor_forward *f) {
    if (!f)
        return;
    free(f->b);
    free(f->refused);
    free(f);
}

/* The buffers live at the end are needed whole (after a release, only the kept chunk). */
static void end_state(const floor_forward *fw, floor_state *f) {
    for (uint32_t k = 0; k < f->n_bufs; k++) {
        const endbuf *b = &fw->b[k];
        if (!b->live)
            continue;
        uint64_t lo = 0, hi = b->bytes;
        if (b->released) {   /* the chunk cut of predict.c and the executor */
            uint64_t c = b->bytes / b->chunks + (b->bytes % b->chunks != 0);
            lo = (uint64_t)b->keep * c;
            hi = lo + c < b->bytes ? lo + c : b->bytes;
        }
        set_add(&f->need[k], lo, hi);
        ml_bytes_add(f->total, f->need[k].total, &f->total);
    }
}

uint64_t floor_rank(const rank_plan *p, size_t *at_op) {
    /* its own forward pass: the ops an expect_error wraps, as predict.c refuses them */
    floor_forward *fw = floor_forward_new(p);
    const sched_step *wrapped = NULL;
    for (size_t i = 0; i < p->n_ops; i++) {
        const plan_op *op = &p->ops[i];
        bool refused = wrapped && op->step == wrapped;
        if (!refused)
            wrapped = op->kind == OP_EXPECT_BEGIN ? op->step->u.expect_error.step : NULL;
        floor_forward_op(fw, p, i, refused);
    }
    uint64_t floor = floor_rank_after(p, fw, at_op);
    floor_forward_free(fw);
    return floor;
}

uint64_t floor_rank_after(const rank_plan *p, const floor_forward *fw, size_t *at_op) {
    floor_state f = {.n_bufs = p->s->syms[SYM_BUFFER].n};
    f.need = ml_xcalloc(f.n_bufs + 1, sizeof *f.need);
    const bool *refused = fw->refused;
    end_state(fw, &f);
    uint64_t best = f.total;
    size_t best_op = SIZE_MAX;
    range_set scratch = {0};
    floor_access *fa = NULL;   /* the op's accesses (floor_accesses), room for fa_cap */
    size_t fa_cap = 0;
    ml_vec dyn;
    ml_vec_init(&dyn, sizeof(plan_access));
    for (size_t i = p->n_ops; i-- > 0;) {
        const plan_op *op = &p->ops[i];
        /* backward over ~100 MB of ops at a million: the hardware's prefetch follows a rising
         * stream better than this falling one, so the op some steps down is asked for (a hint) */
        if (i >= FLOOR_AHEAD)
            __builtin_prefetch(&p->ops[i - FLOOR_AHEAD]);
        if (refused && refused[i])
            continue;
        if (op->kind == OP_ALLOC || op->kind == OP_FREE) {
            /* Before its alloc a buffer does not exist; after its free nothing of it is
             * needed: either way nothing of this name is needed across the op. */
            uint32_t b = op->kind == OP_ALLOC ? op->u.alloc.buf : op->u.free.buf;
            if (b < f.n_bufs) {
                f.total = ml_bytes_sub(f.total, f.need[b].total);
                set_clear(&f.need[b]);
            }
            continue;
        }
        plan_access fixed[PLAN_FIXED_ACCESSES];
        const plan_access *acc;
        size_t n = plan_op_accesses(p, op, fixed, &acc, &dyn);
        if (!n)
            continue;
        if (n > fa_cap) {
            fa_cap = n;
            fa = ml_xrealloc(fa, fa_cap * sizeof *fa);
        }
        size_t m = floor_accesses(&f, acc, n, fa);
        uint64_t here;
        ml_bytes_add(f.total, access_extra(&f, fa, m, &scratch), &here);
        if (op->kind == OP_COLL)
            here = ml_bytes_sub(here, inplace_share(&f, op, p->rank));
        if (here >= best) {
            best = here;
            best_op = i;
        }
        apply_accesses(&f, fa, m);
    }
    free(fa);
    for (uint32_t k = 0; k < f.n_bufs; k++)
        free(f.need[k].r);
    free(f.need);
    free(scratch.r);
    ml_vec_free(&dyn);
    if (at_op)
        *at_op = best_op;
    return best;
}
