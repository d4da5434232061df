/* SPDX-License-Identifier: MIT */
/* diff.c — plan against plan, and why their peaks differ (diff.h). */
#include "report/diff.h"
#include "report/doc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char side_letter[2] = {'A', 'B'};

static uint32_t buffer_named(const sched *s, const char *name) {
    for (uint32_t k = 0; k < s->syms[SYM_BUFFER].n; k++)
        if (!strcmp(s->syms[SYM_BUFFER].names[k], name))
            return k;
    return SCHED_NO_SYM;
}

static const char *buf_name(const series *s, uint32_t b) { return sched_sym_name(s->s, SYM_BUFFER, b); }

static uint64_t *bytes_at(const series *s, int r, size_t op) {
    uint64_t *bytes = calloc(s->s->syms[SYM_BUFFER].n + 1, sizeof *bytes);
    if (op != SIZE_MAX)
        series_live_bytes_at(&s->plans[r], op, bytes);
    return bytes;
}

static void side_fill(diff_side *sd, const series *s, int r, ml_mem_view v) {
    const pred_rank *pr = &s->pred[r];
    sd->steady = pr->steady[v];
    sd->peak = pr->peak[v];
    sd->peak_op = pr->peak_op[v];
    if (sd->peak_op == SIZE_MAX || sd->peak_op >= s->plans[r].n_ops) {
        sd->peak_op = SIZE_MAX;
        snprintf(sd->peak_what, sizeof sd->peak_what, "-");
        return;
    }
    const plan_op *op = &s->plans[r].ops[sd->peak_op];
    sd->peak_mark = plan_op_mark(op);
    series_op_label(&s->plans[r], op, sd->peak_what, sizeof sd->peak_what);
    uint64_t *bytes = bytes_at(s, r, sd->peak_op);
    sd->live = calloc(pr->n_peak_live[v] + 1, sizeof *sd->live);
    for (uint32_t k = 0; k < pr->n_peak_live[v]; k++) {
        uint32_t b = pr->peak_live[v][k];
        sd->live[sd->n_live++] = (diff_buf){buf_name(s, b), bytes[b]};
    }
    free(bytes);
}

static bool in_list(const diff_buf *list, size_t n, const char *name) {
    for (size_t k = 0; k < n; k++)
        if (!strcmp(list[k].name, name))
            return true;
    return false;
}

/* The op index of the occ-th (1-based) alloc of buffer b in p, SIZE_MAX when there is none. */
static size_t nth_alloc(const rank_plan *p, uint32_t b, size_t occ, size_t upto) {
    for (size_t k = 0; k < p->n_ops && k <= upto; k++)
        if (p->ops[k].kind == OP_ALLOC && p->ops[k].u.alloc.buf == b && --occ == 0)
            return k;
    return SIZE_MAX;
}

static bool op_uses(const rank_plan *p, const plan_op *op, uint32_t b) {
    switch (op->kind) {
    case OP_COLL: return op->u.coll.send.buf == b || op->u.coll.recv.buf == b;
    case OP_COPY: return op->u.copy.src.buf == b || op->u.copy.dst.buf == b;
    case OP_INIT: return op->u.init.dst.buf == b;
    case OP_SCALE: return op->u.scale.buf.buf == b;
    case OP_COMPUTE: {
        uint32_t nr, nw;
        const plan_view *v = plan_compute_views(p, op, &nr, &nw);
        for (uint32_t k = 0; k < nr + nw; k++)
            if (v[k].buf == b)
                return true;
        return false;
    }
    default: return false;
    }
}

