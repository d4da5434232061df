/* SPDX-License-Identifier: MIT */
/* doc.h — the neutral document every report family builds (predict/check/run in report_*.c,
 * diff in diff.c) and every format renders: paragraphs of text and grids of cells in order, a
 * JSON tree, and the grid a CSV is made of. A family says what it has once; a format (the table
 * in report.c) says how to show a grid or a paragraph, so adding a format is one renderer and
 * adding a family is one builder.
 *
 * A block may be shown by some formats only (the Markdown of predict merges the schedules into
 * one table where the text table has one per schedule): its mask says which (DOC_ALL: all). */
#ifndef MEMLIFE_REPORT_DOC_H
#define MEMLIFE_REPORT_DOC_H

#include "report/report_int.h"

#define DOC_FMT(f) (1u << (f))
#define DOC_TABLE DOC_FMT(FMT_TABLE)
#define DOC_MD DOC_FMT(FMT_MD)
#define DOC_HUMAN (DOC_TABLE | DOC_MD)

typedef struct report_doc report_doc;

report_doc *report_doc_new(void);
void report_doc_free(report_doc *d);
/* Appends text to the document, shown by the formats in mask. */
void report_doc_printf(report_doc *d, unsigned mask, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends a grid (moved in: g is left empty), rendered with indent before every line. */
void report_doc_grid(report_doc *d, unsigned mask, report_grid *g, const char *indent);
/* The JSON tree (stolen) and its extra json_dumps flags; the CSV grid (moved in). */
void report_doc_json(report_doc *d, struct json_t *root, size_t flags);
void report_doc_csv(report_doc *d, report_grid *g);
/* Renders d in fmt onto out: 0, or -1 when d has nothing for fmt (no JSON tree, no CSV grid). */
int report_doc_render(const report_doc *d, report_format fmt, ml_str *out);
/* The format table's renderers (report_formats[].render). */
int report_doc_render_table(const report_doc *d, ml_str *out);
int report_doc_render_md(const report_doc *d, ml_str *out);
int report_doc_render_json(const report_doc *d, ml_str *out);
int report_doc_render_csv(const report_doc *d, ml_str *out);
/* A report family: the builders of its document's parts (ctx is the family's result). human
 * builds the text table's part (md false) or the Markdown's; json and csv may be NULL (the
 * family has no such part, and refuses that format). */
typedef struct {
    void (*human)(const void *ctx, bool md, report_doc *d);
    void (*json)(const void *ctx, report_doc *d);
    void (*csv)(const void *ctx, report_doc *d);
} report_family;
/* Builds the part fmt shows and renders it onto out: 0, or -1 for a format without a part. */
int report_family_render(const report_family *f, const void *ctx, report_format fmt, ml_str *out);
/* The formats the family has parts for (bits 1 << FMT_*). */
unsigned report_family_formats(const report_family *f);
/* A rendered report onto stdout (path NULL or "-") or atomically into path, for every family's
 * emit: 0, or -1 after saying why on stderr ("cannot write the report to stdout", "cannot write
 * 'PATH': reason"). */
int report_doc_write(const ml_str *out, const char *path);


#endif
