/* SPDX-License-Identifier: MIT */
/* report_text.c — the human formats: an aligned table per schedule (the default) and one GitHub
 * Markdown table for a pull request. */
#include "report/doc.h"
#include "base/human.h"
#include "ir/measure.h"
#include "predict/commmodel.h"

#include <stdlib.h>
#include <string.h>

/* A bounded view's peak cell: the model's value, and its bounds when the placement is not known. */
static void peak_cell(const pred_rank *p, ml_mem_view v, char *buf, size_t len) {
    char val[72], lo[72], hi[72];
    report_size_cell(p->peak[v], val, sizeof val);
    if (p->exact[v] || !ml_views[ml_series[v].view].bounded) {
        snprintf(buf, len, "%s", val);
        return;
    }
    report_size_cell(p->peak_lo[v], lo, sizeof lo);
    report_size_cell(p->peak_hi[v], hi, sizeof hi);
    snprintf(buf, len, "%s (%s to %s)", val, lo, hi);
}

static void measured_cell(const report_measured *m, ml_mem_view v, bool peak, char *buf,
                          size_t len) {
    if (!report_measured_has(m, v))
        snprintf(buf, len, "-");
    else
        report_size_cell(peak ? m->peak[v] : m->steady[v], buf, len);
}

/* The columns of a rank row, one list for both formats, built from the view table: each
 * predicted series' steady and peak, the floor, then the measured series when a run filled
 * them (a series only when some rank measured it), then where the peak is and what is live. */
typedef enum { COL_STEADY, COL_PEAK, COL_FLOOR, COL_M_STEADY, COL_M_PEAK, COL_MATCH, COL_PEAK_AT,
               COL_LIVE } col_kind;
enum { CELL = 256, MAX_COLS = 4 * VIEW_COUNT + 8 };

typedef struct {
    col_kind kind;
    ml_mem_view series;
    char header[64];
    bool right;
    unsigned prio;   /* report_grid_priority: what a narrow terminal drops first */
} rank_col;

/* What a narrow terminal gives up first (report_int.h's grid priorities): the live names, then
 * where the peak is, the floor, the other views' series, the measured steady values, the
 * requested steady; the requested and measured peaks and the match verdict always stay (a run
 * is read for them). */
static unsigned col_prio(col_kind k, ml_mem_view v) {
    switch (k) {
    case COL_LIVE: return 6;
    case COL_PEAK_AT: return 5;
    case COL_FLOOR: return 4;
    case COL_STEADY: return ml_series[v].view == MV_REQUESTED ? 1 : 3;
    case COL_PEAK: return ml_series[v].view == MV_REQUESTED ? 0 : 3;
    case COL_M_STEADY: return 2;
    case COL_M_PEAK:
    case COL_MATCH: return 0;
    }
    return 0;
}

static void add_col(rank_col *c, size_t *n, col_kind k, ml_mem_view v, const char *header,
                    bool right) {
    c[*n] = (rank_col){k, v, "", right, col_prio(k, v)};
    snprintf(c[*n].header, sizeof c[*n].header, "%s", header);
    (*n)++;
}