/* Appends to text what lo did with buffer name x before its op q (freed it, or never had it). */
static void lo_fate(ml_str *text, const series *lo, int r, size_t q, const char *x, const char *y,
                    char lo_letter) {
    const rank_plan *p = &lo->plans[r];
    uint32_t b = buffer_named(lo->s, x);
    size_t freed = SIZE_MAX, allocated = SIZE_MAX;
    for (size_t k = 0; b != SCHED_NO_SYM && k < p->n_ops; k++) {
        const plan_op *op = &p->ops[k];
        if (k < q && (op->kind == OP_FREE || op->kind == OP_RELEASE) && series_op_buffer(op) == b)
            freed = k;
        if (op->kind == OP_ALLOC && op->u.alloc.buf == b && allocated == SIZE_MAX)
            allocated = k;
    }
    if (allocated == SIZE_MAX) {
        ml_str_printf(text, "; %c never allocates '%s'", lo_letter, x);
    } else if (freed != SIZE_MAX) {
        ml_mark m = plan_op_mark(&p->ops[freed]);
        ml_str_printf(text, "; %c %s '%s' at %u:%u, before it allocates '%s'", lo_letter,
                      p->ops[freed].kind == OP_FREE ? "frees" : "releases", x, m.line, m.col, y);
    } else if (allocated > q) {
        ml_mark m = plan_op_mark(&p->ops[allocated]);
        ml_str_printf(text, "; %c allocates '%s' only at %u:%u, after '%s'", lo_letter, x, m.line,
                      m.col, y);
    }
}

/* Fills row->cause from the higher side's peak (see diff.h). */
static void explain(diff_row *row, const series *hi, const series *lo, int r) {
    char hl = side_letter[row->hi], ll = side_letter[!row->hi];
    const diff_side *hs = &row->side[row->hi], *ls = &row->side[!row->hi];
    const rank_plan *hp = &hi->plans[r], *lp = &lo->plans[r];
    size_t p = hs->peak_op;
    const plan_op *op = &hp->ops[p];
    uint32_t y = op->kind == OP_ALLOC ? op->u.alloc.buf : SCHED_NO_SYM;
    size_t q = SIZE_MAX;
    if (y != SCHED_NO_SYM) {
        size_t occ = 0;
        for (size_t k = 0; k <= p; k++)
            occ += hp->ops[k].kind == OP_ALLOC && hp->ops[k].u.alloc.buf == y;
        uint32_t yl = buffer_named(lo->s, buf_name(hi, y));
        if (yl != SCHED_NO_SYM)
            q = nth_alloc(lp, yl, occ, SIZE_MAX);
    }
    bool aligned = q != SIZE_MAX;
    if (!aligned)
        q = ls->peak_op;
    uint64_t *hb = bytes_at(hi, r, p), *lb = bytes_at(lo, r, q);

    ml_str text = {0}, still = {0}, sizes = {0};
    ml_str_append(&text, "", 0);
    ml_str_append(&still, "", 0);
    ml_str_append(&sizes, "", 0);
    size_t n_still = 0;
    uint64_t extra = 0;
    for (size_t k = 0; k < hs->n_live; k++) {
        const diff_buf *x = &hs->live[k];
        uint32_t xl = buffer_named(lo->s, x->name);
        uint64_t lo_bytes = xl == SCHED_NO_SYM ? 0 : lb[xl];
        char size[72], lsize[72];
        report_size_cell(x->bytes, size, sizeof size);
        if (aligned && !strcmp(x->name, buf_name(hi, y))) {
            if (lo_bytes != x->bytes) {
                report_size_cell(lo_bytes, lsize, sizeof lsize);
                ml_str_printf(&sizes, "%s'%s' is %s on %c and %s on %c", sizes.n ? ", " : "",
                              x->name, size, hl, lsize, ll);
                extra += x->bytes > lo_bytes ? x->bytes - lo_bytes : 0;
            }
            continue;
        }
        if (lo_bytes == 0) {
            ml_str_printf(&still, "%s'%s' (%s)", n_still ? ", " : "", x->name, size);
            n_still++;
            extra += x->bytes;
        } else if (lo_bytes < x->bytes) {
            report_size_cell(lo_bytes, lsize, sizeof lsize);
            ml_str_printf(&sizes, "%s'%s' is %s on %c and %s on %c", sizes.n ? ", " : "", x->name,
                          size, hl, lsize, ll);
            extra += x->bytes - lo_bytes;
        }
    }
    char sum[72];
    report_size_cell(extra, sum, sizeof sum);
    if (aligned && n_still) {
        char ysize[72];
        ml_mark m = plan_op_mark(op);
        report_size_cell(hb[y], ysize, sizeof ysize);
        ml_str_printf(&text, "%s (%s) allocated at %u:%u while %s %s still live: +%s", buf_name(hi, y),
                      ysize, m.line, m.col, still.s, n_still > 1 ? "are" : "is", sum);
        /* Where the extra bytes are needed: the first op after the alloc that uses y. */
        size_t use = SIZE_MAX;
        for (size_t k = p + 1; k < hp->n_ops && use == SIZE_MAX; k++)
            if (op_uses(hp, &hp->ops[k], y))
                use = k;
        if (use != SIZE_MAX) {
            char what[96];
            series_op_label(hp, &hp->ops[use], what, sizeof what);
            ml_mark um = plan_op_mark(&hp->ops[use]);
            ml_str_printf(&text, " at the %s (%u:%u)", what, um.line, um.col);
        }
        for (size_t k = 0; k < hs->n_live; k++) {
            uint32_t xl = buffer_named(lo->s, hs->live[k].name);
            if (strcmp(hs->live[k].name, buf_name(hi, y)) && (xl == SCHED_NO_SYM || !lb[xl]))
                lo_fate(&text, lo, r, q, hs->live[k].name, buf_name(hi, y), ll);
        }
    } else if (n_still) {
        ml_str_printf(&text, "at %c's peak (%u:%u %s) %s %s live, not live at %c's peak: +%s", hl,
                      hs->peak_mark.line, hs->peak_mark.col, hs->peak_what, still.s,
                      n_still > 1 ? "are" : "is", ll, sum);
    }
    if (sizes.n)
        ml_str_printf(&text, "%s%s", text.n ? "; " : "", sizes.s);
    if (!text.n)
        ml_str_printf(&text, "the same buffers are live at both peaks; the difference is in the "
                             "device page model (%c %llu B vs %c %llu B)", hl,
                      (unsigned long long)hs->peak, ll, (unsigned long long)ls->peak);
    snprintf(row->cause, sizeof row->cause, "%s", text.s);
    row->cause_bytes = extra;
    ml_str_free(&text);
    ml_str_free(&still);
    ml_str_free(&sizes);
    free(hb);
    free(lb);
}

