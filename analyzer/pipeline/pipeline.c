/* SPDX-License-Identifier: MIT */
/* pipeline.c — load → expand → lint → predict → expect, for every file and plan (pipeline.h). */
#include "pipeline/pipeline.h"
#include "predict/timemodel.h"

#include <stdlib.h>
#include <string.h>

void pipeline_opts_default(pipeline_opts *o) {
    memset(o, 0, sizeof *o);
    o->predict = true;
    o->expect = true;
    o->timeline = true;
    o->keep_plans = true;
    o->share_offsets = true;
    o->details = true;
    lint_options_default(&o->lint);
}

/* predict_rank_forward's what for o. */
static unsigned pred_what(const pipeline_opts *o) {
    return (o->timeline ? PRED_TIMELINE : 0u) | (o->details ? 0u : PRED_NUMBERS_ONLY);
}

/* The prediction and expectations of it, freed (pipeline_item_free's part). */
static void item_unpredict(pipeline_item *it) {
    if (it->pred) {
        /* a rank's timeline may be an earlier rank's, its base's (predict_rank_shared): freed
         * with that rank's, so left out here (last rank first: the earlier ones still hold
         * theirs) */
        for (int r = it->world - 1; r > 0; r--)
            for (int b = 0; b < r && it->pred[r].timeline; b++)
                if (it->pred[b].timeline == it->pred[r].timeline)
                    it->pred[r].timeline = NULL;
        for (int r = 0; r < it->world; r++)
            pred_rank_free(&it->pred[r]);
    }
    free(it->pred);
    free(it->expects);
    it->pred = NULL;
    it->expects = NULL;
    it->n_expects = 0;
    it->expect_failures = -1;
}

void pipeline_item_free(pipeline_item *it) {
    if (it->plans)
        for (int r = 0; r < it->world; r++)
            plan_free(&it->plans[r]);
    item_unpredict(it);
    free(it->plans);
    free(it->vary);
    lint_result_free(&it->lint);
    memset(it, 0, sizeof *it);
}

void pipeline_result_free(pipeline_result *r) {
    for (size_t k = 0; k < r->items.n; k++)
        pipeline_item_free(&ML_VEC_AT(&r->items, pipeline_item, k));
    for (size_t k = 0; k < r->scheds.n; k++)
        sched_free(ML_VEC_AT(&r->scheds, sched *, k));
    ml_vec_free(&r->items);
    ml_vec_free(&r->scheds);
    ml_diags_free(&r->diags);
    memset(r, 0, sizeof *r);
}

/* The time model's totals for one rank (timemodel.h): the schedule's `link:`, then --link. A
 * shared rank copies rank 0's with the rest of its prediction (predict_rank_shared). */
static int predict_time(const rank_plan *p, const pipeline_opts *o, pred_rank *out,
                        ml_diags *d) {
    tm_link l;
    tm_link_default(&l);
    if (tm_link_from_sched(p, &l, d))
        return -1;
    char err[200];
    if (o->link && tm_link_parse(o->link, &l, err, sizeof err)) {
        ml_mark top = {.line = 1, .col = 1};
        ml_error(d, p->s->file, top, "%s", err);   /* the CLI checks --link first */
        return -1;
    }
    tm_result t;
    if (tm_predict(p, &l, false, &t, d))
        return -1;
    out->timed = true;
    out->step_us = t.step_us;
    out->comm_us = t.comm_us;
    out->exposed_comm_us = t.exposed_comm_us;
    return 0;
}

/* The file's expectations against every rank's prediction (pipeline_predict's last part). */
static int pipeline_expect(pipeline_item *it, const sched_params *p, ml_diags *d) {
    int failures = expect_eval(it->s, it->plan_index, p, it->world, it->pred, &it->expects,
                               &it->n_expects, d);
    if (failures < 0)
        return -1;
    it->expect_failures = it->n_expects ? failures : -1;
    return 0;
}

int pipeline_predict(pipeline_item *it, const sched_params *p, const pipeline_opts *o,
                     ml_diags *d) {
    it->pred = ml_xcalloc((size_t)it->world, sizeof *it->pred);
    bool one = it->shared || it->moved;   /* rank 0's prediction serves every rank */
    floor_forward *fw = NULL;              /* and its floor facts (predict_rank_shared) */
    /* what the other ranks' ops have otherwise: nothing (shared), some offsets (moved) */
    floor_vary vary = {it->vary, it->n_vary};
    int rc = 0;
    for (int r = 0; r < it->world && rc == 0; r++) {
        rank_plan *pl = &it->plans[r];
        if (one && r > 0)
            rc = predict_rank_shared(pl, &it->pred[0], fw, &it->pred[r], d);
        else if (predict_rank_forward(pl, pred_what(o), &it->pred[r], one ? &fw : NULL,
                                      it->shared || it->vary ? &vary : NULL, d) != 0 ||
                 predict_time(pl, o, &it->pred[r], d) != 0)
            rc = -1;
    }
    floor_forward_free(fw);
    if (rc != 0)
        return -1;
    return o->expect ? pipeline_expect(it, p, d) : 0;
}

