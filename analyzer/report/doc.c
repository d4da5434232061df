/* SPDX-License-Identifier: MIT */
/* doc.c — the neutral report document and its renderers (doc.h). */
#include "report/doc.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef enum { BLOCK_TEXT, BLOCK_GRID } block_kind;

typedef struct {
    block_kind kind;
    unsigned mask;
    ml_str text;            /* BLOCK_TEXT */
    report_grid grid;       /* BLOCK_GRID */
    const char *indent;
} doc_block;

struct report_doc {
    ml_vec blocks;          /* doc_block */
    json_t *json;
    size_t json_flags;
    bool has_csv;
    report_grid csv;
};

report_doc *report_doc_new(void) {
    report_doc *d = ml_xcalloc(1, sizeof *d);
    ml_vec_init(&d->blocks, sizeof(doc_block));
    return d;
}

void report_doc_free(report_doc *d) {
    if (!d)
        return;
    for (size_t k = 0; k < d->blocks.n; k++) {
        doc_block *b = &ML_VEC_AT(&d->blocks, doc_block, k);
        if (b->kind == BLOCK_TEXT)
            ml_str_free(&b->text);
        else
            report_grid_free(&b->grid);
    }
    ml_vec_free(&d->blocks);
    json_decref(d->json);
    if (d->has_csv)
        report_grid_free(&d->csv);
    free(d);
}

void report_doc_printf(report_doc *d, unsigned mask, const char *fmt, ...) {
    doc_block *last = d->blocks.n ? &ML_VEC_AT(&d->blocks, doc_block, d->blocks.n - 1) : NULL;
    if (!last || last->kind != BLOCK_TEXT || last->mask != mask) {
        last = ml_vec_push(&d->blocks);
        *last = (doc_block){.kind = BLOCK_TEXT, .mask = mask};
        ml_str_append(&last->text, "", 0);
    }
    va_list ap;
    va_start(ap, fmt);
    ml_str_vprintf(&last->text, fmt, ap);
    va_end(ap);
}

void report_doc_grid(report_doc *d, unsigned mask, report_grid *g, const char *indent) {
    doc_block *b = ml_vec_push(&d->blocks);
    *b = (doc_block){.kind = BLOCK_GRID, .mask = mask, .grid = *g, .indent = indent};
    memset(g, 0, sizeof *g);
}

void report_doc_json(report_doc *d, json_t *root, size_t flags) {
    json_decref(d->json);
    d->json = root;
    d->json_flags = flags;
}

void report_doc_csv(report_doc *d, report_grid *g) {
    if (d->has_csv)
        report_grid_free(&d->csv);
    d->csv = *g;
    d->has_csv = true;
    memset(g, 0, sizeof *g);
}

/* RFC 4180: quote a field holding a comma, quote or line break; double the quotes inside. */
static void csv_field(ml_str *out, const char *text, bool last) {
    if (strpbrk(text, ",\"\r\n")) {
        ml_str_append(out, "\"", 1);
        for (const char *c = text; *c; c++)
            ml_str_append(out, *c == '"' ? "\"\"" : c, *c == '"' ? 2 : 1);
        ml_str_append(out, "\"", 1);
    } else {
        ml_str_append(out, text, strlen(text));
    }
    ml_str_append(out, last ? "\n" : ",", 1);
}

static void render_csv(const report_grid *g, ml_str *out) {
    for (size_t c = 0; c < g->cols; c++)
        csv_field(out, g->headers[c], c + 1 == g->cols);
    for (size_t k = 0; k < g->cells.n; k++)
        csv_field(out, ML_VEC_AT(&g->cells, char *, k), (k + 1) % g->cols == 0);
}

/* The renderers of the format table (report.c): every format draws any document. */
static int render_blocks(const report_doc *d, report_format fmt, ml_str *out) {
    for (size_t k = 0; k < d->blocks.n; k++) {
        const doc_block *b = &ML_VEC_AT(&d->blocks, doc_block, k);
        if (!(b->mask & DOC_FMT(fmt)))
            continue;
        if (b->kind == BLOCK_TEXT)
            ml_str_append(out, b->text.s, b->text.n);
        else
            report_grid_render(&b->grid, fmt == FMT_MD, b->indent, out);
    }
    return 0;
}

int report_doc_render_table(const report_doc *d, ml_str *out) { return render_blocks(d, FMT_TABLE, out); }
int report_doc_render_md(const report_doc *d, ml_str *out) { return render_blocks(d, FMT_MD, out); }

int report_doc_render_json(const report_doc *d, ml_str *out) {
    if (!d->json)
        return -1;
    return report_json_append(json_incref(d->json), d->json_flags, out);
}

int report_doc_render_csv(const report_doc *d, ml_str *out) {
    if (!d->has_csv)
        return -1;
    render_csv(&d->csv, out);
    return 0;
}
