/* SPDX-License-Identifier: MIT */
/* fit_report.c — fit's answer as a document (fit_report.h). */
#include "report/fit_report.h"
#include "report/doc.h"
#include "base/human.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static void size_text(uint64_t b, char *buf, size_t len) { ml_human_size(b, buf, len); }

/* The let's value as people read it: a size or a count. */
static void value_text(const fit_answer *a, int64_t v, char *buf, size_t len) {
    if (a->let_is_size && v >= 0)
        size_text((uint64_t)v, buf, len);
    else
        snprintf(buf, len, "%" PRId64, v);
}

/* " of plan P" when the file has plans: the plan that binds. */
static void plan_text(const fit_answer *a, const fit_point *p, char *buf, size_t len) {
    if (a->n_plans > 1 && p->plan)
        snprintf(buf, len, " of plan %s", p->plan);
    else
        buf[0] = '\0';
}

static void build_text(const fit_answer *a, report_doc *d) {
    char v[64], b[64], pk[64], rs[64], cx[64], tot[64], np[64], pl[128], npl[128], nv[64];
    value_text(a, a->at.value, v, sizeof v);
    value_text(a, a->next.value, nv, sizeof nv);
    size_text(a->budget, b, sizeof b);
    size_text(a->at.peak, pk, sizeof pk);
    size_text(a->reserve, rs, sizeof rs);
    size_text(a->context, cx, sizeof cx);
    size_text(a->at.peak + a->reserve + a->context, tot, sizeof tot);
    plan_text(a, &a->at, pl, sizeof pl);
    plan_text(a, &a->next, npl, sizeof npl);
    report_doc_printf(d, DOC_TABLE, "%s = %s fits in %s on every rank of %d (%s view)\n", a->let,
                      v, b, a->world, a->view);
    report_doc_printf(d, DOC_TABLE, "  peak %s on rank %d%s + communicator %s + context %s = %s\n",
                      pk, a->at.rank, pl, rs, cx, tot);
    if (a->at.retries)   /* the limit was reached: PyTorch frees its cache and tries again */
        report_doc_printf(d, DOC_TABLE,
                          "  needs %" PRIu64 " allocator retr%s (the cache freed to make room "
                          "under the limit: slow, not out of memory)\n",
                          a->at.retries, a->at.retries == 1 ? "y" : "ies");
    /* the next value: a size one byte more reads as such, not as the same rounded size */
    char next[160];
    if (a->let_is_size)
        snprintf(next, sizeof next, "%s + 1 B", a->let);
    else
        snprintf(next, sizeof next, "%s = %s", a->let, nv);
    if (a->next.predicted) {
        size_text(a->next.peak, np, sizeof np);
        report_doc_printf(d, DOC_TABLE, "  %s: peak %s on rank %d%s, over the budget\n", next,
                          np, a->next.rank, npl);
    } else {
        report_doc_printf(d, DOC_TABLE, "  %s: does not predict: %s\n", next,
                          a->next.error ? a->next.error : "?");
    }
    /* Every plan is held to the budget, so the answer is the smallest plan's: say which. */
    if (a->n_plans > 1 && a->at.plan)
        report_doc_printf(d, DOC_TABLE,
                          "  plan %s binds: the largest %s that fits all %d plans of the file "
                          "(--plan NAME fits one)\n", a->next.plan ? a->next.plan : a->at.plan,
                          a->let, a->n_plans);
}

/* The columns of the Markdown table and the CSV row. */
static const char *const headers[] = {"file", "let", "value", "budget", "world", "view", "plan",
                                      "peak", "rank", "communicator", "context", "total",
                                      "next value", "next peak"};
enum { N_COLS = ML_ARRAY_LEN(headers) };

