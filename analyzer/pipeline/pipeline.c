/* SPDX-License-Identifier: MIT */
/* pipeline.c — load → expand → lint → predict → expect, for every file and plan (pipeline.h). */
#include "pipeline/pipeline.h"
#include "pipeline/rankshare.h"
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

/* Rank r, a member of the group whose base's ops are in the array (rankshare_joins): its ops
 * are the base's rewritten in place (rankshare_member_ops), its prediction the base's with its
 * own floor and, where it lacks ops, its own time model (predict_rank_shared), its lint the
 * checks of the buffers its moved views and absent ops touch (lint_walk_rank_moved: the base's
 * verdict for the rest, the whole walk where that is unsure), and its kept ops are copied out
 * (plan_compact, in its own indices). An offset that fails is r's expansion error (in d): -1. */
static int share_member(rankshare *rs, lint_walk *w, int r, const pipeline_opts *o,
                        pipeline_item *it, bool *predicted, ml_diags *pd, ml_diags *d) {
    rank_plan *pl = &it->plans[r];
    if (rankshare_member_ops(rs, r, pl, d) != 0)
        return -1;
    /* the floor redoes the moved ops while they are in cache, before the lint's walk; the two
     * read the ops and nothing else of each other (the predictions' diagnostics wait in pd) */
    pred_rank *pr = &it->pred[r];
    *predicted = *predicted && predict_rank_shared(pl, &it->pred[rankshare_base_rank(rs)],
                                                   rankshare_base_facts(rs), pr, pd) == 0;
    if (*predicted && !rankshare_member_time(rs, pr)) {
        *predicted = predict_time(pl, o, pr, pd) == 0;
        rankshare_member_timed(rs, pr, *predicted);
    }
    size_t n_moved;
    const size_t *moved = rankshare_moved(rs, &n_moved);
    lint_walk_rank_moved(w, pl, moved, n_moved);   /* the absent ops' buffers too (lint.c) */
    size_t keep[PIPELINE_KEPT_MAX];
    size_t n_keep = reported_ops(pr, keep);   /* the array's indices, the plan's own next */
    for (int v = 0; v < VIEW_COUNT; v++)
        pr->peak_op[v] = plan_own_index(pl, pr->peak_op[v]);
    plan_compact(pl, keep, n_keep, false, NULL);
    it->subset_members += rankshare_member_subset(rs);
    return 0;
}

/* The compact path (pipeline_opts.keep_plans false, as predict and check run): ranks 0, 1, ...
 * world - 1 in order through one op array. A rank that does not join the group in the array
 * (rankshare.h) is a base: expanded into the array the last base gave back (plan_recycle),
 * linted (lint_walk_rank) and predicted while its ops are there; the last base keeps only the
 * few ops its report names (plan_compact keeps what the report reads of the rest: rank 0's
 * first use of each collective, a timed compute). A member (share_member) is the base's ops
 * rewritten into its own. With every rank a base this is the reference pass, rank by rank; the
 * outcome is the whole plans' in every case: the same walks over the same ops in the same rank
 * order, the predictions' diagnostics held back until the lint has passed, where whole plans
 * make them (test_compact.c compares them).
 *
 * Where lint must read ops again, the ranks compacted are expanded again first: all of them
 * when a rank has a send or recv (pairing reads every op; from that rank on nothing is
 * compacted), rank 0 when a rank's collectives diverge from its own (the messages name them).
 * One group (rank 0 the only base): the array is rank 0's again at the end, for lint_walk_end's
 * messages, and compacted after them. Memory: one op array at a time instead of world (a
 * million ops is ~100 MB), whose pages are not faulted in again for each rank. */
