/* SPDX-License-Identifier: MIT */
/* predict.c — live bytes of one rank after every op, in every view that is on (views.h), each
 * view's arithmetic in its own model (view_model.h).
 *
 * One pass replays the ops through every model and records the timeline, steady and peaks; a
 * second pass replays up to the peak ops to list the buffers live there (cheaper than keeping a
 * live set per op) and lets a model describe its state at its peaks (the torch view's segments).
 * Linear in ops, plus each model's own work (the device model's near-constant work per small
 * block, the caching allocator's ordered sets).
 *
 * The op(s) of the step an expect_error wraps are refused before they run: they change nothing,
 * and no model sees them. */
#include "predict/view_model.h"
#include "base/checked.h"
#include "base/pages.h"

#include <stdlib.h>
#include <string.h>

/* The model of each view; the order is views.h's. */
static const pred_view_model *const models[MV_COUNT] = {
    [MV_REQUESTED] = &pred_view_requested,
    [MV_DEVICE] = &pred_view_device,
    [MV_TORCH] = &pred_view_torch,
};

bool pred_view_on(const rank_plan *p, ml_view_id v) {
    return !ml_views[v].optional || (v == MV_TORCH && p->torch.on);
}

/* Skips the ops of a refused step: the op after an expect_error's marker. */
typedef struct {
    const sched_step *refused;
} refusal;

static bool refused(refusal *r, const plan_op *op) {
    if (r->refused && op->step == r->refused)
        return true;
    r->refused = op->kind == OP_EXPECT_BEGIN ? op->step->u.expect_error.step : NULL;
    return false;
}

typedef struct {
    void *st[MV_COUNT];
    bool on[MV_COUNT];
} replay;

static int replay_open(replay *r, const rank_plan *p, const bool *on, ml_diags *d) {
    memset(r, 0, sizeof *r);
    for (int v = 0; v < MV_COUNT; v++) {
        r->on[v] = on[v];
        if (on[v] && !(r->st[v] = models[v]->open(p, d)))
            return -1;
    }
    return 0;
}

static void replay_close(replay *r) {
    for (int v = 0; v < MV_COUNT; v++)
        if (r->st[v])
            models[v]->close(r->st[v]);
}

static int replay_op(replay *r, const rank_plan *p, size_t i, uint64_t *live, ml_diags *d) {
    for (int v = 0; v < MV_COUNT; v++)
        if (r->on[v] && models[v]->apply(r->st[v], p, i, live, d) < 0)
            return -1;
    return 0;
}

/* ---- Buffers live at a peak ------------------------------------------------------------------ */

typedef struct {
    bool *live;
    size_t *alloc_op;
    uint32_t n;
} live_set;

static int cmp_alloc_op(const void *x, const void *y, void *ctx) {
    const size_t *at = ctx;
    size_t a = at[*(const uint32_t *)x], b = at[*(const uint32_t *)y];
    return a < b ? -1 : a > b;
}

static void live_apply(live_set *ls, const plan_op *op, size_t i) {
    if (op->kind == OP_ALLOC) {
        ls->live[op->u.alloc.buf] = true;
        ls->alloc_op[op->u.alloc.buf] = i;
    } else if (op->kind == OP_FREE) {
        ls->live[op->u.free.buf] = false;
    }
}

static void live_snapshot(const live_set *ls, uint32_t **out, uint32_t *n) {
    uint32_t count = 0;
    for (uint32_t k = 0; k < ls->n; k++)
        count += ls->live[k];
    uint32_t *syms = ml_xmalloc((count ? count : 1) * sizeof *syms);
    count = 0;
    for (uint32_t k = 0; k < ls->n; k++)
        if (ls->live[k])
            syms[count++] = k;
    qsort_r(syms, count, sizeof *syms, cmp_alloc_op, ls->alloc_op);
    *out = syms;
    *n = count;
}

static int cmp_series_by_op(const void *x, const void *y, void *ctx) {
    const size_t *op = ctx;
    size_t a = op[*(const int *)x], b = op[*(const int *)y];
    return a < b ? -1 : a > b ? 1 : *(const int *)x - *(const int *)y;
}

