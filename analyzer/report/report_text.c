/* SPDX-License-Identifier: MIT */
/* report_text.c — the human formats: an aligned table per schedule (the default) and one GitHub
 * Markdown table for a pull request. */
#include "report/report_int.h"
#include "exec/provenance.h"
#include "predict/commmodel.h"

#include <stdlib.h>
#include <string.h>

/* Device cell: the model's value, and its bounds when the page placement is not known. */
static void device_peak_cell(const pred_rank *p, char *buf, size_t len) {
    char v[72], lo[72], hi[72];
    report_size_cell(p->peak[VIEW_DEVICE], v, sizeof v);
    if (p->device_exact) {
        snprintf(buf, len, "%s", v);
        return;
    }
    report_size_cell(p->device_peak_lo, lo, sizeof lo);
    report_size_cell(p->device_peak_hi, hi, sizeof hi);
    snprintf(buf, len, "%s (%s to %s)", v, lo, hi);
}

static void measured_cell(const report_measured *m, ml_mem_view v, bool peak, char *buf,
                          size_t len) {
    if (!m || !m->present || (v == VIEW_DEVICE && !m->has_device))
        snprintf(buf, len, "-");
    else
        report_size_cell(peak ? m->peak[v] : m->steady[v], buf, len);
}

/* The columns of a rank row, one table for both formats: predicted views, then the measured
 * ones when a run filled them (device only when some rank read a device), then where the peak
 * is and what is live there. */
typedef enum {
    COL_REQ_STEADY, COL_REQ_PEAK, COL_DEV_STEADY, COL_DEV_PEAK, COL_FLOOR,
    COL_M_REQ_STEADY, COL_M_REQ_PEAK, COL_M_DEV_STEADY, COL_M_DEV_PEAK, COL_MATCH,
    COL_PEAK_AT, COL_LIVE, COL_COUNT
} rank_col;
enum { CELL = 256 };

static const struct {
    const char *header;
    bool right;
} rank_cols[COL_COUNT] = {
    [COL_REQ_STEADY] = {"requested steady", true},
    [COL_REQ_PEAK] = {"requested peak", true},
    [COL_DEV_STEADY] = {"device steady", true},
    [COL_DEV_PEAK] = {"device peak", true},
    [COL_FLOOR] = {"floor", true},   /* requested bytes needed by data dependence (floor.c) */
    [COL_M_REQ_STEADY] = {"measured req steady", true},
    [COL_M_REQ_PEAK] = {"measured req peak", true},
    [COL_M_DEV_STEADY] = {"measured dev steady", true},
    [COL_M_DEV_PEAK] = {"measured dev peak", true},
    [COL_MATCH] = {"match", false},
    [COL_PEAK_AT] = {"peak at", false},
    [COL_LIVE] = {"live at peak", false},
};

/* Which columns r needs, in order; returns how many. */
static size_t pick_columns(const report *r, rank_col *ids) {
    bool measured = report_has_measured(r), device = false;
    for (size_t k = 0; k < r->n && measured; k++)
        for (int rank = 0; r->items[k].measured && rank < r->items[k].world; rank++)
            device |= r->items[k].measured[rank].present && r->items[k].measured[rank].has_device;
    size_t n = 0;
    for (int c = 0; c < COL_COUNT; c++) {
        if (!measured && c >= COL_M_REQ_STEADY && c <= COL_MATCH)
            continue;
        if (!device && (c == COL_M_DEV_STEADY || c == COL_M_DEV_PEAK))
            continue;
        ids[n++] = (rank_col)c;
    }
    return n;
}

