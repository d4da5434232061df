/* SPDX-License-Identifier: MIT */
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

int report_write_csv(const report *r, ml_str *out) {
    bool measured = report_has_measured(r);
    ml_str_printf(out, "schedule,plan,file,world,rank,requested_steady,requested_peak,"
                       "device_steady,device_peak,device_exact,device_peak_lo,device_peak_hi,"
                       "peak_line,peak_col,peak_op,peak_live,floor,%sexpect\n",
                  measured ? "measured_requested_steady,measured_requested_peak,"
                             "measured_device_steady,measured_device_peak,communicator_bytes,match,"
                           : "");
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
            csv_u64(out, p->steady[VIEW_REQUESTED]);
            csv_u64(out, p->peak[VIEW_REQUESTED]);
            csv_u64(out, p->steady[VIEW_DEVICE]);
            csv_u64(out, p->peak[VIEW_DEVICE]);
            ml_str_printf(out, "%s,", p->device_exact ? "true" : "false");
            csv_u64(out, p->device_exact ? p->peak[VIEW_DEVICE] : p->device_peak_lo);
            csv_u64(out, p->device_exact ? p->peak[VIEW_DEVICE] : p->device_peak_hi);
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
                if (m && m->present) {
                    csv_u64(out, m->steady[VIEW_REQUESTED]);
                    csv_u64(out, m->peak[VIEW_REQUESTED]);
                    if (m->has_device) {
                        csv_u64(out, m->steady[VIEW_DEVICE]);
                        csv_u64(out, m->peak[VIEW_DEVICE]);
                    } else {
                        ml_str_append(out, ",,", 2);
                    }
                    csv_u64(out, m->communicator_bytes);
                    ml_str_printf(out, "%s,", m->match ? "true" : "false");
                } else {
                    ml_str_append(out, ",,,,,,", 6);
                }
            }
            csv_field(out, report_expect_status(rs), true);
        }
    }
    return 0;
}