/* Replays up to each series' peak op, in op order, and lists the buffers live there; models
 * with details at their peaks describe them. */
static int peak_sets(const rank_plan *p, pred_rank *out, ml_diags *d) {
    int order[VIEW_COUNT], n = 0;
    for (int v = 0; v < VIEW_COUNT; v++)
        if (out->on[ml_series[v].view] && out->peak_op[v] != SIZE_MAX)
            order[n++] = v;
    qsort_r(order, (size_t)n, sizeof *order, cmp_series_by_op, out->peak_op);
    bool detail[MV_COUNT] = {false};
    for (int v = 0; v < MV_COUNT; v++)
        detail[v] = out->on[v] && models[v]->at_peak;
    replay r;
    if (replay_open(&r, p, detail, d) < 0) {
        replay_close(&r);
        return -1;
    }
    live_set ls = {ml_xcalloc(p->s->syms[SYM_BUFFER].n + 1, sizeof(bool)),
                   ml_xcalloc(p->s->syms[SYM_BUFFER].n + 1, sizeof(size_t)), p->s->syms[SYM_BUFFER].n};
    refusal rf = {NULL};
    uint64_t scratch[VIEW_COUNT];
    size_t next = 0;
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        int v = order[k];
        for (; next <= out->peak_op[v] && rc == 0; next++) {
            if (refused(&rf, &p->ops[next]))
                continue;
            live_apply(&ls, &p->ops[next], next);
            rc = replay_op(&r, p, next, scratch, d);
        }
        live_snapshot(&ls, &out->peak_live[v], &out->n_peak_live[v]);
        ml_view_id view = ml_series[v].view;
        if (detail[view])
            models[view]->at_peak(r.st[view], (ml_mem_view)v, out);
    }
    free(ls.live);
    free(ls.alloc_op);
    replay_close(&r);
    return rc;
}

/* "FILE:L:C: error: live requested bytes on rank 0 exceed 2^63-1 at alloc 'b'": the bound of
 * every byte count (base/checked.h), at the op that crossed it. */
static void bytes_overflow(const rank_plan *p, size_t i, const char *what, ml_diags *d) {
    const plan_op *op = &p->ops[i];
    char at[200];
    if (op->kind == OP_ALLOC)
        snprintf(at, sizeof at, "alloc '%s'", p->s->syms[SYM_BUFFER].names[op->u.alloc.buf]);
    else
        snprintf(at, sizeof at, "op %zu (%s)", plan_own_index(p, i),   /* the rank's own */
                 op->kind == OP_COLL ? ml_colls[op->u.coll.coll].name : plan_op_names[op->kind]);
    /* at the alloc's size, whose bytes crossed it; another op at its step */
    ml_mark m = op->kind == OP_ALLOC ? sched_part_mark(p->s, op->step, SCHED_AT_SIZE)
                                     : plan_op_mark(op);
    ml_error(d, p->s->file, m, "%s%s bytes on rank %d exceed %s at %s",
             strcmp(what, "floor") ? "live " : "", what, p->rank, ML_BYTES_MAX_TEXT, at);
}

/* ---- The prediction --------------------------------------------------------------------------- */

int predict_rank(const rank_plan *p, pred_rank *out, ml_diags *d) {
    return predict_rank_with(p, true, out, d);
}

int predict_rank_with(const rank_plan *p, bool timeline, pred_rank *out, ml_diags *d) {
    return predict_rank_forward(p, timeline ? PRED_TIMELINE : 0, out, NULL, NULL, d);
}

/* The floor of p from its forward facts, with the bound every byte count has: 0, or -1 with
 * the error in d and out freed. rec: fw, recording for the other ranks what vary says
 * (floor_rank_record); NULL: not. */