static void rank_cell(const report_schedule *rs, int r, rank_col col, const char *live_sep,
                      char *buf) {
    const pred_rank *p = &rs->pred[r];
    const report_measured *m = rs->measured && rs->measured[r].present ? &rs->measured[r] : NULL;
    switch (col) {
    case COL_REQ_STEADY: report_size_cell(p->steady[VIEW_REQUESTED], buf, CELL); return;
    case COL_REQ_PEAK: report_size_cell(p->peak[VIEW_REQUESTED], buf, CELL); return;
    case COL_DEV_STEADY: report_size_cell(p->steady[VIEW_DEVICE], buf, CELL); return;
    case COL_DEV_PEAK: device_peak_cell(p, buf, CELL); return;
    case COL_FLOOR: report_size_cell(p->floor, buf, CELL); return;
    case COL_M_REQ_STEADY: measured_cell(m, VIEW_REQUESTED, false, buf, CELL); return;
    case COL_M_REQ_PEAK: measured_cell(m, VIEW_REQUESTED, true, buf, CELL); return;
    case COL_M_DEV_STEADY: measured_cell(m, VIEW_DEVICE, false, buf, CELL); return;
    case COL_M_DEV_PEAK: measured_cell(m, VIEW_DEVICE, true, buf, CELL); return;
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
    case COL_COUNT: break;
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
        ml_str_printf(out, "  expect %s %s %s (line %u): %s on rank%s %s", ml_mem_view_names[e->view],
                      e->is_peak ? "peak" : "steady", want, e->mark.line,
                      e->pass ? "pass" : "FAIL", n > 1 ? "s" : "", rank_text);
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
        ml_str_printf(out, "  contract %s: %s (%zu rank row%s)\n", rs->checks[k].name,
                      failed ? "FAIL" : "PASS", rows, rows == 1 ? "" : "s");
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

/* One line: the predicted communicator, its stages (commmodel.h). Shown with a run's measured
 * one, which it is meant to equal. */
static void write_communicator(const report_schedule *rs, ml_str *out) {
    commmodel_out m;
    const char *why = NULL;
    if (rs->world <= 0 || commmodel_for_plan(&rs->plans[0], &m, &why) != 0)
        return;
    char c[64];
    report_size_cell(m.total, c, sizeof c);
    ml_str_printf(out, "  communicator predicted %s (NCCL 2.28 rules, %d channels", c, m.channels);
    for (int k = 0; k < m.n_stages; k++) {
        report_size_cell(m.stage_bytes[k], c, sizeof c);
        ml_str_printf(out, "%s%s %s", k ? ", " : ": ", m.stage_name[k], c);
    }
    ml_str_printf(out, ")\n");
}

static void write_measured_notes(const report_schedule *rs, ml_str *out) {
    if (!rs->measured)
        return;
    if (rs->world > 0 && rs->measured[0].has_device)   /* a GPU run: NCCL's memory was measured */
        write_communicator(rs, out);
    for (int r = 0; r < rs->world; r++) {
        const report_measured *m = &rs->measured[r];
        if (!m->present)
            continue;
        if (m->communicator_bytes) {
            char c[64];
            report_size_cell(m->communicator_bytes, c, sizeof c);
            ml_str_printf(out, "  rank %d: communicator %s (outside both views", r, c);
            for (uint32_t k = 0; k < m->n_comm_stages; k++) {
                report_size_cell(m->comm_stages[k].bytes, c, sizeof c);
                ml_str_printf(out, "%s%s %s", k ? ", " : ": ", m->comm_stages[k].name, c);
            }
            ml_str_printf(out, ")\n");
        }
        if (!m->match && m->mismatch[0])
            ml_str_printf(out, "  rank %d: measured differs: %s\n", r, m->mismatch);
    }
}

int report_write_table(const report *r, ml_str *out) {
    rank_col ids[COL_COUNT];
    size_t n_cols = pick_columns(r, ids);
    const char *headers[COL_COUNT + 1] = {"rank"};
    bool right[COL_COUNT + 1] = {true};
    for (size_t c = 0; c < n_cols; c++) {
        headers[c + 1] = rank_cols[ids[c]].header;
        right[c + 1] = rank_cols[ids[c]].right;
    }
    if (r->provenance) {      /* where the result came from, in one line (provenance.h) */
        char line[2048];
        ml_provenance_summary(r->provenance, line, sizeof line);
        ml_str_printf(out, "%s\n\n", line);
    }
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        char name[256], cell[CELL];
        report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
        if (k)
            ml_str_append(out, "\n", 1);
        ml_str_printf(out, "%s (%s, world %d)\n", name, rs->s->file, rs->world);
        report_grid g;
        report_grid_init(&g, n_cols + 1, headers, right);
        for (int rank = 0; rank < rs->world; rank++) {
            snprintf(cell, sizeof cell, "%d", rank);
            report_grid_add(&g, cell);
            for (size_t c = 0; c < n_cols; c++) {
                rank_cell(rs, rank, ids[c], ", ", cell);
                report_grid_add(&g, cell);
            }
        }
        report_grid_render(&g, false, "  ", out);
        report_grid_free(&g);
        write_measured_notes(rs, out);
        write_expectations(rs, out);
        write_checks(rs, out);
    }
    return 0;
}

/* ---- Markdown ---------------------------------------------------------------------------------*/

/* True when ranks a and b of rs show the same text in every column. */
static bool same_row(const report_schedule *rs, int a, int b, const rank_col *ids, size_t n) {
    char x[CELL], y[CELL];
    for (size_t c = 0; c < n; c++) {
        rank_cell(rs, a, ids[c], " ", x);
        rank_cell(rs, b, ids[c], " ", y);
        if (strcmp(x, y))
            return false;
    }
    return true;
}

/* One row per run of consecutive ranks with identical cells: a PR reader wants "0-3", not four
 * equal lines. */
int report_write_md(const report *r, ml_str *out) {
    rank_col ids[COL_COUNT];
    size_t n_cols = pick_columns(r, ids);
    const char *headers[COL_COUNT + 4] = {"schedule", "world", "ranks"};
    bool right[COL_COUNT + 4] = {false, true, false};
    for (size_t c = 0; c < n_cols; c++) {
        headers[c + 3] = rank_cols[ids[c]].header;
        right[c + 3] = rank_cols[ids[c]].right;
    }
    headers[n_cols + 3] = "expect";
    if (r->provenance) {      /* where the result came from, in one line (provenance.h) */
        char line[2048];
        ml_provenance_summary(r->provenance, line, sizeof line);
        ml_str_printf(out, "_%s_\n\n", line);
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
                rank_cell(rs, first, ids[c], " ", text);
                report_grid_add(&g, text);
            }
            report_grid_add(&g, report_expect_status(rs));
            first = last + 1;
        }
    }
    report_grid_render(&g, true, "", out);
    report_grid_free(&g);
    bool first_failure = true;
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        for (size_t e = 0; e < rs->n_expects; e++) {
            const expect_row *x = &rs->expects[e];
            if (x->pass)
                continue;
            char text[256];
            report_expect_text(x, text, sizeof text);
            if (first_failure)
                ml_str_append(out, "\n", 1);
            first_failure = false;
            ml_str_printf(out, "- `%s:%u`: %s\n", rs->s->file, x->mark.line, text);
        }
    }
    if (!any_checks)
        return 0;
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
    ml_str_append(out, "\n", 1);
    report_grid_render(&g, true, "", out);
    report_grid_free(&g);
    return 0;
}