/* Which columns r needs, in order; returns how many. */
static size_t pick_columns(const report *r, rank_col *c) {
    bool measured = report_has_measured(r);
    size_t n = 0;
    char h[64];
    for (int view = 0; view < MV_COUNT; view++) {
        if (!report_view_on(r, (ml_view_id)view))
            continue;
        for (int k = 0; k < ml_views[view].n_series; k++) {
            ml_mem_view v = ml_views[view].series[k];
            snprintf(h, sizeof h, "%s steady", ml_series[v].column);
            add_col(c, &n, COL_STEADY, v, h, true);
            snprintf(h, sizeof h, "%s peak", ml_series[v].column);
            add_col(c, &n, COL_PEAK, v, h, true);
        }
    }
    add_col(c, &n, COL_FLOOR, VIEW_REQUESTED, "floor", true);   /* bytes data dependence needs */
    if (measured) {
        for (int v = 0; v < VIEW_COUNT; v++) {
            if (!report_series_measured(r, (ml_mem_view)v))
                continue;
            snprintf(h, sizeof h, "%s steady", ml_series[v].measured_column);
            add_col(c, &n, COL_M_STEADY, (ml_mem_view)v, h, true);
            snprintf(h, sizeof h, "%s peak", ml_series[v].measured_column);
            add_col(c, &n, COL_M_PEAK, (ml_mem_view)v, h, true);
        }
        add_col(c, &n, COL_MATCH, VIEW_REQUESTED, "match", false);
    }
    add_col(c, &n, COL_PEAK_AT, VIEW_REQUESTED, "peak at", false);
    add_col(c, &n, COL_LIVE, VIEW_REQUESTED, "live at peak", false);
    return n;
}

static void rank_cell(const report_schedule *rs, int r, const rank_col *col, const char *live_sep,
                      char *buf) {
    const pred_rank *p = &rs->pred[r];
    const report_measured *m = rs->measured && rs->measured[r].present ? &rs->measured[r] : NULL;
    ml_mem_view v = col->series;
    switch (col->kind) {
    case COL_STEADY: report_size_cell(p->steady[v], buf, CELL); return;
    case COL_PEAK: peak_cell(p, v, buf, CELL); return;
    case COL_FLOOR: report_size_cell(p->floor, buf, CELL); return;
    case COL_M_STEADY: measured_cell(m, v, false, buf, CELL); return;
    case COL_M_PEAK: measured_cell(m, v, true, buf, CELL); return;
    case COL_MATCH: snprintf(buf, CELL, "%s", !m ? "-" : m->match ? "yes" : "NO"); return;
    case COL_PEAK_AT: report_peak_at(rs, r, buf, CELL); return;
    case COL_LIVE: {
        ml_str live = {0};
        ml_str_append(&live, "", 0);
        report_live_names(rs, r, live_sep, &live);
        snprintf(buf, CELL, "%s", live.n ? live.s : "-");
        ml_str_free(&live);
        return;
    }
    }
    buf[0] = '\0';
}

/* Expectation rows grouped: rows that share view, kind, expected and predicted value, result
 * and source position print once with their ranks ("pass on ranks 0-3"). */
static bool same_expect(const expect_row *a, const expect_row *b) {
    return a->pass == b->pass && a->view == b->view && a->is_peak == b->is_peak &&
           a->expected == b->expected && a->got == b->got && a->mark.line == b->mark.line &&
           a->mark.col == b->mark.col;
}

/* The time model's line (predict/timemodel.h), for schedules where overlap or timing is
 * written down (streams, `link:`, a timed compute): the slowest rank's step time and its exposed
 * communication. */
static void write_time(const report_schedule *rs, ml_str *out) {
    const sched *s = rs->s;
    bool timed_compute = plan_timed_compute(&rs->plans[0]);
    if (!rs->pred || !rs->pred[0].timed ||
        (s->syms[SYM_STREAM].n < 2 && !s->link_alpha_us && !s->link_busbw_gbps && !timed_compute))
        return;
    int slow = 0;
    for (int r = 1; r < rs->world; r++)
        if (rs->pred[r].step_us > rs->pred[slow].step_us)
            slow = r;
    const pred_rank *p = &rs->pred[slow];
    ml_str_printf(out, "  time: step %.1f us, communication %.1f us, exposed %.1f us (rank %d)\n",
                  p->step_us, p->comm_us, p->exposed_comm_us, slow);
}