int diff_series(const series *a, const series *b, diff_result *out, ml_diags *d) {
    memset(out, 0, sizeof *out);
    if (a->world != b->world) {
        ml_error(d, b->source, ((ml_mark){0, 0}),
                 "worlds differ: '%s' has %d ranks and '%s' %d; pass --world N", a->source, a->world,
                 b->source, b->world);
        return -1;
    }
    out->a = a;
    out->b = b;
    /* One row per rank and series of every view both sides predicted (views.h), rank-major. */
    bool on[VIEW_COUNT];
    size_t per_rank = 0;
    for (int v = 0; v < VIEW_COUNT; v++) {
        ml_view_id view = ml_series[v].view;
        on[v] = a->world > 0 && a->pred[0].on[view] && b->pred[0].on[view];
        per_rank += on[v];
    }
    out->n_rows = (size_t)a->world * per_rank;
    out->rows = ml_xcalloc(out->n_rows + 1, sizeof *out->rows);
    const series *sides[2] = {a, b};
    size_t next = 0;
    for (int r = 0; r < a->world; r++)
        for (int v = 0; v < VIEW_COUNT; v++) {
            if (!on[v])
                continue;
            diff_row *row = &out->rows[next++];
            row->rank = r;
            row->view = (ml_mem_view)v;
            for (int s = 0; s < 2; s++)
                side_fill(&row->side[s], sides[s], r, row->view);
            for (int s = 0; s < 2; s++) {
                diff_side *me = &row->side[s], *other = &row->side[!s];
                me->only = calloc(me->n_live + 1, sizeof *me->only);
                for (size_t k = 0; k < me->n_live; k++)
                    if (!in_list(other->live, other->n_live, me->live[k].name))
                        me->only[me->n_only++] = me->live[k];
            }
            row->delta_steady = (int64_t)row->side[1].steady - (int64_t)row->side[0].steady;
            row->delta_peak = (int64_t)row->side[1].peak - (int64_t)row->side[0].peak;
            row->hi = row->delta_peak > 0 ? 1 : row->delta_peak < 0 ? 0 : -1;
            if (row->hi >= 0 && row->side[row->hi].peak_op != SIZE_MAX)
                explain(row, sides[row->hi], sides[!row->hi], r);
        }
    return 0;
}