/* One row: sizes for people (Markdown) or exact bytes (CSV). */
static void row(const fit_answer *a, bool human, report_doc *d, bool md) {
    static const bool right[N_COLS] = {false, false, true, true, true, false, false,
                                       true,  true,  true, true, true, true,  true};
    report_grid g;
    report_grid_init(&g, N_COLS, headers, right);
    char c[64];
    const uint64_t sizes[] = {a->budget, a->at.peak, a->reserve, a->context,
                              a->at.peak + a->reserve + a->context, a->next.peak};
    char sz[ML_ARRAY_LEN(sizes)][64];
    for (size_t k = 0; k < ML_ARRAY_LEN(sizes); k++) {
        if (human)
            size_text(sizes[k], sz[k], sizeof sz[k]);
        else
            snprintf(sz[k], sizeof sz[k], "%" PRIu64, sizes[k]);
    }
    report_grid_add(&g, a->file);
    report_grid_add(&g, a->let);
    if (human)
        value_text(a, a->at.value, c, sizeof c);
    else
        snprintf(c, sizeof c, "%" PRId64, a->at.value);
    report_grid_add(&g, c);
    report_grid_add(&g, sz[0]);
    snprintf(c, sizeof c, "%d", a->world);
    report_grid_add(&g, c);
    report_grid_add(&g, a->view);
    report_grid_add(&g, a->at.plan ? a->at.plan : "");
    report_grid_add(&g, sz[1]);
    snprintf(c, sizeof c, "%d", a->at.rank);
    report_grid_add(&g, c);
    for (size_t k = 2; k < 5; k++)
        report_grid_add(&g, sz[k]);
    if (human)
        value_text(a, a->next.value, c, sizeof c);
    else
        snprintf(c, sizeof c, "%" PRId64, a->next.value);
    report_grid_add(&g, c);
    report_grid_add(&g, a->next.predicted ? sz[5] : "");
    if (md)
        report_doc_grid(d, DOC_MD, &g, "");
    else
        report_doc_csv(d, &g);
    report_grid_free(&g);
}

static void human_part(const void *ctx, bool md, report_doc *d) {
    const fit_answer *a = ctx;
    if (md)
        row(a, true, d, true);
    else
        build_text(a, d);
}

static void csv_part(const void *ctx, report_doc *d) { row(ctx, false, d, false); }

static json_t *point_json(const fit_point *p) {
    json_t *o = json_pack("{s:I, s:b, s:b}", "value", (json_int_t)p->value, "fits", p->fits,
                          "predicted", p->predicted);
    if (p->predicted) {
        json_object_set_new(o, "peak", json_integer((json_int_t)p->peak));
        json_object_set_new(o, "rank", json_integer(p->rank));
        json_object_set_new(o, "plan", p->plan ? json_string(p->plan) : json_null());
    } else {
        json_object_set_new(o, "error", json_string(p->error ? p->error : ""));
    }
    return o;
}

static void json_part(const void *ctx, report_doc *d) {
    const fit_answer *a = ctx;
    /* schema_version and command first, as every memlife JSON (docs/json.md) */
    json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:I, s:{s:I, s:I}, s:I}", "schema_version",
                          ML_JSON_SCHEMA_VERSION, "command", "fit", "file", a->file, "let",
                          a->let, "view", a->view, "budget", (json_int_t)a->budget, "reserve",
                          "communicator", (json_int_t)a->reserve, "context",
                          (json_int_t)a->context, "world", (json_int_t)a->world);
    json_object_set_new(o, "value", json_integer((json_int_t)a->at.value));
    json_object_set_new(o, "peak", json_integer((json_int_t)a->at.peak));
    json_object_set_new(o, "rank", json_integer(a->at.rank));
    json_object_set_new(o, "plan", a->at.plan ? json_string(a->at.plan) : json_null());
    json_object_set_new(o, "total",
                        json_integer((json_int_t)(a->at.peak + a->reserve + a->context)));
    if (!strcmp(a->view, "torch"))
        json_object_set_new(o, "retries", json_integer((json_int_t)a->at.retries));
    json_object_set_new(o, "next", point_json(&a->next));
    report_doc_json(d, o, 0);
}

static const report_family fit_family = {human_part, json_part, csv_part};

unsigned fit_report_formats(void) { return report_family_formats(&fit_family); }

int fit_report_render(const fit_answer *a, report_format fmt, ml_str *out) {
    ml_str_append(out, "", 0);
    return report_family_render(&fit_family, a, fmt, out);
}

int fit_report_emit(const fit_answer *a, report_format fmt, const char *path) {
    ml_str out = {0};
    int rc = fit_report_render(a, fmt, &out);
    if (rc != 0)
        ml_report(ML_DIAG_ERROR, NULL, "cannot render the fit answer");
    else
        rc = report_doc_write(&out, path);
    ml_str_free(&out);
    return rc;
}