static void write_expectations(const report_schedule *rs, ml_str *out) {
    bool *done = ml_xcalloc(rs->n_expects ? rs->n_expects : 1, sizeof *done);
    int *ranks = ml_xcalloc(rs->n_expects ? rs->n_expects : 1, sizeof *ranks);
    for (size_t k = 0; k < rs->n_expects; k++) {
        if (done[k])
            continue;
        const expect_row *e = &rs->expects[k];
        size_t n = 0;
        for (size_t j = k; j < rs->n_expects; j++)
            if (!done[j] && same_expect(&rs->expects[j], e)) {
                done[j] = true;
                ranks[n++] = rs->expects[j].rank;
            }
        char want[80], got[80], rank_text[256];
        report_size_cell(e->expected < 0 ? 0 : (uint64_t)e->expected, want, sizeof want);
        report_size_cell(e->got < 0 ? 0 : (uint64_t)e->got, got, sizeof got);
        report_ranks_text(ranks, n, rank_text, sizeof rank_text);
        ml_str_printf(out, "  expect %s %s %s (line %u): %s%s%s on rank%s %s",
                      ml_mem_view_names[e->view], e->is_peak ? "peak" : "steady", want,
                      e->mark.line, ml_color(e->pass ? ML_HUE_OK : ML_HUE_FAIL, ML_FD_TARGET),
                      e->pass ? "pass" : "FAIL", ml_color_end(ML_FD_TARGET), n > 1 ? "s" : "", rank_text);
        if (!e->pass)
            ml_str_printf(out, ", predicted %s", got);
        ml_str_append(out, "\n", 1);
    }
    free(done);
    free(ranks);
}

/* Contract rows grouped by name, in first-appearance order, as the chapter's table shows them:
 * name, rank rows, result; failures list their rank and detail. */
static void write_checks(const report_schedule *rs, ml_str *out) {
    bool *done = ml_xcalloc(rs->n_checks ? rs->n_checks : 1, sizeof *done);
    for (size_t k = 0; k < rs->n_checks; k++) {
        if (done[k])
            continue;
        size_t rows = 0, failed = 0;
        for (size_t j = k; j < rs->n_checks; j++)
            if (!done[j] && !strcmp(rs->checks[j].name, rs->checks[k].name)) {
                rows++;
                failed += !rs->checks[j].pass;
            }
        ml_str_printf(out, "  contract %s: %s%s%s (%zu rank row%s)\n", rs->checks[k].name,
                      ml_color(failed ? ML_HUE_FAIL : ML_HUE_OK, ML_FD_TARGET),
                      failed ? "FAIL" : "PASS", ml_color_end(ML_FD_TARGET), rows, rows == 1 ? "" : "s");
        for (size_t j = k; j < rs->n_checks; j++)
            if (!done[j] && !strcmp(rs->checks[j].name, rs->checks[k].name)) {
                done[j] = true;
                if (!rs->checks[j].pass)
                    ml_str_printf(out, "    rank %d: %s\n", rs->checks[j].rank,
                                  rs->checks[j].detail);
            }
    }
    free(done);
}

static void write_stages(const commmodel_comm_out *c, ml_str *out) {
    char cell[64];
    for (int k = 0; k < c->n_stages; k++) {
        report_size_cell(c->stage_bytes[k], cell, sizeof cell);
        ml_str_printf(out, "%s%s %s", k ? ", " : ": ", c->stage_name[k], cell);
    }
}

/* The predicted communicator, its stages (commmodel.h): one line, and one more per split where
 * the schedule has communicators. Shown with a run's measured one, which it is meant to equal. */
