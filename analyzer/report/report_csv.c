/* report_csv.c — one row per schedule × rank, bytes as integers, for spreadsheets and awk. */
#include "report/report_int.h"

#include <string.h>

/* RFC 4180: quote a field holding a comma, quote or line break; double the quotes inside. */
static void csv_field(ml_str *out, const char *text, bool last) {
    if (strpbrk(text, ",\"\r\n")) {
        ml_str_append(out, "\"", 1);
        for (const char *c = text; *c; c++) {
            if (*c == '"')
                ml_str_append(out, "\"\"", 2);
            else
                ml_str_append(out, c, 1);
        }
        ml_str_append(out, "\"", 1);
    } else {
        ml_str_append(out, text, strlen(text));
    }
    ml_str_append(out, last ? "\n" : ",", 1);
}

static void csv_u64(ml_str *out, uint64_t v) { ml_str_printf(out, "%llu,", (unsigned long long)v); }

/* The columns come from the view table: per predicted series `<csv>_steady,<csv>_peak` (and
 * `_exact,_peak_lo,_peak_hi` for a bounded view), per measured series `measured_<csv>_...`. */
int report_write_csv(const report *r, ml_str *out) {
    bool measured = report_has_measured(r);
    bool on[MV_COUNT], meas[VIEW_COUNT];
    ml_str_append(out, "schedule,plan,file,world,rank,", 30);
    for (int view = 0; view < MV_COUNT; view++) {
        on[view] = report_view_on(r, (ml_view_id)view);
        for (int k = 0; on[view] && k < ml_views[view].n_series; k++) {
            const char *c = ml_series[ml_views[view].series[k]].csv;
            ml_str_printf(out, "%s_steady,%s_peak,", c, c);
            if (ml_views[view].bounded)
                ml_str_printf(out, "%s_exact,%s_peak_lo,%s_peak_hi,", c, c, c);
        }
    }
    ml_str_printf(out, "peak_line,peak_col,peak_op,peak_live,floor,");
    size_t n_meas = 0;
    for (int v = 0; v < VIEW_COUNT; v++) {
        meas[v] = measured && ml_views[ml_series[v].view].measured;
        if (meas[v]) {
            ml_str_printf(out, "measured_%s_steady,measured_%s_peak,", ml_series[v].csv, ml_series[v].csv);
            n_meas++;
        }
    }
    ml_str_printf(out, "%sexpect\n", measured ? "communicator_bytes,match," : "");
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        char name[256];
        report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
        for (int rank = 0; rank < rs->world; rank++) {
            const pred_rank *p = &rs->pred[rank];
            csv_field(out, name, false);
            csv_field(out, rs->s->plans[rs->plan_index].name, false);
            csv_field(out, rs->s->file, false);
            ml_str_printf(out, "%d,%d,", rs->world, rank);
            for (int view = 0; view < MV_COUNT; view++)
                for (int j = 0; on[view] && j < ml_views[view].n_series; j++) {
                    ml_mem_view v = ml_views[view].series[j];
                    csv_u64(out, p->steady[v]);
                    csv_u64(out, p->peak[v]);
                    if (!ml_views[view].bounded)
                        continue;
                    ml_str_printf(out, "%s,", p->exact[v] ? "true" : "false");
                    csv_u64(out, p->peak_lo[v]);
                    csv_u64(out, p->peak_hi[v]);
                }
            size_t op = p->peak_op[VIEW_REQUESTED];
            const rank_plan *plan = &rs->plans[rank];
            if (op < plan->n_ops) {
                ml_mark m = plan_op_mark(&plan->ops[op]);
                ml_str_printf(out, "%u,%u,%s,", m.line, m.col, report_op_label(plan, op));
            } else {
                ml_str_append(out, ",,,", 3);
            }
            ml_str live = {0};
            ml_str_append(&live, "", 0);
            report_live_names(rs, rank, " ", &live);
            csv_field(out, live.s, false);
            ml_str_free(&live);
            csv_u64(out, p->floor);
            if (measured) {
                const report_measured *m = rs->measured ? &rs->measured[rank] : NULL;
                for (int v = 0; v < VIEW_COUNT; v++) {
                    if (!meas[v])
                        continue;
                    if (report_measured_has(m, (ml_mem_view)v)) {
                        csv_u64(out, m->steady[v]);
                        csv_u64(out, m->peak[v]);
                    } else {
                        ml_str_append(out, ",,", 2);
                    }
                }
                if (m && m->present) {
                    csv_u64(out, m->communicator_bytes);
                    ml_str_printf(out, "%s,", m->match ? "true" : "false");
                } else {
                    ml_str_append(out, ",,", 2);
                }
            }
            csv_field(out, report_expect_status(rs), true);
        }
    }
    return 0;
}
