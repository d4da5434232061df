/* SPDX-License-Identifier: MIT */
/* report_int.h — helpers shared by the report writers (report_common.c); not a public interface. */
#ifndef MEMLIFE_REPORT_INT_H
#define MEMLIFE_REPORT_INT_H

#include "report/report.h"

/* "256 MiB" for whole MiB, "1.001 MiB (1049601 B)" otherwise, "520 B" under 0.0005 MiB: short,
 * and exact whenever it is not whole. */
void report_size_cell(uint64_t bytes, char *buf, size_t len);
/* What op k of a plan is, for people: the collective's name ("all_gather") or the op kind. */
const char *report_op_label(const rank_plan *p, size_t op);
/* "14:5 all_gather" for the requested-view peak of rank r, "-" when there is none. */
void report_peak_at(const report_schedule *rs, int r, char *buf, size_t len);
/* Names live at rank r's requested peak, joined by sep, appended to out. */
void report_live_names(const report_schedule *rs, int r, const char *sep, ml_str *out);
/* "0-3", "0, 2", "1": a sorted set of ranks. */
void report_ranks_text(const int *ranks, size_t n, char *buf, size_t len);
/* The view table in the reports (views.h): a view is shown when some rank predicted it (an
 * optional view only where configured); a series is measured when some rank's run read it. */
bool report_view_on(const report *r, ml_view_id v);
bool report_measured_has(const report_measured *m, ml_mem_view v);   /* m may be NULL */
bool report_series_measured(const report *r, ml_mem_view v);
/* True when any rank of any item carries measurements (run). */
bool report_has_measured(const report *r);
const char *report_expect_status(const report_schedule *rs);   /* "pass" | "fail" | "none" */

/* A grid of text cells rendered as an aligned table or a GitHub Markdown table. */
typedef struct {
    size_t cols;
    const char *const *headers;
    const bool *right;         /* right-align column k (numbers) */
    ml_vec cells;              /* char * (owned), row-major */
} report_grid;
void report_grid_init(report_grid *g, size_t cols, const char *const *headers, const bool *right);
void report_grid_add(report_grid *g, const char *text);   /* next cell, row-major */
void report_grid_render(const report_grid *g, bool markdown, const char *indent, ml_str *out);
void report_grid_free(report_grid *g);

/* "key=value\n" provenance lines as a JSON object (a jansson json_t *; bench's report too). */
struct json_t;
struct json_t *report_provenance_json(const char *text);
/* Renders root (consumed) as indented JSON in key order plus a newline onto out; extra_flags are
 * more json_dumps flags (bench: real precision). The one place every JSON writer ends. */
int report_json_append(struct json_t *root, size_t extra_flags, ml_str *out);

/* The parts of predict/check/run's document (doc.h), one builder per part. */
struct report_doc;
void report_doc_table(const report *r, struct report_doc *d);      /* report_text.c */
void report_doc_md(const report *r, struct report_doc *d);         /* report_text.c */
void report_doc_json_tree(const report *r, struct report_doc *d);  /* report_json.c */
void report_doc_csv_grid(const report *r, struct report_doc *d);   /* report_csv.c */

#endif