static void write_communicator(const report_schedule *rs, ml_str *out) {
    commmodel_out m;
    const char *why = NULL;
    int gpu = rs->gpu ? rs->gpu - 1 : COMMMODEL_GPU_DEFAULT;
    if (rs->world <= 0 || commmodel_for_plan(&rs->plans[0], gpu, &m, &why) != 0) {
        commmodel_out_free(&m);
        return;
    }
    char c[64];
    report_size_cell(m.total, c, sizeof c);
    ml_str_printf(out, "  communicator predicted %s (NCCL 2.28 rules on %s, %d channels", c,
                  commmodel_gpu_names[gpu], m.comms[0].channels);
    write_stages(&m.comms[0], out);
    ml_str_printf(out, ")\n");
    for (int k = 1; k < m.n_comms; k++) {
        report_size_cell(m.comms[k].total, c, sizeof c);
        ml_str_printf(out, "    communicator '%s' (%d rank%s%s) %s (%d channels", m.comms[k].name,
                      m.comms[k].size, m.comms[k].size == 1 ? "" : "s",
                      m.comms[k].share ? ", shares the world's resources" : "", c,
                      m.comms[k].channels);
        write_stages(&m.comms[k], out);
        ml_str_printf(out, ")\n");
    }
    commmodel_out_free(&m);
}

static bool same_order(const pred_torch_order *a, const pred_torch_order *b) {
    return a->tie_op == b->tie_op && a->diff_op == b->diff_op && a->oom_op == b->oom_op &&
           a->at_diff[0] == b->at_diff[0] && a->at_diff[1] == b->at_diff[1] &&
           a->peak[0] == b->peak[0] && a->peak[1] == b->peak[1];
}

/* The torch view's prediction depends on the segments' address order (pred_torch_order): once
 * per view, ranks with the same finding on one line, each line after prefix (the table indents
 * its notes, Markdown makes each a list item naming the schedule). */
static void write_segment_order(const report_schedule *rs, const char *prefix, ml_str *out) {
    if (!rs->pred)
        return;
    bool *done = ml_xcalloc((size_t)rs->world + 1, sizeof *done);
    int *ranks = ml_xcalloc((size_t)rs->world + 1, sizeof *ranks);
    for (int r = 0; r < rs->world; r++) {
        const pred_torch *t = rs->pred[r].torch;
        if (done[r] || !t || !t->order.decides)
            continue;
        const pred_torch_order *o = &t->order;
        size_t n = 0;
        for (int q = r; q < rs->world; q++)
            if (!done[q] && rs->pred[q].torch && rs->pred[q].torch->order.decides &&
                same_order(&rs->pred[q].torch->order, o)) {
                done[q] = true;
                ranks[n++] = q;
            }
        const rank_plan *p = &rs->plans[r];
        char who[256];
        report_ranks_text(ranks, n, who, sizeof who);
        const plan_op *tie = plan_op_at(p, o->tie_op);   /* an alloc: only malloc counts ties */
        ml_str_printf(out, "%storch: the segments' address order decides (rank%s %s): from line %u "
                      "(alloc '%s') best fit met equal free blocks in different segments; with "
                      "new segments above the old, ", prefix, n > 1 ? "s" : "", who,
                      plan_op_mark(tie).line,
                      tie->kind == OP_ALLOC ? sched_sym_name(rs->s, SYM_BUFFER, tie->u.alloc.buf)
                                            : report_op_label(p, o->tie_op));
        if (o->oom_op == o->diff_op) {
            ml_str_printf(out, "it runs out of memory at line %u",
                          plan_op_mark(plan_op_at(p, o->oom_op)).line);
        } else {   /* exact bytes: the differences are often a fraction of a MiB */
            ml_str_printf(out, "allocated after line %u is %llu B, not %llu B",
                          plan_op_mark(plan_op_at(p, o->diff_op)).line, (unsigned long long)o->at_diff[1],
                          (unsigned long long)o->at_diff[0]);
            if (o->peak[0] == o->peak[1])
                ml_str_printf(out, ", its peak the same %llu B", (unsigned long long)o->peak[0]);
            else
                ml_str_printf(out, ", its peak %llu B, not %llu B", (unsigned long long)o->peak[1],
                              (unsigned long long)o->peak[0]);
            if (o->oom_op != SIZE_MAX)   /* the peak is the one up to there */
                ml_str_printf(out, ", and it runs out of memory at line %u",
                              plan_op_mark(plan_op_at(p, o->oom_op)).line);
        }
        ml_str_append(out, "\n", 1);
    }
    free(done);
    free(ranks);
}

