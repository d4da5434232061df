/* SPDX-License-Identifier: MIT */
/* report_csv.c — the CSV grid of the document: one row per schedule × rank, bytes as integers,
 * for spreadsheets and awk. */
#include "report/doc.h"

#include <stdlib.h>

#include <string.h>

/* A growing row of the CSV grid: cells as text (the document quotes them, RFC 4180). */
static void cell_u64(report_grid *g, uint64_t v) {
    char t[24];
    snprintf(t, sizeof t, "%llu", (unsigned long long)v);
    report_grid_add(g, t);
}

static void add_header(ml_vec *h, const char *fmt, const char *stem) {
    char t[128];
    snprintf(t, sizeof t, fmt, stem);
    char *copy = ml_xstrdup(t);
    *(char **)ml_vec_push(h) = copy;
}

/* The columns come from the view table: per predicted series `<csv>_steady,<csv>_peak` (and
 * `_exact,_peak_lo,_peak_hi` for a bounded view), per measured series `measured_<csv>_...`. */
void report_doc_csv_grid(const report *r, report_doc *d) {
    bool measured = report_has_measured(r);
    bool on[MV_COUNT], meas[VIEW_COUNT];
    ml_vec h;
    ml_vec_init(&h, sizeof(char *));
    static const char *const lead[] = {"schedule", "plan", "file", "world", "rank"};
    for (size_t k = 0; k < ML_ARRAY_LEN(lead); k++)
        add_header(&h, "%s", lead[k]);
    for (int view = 0; view < MV_COUNT; view++) {
        on[view] = report_view_on(r, (ml_view_id)view);
        for (int k = 0; on[view] && k < ml_views[view].n_series; k++) {
            const char *c = ml_series[ml_views[view].series[k]].csv;
            add_header(&h, "%s_steady", c);
            add_header(&h, "%s_peak", c);
            if (ml_views[view].bounded) {
                add_header(&h, "%s_exact", c);
                add_header(&h, "%s_peak_lo", c);
                add_header(&h, "%s_peak_hi", c);
            }
        }
    }
    static const char *const mid[] = {"peak_line", "peak_col", "peak_op", "peak_live", "floor"};
    for (size_t k = 0; k < ML_ARRAY_LEN(mid); k++)
        add_header(&h, "%s", mid[k]);
    for (int v = 0; v < VIEW_COUNT; v++) {
        meas[v] = measured && ml_views[ml_series[v].view].measured;
        if (meas[v]) {
            add_header(&h, "measured_%s_steady", ml_series[v].csv);
            add_header(&h, "measured_%s_peak", ml_series[v].csv);
        }
    }
    if (measured) {
        add_header(&h, "%s", "communicator_bytes");
        add_header(&h, "%s", "match");
    }
    add_header(&h, "%s", "expect");
    bool *right = ml_xcalloc(h.n, sizeof *right);
    report_grid g;
    report_grid_init(&g, h.n, (const char *const *)h.items, right);
    for (size_t k = 0; k < h.n; k++)
        free(ML_VEC_AT(&h, char *, k));
    ml_vec_free(&h);
    free(right);
    char t[256];
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        char name[256];
        report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
        for (int rank = 0; rank < rs->world; rank++) {
            const pred_rank *p = &rs->pred[rank];
            report_grid_add(&g, name);
            report_grid_add(&g, rs->s->plans[rs->plan_index].name);
            report_grid_add(&g, rs->s->file);
            cell_u64(&g, (uint64_t)rs->world);
            cell_u64(&g, (uint64_t)rank);
            for (int view = 0; view < MV_COUNT; view++)
                for (int j = 0; on[view] && j < ml_views[view].n_series; j++) {
                    ml_mem_view v = ml_views[view].series[j];
                    cell_u64(&g, p->steady[v]);
                    cell_u64(&g, p->peak[v]);
                    if (!ml_views[view].bounded)
                        continue;
                    report_grid_add(&g, p->exact[v] ? "true" : "false");
                    cell_u64(&g, p->peak_lo[v]);
                    cell_u64(&g, p->peak_hi[v]);
                }
            size_t op = p->peak_op[VIEW_REQUESTED];
            const rank_plan *plan = &rs->plans[rank];
            if (op < plan->n_ops) {
                ml_mark m = plan_op_mark(plan_op_at(plan, op));
                cell_u64(&g, m.line);
                cell_u64(&g, m.col);
                report_grid_add(&g, report_op_label(plan, op));
            } else {
                for (int c = 0; c < 3; c++)
                    report_grid_add(&g, "");
            }
            ml_str live = {0};
            ml_str_append(&live, "", 0);
            report_live_names(rs, rank, " ", &live);
            report_grid_add(&g, live.s);
            ml_str_free(&live);
            cell_u64(&g, p->floor);
            if (measured) {
                const report_measured *m = rs->measured ? &rs->measured[rank] : NULL;
                for (int v = 0; v < VIEW_COUNT; v++) {
                    if (!meas[v])
                        continue;
                    bool has = report_measured_has(m, (ml_mem_view)v);
                    snprintf(t, sizeof t, "%llu", has ? (unsigned long long)m->steady[v] : 0ull);
                    report_grid_add(&g, has ? t : "");
                    snprintf(t, sizeof t, "%llu", has ? (unsigned long long)m->peak[v] : 0ull);
                    report_grid_add(&g, has ? t : "");
                }
                bool present = m && m->present;
                snprintf(t, sizeof t, "%llu", present ? (unsigned long long)m->rec.communicator_bytes : 0ull);
                report_grid_add(&g, present ? t : "");
                report_grid_add(&g, !present ? "" : m->match ? "true" : "false");
            }
            report_grid_add(&g, report_expect_status(rs));
        }
    }
    report_doc_csv(d, &g);
}
