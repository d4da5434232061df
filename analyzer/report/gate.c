/* SPDX-License-Identifier: MIT */
/* gate.c — the baseline gate (gate.h). */
#include "gate.h"
#include "report_int.h"
#include "base/input.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int gate_parse_tolerance(const char *s, gate_tolerance *t) {
    memset(t, 0, sizeof *t);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v >= 0) || isinf(v))
        return -1;
    if (!strcmp(end, "%")) {
        t->percent = true;
        t->pct = v;
        return 0;
    }
    static const struct {
        const char *suffix;
        uint64_t unit;
    } units[] = {{"", 1}, {"B", 1}, {"KiB", 1u << 10}, {"MiB", 1u << 20}, {"GiB", 1u << 30}};
    for (size_t k = 0; k < ML_ARRAY_LEN(units); k++)
        if (!strcmp(end, units[k].suffix)) {
            double b = v * (double)units[k].unit;
            if (b > 9.0e18 || b != floor(b))
                return -1;
            t->bytes = (uint64_t)b;
            return 0;
        }
    return -1;
}

static uint64_t allowance(const gate_tolerance *t, uint64_t old) {
    return t->percent ? (uint64_t)floor((double)old * t->pct / 100.0) : t->bytes;
}

/* The baseline's item called name ("name" or "name/plan"), or NULL. The result's "name" already
 * holds "name/plan" (report_schedule_name); a plan is appended only to a name that lacks it. */
static json_t *find_item(json_t *schedules, const char *name) {
    size_t k;
    json_t *it;
    json_array_foreach(schedules, k, it) {
        const char *n = json_string_value(json_object_get(it, "name"));
        const char *plan = json_string_value(json_object_get(it, "plan"));
        if (!n)
            continue;
        if (!strcmp(n, name))
            return it;
        size_t ln = strlen(n);
        if (plan && plan[0] && !strncmp(name, n, ln) && name[ln] == '/' &&
            !strcmp(name + ln + 1, plan))
            return it;
    }
    return NULL;
}

/* Whether s still has a plan called plan. */
static bool has_plan(const sched *s, const char *plan) {
    for (uint32_t p = 0; p < s->n_plans; p++)
        if (s->plans[p].name && !strcmp(s->plans[p].name, plan))
            return true;
    return false;
}

/* The baseline's plans of s's schedule that s no longer has, as "plan 'X' is gone" or
 * "plans 'X', 'Z' are gone"; empty when none. A plan the result merely leaves out (--plan) is
 * still in s, so it is not gone. */
static void gone_plans(json_t *schedules, const sched *s, ml_str *out) {
    size_t k, n = 0;
    json_t *it;
    ml_str names = {0};
    json_array_foreach(schedules, k, it) {
        const char *name = json_string_value(json_object_get(it, "name"));
        const char *plan = json_string_value(json_object_get(it, "plan"));
        size_t ls = strlen(s->name);
        if (!name || !plan || !plan[0] || strncmp(name, s->name, ls) ||
            (name[ls] != '\0' && name[ls] != '/') || has_plan(s, plan))
            continue;
        ml_str_printf(&names, "%s'%s'", n ? ", " : "", plan);
        n++;
    }
    if (n)
        ml_str_printf(out, "plan%s %s %s gone", n > 1 ? "s" : "", names.s, n > 1 ? "are" : "is");
    free(names.s);
}

/* A result item the baseline lacks: a note (a new schedule has nothing to regress from), or an
 * error under --strict, where every item must be held to the baseline. A plan whose neighbours
 * in the baseline have vanished from the file is most likely one of them renamed: say so, so
 * that a rename is not mistaken for a new plan. */