/* The ops of a rank that a report names (report_json.c, report_text.c, report_csv.c, gate.c):
 * each series' peak step and the torch segment order's steps. Into keep; returns how many. */
enum { PIPELINE_KEPT_MAX = VIEW_COUNT + 3 };
static size_t reported_ops(const pred_rank *pr, size_t keep[PIPELINE_KEPT_MAX]) {
    size_t n = 0;
    for (int v = 0; v < VIEW_COUNT; v++)
        keep[n++] = pr->peak_op[v];
    if (pr->torch) {
        keep[n++] = pr->torch->order.tie_op;
        keep[n++] = pr->torch->order.diff_op;
        keep[n++] = pr->torch->order.oom_op;
    }
    return n;
}

/* Appends src's diagnostics to d, in order, as if they had been added to d directly. */
static void diags_append(ml_diags *d, const ml_diags *src) {
    for (size_t k = 0; k < src->items.n; k++) {
        const ml_diag *g = &ML_VEC_AT(&src->items, ml_diag, k);
        ml_diag_add(d, g->level, g->file, g->mark, g->rank, g->code, "%s", g->text);
    }
}

/* The end of both compact paths, as the full path ends: an expansion's error alone (rc != 0),
 * else lint's verdict over every rank (lint_walk_end), then the predictions' diagnostics (pd,
 * freed here) and the expectations. compact_rank0: rank 0's plan is compacted once the walk's
 * messages have read it. Returns the plan's outcome, 0 or -1. */
static int compact_end(pipeline_item *it, lint_walk *w, int rc, bool predicted, ml_diags *pd,
                       bool compact_rank0, const sched_params *pw, const pipeline_opts *o,
                       ml_diags *d) {
    if (rc != 0) {
        lint_walk_free(w);
        lint_result_free(&it->lint);
    } else {
        bool failed = lint_walk_end(w, it->plans, true, d) != 0;
        if (compact_rank0) {
            size_t keep[PIPELINE_KEPT_MAX];
            plan_compact_with(&it->plans[0], keep, reported_ops(&it->pred[0], keep),
                              &it->pred[0].colls, NULL);
        }
        if (failed) {
            rc = -1;
        } else {
            diags_append(d, pd);
            rc = !predicted ? -1 : o->expect ? pipeline_expect(it, pw, d) : 0;
        }
    }
    ml_diags_free(pd);
    return rc;
}

/* The compact path (pipeline_opts.keep_plans false, ranks that expand differently): one rank at
 * a time, expanded into the op array the rank before gave back, linted (lint_walk) and predicted
 * while its ops are there, then compacted to the few ops its report names (plan_compact keeps
 * what the report reads of the rest: the first use of each collective, a timed compute). The
 * outcome is the full path's: the same walk over the same ops in the same rank order; the
 * predictions' diagnostics are held back until the lint has passed, where the full path makes
 * them. Where lint must read ops again, the ranks compacted are expanded again first: all of
 * them when a rank has a send or recv (pairing reads every op; from that rank on nothing is
 * compacted), rank 0 when a rank's collectives diverge from its own (the messages name them).
 * Memory: one op array at a time instead of world (a million ops is ~100 MB), whose pages are
 * not faulted in again for each rank. */
