/* report_text.c — the human formats: an aligned table per schedule (the default) and one GitHub
 * Markdown table for a pull request. */
#include "report_int.h"

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

/* The cells of one rank's row after the rank column, in the order of the headers below. */
enum { PRED_COLS = 6, MEAS_COLS = 5, CELL = 256 };
static const char *const table_headers[] = {
    "rank", "requested steady", "requested peak", "device steady", "device peak", "peak at",
    "live at peak", "measured req steady", "measured req peak", "measured dev steady",
    "measured dev peak", "match"};
static const bool table_right[] = {true, true, true, true, true, false,
                                   false, true, true, true, true, false};

static void rank_cells(const report_schedule *rs, int r, bool measured, const char *live_sep,
                       char cells[][CELL], size_t *n) {
    const pred_rank *p = &rs->pred[r];
    size_t k = 0;
    report_size_cell(p->steady[VIEW_REQUESTED], cells[k++], CELL);
    report_size_cell(p->peak[VIEW_REQUESTED], cells[k++], CELL);
    report_size_cell(p->steady[VIEW_DEVICE], cells[k++], CELL);
    device_peak_cell(p, cells[k++], CELL);
    report_peak_at(rs, r, cells[k++], CELL);
    ml_str live = {0};
    ml_str_append(&live, "", 0);
    report_live_names(rs, r, live_sep, &live);
    snprintf(cells[k++], 160, "%s", live.n ? live.s : "-");
    ml_str_free(&live);
    if (measured) {
        const report_measured *m = rs->measured ? &rs->measured[r] : NULL;
        measured_cell(m, VIEW_REQUESTED, false, cells[k++], CELL);
        measured_cell(m, VIEW_REQUESTED, true, cells[k++], CELL);
        measured_cell(m, VIEW_DEVICE, false, cells[k++], CELL);
        measured_cell(m, VIEW_DEVICE, true, cells[k++], CELL);
        snprintf(cells[k++], 160, "%s", !m || !m->present ? "-" : m->match ? "yes" : "NO");
    }
    *n = k;
}

/* Expectation rows grouped: rows that share view, kind, expected and predicted value, result
 * and source position print once with their ranks ("pass on ranks 0-3"). */
static bool same_expect(const expect_row *a, const expect_row *b) {
    return a->pass == b->pass && a->view == b->view && a->is_peak == b->is_peak &&
           a->expected == b->expected && a->got == b->got && a->mark.line == b->mark.line &&
           a->mark.col == b->mark.col;
}

static void write_expectations(const report_schedule *rs, ml_str *out) {
    bool *done = calloc(rs->n_expects ? rs->n_expects : 1, sizeof *done);
    int *ranks = calloc(rs->n_expects ? rs->n_expects : 1, sizeof *ranks);
    if (!done || !ranks)
        abort();
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
    bool *done = calloc(rs->n_checks ? rs->n_checks : 1, sizeof *done);
    if (!done)
        abort();
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

static void write_measured_notes(const report_schedule *rs, ml_str *out) {
    if (!rs->measured)
        return;
    for (int r = 0; r < rs->world; r++) {
        const report_measured *m = &rs->measured[r];
        if (!m->present)
            continue;
        if (m->communicator_bytes) {
            char c[64];
            report_size_cell(m->communicator_bytes, c, sizeof c);
            ml_str_printf(out, "  rank %d: communicator %s (outside both views)\n", r, c);
        }
        if (!m->match && m->mismatch[0])
            ml_str_printf(out, "  rank %d: measured differs: %s\n", r, m->mismatch);
    }
}

int report_write_table(const report *r, ml_str *out) {
    bool measured = report_has_measured(r);
    size_t cols = 1 + PRED_COLS + (measured ? MEAS_COLS : 0);
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        char name[256];
        report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
        if (k)
            ml_str_append(out, "\n", 1);
        ml_str_printf(out, "%s (%s, world %d)\n", name, rs->s->file, rs->world);
        report_grid g;
        report_grid_init(&g, cols, table_headers, table_right);
        for (int rank = 0; rank < rs->world; rank++) {
            char cells[PRED_COLS + MEAS_COLS][CELL], rank_text[16];
            size_t n;
            snprintf(rank_text, sizeof rank_text, "%d", rank);
            report_grid_add(&g, rank_text);
            rank_cells(rs, rank, measured, ", ", cells, &n);
            for (size_t c = 0; c < n; c++)
                report_grid_add(&g, cells[c]);
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
static const char *const md_headers[] = {
    "schedule", "world", "ranks", "requested steady", "requested peak", "device steady",
    "device peak", "peak at", "live at peak", "measured req steady", "measured req peak",
    "measured dev steady", "measured dev peak", "match", "expect"};
static const bool md_right[] = {false, true, false, true, true, true, true, false,
                                false, true, true, true, true, false, false};

/* One row per run of consecutive ranks with identical cells: a PR reader wants "0-3", not four
 * equal lines. */
int report_write_md(const report *r, ml_str *out) {
    bool measured = report_has_measured(r);
    size_t n_meas = measured ? MEAS_COLS : 0;
    size_t cols = 3 + PRED_COLS + n_meas + 1;
    const char *headers[ML_ARRAY_LEN(md_headers)];
    bool right[ML_ARRAY_LEN(md_headers)];
    for (size_t c = 0, src = 0; src < ML_ARRAY_LEN(md_headers); src++) {
        if (!measured && src >= 3 + PRED_COLS && src < 3 + PRED_COLS + MEAS_COLS)
            continue;
        headers[c] = md_headers[src];
        right[c++] = md_right[src];
    }
    report_grid g;
    report_grid_init(&g, cols, headers, right);
    bool any_checks = false;
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        char name[256], world[16];
        report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
        snprintf(world, sizeof world, "%d", rs->world);
        any_checks |= rs->n_checks > 0;
        for (int first = 0; first < rs->world;) {
            char cells[PRED_COLS + MEAS_COLS][CELL], next[PRED_COLS + MEAS_COLS][CELL];
            size_t n, n2;
            rank_cells(rs, first, measured, " ", cells, &n);
            int last = first;
            while (last + 1 < rs->world) {
                rank_cells(rs, last + 1, measured, " ", next, &n2);
                bool same = n == n2;
                for (size_t c = 0; same && c < n; c++)
                    same = !strcmp(cells[c], next[c]);
                if (!same)
                    break;
                last++;
            }
            char ranks[48];
            if (last > first)
                snprintf(ranks, sizeof ranks, "%d-%d", first, last);
            else
                snprintf(ranks, sizeof ranks, "%d", first);
            report_grid_add(&g, name);
            report_grid_add(&g, world);
            report_grid_add(&g, ranks);
            for (size_t c = 0; c < n; c++)
                report_grid_add(&g, cells[c]);
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