static int plan_compact_pass(const sched *s, const sched_params *pw, const pipeline_opts *o,
                             rankshare *rs, pipeline_item *it, ml_diags *d) {
    int world = it->world;
    ml_diags pd;   /* the predictions' */
    ml_diags_init(&pd);
    it->moved = rankshare_kind_of(rs) != RANKSHARE_ALONE;
    it->pred = ml_xcalloc((size_t)world, sizeof *it->pred);
    lint_walk *w = lint_walk_new(s, world, &o->lint, &it->lint);
    plan_recycle spare = {0};
    bool predicted = true, p2p = false;
    int compacted = 0;   /* ranks [0, compacted) were */
    int rc = 0;
    for (int r = 0; r < world && rc == 0; r++) {
        if (r > 0 && rankshare_joins(rs, r)) {
            rc = share_member(rs, w, r, o, it, &predicted, &pd, d);
            compacted = r + 1;
            continue;
        }
        if (r > 0) {   /* the array goes to r, the last base keeps its kept ops */
            int b = rankshare_base_rank(rs);
            rankshare_base_done(rs, true, d);
            if (!p2p) {
                size_t keep[PIPELINE_KEPT_MAX];
                size_t n_keep = reported_ops(&it->pred[b], keep);
                if (b == 0)   /* the summary for rank 0's, the one the report reads */
                    plan_compact_with(&it->plans[0], keep, n_keep, &it->pred[0].colls, &spare);
                else
                    plan_compact(&it->plans[b], keep, n_keep, false, &spare);
                compacted = b + 1;
            }
            plan_limits lim = {.recycle = &spare};
            if (plan_expand(s, it->plan_index, pw, world, r, &lim, &it->plans[r], d) != 0) {
                rc = -1;
                break;
            }
        }
        rank_plan *pl = &it->plans[r];
        rankshare_base(rs, pl, r);
        lint_walk_rank(w, pl);
        p2p |= pl->has_p2p;
        const floor_vary *vary;
        floor_forward **facts;
        rankshare_base_floor(rs, &vary, &facts);
        predicted = predicted &&
                    predict_rank_forward(pl, pred_what(o), &it->pred[r], facts, vary, &pd) == 0 &&
                    predict_time(pl, o, &it->pred[r], &pd) == 0;
    }
    int last = rankshare_base_rank(rs);
    rankshare_base_done(rs, rc == 0, d);
    bool several = it->plans[0].kept_at != NULL;   /* rank 0 was compacted for a later base */
    if (several && rc == 0 && !p2p) {
        size_t keep[PIPELINE_KEPT_MAX];
        plan_compact(&it->plans[last], keep, reported_ops(&it->pred[last], keep), false, &spare);
        compacted = world;
    }
    free(spare.ops);
    free(spare.extra);
    int again = 0;   /* ranks [0, again) to expand again */
    if (rc == 0 && p2p)
        again = compacted;
    else if (rc == 0 && several && lint_walk_needs_rank0(w))
        again = 1;
    for (int r = 0; rc == 0 && r < again; r++) {
        plan_free(&it->plans[r]);
        rc = plan_expand(s, it->plan_index, pw, world, r, NULL, &it->plans[r], d);
    }
    return compact_end(it, w, rc, predicted, &pd, !several && !p2p, pw, o, d);
}

/* One plan at `world`: rank 0 expanded, then, as rankshare_new decides from it, every other
 * rank's plan rank 0's (rankshare.h's IDENTICAL: lint walks the shared ops once, rank 0's
 * prediction is everyone's, predict_rank_shared redoing what names the rank), rank 0's with
 * its own offsets (OFFSETS), or its own expansion; with compact plans, ranks that expand
 * differently take plan_compact_pass. Whole plans (pipeline_opts.keep_plans, lint_diags) serve
 * what reads or runs every rank's ops: each rank linted on its own ops (lint_plans), rank 0's
 * prediction shared but the floor where the ops agree (pipeline_predict). */
int pipeline_plan(const sched *s, int plan_index, const sched_params *p, int world,
                  const pipeline_opts *o, pipeline_item *it, ml_diags *d) {
    it->s = s;
    it->plan_index = plan_index;
    it->world = world;
    it->expect_failures = -1;
    sched_params pw = *p;
    pw.world = world;
    it->plans = ml_xcalloc((size_t)world, sizeof *it->plans);
    if (plan_expand(s, plan_index, &pw, world, 0, NULL, &it->plans[0], d) != 0)
        return -1;
    if (world > 1) {
        bool compact = !o->keep_plans && o->predict && !o->lint_diags;
        rankshare *rs = rankshare_new(&it->plans[0], &pw, o->share_offsets, compact,
                                      o->timeline);
        it->shared = rankshare_kind_of(rs) == RANKSHARE_IDENTICAL;
        if (!it->shared && compact) {
            int rc = plan_compact_pass(s, &pw, o, rs, it, d);
            rankshare_free(rs);
            return rc;
        }
        it->vary = rankshare_vary_dup(rs, &it->n_vary);   /* the floor's, once rs is gone */
        it->moved = it->vary != NULL;
        int rc = 0;
        for (int r = 1; r < world && rc == 0; r++) {
            rc = rankshare_whole_rank(rs, &it->plans[0], r, &it->plans[r], d);
            if (rc == 1)
                rc = plan_expand(s, plan_index, &pw, world, r, NULL, &it->plans[r], d);
        }
        rankshare_free(rs);
        if (rc != 0)
            return -1;
    }
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