static int plan_rank_by_rank(const sched *s, const sched_params *pw, const pipeline_opts *o,
                             pipeline_item *it, ml_diags *d) {
    int world = it->world;
    plan_recycle spare = {0};
    plan_limits lim = {.recycle = &spare};
    ml_diags pd;   /* the predictions' */
    ml_diags_init(&pd);
    it->pred = ml_xcalloc((size_t)world, sizeof *it->pred);
    lint_walk *w = lint_walk_new(s, world, &o->lint, &it->lint);
    bool predicted = true, p2p = false;
    int compacted = 0;   /* ranks [0, compacted) were */
    int rc = 0;
    for (int r = 0; r < world; r++) {
        rank_plan *pl = &it->plans[r];
        if (r > 0 && plan_expand(s, it->plan_index, pw, world, r, &lim, pl, d) != 0) {
            rc = -1;
            break;
        }
        lint_walk_rank(w, pl);
        p2p |= pl->has_p2p;
        predicted = predicted &&
                    predict_rank_forward(pl, pred_what(o), &it->pred[r], NULL, NULL, &pd) == 0 &&
                    predict_time(pl, o, &it->pred[r], &pd) == 0;
        if (!p2p) {
            size_t keep[PIPELINE_KEPT_MAX];
            /* the summary for rank 0's, the one the report reads (report_text.c,
             * report_json.c: the time line, the communication model) */
            if (r == 0)
                plan_compact_with(pl, keep, reported_ops(&it->pred[r], keep), &it->pred[r].colls,
                                  &spare);
            else
                plan_compact(pl, keep, reported_ops(&it->pred[r], keep), false, &spare);
            compacted = r + 1;
        }
    }
    free(spare.ops);
    free(spare.extra);
    int again = 0;   /* ranks [0, again) to expand again */
    if (rc == 0 && p2p)
        again = compacted;
    else if (rc == 0 && compacted > 0 && lint_walk_needs_rank0(w))
        again = 1;
    for (int r = 0; rc == 0 && r < again; r++) {
        plan_free(&it->plans[r]);
        rc = plan_expand(s, it->plan_index, pw, world, r, NULL, &it->plans[r], d);
    }
    return compact_end(it, w, rc, predicted, &pd, false, pw, o, d);
}

/* A subset member's absent ops (plan_shapes_absent) and, once its first rank has run it, the
 * time model's totals, which every rank with those absent ops shares: the time model reads
 * counts, dtypes, streams, events and compute times, no offset (predict_rank_shared).
 *
 * Where no absent compute has a time (plan_absent_timed false) the totals are the base's. Such
 * a compute lasts 0 (tm_op_duration) and pushes no interval (iv_push drops an empty one); all
 * it does is ready[s] = max(ready[s], host), host then h. Say ready[s] is A with it and B
 * without: A = max(B, h) holds after it, and every later op keeps it, because host never falls
 * below h: a stream op starts at max(ready[s], host) (the same on both, so ready[s] is equal
 * after it), a record and a sync take max(ready[s], host) too, a wait sets ready[s] =
 * max(ready[s], event) (max(B, e, h) = max(max(B, e), h)) and its span is over max(ready[s],
 * host) (equal where A > that start, as A = B there), and the step is max(ready..., host).
 * Every total is one of those values. */
typedef struct {
    plan_absent *a;
    bool timed;
    double step_us, comm_us, exposed_comm_us;
} group_subset;

/* One group's base (plan_rank_offsets): the rank whose expansion is in the op array, the
 * entries that rewrite it into each later rank of its shape, and its floor's forward facts. */
typedef struct {
    rank_plan *plan;
    int rank;
    plan_offsets *po;         /* NULL: the next rank has another shape (next_joins) */
    bool own_po;              /* po is the group's (plan_shapes_offsets), else the caller's */
    floor_forward *fw;        /* its floor facts: its members' (predict_rank_shared) */
    ml_vec subsets;           /* group_subset: the absent ops its subset members had so far */
    const plan_absent *applied;     /* those OP_ABSENT in the array now, or NULL */
} group_base;

/* True when rank b + 1 joins b's group: it has b's shape, or (subsets: the fast case is on) a
 * shape within b's (a subset member: group_member); a base followed by another shape has no
 * members. */
static bool next_joins(const plan_shapes *sh, int b, int world, bool subsets) {
    return b + 1 < world && (plan_shape(sh, b + 1) == plan_shape(sh, b) ||
                             (subsets && plan_shape_within(sh, b + 1, b)));
}

/* Base g's lint and full prediction, with the floor record its members redo only the moved
 * ops of (the vary set: its entries' ops, and where a later rank's shape is within g's, the
 * ops of g's `when:`s that name rank, which such a rank lacks: plan_when_ops); a base
 * without members needs none. */
static bool group_base_predict(group_base *g, const plan_shapes *sh, bool subsets, lint_walk *w,
                               const pipeline_opts *o, pipeline_item *it, bool predicted,
                               ml_diags *pd) {
    lint_walk_rank(w, g->plan);
    floor_vary vary = {NULL, 0};
    size_t *merged = NULL;
    if (g->po)
        vary.ops = plan_offsets_ops(g->po, &vary.n);
    bool later = false;
    for (int r = g->rank + 1; sh && subsets && g->po && r < it->world && !later; r++)
        later = plan_shape_within(sh, r, g->rank);
    if (later) {
        merged = plan_when_ops(g->plan, vary.ops, vary.n, &vary.n);
        vary.ops = merged;
    }
    bool ok = predicted &&
              predict_rank_forward(g->plan, pred_what(o), &it->pred[g->rank], g->po ? &g->fw : NULL,
                                   g->po ? &vary : NULL, pd) == 0 &&
              predict_time(g->plan, o, &it->pred[g->rank], pd) == 0;
    free(merged);
    return ok;
}