static void write_measured_notes(const report_schedule *rs, ml_str *out) {
    if (!rs->measured)
        return;
    if (rs->world > 0 && rs->measured[0].rec.has_device)   /* a GPU run: NCCL's memory was measured */
        write_communicator(rs, out);
    for (int r = 0; r < rs->world; r++) {
        const report_measured *m = &rs->measured[r];
        if (!m->present)
            continue;
        if (m->rec.communicator_bytes) {
            char c[64];
            report_size_cell(m->rec.communicator_bytes, c, sizeof c);
            ml_str_printf(out, "  rank %d: communicator %s (outside both views", r, c);
            for (uint32_t k = 0; k < m->rec.n_stages; k++) {
                report_size_cell(m->rec.stages[k].bytes, c, sizeof c);
                ml_str_printf(out, "%s%s %s", k ? ", " : ": ", m->rec.stages[k].name, c);
            }
            ml_str_printf(out, ")\n");
        }
        if (!m->match && m->mismatch[0])
            ml_str_printf(out, "  rank %d: measured differs: %s\n", r, m->mismatch);
    }
}

/* The text table's part of the document: per schedule a heading, its rank grid and notes. */
void report_doc_table(const report *r, report_doc *d) {
    rank_col ids[MAX_COLS];
    size_t n_cols = pick_columns(r, ids);
    const char *headers[MAX_COLS + 1] = {"rank"};
    bool right[MAX_COLS + 1] = {true};
    for (size_t c = 0; c < n_cols; c++) {
        headers[c + 1] = ids[c].header;
        right[c + 1] = ids[c].right;
    }
    if (r->provenance) {      /* where the result came from, in one line (provenance.h) */
        char line[2048];
        ml_provenance_summary(r->provenance, line, sizeof line);
        report_doc_printf(d, DOC_TABLE, "%s\n\n", line);
    }
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        char name[256], cell[CELL];
        report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
        report_doc_printf(d, DOC_TABLE, "%s%s (%s, world %d)\n", k ? "\n" : "", name, rs->s->file,
                          rs->world);
        report_grid g;
        report_grid_init(&g, n_cols + 1, headers, right);
        for (size_t c = 0; c < n_cols; c++)
            report_grid_priority(&g, c + 1, ids[c].prio);
        for (int rank = 0; rank < rs->world; rank++) {
            snprintf(cell, sizeof cell, "%d", rank);
            report_grid_add(&g, cell);
            for (size_t c = 0; c < n_cols; c++) {
                rank_cell(rs, rank, &ids[c], ", ", cell);
                report_grid_add(&g, cell);
            }
        }
        report_doc_grid(d, DOC_TABLE, &g, "  ");
        ml_str notes = {0};
        ml_str_append(&notes, "", 0);
        write_measured_notes(rs, &notes);
        write_time(rs, &notes);
        write_segment_order(rs, "  ", &notes);
        write_expectations(rs, &notes);
        write_checks(rs, &notes);
        if (notes.n)
            report_doc_printf(d, DOC_TABLE, "%s", notes.s);
        ml_str_free(&notes);
    }
}

/* ---- Markdown ---------------------------------------------------------------------------------*/

/* True when ranks a and b of rs show the same text in every column. */
/* The Markdown report's list of failed expectations, folded as check's errors are. */
typedef struct {
    report_doc *d;
    const char *file;
    bool first;
} md_failures;

static void md_failure(void *ctx, ml_mark at, const char *text) {
    md_failures *m = ctx;
    report_doc_printf(m->d, DOC_MD, "%s- `%s:%u`: %s\n", m->first ? "\n" : "", m->file, at.line,
                      text);
    m->first = false;
}

static bool same_row(const report_schedule *rs, int a, int b, const rank_col *ids, size_t n) {
    char x[CELL], y[CELL];
    for (size_t c = 0; c < n; c++) {
        rank_cell(rs, a, &ids[c], " ", x);
        rank_cell(rs, b, &ids[c], " ", y);
        if (strcmp(x, y))
            return false;
    }
    return true;
}