void diff_result_free(diff_result *r) {
    for (size_t k = 0; k < r->n_rows; k++)
        for (int s = 0; s < 2; s++) {
            free(r->rows[k].side[s].live);
            free(r->rows[k].side[s].only);
        }
    free(r->rows);
    memset(r, 0, sizeof *r);
}

/* ---- Writers --------------------------------------------------------------------------------- */

static void signed_cell(int64_t delta, char *buf, size_t len) {
    char mag[72];
    if (!delta) {
        snprintf(buf, len, "0");
        return;
    }
    report_size_cell(delta < 0 ? (uint64_t)(-delta) : (uint64_t)delta, mag, sizeof mag);
    snprintf(buf, len, "%c%s", delta < 0 ? '-' : '+', mag);
}

static void buf_list(ml_str *o, const diff_buf *list, size_t n) {
    if (!n)
        ml_str_printf(o, "none");
    for (size_t k = 0; k < n; k++) {
        char size[72];
        report_size_cell(list[k].bytes, size, sizeof size);
        ml_str_printf(o, "%s%s %s", k ? ", " : "", list[k].name, size);
    }
}

/* The cells of a row after the rank column. */
enum { ROW_CELLS = 9, CELL = 160 };
static const char *const grid_headers[] = {"rank", "view", "A steady", "B steady", "delta steady",
                                           "A peak", "B peak", "delta peak", "A peak at", "B peak at"};
static const bool grid_right[] = {true, false, true, true, true, true, true, true, false, false};
/* A narrow terminal drops where the peaks are first, then the steady columns: the peak deltas
 * are what a diff is read for (report_int.h's grid priorities). */
static const unsigned grid_prio[] = {0, 0, 2, 2, 2, 0, 0, 0, 3, 3};

static void row_cells(const diff_row *row, char cells[ROW_CELLS][CELL]) {
    memset(cells, 0, sizeof(char[ROW_CELLS][CELL]));   /* rows are compared with memcmp */
    snprintf(cells[0], CELL, "%s", ml_mem_view_names[row->view]);
    report_size_cell(row->side[0].steady, cells[1], CELL);
    report_size_cell(row->side[1].steady, cells[2], CELL);
    signed_cell(row->delta_steady, cells[3], CELL);
    report_size_cell(row->side[0].peak, cells[4], CELL);
    report_size_cell(row->side[1].peak, cells[5], CELL);
    signed_cell(row->delta_peak, cells[6], CELL);
    for (int s = 0; s < 2; s++) {
        const diff_side *sd = &row->side[s];
        if (sd->peak_op == SIZE_MAX)
            snprintf(cells[7 + s], CELL, "-");
        else
            snprintf(cells[7 + s], CELL, "%u:%u %s", sd->peak_mark.line, sd->peak_mark.col, sd->peak_what);
    }
}