/* The array holds a's ops as OP_ABSENT and no others (a NULL: none). */
static void group_absent_set(group_base *g, const plan_absent *a) {
    if (g->applied == a)
        return;
    if (g->applied)
        plan_absent_restore(g->applied, g->plan);
    if (a)
        plan_absent_apply(a, g->plan);
    g->applied = a;
}

/* Rank r of g's shape (a NULL), or of a shape within it whose absent ops a are (sub): g's op
 * array rewritten in place into r's (plan_offsets_apply: only the offsets that name rank, and
 * the in-place flags; a's ops OP_ABSENT), r predicted from g's prediction
 * (predict_rank_shared; a subset member's time model its own, or the rank's before with the
 * same absent ops), linted on its own ops (lint_walk_rank_moved: the checks of the buffers the
 * moved views and the absent ops touch, the base's verdict for the rest, the whole walk where
 * that is unsure) and its kept ops copied out (plan_compact, in its own indices). An offset
 * that fails is r's expansion error (in d), and -1. */
static int group_member(group_base *g, group_subset *sub, lint_walk *w, int r,
                        const pipeline_opts *o, pipeline_item *it, bool *predicted,
                        ml_diags *pd, ml_diags *d) {
    const plan_absent *a = sub ? sub->a : NULL;
    group_absent_set(g, a);
    rank_plan *pl = &it->plans[r];
    plan_share(g->plan, r, pl);   /* with the absent ranges, where a's are set */
    if (plan_offsets_apply(g->po, pl, r, d) != 0)
        return -1;
    /* the floor redoes the ops the offsets moved (floor_rank_shared) while they are in cache,
     * before the lint's walk; the two read the ops and nothing else of each other (the
     * predictions' diagnostics wait in pd) */
    pred_rank *pr = &it->pred[r];
    *predicted = *predicted && predict_rank_shared(pl, &it->pred[g->rank], g->fw, pr, pd) == 0;
    if (sub && *predicted && !plan_absent_timed(sub->a)) {
        /* the base's totals, copied with its prediction (group_subset says why) */
    } else if (sub && *predicted && sub->timed) {
        pr->step_us = sub->step_us;
        pr->comm_us = sub->comm_us;
        pr->exposed_comm_us = sub->exposed_comm_us;
    } else if (sub && *predicted) {
        *predicted = predict_time(pl, o, pr, pd) == 0;
        *sub = (group_subset){sub->a, *predicted, pr->step_us, pr->comm_us, pr->exposed_comm_us};
    }
    size_t n_moved;
    const size_t *moved = plan_offsets_ops(g->po, &n_moved);
    lint_walk_rank_moved(w, pl, moved, n_moved);   /* the absent ops' buffers too (lint.c) */
    size_t keep[PIPELINE_KEPT_MAX];
    size_t n_keep = reported_ops(pr, keep);   /* the array's indices, the plan's own next */
    for (int v = 0; v < VIEW_COUNT; v++)
        pr->peak_op[v] = plan_own_index(pl, pr->peak_op[v]);
    plan_compact(pl, keep, n_keep, false, NULL);
    it->subset_members += sub != NULL;
    return 0;
}

/* group_member's subset entry for rank r (plan_shapes_absent; the one an earlier member had
 * where r's absent ops are its), or NULL where r is not a subset member of g. */
static group_subset *group_subset_of(group_base *g, const plan_shapes *sh, int r) {
    for (size_t k = 0; k < g->subsets.n; k++) {
        group_subset *gs = &ML_VEC_AT(&g->subsets, group_subset, k);
        if (plan_absent_fits(gs->a, sh, r))
            return gs;
    }
    group_absent_set(g, NULL);   /* it reads the ops' kinds */
    plan_absent *a = plan_shapes_absent(sh, g->plan, g->po, r);
    if (!a)
        return NULL;
    group_subset *gs = ml_vec_push(&g->subsets);
    *gs = (group_subset){.a = a};
    return gs;
}

