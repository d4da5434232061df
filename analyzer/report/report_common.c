/* SPDX-License-Identifier: MIT */
/* report_common.c — the helpers every report writer shares (report_int.h): names, size cells,
 * peaks, rank sets, the grid. Below the writers; report.c (the format table) sits above them. */
#include "report/report_int.h"
#include "base/human.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void report_schedule_name(const sched *s, int plan_index, char *buf, size_t len) {
    const char *plan = s->plans && plan_index >= 0 && (uint32_t)plan_index < s->n_plans
                           ? s->plans[plan_index].name
                           : "";
    if (plan && plan[0])
        snprintf(buf, len, "%s/%s", s->name, plan);
    else
        snprintf(buf, len, "%s", s->name);
}

/* The sentence of a failed expectation, "on rank 3" or "on ranks 0-7" (ranks: that text). */
static void expect_sentence(const expect_row *e, bool several, const char *ranks, char *buf,
                            size_t len) {
    char want[80], got[80];
    report_size_cell(e->expected < 0 ? 0 : (uint64_t)e->expected, want, sizeof want);
    report_size_cell(e->got < 0 ? 0 : (uint64_t)e->got, got, sizeof got);
    snprintf(buf, len, "expected %s %s %s on rank%s %s, predicted %s", ml_mem_view_names[e->view],
             e->is_peak ? "peak" : "steady", want, several ? "s" : "", ranks, got);
}

void report_expect_text(const expect_row *e, char *buf, size_t len) {
    char rank[16];
    snprintf(rank, sizeof rank, "%d", e->rank);
    expect_sentence(e, false, rank, buf, len);
}

/* Failed rows in file order; at one place, those that say the same thing next to each other,
 * by rank, so that a fold takes a run of them. */
static int by_place_then_rank(const void *a, const void *b) {
    const expect_row *x = *(const expect_row *const *)a, *y = *(const expect_row *const *)b;
    int64_t kx[] = {x->mark.line, x->mark.col, x->view, x->is_peak, x->expected, x->got, x->rank};
    int64_t ky[] = {y->mark.line, y->mark.col, y->view, y->is_peak, y->expected, y->got, y->rank};
    for (size_t k = 0; k < ML_ARRAY_LEN(kx); k++)
        if (kx[k] != ky[k])
            return kx[k] < ky[k] ? -1 : 1;
    return 0;
}

static bool same_but_rank(const expect_row *x, const expect_row *y) {
    return x->mark.line == y->mark.line && x->mark.col == y->mark.col && x->view == y->view &&
           x->is_peak == y->is_peak && x->expected == y->expected && x->got == y->got;
}

size_t report_expect_failures(const report_schedule *rs,
                              void (*each)(void *ctx, ml_mark at, const char *text), void *ctx) {
    size_t n = 0;
    const expect_row **failed = ml_xcalloc(rs->n_expects ? rs->n_expects : 1, sizeof *failed);
    for (size_t k = 0; k < rs->n_expects; k++)
        if (!rs->expects[k].pass)
            failed[n++] = &rs->expects[k];
    qsort(failed, n, sizeof *failed, by_place_then_rank);
    int *ranks = ml_xcalloc(n ? n : 1, sizeof *ranks);
    for (size_t k = 0; k < n;) {
        size_t j = k, m = 0;
        while (j < n && same_but_rank(failed[k], failed[j]))
            ranks[m++] = failed[j++]->rank;
        char rank_text[256], text[512];
        report_ranks_text(ranks, m, rank_text, sizeof rank_text);
        expect_sentence(failed[k], m > 1, rank_text, text, sizeof text);
        each(ctx, failed[k]->mark, text);
        k = j;
    }
    free(ranks);
    free(failed);
    return n;
}

void report_size_cell(uint64_t bytes, char *buf, size_t len) { ml_human_size(bytes, buf, len); }

const char *report_op_label(const rank_plan *p, size_t op) {
    return ml_measure_op_label(p, op);   /* the timeline's `op` names ops the same way */
}

void report_peak_at(const report_schedule *rs, int r, char *buf, size_t len) {
    size_t op = rs->pred[r].peak_op[VIEW_REQUESTED];
    const rank_plan *p = &rs->plans[r];
    if (op >= p->n_ops) {
        snprintf(buf, len, "-");
        return;
    }
    ml_mark m = plan_op_mark(plan_op_at(p, op));
    snprintf(buf, len, "%u:%u %s", m.line, m.col, report_op_label(p, op));
}