/* One row per run of consecutive ranks with identical cells: a PR reader wants "0-3", not four
 * equal lines. */
void report_doc_md(const report *r, report_doc *d) {
    rank_col ids[MAX_COLS];
    size_t n_cols = pick_columns(r, ids);
    const char *headers[MAX_COLS + 4] = {"schedule", "world", "ranks"};
    bool right[MAX_COLS + 4] = {false, true, false};
    for (size_t c = 0; c < n_cols; c++) {
        headers[c + 3] = ids[c].header;
        right[c + 3] = ids[c].right;
    }
    headers[n_cols + 3] = "expect";
    if (r->provenance) {      /* where the result came from, in one line (provenance.h) */
        char line[2048];
        ml_provenance_summary(r->provenance, line, sizeof line);
        report_doc_printf(d, DOC_MD, "_%s_\n\n", line);
    }
    report_grid g;
    report_grid_init(&g, n_cols + 4, headers, right);
    bool any_checks = false;
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        char name[256], text[CELL];
        report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
        any_checks |= rs->n_checks > 0;
        for (int first = 0; first < rs->world;) {
            int last = first;
            while (last + 1 < rs->world && same_row(rs, first, last + 1, ids, n_cols))
                last++;
            report_grid_add(&g, name);
            snprintf(text, sizeof text, "%d", rs->world);
            report_grid_add(&g, text);
            if (last > first)
                snprintf(text, sizeof text, "%d-%d", first, last);
            else
                snprintf(text, sizeof text, "%d", first);
            report_grid_add(&g, text);
            for (size_t c = 0; c < n_cols; c++) {
                rank_cell(rs, first, &ids[c], " ", text);
                report_grid_add(&g, text);
            }
            report_grid_add(&g, report_expect_status(rs));
            first = last + 1;
        }
    }
    report_doc_grid(d, DOC_MD, &g, "");
    md_failures mf = {d, NULL, true};
    for (size_t k = 0; k < r->n; k++) {
        mf.file = r->items[k].s->file;
        report_expect_failures(&r->items[k], md_failure, &mf);
    }
    /* the table's notes that say where a number is uncertain: the torch view's segment order */
    ml_str notes = {0};
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        char name[256], prefix[512];
        report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
        snprintf(prefix, sizeof prefix, "- `%s` (%s): ", rs->s->file, name);
        write_segment_order(rs, prefix, &notes);
    }
    if (notes.n)
        report_doc_printf(d, DOC_MD, "%s%s", mf.first ? "\n" : "", notes.s);
    ml_str_free(&notes);
    if (!any_checks)
        return;
    static const char *const ch[] = {"schedule", "contract", "rank rows", "result"};
    static const bool cr[] = {false, false, true, false};
    report_grid_init(&g, 4, ch, cr);
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        char name[256];
        report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
        for (size_t c = 0; c < rs->n_checks; c++) {
            bool seen = false;
            for (size_t j = 0; j < c && !seen; j++)
                seen = !strcmp(rs->checks[j].name, rs->checks[c].name);
            if (seen)
                continue;
            size_t rows = 0, failed = 0;
            for (size_t j = c; j < rs->n_checks; j++)
                if (!strcmp(rs->checks[j].name, rs->checks[c].name)) {
                    rows++;
                    failed += !rs->checks[j].pass;
                }
            char rows_text[24];
            snprintf(rows_text, sizeof rows_text, "%zu", rows);
            report_grid_add(&g, name);
            report_grid_add(&g, rs->checks[c].name);
            report_grid_add(&g, rows_text);
            report_grid_add(&g, failed ? "FAIL" : "PASS");
        }
    }
    report_doc_printf(d, DOC_MD, "\n");
    report_doc_grid(d, DOC_MD, &g, "");
}
