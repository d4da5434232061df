/* SPDX-License-Identifier: MIT */
/* report_int.h — helpers shared by the report writers (report_common.c); not a public interface. */
#ifndef MEMLIFE_REPORT_INT_H
#define MEMLIFE_REPORT_INT_H

#include "report/report.h"

/* A size cell for people: "256 MiB", "4 KiB", "520 B", "~1.5 MiB" (base/human.h's rule: exact
 * or marked '~'; --bytes makes every cell exact bytes). */
void report_size_cell(uint64_t bytes, char *buf, size_t len);
/* What op k of a plan is, for people: the collective's name ("all_gather") or the op kind. */
const char *report_op_label(const rank_plan *p, size_t op);
/* "14:5 all_gather" for the requested-view peak of rank r, "-" when there is none. */
void report_peak_at(const report_schedule *rs, int r, char *buf, size_t len);
/* Names live at rank r's requested peak, joined by sep, appended to out. */
void report_live_names(const report_schedule *rs, int r, const char *sep, ml_str *out);
/* "0-3", "0, 2", "1": a sorted set of ranks. */
void report_ranks_text(const int *ranks, size_t n, char *buf, size_t len);
/* A series is measured when some rank's run read it (report_view_on, report.h: when a view is
 * shown). */
bool report_measured_has(const report_measured *m, ml_mem_view v);   /* m may be NULL */
bool report_series_measured(const report *r, ml_mem_view v);
/* True when any rank of any item carries measurements (run). */
bool report_has_measured(const report *r);
const char *report_expect_status(const report_schedule *rs);   /* "pass" | "fail" | "none" */

/* A grid of text cells rendered as an aligned table or a GitHub Markdown table.
 *
 * Each column has a priority: 0 (the default) is always shown; a text table wider than the
 * terminal (base/human.h's ml_term_width) drops the columns of the highest priority first (all
 * columns of one priority together) until it fits or only priority 0 is left, and names what it
 * dropped. A prose column (report_grid_wrap: long sentences, not numbers) narrows first, its
 * cells broken at spaces onto more lines. Markdown is for a pull request, not a terminal: it
 * keeps every column on one line. */
enum { MAX_GRID_COLS = 64 };
typedef struct {
    size_t cols;
    const char *const *headers;
    const bool *right;         /* right-align column k (numbers) */
    unsigned *prio;            /* column k's priority (0: always shown) */
    bool *wrap;                /* column k is prose: it may wrap */
    ml_vec cells;              /* char * (owned), row-major */
} report_grid;
void report_grid_init(report_grid *g, size_t cols, const char *const *headers, const bool *right);
void report_grid_priority(report_grid *g, size_t col, unsigned prio);
void report_grid_wrap(report_grid *g, size_t col);
void report_grid_add(report_grid *g, const char *text);   /* next cell, row-major */
/* Renders g; max_width (0: unlimited) applies to the text table, whose dropped columns' headers
 * are appended to dropped (", " between them) when dropped is not NULL. */
void report_grid_render(const report_grid *g, bool markdown, const char *indent, size_t max_width,
                        ml_str *dropped, ml_str *out);
void report_grid_free(report_grid *g);

/* "key=value\n" provenance lines as a JSON object (a jansson json_t *; bench's report too). */
struct json_t;
struct json_t *report_provenance_json(const char *text);
/* One view's {steady, peak} (views.h), the form every JSON memlife writes gives a view: a view of
 * one series is that series' pair, a view of several an object of pairs by series key (torch:
 * {allocated: {...}, reserved: {...}}). add, when given, adds what its writer says of series v
 * to the pair, after steady and peak. */
typedef void report_series_add(ml_mem_view v, struct json_t *pair, const void *ctx);
struct json_t *report_view_json(ml_view_id view, const uint64_t *steady, const uint64_t *peak,
                                report_series_add *add, const void *ctx);
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