static int floor_of(const rank_plan *p, const floor_forward *fw, floor_forward *rec,
                    const floor_vary *vary, pred_rank *out, ml_diags *d) {
    size_t floor_op = 0;
    out->floor = rec ? floor_rank_record(p, rec, vary->ops, vary->n, &floor_op)
                     : floor_rank_after(p, fw, &floor_op);
    if (out->floor > ML_BYTES_MAX) {
        bytes_overflow(p, floor_op < p->n_ops ? floor_op : p->n_ops - 1, "floor", d);
        pred_rank_free(out);
        return -1;
    }
    return 0;
}

int predict_rank_forward(const rank_plan *p, unsigned what, pred_rank *out, floor_forward **keep,
                         const floor_vary *vary, ml_diags *d) {
    if (keep)
        *keep = NULL;
    memset(out, 0, sizeof *out);
    out->rank = p->rank;
    for (int v = 0; v < MV_COUNT; v++)
        out->on[v] = pred_view_on(p, (ml_view_id)v);
    for (int v = 0; v < VIEW_COUNT; v++)
        out->peak_op[v] = SIZE_MAX;
    if (what & PRED_TIMELINE) {
        out->timeline = ml_xmalloc((p->n_ops ? p->n_ops : 1) * sizeof *out->timeline);
        out->n_timeline = p->n_ops;
        ml_prefault(out->timeline, out->timeline + p->n_ops);   /* every point is written next */
    }
    replay r;
    int rc = replay_open(&r, p, out->on, d);
    for (int v = 0; v < MV_COUNT && rc == 0 && (what & PRED_NUMBERS_ONLY); v++)
        if (r.st[v] && models[v]->numbers_only)
            models[v]->numbers_only(r.st[v]);
    /* A bounded view's hardware peak lies between the highest lower bound and the highest upper
     * bound over all ops; both equal the model's peak wherever it is exact. */
    uint64_t lo_max[MV_COUNT] = {0}, hi_max[MV_COUNT] = {0};
    uint64_t live[VIEW_COUNT] = {0};
    refusal rf = {NULL};
    uint32_t kinds = 0;   /* the op kinds some model that is on reacts to */
    for (int v = 0; v < MV_COUNT; v++)
        if (out->on[v])
            kinds |= models[v]->kinds ? models[v]->kinds : UINT32_MAX;
    /* the floor's forward facts (floor_forward_op: refused ops, allocs, frees, releases) come
     * from this pass rather than one of the floor's own */
    floor_forward *fw = floor_forward_new(p);
    const uint32_t floor_kinds = PRED_KIND(OP_ALLOC) | PRED_KIND(OP_FREE) | PRED_KIND(OP_RELEASE);
    for (size_t i = 0; i < p->n_ops && rc == 0; i++) {
        plan_first_colls_add(&out->colls, &p->ops[i]);   /* for plan_compact_with */
        bool skip = refused(&rf, &p->ops[i]);
        if (skip || floor_kinds & PRED_KIND(p->ops[i].kind))
            floor_forward_op(fw, p, i, skip);
        /* An op no model reacts to changes no state: live, peaks and bounds stay as after op
         * i - 1 (op 0 always runs: it takes the bounds of the models' first state). */
        if (i > 0 && !(kinds & PRED_KIND(p->ops[i].kind))) {
            if (out->timeline) {
                out->timeline[i].op = i;
                memcpy(out->timeline[i].live, live, sizeof live);
            }
            continue;
        }
        if (!skip)
            rc = replay_op(&r, p, i, live, d);
        for (int v = 0; v < VIEW_COUNT && rc == 0; v++)
            if (live[v] > ML_BYTES_MAX) {   /* the models' sums saturate there (checked.h) */
                bytes_overflow(p, i, ml_series[v].name, d);
                rc = -1;
            }
        if (rc < 0)
            break;
        if (out->timeline) {
            pred_point *pt = &out->timeline[i];
            pt->op = i;
            memcpy(pt->live, live, sizeof pt->live);
        }
        for (int v = 0; v < VIEW_COUNT; v++) {
            if (live[v] > out->peak[v]) {
                out->peak[v] = live[v];
                out->peak_op[v] = i;
            }
        }
        for (int v = 0; v < MV_COUNT; v++) {
            if (!r.on[v] || !models[v]->bounds)
                continue;
            uint64_t lo, hi;
            models[v]->bounds(r.st[v], &lo, &hi);
            lo_max[v] = lo > lo_max[v] ? lo : lo_max[v];
            hi_max[v] = hi > hi_max[v] ? hi : hi_max[v];
        }
    }
    for (int v = 0; v < MV_COUNT && rc == 0; v++)
        if (r.on[v] && models[v]->finish)
            models[v]->finish(r.st[v], out);
    replay_close(&r);
    if (rc < 0) {
        floor_forward_free(fw);
        pred_rank_free(out);
        return -1;
    }
    for (int v = 0; v < VIEW_COUNT; v++) {
        ml_view_id view = ml_series[v].view;
        out->steady[v] = live[v];
        bool bounded = out->on[view] && models[view]->bounds;
        out->peak_lo[v] = bounded ? lo_max[view] : out->peak[v];
        out->peak_hi[v] = bounded ? hi_max[view] : out->peak[v];
        out->exact[v] = out->peak_lo[v] == out->peak_hi[v];
        if (out->exact[v])
            out->peak_lo[v] = out->peak_hi[v] = out->peak[v];
    }
    if (!(what & PRED_NUMBERS_ONLY) && peak_sets(p, out, d) < 0) {
        floor_forward_free(fw);
        pred_rank_free(out);
        return -1;
    }
    rc = floor_of(p, fw, keep && vary ? fw : NULL, vary, out, d);
    if (rc == 0 && keep)
        *keep = fw;
    else
        floor_forward_free(fw);
    return rc;
}

