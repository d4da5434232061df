/* analyze.c — load → expand → lint → predict → expect, for every file and plan (analyze.h). */
#include "analyze.h"
#include "predict/timemodel.h"

#include <stdlib.h>
#include <string.h>

void ml_analysis_opts_default(ml_analysis_opts *o) {
    memset(o, 0, sizeof *o);
    o->predict = true;
    lint_options_default(&o->lint);
}

static void item_free(ml_item *it) {
    if (it->plans)
        for (int r = 0; r < it->world; r++)
            plan_free(&it->plans[r]);
    if (it->pred)
        for (int r = 0; r < it->world; r++) {
            if (it->shared && r > 0)
                it->pred[r].timeline = NULL;   /* rank 0's */
            pred_rank_free(&it->pred[r]);
        }
    free(it->plans);
    free(it->pred);
    free(it->expects);
    free(it->checks);
    lint_result_free(&it->lint);
}

void ml_analysis_free(ml_analysis *an) {
    for (size_t k = 0; k < an->items.n; k++)
        item_free(&ML_VEC_AT(&an->items, ml_item, k));
    for (size_t k = 0; k < an->scheds.n; k++)
        sched_free(ML_VEC_AT(&an->scheds, sched *, k));
    ml_vec_free(&an->items);
    ml_vec_free(&an->scheds);
    free(an->report_items);
    ml_diags_free(&an->diags);
    memset(an, 0, sizeof *an);
}

/* Lint's expect_error rows become the report's contract rows. */
static void take_contract_rows(ml_item *it) {
    it->n_checks = it->lint.n_rows;
    if (!it->n_checks)
        return;
    it->checks = calloc(it->n_checks, sizeof *it->checks);
    if (!it->checks)
        abort();
    for (size_t k = 0; k < it->n_checks; k++) {
        const lint_contract_row *row = &it->lint.rows[k];
        it->checks[k].name = row->name;
        it->checks[k].rank = row->rank;
        it->checks[k].pass = row->pass;
        memcpy(it->checks[k].detail, row->detail, sizeof it->checks[k].detail);
    }
}

/* Expands, lints and (optionally) predicts one plan of s on every rank. Returns 0 or -1.
 *
 * The fast path: when no rank can expand differently from rank 0 (plan_rank_invariant: no
 * evaluated expression names rank, lets agree on every rank, in-place flags too), rank 0's
 * expansion is every rank's (plan_share: its ops, each rank's own slots), lint walks it once
 * (lint_plans sees the shared ops) and its prediction is every rank's (predict_rank_shared:
 * only what names the rank is redone). That is exact, not an approximation: the same ops give
 * the same prediction, and the report still lists every rank (tests/unit/test_rankshare.c
 * compares both paths). A schedule that uses rank takes the per-rank path. */
/* The time model's totals for one rank (timemodel.h): the schedule's `link:`, then --link. */
static int predict_time(const rank_plan *p, const ml_analysis_opts *o, pred_rank *out,
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

static int analyze_plan(ml_item *it, const sched_params *p, const ml_analysis_opts *o,
                        ml_diags *d) {
    const sched *s = it->s;
    it->expect_failures = -1;
    it->plans = calloc((size_t)it->world, sizeof *it->plans);
    if (!it->plans)
        abort();
    for (int r = 0; r < it->world; r++) {
        if (r == 1)
            it->shared = plan_rank_invariant(&it->plans[0], p);
        if (it->shared)
            plan_share(&it->plans[0], r, &it->plans[r]);
        else if (plan_expand(s, it->plan_index, p, it->world, r, NULL, &it->plans[r], d) != 0)
            return -1;
    }
    if (lint_plans(it->plans, it->world, &o->lint, &it->lint, d) != 0)
        return -1;
    take_contract_rows(it);
    if (!o->predict)
        return 0;
    it->pred = calloc((size_t)it->world, sizeof *it->pred);
    if (!it->pred)
        abort();
    for (int r = 0; r < it->world; r++) {
        if (it->shared && r > 0)
            predict_rank_shared(&it->plans[r], &it->pred[0], &it->pred[r]);
        else if (predict_rank(&it->plans[r], &it->pred[r], d) != 0 ||
                 predict_time(&it->plans[r], o, &it->pred[r], d) != 0)
            return -1;
    }
    int failures = expect_eval(s, it->plan_index, p, it->world, it->pred, &it->expects,
                               &it->n_expects, d);
    if (failures < 0)
        return -1;
    it->expect_failures = it->n_expects ? failures : -1;
    return 0;
}

/* Which plans of s to analyze: all, or the one named by --plan. A file without named plans
 * ignores --plan, so `--plan direct` over a mix of files still covers the lifetime files. */
static int select_plans(const sched *s, const char *want, int *first, int *last, ml_diags *d) {
    *first = 0;
    *last = (int)s->n_plans - 1;
    if (!want || s->n_plans == 0 || !s->plans[0].name[0])
        return 0;
    for (uint32_t k = 0; k < s->n_plans; k++)
        if (!strcmp(s->plans[k].name, want)) {
            *first = *last = (int)k;
            return 0;
        }
    char names[256] = "";
    for (uint32_t k = 0; k < s->n_plans; k++) {
        if (k)
            strncat(names, ", ", sizeof names - strlen(names) - 1);
        strncat(names, s->plans[k].name, sizeof names - strlen(names) - 1);
    }
    ml_error(d, s->file, s->plans[0].mark, "no plan '%s' in this schedule (plans: %s)", want,
             names);
    return -1;
}

int ml_analyze(const ml_args *a, const char *command, const ml_analysis_opts *o, ml_analysis *out) {
    memset(out, 0, sizeof *out);
    ml_vec_init(&out->scheds, sizeof(sched *));
    ml_vec_init(&out->items, sizeof(ml_item));
    ml_diags_init(&out->diags);
    ml_diags *d = &out->diags;
    sched_params p = ml_args_params(a);
    bool failed = false;

    for (size_t f = 0; f < a->files.n; f++) {
        const char *path = ML_VEC_AT(&a->files, const char *, f);
        sched *s = sched_load_file(path, NULL, d);
        if (!s) {
            failed = true;
            continue;
        }
        *(sched **)ml_vec_push(&out->scheds) = s;
        int world = sched_world(s, &p, d);
        int first, last;
        if (world <= 0 || select_plans(s, a->plan, &first, &last, d) != 0) {
            failed = true;
            continue;
        }
        for (int k = first; k <= last; k++) {
            ml_item *it = ml_vec_push(&out->items);
            it->s = s;
            it->plan_index = k;
            it->world = world;
            if (analyze_plan(it, &p, o, d) != 0)
                failed = true;
        }
    }
    ml_diags_print(d, stderr);
    if (failed || d->errors)
        return ML_EXIT_INPUT;

    out->report_items = calloc(out->items.n ? out->items.n : 1, sizeof *out->report_items);
    if (!out->report_items)
        abort();
    for (size_t k = 0; k < out->items.n; k++) {
        const ml_item *it = &ML_VEC_AT(&out->items, ml_item, k);
        out->report_items[k] = (report_schedule){
            .s = it->s,
            .plan_index = it->plan_index,
            .world = it->world,
            .plans = it->plans,
            .pred = it->pred,
            .expects = it->expects,
            .n_expects = it->n_expects,
            .expect_failures = it->expect_failures,
            .checks = it->checks,
            .n_checks = it->n_checks,
        };
    }
    out->rep.items = out->report_items;
    out->rep.n = out->items.n;
    out->rep.command = command;
    return ML_EXIT_OK;
}