/* The array is g's own again (its values held once: a second evaluation cannot fail). */
static void group_base_restore(group_base *g, ml_diags *d) {
    group_absent_set(g, NULL);
    if (g->po && plan_offsets_apply(g->po, g->plan, g->rank, d) != 0)
        ml_internal_error("rank %d's view offsets failed on their second evaluation", g->rank);
}

static void group_base_free(group_base *g) {
    floor_forward_free(g->fw);
    g->fw = NULL;
    if (g->own_po)
        plan_offsets_free(g->po);
    g->po = NULL;
    for (size_t k = 0; k < g->subsets.n; k++)
        plan_absent_free(ML_VEC_AT(&g->subsets, group_subset, k).a);
    ml_vec_free(&g->subsets);
}

/* A group's base: rank r, expanded into plan. */
static group_base group_base_new(rank_plan *plan, int r) {
    group_base g = {.plan = plan, .rank = r};
    ml_vec_init(&g.subsets, sizeof(group_subset));
    return g;
}

/* The middle path (compact, as plan_rank_by_rank): ranks whose ops are their shape's first
 * rank's (its base) but for views' offsets and in-place flags (plan_offsets_new: rank moves an
 * FSDP or ZeRO shard's view and nothing else, one shape; plan_shapes_new: also `when:`s that
 * name rank, `when: rank == 0`, one shape per list of their truth values). The ranks are taken
 * in order 0..world-1, as plan_rank_by_rank takes them. A base is expanded into the one op
 * array, linted and predicted; each later rank of its shape (group_member) has the array
 * rewritten in place into its ops (plan_offsets_apply: only the offsets that name rank), is
 * linted on it (lint_walk_rank_moved: bounds, races, in-place overlap and the cross-rank
 * contract see its real offsets) and its kept ops are copied out (plan_compact). A rank of another shape is a
 * new base: the array is made the old base's again and compacted (rank 0's with its summary,
 * as plan_rank_by_rank does) and the new base is expanded into it (plan_recycle). One shape
 * (sh NULL, or every rank's the same): rank 0 is the only base, and at the end the array is
 * rank 0's again, for lint_walk_end's messages, and compacted. Several: the last base is
 * compacted too, and rank 0 is expanded again, whole, where lint_walk_end's messages read it
 * (lint_walk_needs_rank0), as plan_rank_by_rank does.
 *
 * Sharing a base's prediction within its shape is exact: what the prediction reads of an op
 * is, in the views' models (view_requested.c, view_device.c, view_torch.c), allocs' bytes and
 * chunks, frees, releases, record_stream, streams, events and syncs; in the time model
 * (timemodel.c) views' and collectives' counts and dtypes, streams, events and compute times;
 * in the peaks' live sets allocs and frees; none of them reads a view's offset or an in-place
 * flag, and none of those values can differ across the ranks of a shape: plan_offsets_new and
 * plan_shapes_new refuse rank in every expression but an offset with a written count and a
 * `when:` of rank, world and lets, and lets that differ; the `when:`s' truth values are the
 * shape, the same on its ranks, so they keep the same steps, whose other values are one for
 * every rank (plan.c). The one reader of offsets and in-place flags is the floor (floor.c:
 * view_lo, inplace_share with the rank), which predict_rank_shared computes on each rank's own
 * ops, from its base's floor record (whose vary set is the base's own entries). Expectations
 * are evaluated per rank as ever. The outcome is plan_rank_by_rank's: the same walks over the
 * same ops in the same rank order, the same diagnostics in the same order (an offset that fails
 * on rank r is that rank's expansion error, alone; a base's expansion error is its own), each
 * rank's kept ops with its own values (test_compact.c compares the two paths with the full
 * one). A send or recv takes plan_rank_by_rank (pairing reads every rank's ops). */