void report_live_names(const report_schedule *rs, int r, const char *sep, ml_str *out) {
    const pred_rank *pr = &rs->pred[r];
    for (uint32_t k = 0; k < pr->n_peak_live[VIEW_REQUESTED]; k++) {
        const char *name = sched_sym_name(rs->s, SYM_BUFFER, pr->peak_live[VIEW_REQUESTED][k]);
        if (k)
            ml_str_append(out, sep, strlen(sep));
        ml_str_append(out, name, strlen(name));
    }
}

void report_ranks_text(const int *ranks, size_t n, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < n && used < len;) {
        size_t j = k;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
            j++;
        int w = j > k ? snprintf(buf + used, len - used, "%s%d-%d", k ? ", " : "", ranks[k], ranks[j])
                      : snprintf(buf + used, len - used, "%s%d", k ? ", " : "", ranks[k]);
        if (w < 0)
            break;
        used += (size_t)w;
        k = j + 1;
    }
}

bool report_has_measured(const report *r) {
    for (size_t k = 0; k < r->n; k++)
        if (r->items[k].measured)
            for (int rank = 0; rank < r->items[k].world; rank++)
                if (r->items[k].measured[rank].present)
                    return true;
    return false;
}

bool report_view_on(const report *r, ml_view_id v) {
    if (!ml_views[v].optional)
        return true;
    for (size_t k = 0; k < r->n; k++)
        for (int rank = 0; rank < r->items[k].world; rank++)
            if (r->items[k].pred[rank].on[v])
                return true;
    return false;
}

bool report_series_measured(const report *r, ml_mem_view v) {
    for (size_t k = 0; k < r->n; k++)
        for (int rank = 0; r->items[k].measured && rank < r->items[k].world; rank++)
            if (report_measured_has(&r->items[k].measured[rank], v))
                return true;
    return false;
}

const char *report_expect_status(const report_schedule *rs) {
    if (rs->expect_failures < 0)
        return "none";
    return rs->expect_failures ? "fail" : "pass";
}

/* ---- Grid -------------------------------------------------------------------------------------*/

/* The grid keeps copies of its headers and alignment: a document (doc.h) renders it after the
 * builder's arrays are gone. */
void report_grid_init(report_grid *g, size_t cols, const char *const *headers, const bool *right) {
    g->cols = cols;
    char **h = ml_xcalloc(cols ? cols : 1, sizeof *h);
    bool *r = ml_xcalloc(cols ? cols : 1, sizeof *r);
    for (size_t c = 0; c < cols; c++) {
        h[c] = ml_xstrdup(headers[c]);
        r[c] = right[c];
    }
    g->headers = (const char *const *)h;
    g->right = r;
    g->prio = ml_xcalloc(cols ? cols : 1, sizeof *g->prio);
    g->wrap = ml_xcalloc(cols ? cols : 1, sizeof *g->wrap);
    ml_vec_init(&g->cells, sizeof(char *));
}

void report_grid_priority(report_grid *g, size_t col, unsigned prio) {
    if (col < g->cols)
        g->prio[col] = prio;
}

void report_grid_wrap(report_grid *g, size_t col) {
    if (col < g->cols)
        g->wrap[col] = true;
}

void report_grid_add(report_grid *g, const char *text) {
    char *copy = ml_xstrdup(text ? text : "");
    *(char **)ml_vec_push(&g->cells) = copy;
}

void report_grid_free(report_grid *g) {
    for (size_t k = 0; k < g->cells.n; k++)
        free(ML_VEC_AT(&g->cells, char *, k));
    ml_vec_free(&g->cells);
    for (size_t c = 0; g->headers && c < g->cols; c++)
        free((char *)g->headers[c]);
    free((void *)g->headers);
    free((void *)g->right);
    free(g->prio);
    free(g->wrap);
    g->wrap = NULL;
    g->headers = NULL;
    g->right = NULL;
    g->prio = NULL;
}

/* Markdown cells may not hold a '|'; escape it so names never break the table. */
static void md_cell(ml_str *out, const char *text) {
    for (const char *c = text; *c; c++) {
        if (*c == '|')
            ml_str_append(out, "\\", 1);
        ml_str_append(out, c, 1);
    }
}

static void pad(ml_str *out, size_t n) {
    for (size_t k = 0; k < n; k++)
        ml_str_append(out, " ", 1);
}