static pred_torch *torch_copy(const pred_torch *t) {
    if (!t)
        return NULL;
    pred_torch *c = ml_xmalloc(sizeof *c);
    *c = *t;
    for (int k = 0; k < 2; k++) {
        size_t n = t->at[k].n_segments;
        c->at[k].segments = ml_xmalloc((n ? n : 1) * sizeof(pred_segment));
        if (n)
            memcpy(c->at[k].segments, t->at[k].segments, n * sizeof(pred_segment));
    }
    return c;
}

int predict_rank_shared(const rank_plan *p, const pred_rank *same, const floor_forward *fw,
                        pred_rank *out, ml_diags *d) {
    /* Everything predict_rank computes comes from the ops alone, except what names the rank;
     * of an op's values the views' offsets and the in-place flags are the floor's alone (the
     * models replay allocs, frees, releases, streams and events; the time model reads counts,
     * dtypes and streams). So the floor's backward pass is p's own (NCCL's in-place slot is the
     * rank's, and so are the offsets; where same's pass recorded it, only the ops that may differ
     * are redone: floor_rank_record); its forward facts (refused ops, allocs' bytes and chunks,
     * frees, releases) are those of same's plan, whose ops are p's but for those values. */
    *out = *same;
    out->rank = p->rank;
    for (int v = 0; v < VIEW_COUNT; v++) {
        uint32_t n = same->n_peak_live[v];
        out->peak_live[v] = same->peak_live[v] ? ml_xcalloc(n ? n : 1, sizeof(uint32_t)) : NULL;
        if (n)
            memcpy(out->peak_live[v], same->peak_live[v], n * sizeof(uint32_t));
    }
    out->torch = torch_copy(same->torch);
    pred_point *borrowed = out->timeline;
    out->timeline = NULL;   /* same's: not freed if floor_of fails */
    if (floor_of(p, fw, NULL, NULL, out, d) != 0)
        return -1;
    out->timeline = borrowed;
    return 0;
}

void pred_rank_free(pred_rank *r) {
    if (!r)
        return;
    free(r->timeline);
    for (int v = 0; v < VIEW_COUNT; v++)
        free(r->peak_live[v]);
    if (r->torch) {
        free(r->torch->at[0].segments);
        free(r->torch->at[1].segments);
        free(r->torch);
    }
    memset(r, 0, sizeof *r);
}