static int plan_rank_offsets(const sched *s, const sched_params *pw, const pipeline_opts *o,
                             plan_offsets *po, plan_shapes *sh, pipeline_item *it,
                             ml_diags *d) {
    int world = it->world;
    ml_diags pd;   /* the predictions' */
    ml_diags_init(&pd);
    it->moved = true;
    it->pred = ml_xcalloc((size_t)world, sizeof *it->pred);
    lint_walk *w = lint_walk_new(s, world, &o->lint, &it->lint);
    /* subset members (group_member): their prediction is the base's but for what reads their
     * absent computes, the floor and the time model, redone; the timeline (one point per op,
     * the base's) and the torch view (a compute enqueues work its stream's pending frees wait
     * for: view_torch.c) read them too, so with either on every such rank is a base */
    bool subsets = sh && !o->timeline && !it->plans[0].torch.on;
    group_base g = group_base_new(&it->plans[0], 0);
    g.po = po;
    if (!po && next_joins(sh, 0, world, subsets)) {
        g.po = plan_shapes_offsets(sh, g.plan);
        g.own_po = true;
    }
    bool predicted = group_base_predict(&g, sh, subsets, w, o, it, true, &pd);
    plan_recycle spare = {0};
    int rc = 0;
    for (int r = 1; r < world && rc == 0; r++) {
        if (!sh || plan_shape(sh, r) == plan_shape(sh, g.rank)) {
            rc = group_member(&g, NULL, w, r, o, it, &predicted, &pd, d);
            continue;
        }
        group_subset *sub = subsets && g.po ? group_subset_of(&g, sh, r) : NULL;
        if (sub) {
            rc = group_member(&g, sub, w, r, o, it, &predicted, &pd, d);
            continue;
        }
        /* r is a new base: the array goes to it, the old base keeps its kept ops */
        group_base_restore(&g, d);
        size_t keep[PIPELINE_KEPT_MAX];
        size_t n_keep = reported_ops(&it->pred[g.rank], keep);
        if (g.rank == 0)   /* the summary for rank 0's, the one the report reads */
            plan_compact_with(g.plan, keep, n_keep, &it->pred[0].colls, &spare);
        else
            plan_compact(g.plan, keep, n_keep, false, &spare);
        group_base_free(&g);
        plan_limits lim = {.recycle = &spare};
        if (plan_expand(s, it->plan_index, pw, world, r, &lim, &it->plans[r], d) != 0) {
            rc = -1;
            break;
        }
        g = group_base_new(&it->plans[r], r);
        g.own_po = true;
        if (next_joins(sh, r, world, subsets))
            g.po = plan_shapes_offsets(sh, g.plan);
        predicted = group_base_predict(&g, sh, subsets, w, o, it, predicted, &pd);
    }
    if (rc == 0)
        group_base_restore(&g, d);
    bool several = it->plans[0].kept_at != NULL;   /* rank 0 was compacted for a new base */
    if (several && rc == 0) {
        size_t keep[PIPELINE_KEPT_MAX];
        plan_compact(g.plan, keep, reported_ops(&it->pred[g.rank], keep), false, &spare);
    }
    group_base_free(&g);
    free(spare.ops);
    free(spare.extra);
    if (several && rc == 0 && lint_walk_needs_rank0(w)) {
        plan_free(&it->plans[0]);
        rc = plan_expand(s, it->plan_index, pw, world, 0, NULL, &it->plans[0], d);
    }
    return compact_end(it, w, rc, predicted, &pd, !several, pw, o, d);
}

/* The fast path: when no rank can expand differently from rank 0 (plan_rank_invariant: no
 * evaluated expression names rank, lets agree on every rank, in-place flags too), rank 0's
 * expansion is every rank's (plan_share: its ops, each rank's own slots), lint walks it once
 * (lint_plans sees the shared ops) and its prediction is every rank's (predict_rank_shared:
 * only what names the rank is redone). That is exact, not an approximation: the same ops give
 * the same prediction, and the report still lists every rank (tests/unit/test_rankshare.c
 * compares both paths). A schedule that uses rank takes the per-rank path. */