/* ---- Fitting a text table to the terminal ------------------------------------------------------
 *
 * The natural width of a column is its longest cell. When the table is wider than the terminal,
 * the prose columns (report_grid_wrap) narrow first, down to WRAP_MIN (or their header), their
 * cells broken at spaces onto more lines; when even that does not fit, the columns of the highest
 * priority are dropped and the fit tried again, until only priority-0 columns are left. */
enum { WRAP_MIN = 16 };

static size_t wrap_min(const report_grid *g, size_t c, const size_t *natural) {
    size_t m = strlen(g->headers[c]);
    if (m < WRAP_MIN)
        m = WRAP_MIN;
    return m < natural[c] ? m : natural[c];
}

/* Widths for the shown columns within max_width (0: unlimited): true when they fit. */
static bool fit_widths(const report_grid *g, const size_t *natural, const bool *shown,
                       size_t indent, size_t max_width, size_t *width) {
    size_t fixed = indent, n = 0, want = 0, least = 0;
    for (size_t c = 0; c < g->cols; c++) {
        width[c] = natural[c];
        if (!shown[c])
            continue;
        fixed += n++ ? 2 : 0;
        if (g->wrap[c]) {
            want += natural[c];
            least += wrap_min(g, c, natural);
        } else {
            fixed += natural[c];
        }
    }
    if (!max_width || fixed + want <= max_width)
        return true;
    if (fixed + least > max_width)
        return false;
    /* Water-filling: every prose column starts at its minimum; the room left goes out in equal
     * shares to the columns that still want more. */
    size_t room = max_width - fixed - least;
    for (size_t c = 0; c < g->cols; c++)
        if (shown[c] && g->wrap[c])
            width[c] = wrap_min(g, c, natural);
    while (room) {
        size_t hungry = 0;
        for (size_t c = 0; c < g->cols; c++)
            hungry += shown[c] && g->wrap[c] && width[c] < natural[c];
        if (!hungry)
            break;
        size_t share = room / hungry ? room / hungry : 1;
        for (size_t c = 0; c < g->cols && room; c++) {
            if (!shown[c] || !g->wrap[c] || width[c] >= natural[c])
                continue;
            size_t add = natural[c] - width[c];
            if (add > share)
                add = share;
            if (add > room)
                add = room;
            width[c] += add;
            room -= add;
        }
    }
    return true;
}

/* Drops the columns of the highest priority, all of them at once (a series' steady and peak,
 * equiv's two sides: one without the other would mislead), until the table fits max_width. */
static void fit_columns(const report_grid *g, const size_t *natural, size_t indent,
                        size_t max_width, bool *shown, size_t *width) {
    while (!fit_widths(g, natural, shown, indent, max_width, width)) {
        unsigned top = 0;
        for (size_t c = 0; c < g->cols; c++)
            if (shown[c] && g->prio[c] > top)
                top = g->prio[c];
        if (!top) {   /* only columns that are always shown are left */
            for (size_t c = 0; c < g->cols; c++)
                width[c] = shown[c] && g->wrap[c] ? wrap_min(g, c, natural) : natural[c];
            return;
        }
        for (size_t c = 0; c < g->cols; c++)
            if (g->prio[c] == top)
                shown[c] = false;
    }
}

/* The next line of a cell at most width long, broken at the last space that fits (a word
 * longer than the line is cut): *text moves past it and the spaces after it. */
static size_t next_line(const char **text, size_t width, const char **start) {
    const char *t = *text;
    size_t n = strlen(t);
    *start = t;
    if (n > width) {
        /* rather not between a number and its unit ("384 MiB"), then any space, then a cut */
        size_t cut = width;
        while (cut > 0 && (t[cut] != ' ' || (isdigit((unsigned char)t[cut - 1]) &&
                                              isalpha((unsigned char)t[cut + 1]))))
            cut--;
        if (!cut)
            for (cut = width; cut > 0 && t[cut] != ' ';)
                cut--;
        n = cut ? cut : width;
    }
    const char *rest = t + n;
    while (*rest == ' ')
        rest++;
    *text = rest;
    return n;
}