/* The explanation block of one row (without the ranks it applies to). */
static void why_block(const diff_row *row, bool md, ml_str *o) {
    char pa[72], pb[72], dp[72];
    report_size_cell(row->side[0].peak, pa, sizeof pa);
    report_size_cell(row->side[1].peak, pb, sizeof pb);
    signed_cell(row->delta_peak, dp, sizeof dp);
    const char *item = md ? "- " : "  ";
    ml_str_printf(o, "%s peak: A %s, B %s (%s)\n", ml_mem_view_names[row->view], pa, pb, dp);
    for (int s = 0; s < 2; s++) {
        const diff_side *sd = &row->side[s];
        if (sd->peak_op == SIZE_MAX)
            continue;
        ml_str_printf(o, "%slive at %c's peak (%u:%u %s): ", item, side_letter[s], sd->peak_mark.line,
                      sd->peak_mark.col, sd->peak_what);
        buf_list(o, sd->live, sd->n_live);
        ml_str_printf(o, "\n");
    }
    ml_str_printf(o, "%sonly at A's peak: ", item);
    buf_list(o, row->side[0].only, row->side[0].n_only);
    ml_str_printf(o, "; only at B's peak: ");
    buf_list(o, row->side[1].only, row->side[1].n_only);
    ml_str_printf(o, "\n");
    if (row->cause[0])
        ml_str_printf(o, "%s%s%s%s\n", item, md ? "**cause:** " : "cause: ", row->cause, "");
}

/* The human part of the document, for the text table (md false) or Markdown. */
static void build_human(const diff_result *r, bool md, report_doc *d) {
    unsigned mask = md ? DOC_MD : DOC_TABLE;
    const char *title = md ? "### memlife diff" : "memlife diff";
    report_doc_printf(d, mask, "%s: A = %s (%s), B = %s (%s), world %d\n\n", title, r->a->source,
                      r->a->label, r->b->source, r->b->label, r->a->world);
    /* Rows whose cells are equal on several ranks print once, with the ranks. */
    report_grid g;
    report_grid_init(&g, ML_ARRAY_LEN(grid_headers), grid_headers, grid_right);
    for (size_t c = 0; c < ML_ARRAY_LEN(grid_prio); c++)
        report_grid_priority(&g, c, grid_prio[c]);
    bool *done = calloc(r->n_rows + 1, sizeof *done);
    int *ranks = calloc(r->n_rows + 1, sizeof *ranks);
    for (size_t k = 0; k < r->n_rows; k++) {
        if (done[k])
            continue;
        char cells[ROW_CELLS][CELL], other[ROW_CELLS][CELL], rank_text[256];
        row_cells(&r->rows[k], cells);
        size_t n = 0;
        for (size_t j = k; j < r->n_rows; j++) {
            row_cells(&r->rows[j], other);
            if (!done[j] && !memcmp(cells, other, sizeof cells)) {
                done[j] = true;
                ranks[n++] = r->rows[j].rank;
            }
        }
        report_ranks_text(ranks, n, rank_text, sizeof rank_text);
        report_grid_add(&g, rank_text);
        for (int c = 0; c < ROW_CELLS; c++)
            report_grid_add(&g, cells[c]);
    }
    report_doc_grid(d, mask, &g, "");

    /* Explanations, grouped the same way. */
    memset(done, 0, (r->n_rows + 1) * sizeof *done);
    for (size_t k = 0; k < r->n_rows; k++) {
        if (done[k] || r->rows[k].hi < 0)
            continue;
        ml_str block = {0}, other = {0};
        why_block(&r->rows[k], md, &block);
        size_t n = 0;
        for (size_t j = k; j < r->n_rows; j++) {
            other.n = 0;
            why_block(&r->rows[j], md, &other);
            if (!done[j] && r->rows[j].hi >= 0 && !strcmp(block.s, other.s)) {
                done[j] = true;
                ranks[n++] = r->rows[j].rank;
            }
        }
        char rank_text[256];
        report_ranks_text(ranks, n, rank_text, sizeof rank_text);
        report_doc_printf(d, mask, md ? "\n**Why, rank%s %s,** %s" : "\nwhy, rank%s %s, %s",
                          n > 1 ? "s" : "", rank_text, block.s);
        ml_str_free(&block);
        ml_str_free(&other);
    }
    bool any = false;
    for (size_t k = 0; k < r->n_rows; k++)
        any = any || r->rows[k].hi >= 0;
    if (!any)
        report_doc_printf(d, mask, "\nThe peaks are equal on every rank and view.\n");
    free(done);
    free(ranks);
}

