/* SPDX-License-Identifier: MIT */
/* doc.c — the neutral report document and its renderers (doc.h). */
#include "report/doc.h"
#include "base/human.h"

#include <errno.h>
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

/* Appends text broken at spaces so that no line is longer than width (0: one line): the first
 * line after first spaces, the others after indent; a word longer than the line stands alone. */
static void wrapped(ml_str *out, const char *indent, const char *text, size_t width, size_t first) {
    size_t in = strlen(indent), col = 0;
    bool first_line = true;
    for (const char *w = text; *w;) {
        size_t n = strcspn(w, " "), vis = ml_visible_len(w, n);
        if (col && width && col + 1 + vis > width) {
            ml_str_append(out, "\n", 1);
            col = 0;
        }
        if (!col) {
            size_t lead = first_line ? first : in;
            for (size_t k = 0; k < lead; k++)
                ml_str_append(out, " ", 1);
            col = lead;
            first_line = false;
        } else {
            ml_str_append(out, " ", 1);
            col++;
        }
        ml_str_append(out, w, n);
        col += vis;
        w += n;
        w += strspn(w, " ");
    }
    ml_str_append(out, "\n", 1);
}

/* Text for the terminal: each line longer than width (0: unlimited) broken at spaces, its
 * continuation lines indented two more than its own first line, so a paragraph reads as one. */
static void wrapped_lines(ml_str *out, const char *text, size_t width) {
    char indent[64];
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        if (!width || ml_visible_len(line, n) <= width) {
            ml_str_append(out, line, n);
            if (line[n] == '\n')
                ml_str_append(out, "\n", 1);
        } else {
            size_t lead = strspn(line, " ");
            if (lead + 3 > sizeof indent)
                lead = sizeof indent - 3;
            memset(indent, ' ', lead);
            memcpy(indent + lead, "  ", 3);
            char *copy = ml_xcalloc(n + 1, 1);
            memcpy(copy, line, n);
            wrapped(out, indent, copy + strspn(copy, " "), width, lead);
            free(copy);
        }
        line += n + (line[n] == '\n');
    }
}

/* A text grid fitted to the terminal, and the note that says which columns it left out and how
 * to see them: a reader must know the table is not whole. */
static void render_fitted(const doc_block *b, ml_str *out) {
    size_t width = ml_term_width();
    ml_str dropped = {0};
    ml_str_append(&dropped, "", 0);
    report_grid_render(&b->grid, false, b->indent, width, &dropped, out);
    if (dropped.n) {
        ml_str note = {0};
        ml_str_printf(&note, "(not shown to fit %zu columns: %s; --wide shows them)", width,
                      dropped.s);
        wrapped(out, b->indent, note.s, width, strlen(b->indent));
        ml_str_free(&note);
    }
    ml_str_free(&dropped);
}

/* The renderers of the format table (report.c): every format draws any document. */
static int render_blocks(const report_doc *d, report_format fmt, ml_str *out) {
    for (size_t k = 0; k < d->blocks.n; k++) {
        const doc_block *b = &ML_VEC_AT(&d->blocks, doc_block, k);
        if (!(b->mask & DOC_FMT(fmt)))
            continue;
        if (b->kind == BLOCK_TEXT && fmt == FMT_TABLE)
            wrapped_lines(out, b->text.s, ml_term_width());
        else if (b->kind == BLOCK_TEXT)
            ml_str_append(out, b->text.s, b->text.n);
        else if (fmt == FMT_TABLE)
            render_fitted(b, out);
        else
            report_grid_render(&b->grid, true, b->indent, 0, NULL, out);
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

int report_doc_write(const ml_str *out, const char *path) {
    if (!path || !strcmp(path, "-")) {
        /* Flushed here: a full disk or /dev/full fails only when the buffer goes out, and an
         * error found at exit would leave the exit status 0. */
        if ((out->n && fwrite(out->s, 1, out->n, stdout) != out->n) || fflush(stdout) != 0) {
            ml_report(ML_DIAG_ERROR, NULL, "cannot write the report to stdout");
            return -1;
        }
    } else if (ml_write_file_atomic(path, out->s, out->n) != 0) {
        ml_report(ML_DIAG_ERROR, NULL, "cannot write '%s': %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