/* One row of the text table, on as many lines as its prose cells need. */
static void text_row(const report_grid *g, const char *const *cells, const bool *shown,
                     const size_t *width, size_t last_shown, const char *indent, ml_str *out) {
    const char *rest[MAX_GRID_COLS];
    for (size_t c = 0; c < g->cols && c < MAX_GRID_COLS; c++)
        rest[c] = cells[c];
    for (bool first = true;; first = false) {
        bool more = false;
        for (size_t c = 0; c < g->cols && c < MAX_GRID_COLS; c++)
            more |= shown[c] && *rest[c];
        if (!more && !first)
            return;
        size_t line_start = out->n;
        ml_str_append(out, indent, strlen(indent));
        for (size_t c = 0; c < g->cols && c < MAX_GRID_COLS; c++) {
            if (!shown[c])
                continue;
            const char *text;
            size_t w = g->wrap[c] ? next_line(&rest[c], width[c], &text)
                                  : (text = rest[c], strlen(rest[c]));
            if (!g->wrap[c])
                rest[c] = text + w;
            bool last = c == last_shown;
            if (g->right[c])
                pad(out, width[c] - w);
            ml_str_append(out, text, w);
            if (!g->right[c] && !last)
                pad(out, width[c] - w);
            if (!last)
                ml_str_append(out, "  ", 2);
        }
        /* a continuation line ends where its last cell does */
        while (!first && out->n > line_start && out->s[out->n - 1] == ' ')
            out->s[--out->n] = '\0';
        ml_str_append(out, "\n", 1);
    }
}

static void md_table(const report_grid *g, size_t rows, const char *indent, ml_str *out) {
    for (size_t r = 0; r <= rows; r++) {
        ml_str_append(out, indent, strlen(indent));
        for (size_t c = 0; c < g->cols; c++) {
            ml_str_append(out, "| ", 2);
            md_cell(out, r == 0 ? g->headers[c] : ML_VEC_AT(&g->cells, char *, (r - 1) * g->cols + c));
            ml_str_append(out, " ", 1);
        }
        ml_str_append(out, "|\n", 2);
        if (r == 0) {
            ml_str_append(out, indent, strlen(indent));
            for (size_t c = 0; c < g->cols; c++)
                ml_str_printf(out, "| %s ", g->right[c] ? "---:" : "---");
            ml_str_append(out, "|\n", 2);
        }
    }
}

void report_grid_render(const report_grid *g, bool markdown, const char *indent, size_t max_width,
                        ml_str *dropped, ml_str *out) {
    size_t rows = g->cells.n / g->cols;
    if (markdown) {
        md_table(g, rows, indent, out);
        return;
    }
    if (g->cols > MAX_GRID_COLS)
        ml_internal_error("a grid of %zu columns (at most %d)", g->cols, MAX_GRID_COLS);
    size_t natural[MAX_GRID_COLS], width[MAX_GRID_COLS];
    bool shown[MAX_GRID_COLS];
    for (size_t c = 0; c < g->cols; c++) {
        shown[c] = true;
        natural[c] = strlen(g->headers[c]);
        for (size_t r = 0; r < rows; r++) {
            size_t w = strlen(ML_VEC_AT(&g->cells, char *, r * g->cols + c));
            if (w > natural[c])
                natural[c] = w;
        }
    }
    fit_columns(g, natural, strlen(indent), max_width, shown, width);
    size_t last_shown = 0;
    for (size_t c = 0; c < g->cols; c++) {
        if (shown[c])
            last_shown = c;
        else if (dropped)
            ml_str_printf(dropped, "%s%s", dropped->n ? ", " : "", g->headers[c]);
    }
    text_row(g, g->headers, shown, width, last_shown, indent, out);
    for (size_t r = 0; r < rows; r++)
        text_row(g, (const char *const *)&ML_VEC_AT(&g->cells, char *, r * g->cols), shown, width,
                 last_shown, indent, out);
}

/* The one place every JSON writer ends (report_int.h); below the document (doc.c) and the
 * writers, which both end here. */
int report_json_append(json_t *root, size_t extra_flags, ml_str *out) {
    /* schema_version first, so a reader can check it before anything else (docs/json.md) */
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(ML_JSON_SCHEMA_VERSION));
    json_object_update(doc, root);
    json_decref(root);
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | extra_flags);
    json_decref(doc);
    if (!text) {
        ml_report(ML_DIAG_ERROR, NULL, "cannot render the json report");
        return -1;
    }
    ml_str_append(out, text, strlen(text));
    ml_str_append(out, "\n", 1);
    free(text);
    return 0;
}
