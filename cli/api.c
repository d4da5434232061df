/* SPDX-License-Identifier: MIT */
/* api.c — the public C API (include/memlife.h) over the pipeline and the report, the same calls
 * `memlife predict` makes (cli/analysis.c), with diagnostics kept for the caller instead of
 * printed. It sits on the cli layer because it shares predict's analysis. */
#include "memlife.h"
#include "analysis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct memlife_result {
    ml_analysis an;
    char *errors;
};

const char *memlife_version(void) { return MEMLIFE_VERSION; }

int memlife_predict(const char *const *files, size_t n, const memlife_options *o,
                    memlife_result **out) {
    memlife_result *r = ml_xcalloc(1, sizeof *r);
    *out = r;
    pipeline_opts what;
    pipeline_opts_default(&what);
    pipeline_input in = {
        .files = files,
        .n_files = n,
        .set = o ? o->set : NULL,
        .n_set = o ? o->n_set : 0,
        .world = o ? o->world : 0,
        .plan = o ? o->plan : NULL,
        .what = what,
    };
    int rc = ml_analysis_run(&in, "predict", &r->an);
    size_t len = 0;
    FILE *f = open_memstream(&r->errors, &len);
    if (!f)
        ml_out_of_memory(0);
    ml_diags_print(&r->an.res.diags, f);
    fclose(f);
    if (rc != 0) {
        r->an.rep.n = 0;
        return -1;
    }
    return 0;
}

const char *memlife_errors(const memlife_result *r) {
    return r && r->errors ? r->errors : "";
}

size_t memlife_count(const memlife_result *r) { return r ? r->an.rep.n : 0; }

static const report_schedule *item_at(const memlife_result *r, size_t k) {
    return r && k < r->an.rep.n ? &r->an.rep.items[k] : NULL;
}

const char *memlife_name(const memlife_result *r, size_t item) {
    static _Thread_local char name[256];
    const report_schedule *rs = item_at(r, item);
    if (!rs)
        return NULL;
    report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
    return name;
}

const char *memlife_file(const memlife_result *r, size_t item) {
    const report_schedule *rs = item_at(r, item);
    return rs ? rs->s->file : NULL;
}

int memlife_world(const memlife_result *r, size_t item) {
    const report_schedule *rs = item_at(r, item);
    return rs ? rs->world : 0;
}

static const pred_rank *rank_at(const memlife_result *r, size_t item, int rank, memlife_view v) {
    const report_schedule *rs = item_at(r, item);
    if (!rs || rank < 0 || rank >= rs->world || (int)v < 0 || (int)v >= VIEW_COUNT || !rs->pred)
        return NULL;
    return &rs->pred[rank];
}

uint64_t memlife_steady(const memlife_result *r, size_t item, int rank, memlife_view v) {
    const pred_rank *p = rank_at(r, item, rank, v);
    return p ? p->steady[v] : 0;
}

uint64_t memlife_peak(const memlife_result *r, size_t item, int rank, memlife_view v) {
    const pred_rank *p = rank_at(r, item, rank, v);
    return p ? p->peak[v] : 0;
}

int memlife_expect_failures(const memlife_result *r, size_t item) {
    const report_schedule *rs = item_at(r, item);
    return rs ? rs->expect_failures : -1;
}

int memlife_report(const memlife_result *r, const char *format, const char *path) {
    int fmt = format ? report_format_lookup(format) : -1;
    if (!r || fmt < 0) {
        fprintf(stderr, "memlife_report: unknown format '%s' (table, json, csv or md)\n",
                format ? format : "(null)");
        return -1;
    }
    return report_emit(&r->an.rep, (report_format)fmt, path);
}

void memlife_free(memlife_result *r) {
    if (!r)
        return;
    ml_analysis_free(&r->an);
    free(r->errors);
    free(r);
}
