/* SPDX-License-Identifier: MIT */
/* analysis.c — the pipeline's run for predict, check and run, as a report (analysis.h). */
#include "analysis.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>

pipeline_input ml_args_pipeline(const ml_args *a, const pipeline_opts *what) {
    return (pipeline_input){
        .files = (const char *const *)a->files.items,
        .n_files = a->files.n,
        .set = (const char *const *)a->set.items,
        .n_set = a->set.n,
        .world = a->world,
        .plan = a->plan,
        .torch_conf = a->torch_conf,
        .has_torch_limit = a->has_torch_limit,
        .torch_limit = a->torch_limit,
        .has_torch_capacity = a->has_torch_capacity,
        .torch_capacity = a->torch_capacity,
        .dtype = a->dtype,
        .what = *what,
    };
}

void ml_analysis_free(ml_analysis *an) {
    for (size_t k = 0; an->checks && k < an->res.items.n; k++)
        free(an->checks[k]);
    free(an->checks);
    free(an->report_items);
    pipeline_result_free(&an->res);
    memset(an, 0, sizeof *an);
}

/* Lint's expect_error rows become the report's contract rows. */
static report_check *contract_rows(const lint_result *lr) {
    if (!lr->n_rows)
        return NULL;
    report_check *rows = ml_xcalloc(lr->n_rows, sizeof *rows);
    for (size_t k = 0; k < lr->n_rows; k++) {
        const lint_contract_row *row = &lr->rows[k];
        rows[k].name = row->name;
        rows[k].rank = row->rank;
        rows[k].pass = row->pass;
        memcpy(rows[k].detail, row->detail, sizeof rows[k].detail);
    }
    return rows;
}

int ml_analysis_run(const pipeline_input *in, const char *command, ml_analysis *out) {
    memset(out, 0, sizeof *out);
    if (pipeline_run(in, &out->res) != 0)
        return ML_EXIT_INPUT;
    size_t n = out->res.items.n;
    out->checks = ml_xcalloc(n ? n : 1, sizeof *out->checks);
    out->report_items = ml_xcalloc(n ? n : 1, sizeof *out->report_items);
    for (size_t k = 0; k < n; k++) {
        const pipeline_item *it = &ML_VEC_AT(&out->res.items, pipeline_item, k);
        out->checks[k] = contract_rows(&it->lint);
        out->report_items[k] = (report_schedule){
            .s = it->s,
            .plan_index = it->plan_index,
            .world = it->world,
            .plans = it->plans,
            .pred = it->pred,
            .expects = it->expects,
            .n_expects = it->n_expects,
            .expect_failures = it->expect_failures,
            .checks = out->checks[k],
            .n_checks = it->lint.n_rows,
        };
    }
    out->rep.items = out->report_items;
    out->rep.n = n;
    out->rep.command = command;
    return ML_EXIT_OK;
}

int ml_analyze(const ml_args *a, const char *command, const pipeline_opts *o, ml_analysis *out) {
    return ml_analyze_quietly(a, command, o, out, false);
}

/* quiet: the diagnostics are not printed (another rank prints them, or fit's probes would repeat
 * them at every value it tries); they stay in out->res.diags either way. */
int ml_analyze_quietly(const ml_args *a, const char *command, const pipeline_opts *o,
                       ml_analysis *out, bool quiet) {
    pipeline_input in = ml_args_pipeline(a, o);
    int rc = ml_analysis_run(&in, command, out);
    for (size_t k = 0; k < out->rep.n; k++)   /* --gpu: the communicator view's kind */
        out->report_items[k].gpu = a->gpu;
    if (!quiet)
        ml_diags_print(&out->res.diags, stderr);
    return rc;
}