int pipeline_plan(const sched *s, int plan_index, const sched_params *p, int world,
                  const pipeline_opts *o, pipeline_item *it, ml_diags *d) {
    it->s = s;
    it->plan_index = plan_index;
    it->world = world;
    it->expect_failures = -1;
    sched_params pw = *p;
    pw.world = world;
    it->plans = ml_xcalloc((size_t)world, sizeof *it->plans);
    plan_offsets *po = NULL;   /* the middle path (plan_rank_offsets) */
    int rc = 0;
    for (int r = 0; r < world && rc == 0; r++) {
        if (r == 1) {
            it->shared = plan_rank_invariant(&it->plans[0], &pw);
            if (!it->shared && o->share_offsets && !it->plans[0].has_p2p)
                po = plan_offsets_new(&it->plans[0], &pw);
            if (!it->shared && !o->keep_plans && o->predict && !o->lint_diags) {
                /* ranks that differ by `when:`s of rank too: groups (plan_rank_offsets) */
                plan_shapes *sh = !po && o->share_offsets && !it->plans[0].has_p2p
                                      ? plan_shapes_new(&it->plans[0], &pw) : NULL;
                rc = po || sh ? plan_rank_offsets(s, &pw, o, po, sh, it, d)
                              : plan_rank_by_rank(s, &pw, o, it, d);
                plan_shapes_free(sh);
                plan_offsets_free(po);
                return rc;
            }
            /* whole plans (pipeline_opts.keep_plans, lint_diags) for what reads or runs
             * every rank's ops: each rank a copy of rank 0's with its own offsets, linted on
             * its own (lint_plans), rank 0's prediction shared (pipeline_predict) */
            it->moved = po != NULL;
            if (po) {   /* for the floor of pipeline_predict, once po is gone */
                size_t n;
                const size_t *ops = plan_offsets_ops(po, &n);
                it->vary = ml_xmalloc((n ? n : 1) * sizeof *it->vary);
                if (n)
                    memcpy(it->vary, ops, n * sizeof *it->vary);
                it->n_vary = n;
            }
        }
        if (it->shared) {
            plan_share(&it->plans[0], r, &it->plans[r]);
        } else if (po) {
            plan_copy(&it->plans[0], r, &it->plans[r]);
            rc = plan_offsets_apply(po, &it->plans[r], r, d);
        } else {
            rc = plan_expand(s, plan_index, &pw, world, r, NULL, &it->plans[r], d);
        }
    }
    plan_offsets_free(po);
    if (rc != 0)
        return -1;
    ml_diags *ld = o->lint_diags ? o->lint_diags : d;
    if (lint_plans(it->plans, world, &o->lint, &it->lint, ld) != 0 && !o->lint_diags)
        return -1;
    if (!o->predict)
        return 0;
    return pipeline_predict(it, &pw, o, d);
}