static void unmatched(const report_schedule *rs, const char *name, json_t *schedules,
                      const char *path, bool strict, ml_diags *errors, ml_diags *notes) {
    const char *plan = rs->s->plans[rs->plan_index].name;
    ml_str why = {0};
    if (plan && plan[0])
        gone_plans(schedules, rs->s, &why);
    ml_str msg = {0};
    if (why.n)
        ml_str_printf(&msg, "%s; '%s' is new: not in the baseline %s", why.s, plan, path);
    else
        ml_str_printf(&msg, "'%s' is not in the baseline %s", name, path);
    ml_str_printf(&msg, strict ? " (--strict: every schedule must be in the baseline)"
                               : ": nothing to compare");
    ml_diag_add(strict ? errors : notes, strict ? ML_DIAG_ERROR : ML_DIAG_NOTE, rs->s->file,
                rs->s->plans[rs->plan_index].mark, -1, strict ? "baseline_missing" : NULL, "%s",
                msg.s);
    free(msg.s);
    free(why.s);
}

static json_t *find_rank(json_t *item, int rank) {
    size_t k;
    json_t *r;
    json_array_foreach(json_object_get(item, "ranks"), k, r)
        if (json_integer_value(json_object_get(r, "rank")) == rank)
            return r;
    return NULL;
}

/* "; live at the new peak, not at the baseline's: a, b" from the names both sides recorded. */
static void only_new(const report_schedule *rs, int r, ml_mem_view v, json_t *old_names, ml_str *out) {
    const pred_rank *p = &rs->pred[r];
    bool any = false;
    for (uint32_t k = 0; k < p->n_peak_live[v]; k++) {
        const char *name = sched_sym_name(rs->s, SYM_BUFFER, p->peak_live[v][k]);
        bool old = false;
        size_t j;
        json_t *n;
        json_array_foreach(old_names, j, n)
            if (json_string_value(n) && !strcmp(json_string_value(n), name))
                old = true;
        if (old)
            continue;
        ml_str_printf(out, "%s%s", any ? ", " : "; live at the new peak, not at the baseline's: ",
                      name);
        any = true;
    }
}

/* One rank's growth of one series: where (the op now at the peak, else the plan's line) and what
 * follows "on rank(s) R" in its error. Ranks whose rows say the same are one error. */
typedef struct {
    int rank;
    ml_mark at;
    ml_str tail;
} grown_row;

static void regression(const report_schedule *rs, int r, ml_mem_view v, bool peak, uint64_t old,
                       uint64_t now, uint64_t tol, json_t *jr, grown_row *row) {
    char o[64], n[64], d[64], t[64];
    ml_format_bytes(old, o, sizeof o);
    ml_format_bytes(now, n, sizeof n);
    ml_format_bytes(now - old, d, sizeof d);
    ml_format_bytes(tol, t, sizeof t);
    ml_str *msg = &row->tail;
    *msg = (ml_str){0};
    row->rank = r;
    ml_str_printf(msg, " grew from %s to %s (+%s, tolerance %s) since the baseline", o, n, d, t);
    ml_mark at = rs->s->plans[rs->plan_index].mark;
    if (peak) {
        const rank_plan *p = &rs->plans[r];
        size_t op = rs->pred[r].peak_op[v];
        json_t *was = json_object_get(jr, v == VIEW_REQUESTED ? "peak_step" : "device_peak_step");
        if (op < p->n_ops) {
            at = plan_op_mark(plan_op_at(p, op));
            ml_str_printf(msg, "; peak now at %u:%u %s", at.line, at.col, report_op_label(p, op));
        }
        if (json_is_object(was))
            ml_str_printf(msg, " (baseline: %lld:%lld %s)",
                          (long long)json_integer_value(json_object_get(was, "line")),
                          (long long)json_integer_value(json_object_get(was, "col")),
                          json_string_value(json_object_get(was, "op")) ? json_string_value(json_object_get(was, "op")) : "?");
        only_new(rs, r, v, json_object_get(jr, v == VIEW_REQUESTED ? "peak_live" : "device_peak_live"),
                 msg);
    }
    row->at = at;
}

/* The rows of one series, folded: "requested peak on ranks 0-7 grew from ..." where the ranks'
 * rows say the same at the same place (a world of 8 does not say it 8 times). */