static json_t *json_bufs(const diff_buf *list, size_t n) {
    json_t *a = json_array();
    for (size_t k = 0; k < n; k++) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(list[k].name));
        json_object_set_new(o, "bytes", json_integer((json_int_t)list[k].bytes));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *json_side(const diff_side *sd) {
    json_t *o = json_object();
    json_object_set_new(o, "steady", json_integer((json_int_t)sd->steady));
    json_object_set_new(o, "peak", json_integer((json_int_t)sd->peak));
    if (sd->peak_op == SIZE_MAX) {
        json_object_set_new(o, "peak_step", json_null());
    } else {
        json_t *st = json_object();
        json_object_set_new(st, "index", json_integer((json_int_t)sd->peak_op));
        json_object_set_new(st, "line", json_integer(sd->peak_mark.line));
        json_object_set_new(st, "col", json_integer(sd->peak_mark.col));
        json_object_set_new(st, "op", json_string(sd->peak_what));
        json_object_set_new(o, "peak_step", st);
    }
    json_object_set_new(o, "peak_live", json_bufs(sd->live, sd->n_live));
    json_object_set_new(o, "only_at_peak", json_bufs(sd->only, sd->n_only));
    return o;
}

static void build_json(const diff_result *r, report_doc *d) {
    json_t *root = json_object(), *rows = json_array();
    json_object_set_new(root, "command", json_string("diff"));
    const series *sides[2] = {r->a, r->b};
    for (int s = 0; s < 2; s++) {
        json_t *o = json_object();
        json_object_set_new(o, "source", json_string(sides[s]->source));
        json_object_set_new(o, "name", json_string(sides[s]->label));
        json_object_set_new(root, s ? "b" : "a", o);
    }
    json_object_set_new(root, "world", json_integer(r->a->world));
    for (size_t k = 0; k < r->n_rows; k++) {
        const diff_row *row = &r->rows[k];
        json_t *o = json_object();
        json_object_set_new(o, "rank", json_integer(row->rank));
        json_object_set_new(o, "view", json_string(ml_mem_view_names[row->view]));
        json_object_set_new(o, "a", json_side(&row->side[0]));
        json_object_set_new(o, "b", json_side(&row->side[1]));
        json_t *delta = json_object();
        json_object_set_new(delta, "steady", json_integer(row->delta_steady));
        json_object_set_new(delta, "peak", json_integer(row->delta_peak));
        json_object_set_new(o, "delta", delta);
        json_object_set_new(o, "higher", row->hi < 0 ? json_null() : json_string(row->hi ? "b" : "a"));
        json_object_set_new(o, "cause", row->cause[0] ? json_string(row->cause) : json_null());
        json_object_set_new(o, "cause_bytes", json_integer((json_int_t)row->cause_bytes));
        json_array_append_new(rows, o);
    }
    json_object_set_new(root, "rows", rows);
    report_doc_json(d, root, 0);
}

static void human_part(const void *ctx, bool md, report_doc *d) { build_human(ctx, md, d); }
static void json_part(const void *ctx, report_doc *d) { build_json(ctx, d); }

/* diff's document has a table, a Markdown and a JSON part; no CSV grid. */
static const report_family diff_family = {human_part, json_part, NULL};

int diff_write(const diff_result *r, report_format fmt, ml_str *out) {
    return report_family_render(&diff_family, r, fmt, out);
}

unsigned diff_formats(void) { return report_family_formats(&diff_family); }