int pipeline_plan_lookup(const sched *s, const char *name) {
    for (uint32_t k = 0; k < s->n_plans; k++)
        if (!strcmp(s->plans[k].name, name))
            return (int)k;
    return -1;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

int pipeline_split_word(const char *word, char *path, size_t len, const char **plan) {
    *plan = NULL;
    if ((size_t)snprintf(path, len, "%s", word) >= len)
        return -1;
    char *colon = strrchr(path, ':');
    if (colon && !ends_with(path, ".yaml") && !ends_with(path, ".yml")) {
        *colon = '\0';
        *plan = colon + 1;
    }
    return 0;
}

/* Which plans of s to analyze: all, or the one named `want` (an error for a file that has no
 * plan of that name, or no plans at all: a silently ignored --plan reports something else than
 * asked; sched_plan_named lists the plans). */
static int select_plans(const sched *s, const char *want, int *first, int *last, ml_diags *d) {
    *first = 0;
    *last = (int)s->n_plans - 1;
    if (!want)
        return 0;
    int k = sched_plan_named(s, want, d);
    *first = *last = k;
    return k < 0 ? -1 : 0;
}

static sched_params params_of(const pipeline_input *in) {
    return (sched_params){.set = (const char **)in->set, .n_set = in->n_set, .world = in->world,
                          .torch_conf = in->torch_conf, .has_torch_limit = in->has_torch_limit,
                          .torch_limit = in->torch_limit,
                          .has_torch_capacity = in->has_torch_capacity,
                          .torch_capacity = in->torch_capacity, .dtype = in->dtype};
}

int pipeline_run(const pipeline_input *in, pipeline_result *out) {
    memset(out, 0, sizeof *out);
    ml_vec_init(&out->scheds, sizeof(sched *));
    ml_vec_init(&out->items, sizeof(pipeline_item));
    ml_diags_init(&out->diags);
    ml_diags *d = &out->diags;
    sched_params p = params_of(in);
    bool failed = false;

    for (size_t f = 0; f < in->n_files; f++) {
        const sched *s = in->loaded ? in->loaded[f] : NULL;
        if (!s) {
            sched_load_limits lim = sched_load_with(&p);
            sched *own = sched_load_file(in->files[f], &lim, d);
            if (!own) {
                failed = true;
                continue;
            }
            *(sched **)ml_vec_push(&out->scheds) = own;
            s = own;
        }
        int world = sched_world(s, &p, d);
        int first, last;
        if (world <= 0 || select_plans(s, in->plan, &first, &last, d) != 0) {
            failed = true;
            continue;
        }
        for (int k = first; k <= last; k++) {
            pipeline_item *it = ml_vec_push(&out->items);
            if (pipeline_plan(s, k, &p, world, &in->what, it, d) != 0)
                failed = true;
        }
    }
    return failed || d->errors ? -1 : 0;
}

/* ---- Many values of one let (fit's probes) ---------------------------------------------------
 *
 * pipeline_run at in's values with every plan whole (keep_plans: the full path's expansion,
 * lint_plans over it, no prediction) is the base. Where every item's ranks are rank 0's
 * expansion (shared) or copies of it with their own offsets (moved), and plan_sizes_new finds
 * that the let reaches rank 0's ops only through allocs' sizes, another value's run is the
 * base with those sizes evaluated again in every rank's ops (the same op indices in each copy)
 * and the prediction made again (pipeline_predict, the full path's last step). The expansion
 * is then the one plan_expand gives at that value (plan_shapes.c), and so is lint's walk of it:
 * lint read nothing that changed (the sized allocs' buffers have no views or releases), so its
 * verdict is the base's, which had no error (else there is no base). Its warnings and contract
 * rows are the base's too; a probe reads only the first error, which is then the prediction's,
 * as in the full run. A size that fails to evaluate gives 1: the full run reports it. */
static int pipeline_let_index(const sched *s, const char *name) {
    for (uint32_t k = 0; k < s->n_lets; k++)
        if (!strcmp(s->lets[k].name, name))
            return (int)k;
    return -1;
}

struct pipeline_sizes {
    pipeline_result res;      /* the base; its items' predictions are the latest value's */
    plan_sizes **sizes;       /* per item */
    int let;
};

void pipeline_sizes_free(pipeline_sizes *z) {
    if (!z)
        return;
    for (size_t k = 0; k < z->res.items.n; k++)
        plan_sizes_free(z->sizes[k]);
    free(z->sizes);
    pipeline_result_free(&z->res);
    free(z);
}

pipeline_sizes *pipeline_sizes_new(const pipeline_input *in, const char *let) {
    if (!in->loaded || in->n_files != 1)
        return NULL;
    pipeline_sizes *z = ml_xcalloc(1, sizeof *z);
    z->let = pipeline_let_index(in->loaded[0], let);
    pipeline_input base = *in;
    base.what.predict = false;
    base.what.keep_plans = true;
    base.what.lint_diags = NULL;
    bool ok = z->let >= 0 && pipeline_run(&base, &z->res) == 0 && z->res.items.n > 0;
    sched_params p = params_of(in);
    if (ok)
        z->sizes = ml_xcalloc(z->res.items.n, sizeof *z->sizes);
    for (size_t k = 0; ok && k < z->res.items.n; k++) {
        pipeline_item *it = &ML_VEC_AT(&z->res.items, pipeline_item, k);
        z->sizes[k] = it->shared || it->moved ? plan_sizes_new(&it->plans[0], &p, z->let) : NULL;
        ok = z->sizes[k] != NULL;
    }
    if (!ok) {
        pipeline_sizes_free(z);
        return NULL;
    }
    return z;
}

int pipeline_sizes_run(pipeline_sizes *z, const pipeline_input *in, const pipeline_result **out) {
    *out = &z->res;
    ml_diags_free(&z->res.diags);
    ml_diags_init(&z->res.diags);
    ml_diags *d = &z->res.diags;
    sched_params p = params_of(in);
    const sched *s = in->loaded[0];
    int64_t *slots = ml_xcalloc(sched_n_slots(s), sizeof *slots);
    ml_diags quiet;
    ml_diags_init(&quiet);
    int rc = 0;
    for (size_t k = 0; k < z->res.items.n && rc == 0; k++) {
        pipeline_item *it = &ML_VEC_AT(&z->res.items, pipeline_item, k);
        if (sched_eval_lets(s, &p, it->world, 0, slots, &quiet) != 0) {
            rc = 1;
            break;
        }
        if (plan_sizes_eval(z->sizes[k], &it->plans[0], slots) != 0) {
            rc = 1;
            break;
        }
        /* moved: each rank's copy rewritten; shared: the ranks borrow rank 0's ops, rewritten
         * once, and keep lets of their own */
        for (int r = 0; r < it->world; r++) {
            if (r == 0 || !it->shared)
                plan_sizes_apply(z->sizes[k], &it->plans[r], slots);
            else
                memcpy(it->plans[r].slots + EXPR_SLOT_FIRST_LET, slots + EXPR_SLOT_FIRST_LET,
                       s->n_lets * sizeof *slots);
        }
    }
    free(slots);
    ml_diags_free(&quiet);
    if (rc != 0)
        return 1;
    bool failed = false;
    for (size_t k = 0; k < z->res.items.n; k++) {
        pipeline_item *it = &ML_VEC_AT(&z->res.items, pipeline_item, k);
        item_unpredict(it);
        sched_params pw = p;
        pw.world = it->world;
        if (pipeline_predict(it, &pw, &in->what, d) != 0)
            failed = true;
    }
    return failed || d->errors ? -1 : 0;
}