static void report_grown(const report_schedule *rs, ml_mem_view v, bool peak, grown_row *rows,
                         size_t n, ml_diags *errors) {
    int *ranks = ml_xcalloc(n ? n : 1, sizeof *ranks);
    for (size_t k = 0; k < n;) {
        size_t j = k, m = 0;
        while (j < n && rows[j].at.line == rows[k].at.line && rows[j].at.col == rows[k].at.col &&
               !strcmp(rows[j].tail.s, rows[k].tail.s))
            ranks[m++] = rows[j++].rank;
        char text[256];
        report_ranks_text(ranks, m, text, sizeof text);
        ml_diag_add(errors, ML_DIAG_ERROR, rs->s->file, rows[k].at, -1, "baseline_growth",
                    "%s %s on rank%s %s%s", ml_mem_view_names[v], peak ? "peak" : "steady",
                    m > 1 ? "s" : "", text, rows[k].tail.s);
        k = j;
    }
    for (size_t k = 0; k < n; k++)
        free(rows[k].tail.s);
    free(ranks);
}

int gate_compare(const report *r, const char *path, const gate_tolerance *t, bool strict,
                 ml_diags *errors, ml_diags *notes, size_t *per_item, bool *missing) {
    json_error_t je;
    ml_input in;   /* bounded, regular files or standard input only (base/input.h) */
    char why[512];
    if (ml_input_read(path, &in, why, sizeof why) != 0) {
        ml_error(errors, path, ((ml_mark){0, 0}), "%s", why);
        return -1;
    }
    json_t *root = json_loadb(in.data, in.len, JSON_REJECT_DUPLICATES, &je);
    ml_input_free(&in);
    ml_mark top = {1, 1};
    if (!root) {
        ml_mark m = {je.line > 0 ? (uint32_t)je.line : 1, je.column > 0 ? (uint32_t)je.column : 1};
        ml_error(errors, path, m, "cannot read the baseline: %s", je.text);
        return -1;
    }
    json_t *schedules = json_object_get(root, "schedules");
    if (!json_is_array(schedules)) {
        ml_error(errors, path, top, "not a memlife result: no 'schedules' list (write the baseline "
                                    "with 'memlife check --format json -o FILE')");
        json_decref(root);
        return -1;
    }
    int regressions = 0;
    for (size_t k = 0; k < r->n; k++) {
        const report_schedule *rs = &r->items[k];
        char name[512];
        report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
        json_t *item = find_item(schedules, name);
        if (!item) {
            unmatched(rs, name, schedules, path, strict, errors, notes);
            if (strict)
                regressions++;
            if (missing)
                missing[k] = true;
            continue;
        }
        grown_row *rows = ml_xcalloc(rs->world > 0 ? (size_t)rs->world : 1, sizeof *rows);
        for (int v = 0; v < VIEW_COUNT; v++) {
            /* the series' object in the baseline: {view: {...}} or {view: {key: {...}}} */
            const ml_series_info *si = &ml_series[v];
            for (int peak = 0; peak < 2; peak++) {
                size_t n = 0;
                for (int rank = 0; rank < rs->world; rank++) {
                    json_t *jr = find_rank(item, rank);
                    json_t *jv = json_object_get(jr, ml_views[si->view].name);
                    if (si->key)
                        jv = json_object_get(jv, si->key);
                    json_t *old = json_object_get(jv, peak ? "peak" : "steady");
                    if (!jr || !json_is_integer(old) || json_integer_value(old) < 0)
                        continue;
                    uint64_t o = (uint64_t)json_integer_value(old);
                    uint64_t now = peak ? rs->pred[rank].peak[v] : rs->pred[rank].steady[v];
                    uint64_t tol = allowance(t, o);
                    if (now > o && now - o > tol) {
                        regression(rs, rank, (ml_mem_view)v, peak, o, now, tol, jr, &rows[n++]);
                        regressions++;
                        if (per_item)
                            per_item[k]++;
                    }
                }
                report_grown(rs, (ml_mem_view)v, peak, rows, n, errors);
            }
        }
        free(rows);
    }
    json_decref(root);
    return regressions;
}
