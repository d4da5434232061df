/* SPDX-License-Identifier: MIT */
/* optimize_report.c — what `memlife optimize` says: per plan, per stage and rank, steady and
 * peak in both views, the saving of each stage, and the floor (floor.c) with the distance of the
 * result from it. Table and Markdown group ranks whose rows read the same; JSON has every rank.
 *
 * JSON (stable names): {`command`: "optimize", `file`, `name`, `world`, `verified`, `plans`:
 * [{`plan` (null for a file without plans), `optimized`, `stages`: [{`stage`, `kept`,
 * `changes`, `why`}], `ranks`: [{`rank`, `floor`, `before`: MEM, `after`: MEM, `above_floor`,
 * `stages`: [{`stage`, `kept`, `after`: MEM, `saving`: {`requested_peak`, `device_peak`,
 * `requested_steady`}}]}]}]} with MEM = {`requested`: {`steady`, `peak`}, `device`: {`steady`,
 * `peak`}}; bytes are integers, savings may be negative (a kept in-place rewrite can raise the
 * steady while it lowers the peak). */
#include "optimize/optimize.h"
#include "report/doc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const opt_mem *final_mem(const opt_plan_result *p, int r) {
    for (size_t k = p->n_stages; k-- > 0;)
        if (p->stages[k].kept)
            return &p->stages[k].after[r];
    return &p->before[r];
}

static const opt_mem *stage_before(const opt_plan_result *p, size_t k, int r) {
    for (size_t j = k; j-- > 0;)
        if (p->stages[j].kept)
            return &p->stages[j].after[r];
    return &p->before[r];
}

static void plan_title(const opt_result *r, const opt_plan_result *p, char *buf, size_t len) {
    report_schedule_name(r->original, p->plan_index, buf, len);
}

/* ---- table and Markdown ----------------------------------------------------------------------- */

/* The fixed columns, then one "SERIES peak" column per series of every optional view that is on
 * (views.h: torch allocated, torch reserved), so a new view needs no edit here. */
enum { C_STAGE, C_KEPT, C_RANKS, C_REQ_STEADY, C_REQ_PEAK, C_SAVED, C_DEV_STEADY, C_DEV_PEAK,
       C_FLOOR, C_COUNT, C_MAX = C_COUNT + VIEW_COUNT };
static const char *const fixed_headers[C_COUNT] = {"stage", "kept", "ranks", "requested steady",
                                                   "requested peak", "saved", "device steady",
                                                   "device peak", "floor"};

typedef struct {
    size_t n;
    const char *headers[C_MAX];
    bool right[C_MAX];
    unsigned prio[C_MAX];        /* report_grid_priority: what a narrow terminal drops first */
    ml_mem_view series[C_MAX];   /* for columns >= C_COUNT */
    char text[VIEW_COUNT][64];
} opt_cols;

/* A narrow terminal keeps the stage, its requested peak and what it saved: the floor goes
 * first, then the other views, then the requested steady. */
static const unsigned fixed_prio[C_COUNT] = {0, 0, 0, 1, 0, 0, 2, 2, 3};

static void pick_cols(const opt_result *r, opt_cols *c) {
    memset(c, 0, sizeof *c);
    for (int k = 0; k < C_COUNT; k++) {
        c->headers[k] = fixed_headers[k];
        c->right[k] = k >= C_REQ_STEADY;
        c->prio[k] = fixed_prio[k];
    }
    c->n = C_COUNT;
    const opt_mem *m = NULL;
    for (size_t k = 0; k < r->n_plans && !m; k++)
        if (r->plans[k].optimized && r->world > 0)
            m = &r->plans[k].before[0];
    for (int view = 0; m && view < MV_COUNT; view++) {
        if (!ml_views[view].optional || !m->on[view])
            continue;
        for (int j = 0; j < ml_views[view].n_series; j++) {
            ml_mem_view v = ml_views[view].series[j];
            snprintf(c->text[v], sizeof c->text[v], "%s peak", ml_series[v].column);
            c->headers[c->n] = c->text[v];
            c->right[c->n] = true;
            c->prio[c->n] = 2;
            c->series[c->n++] = v;
        }
    }
}

static void size_cell(uint64_t v, char *buf, size_t len) { report_size_cell(v, buf, len); }

static void saved_cell(uint64_t before, uint64_t after, char *buf, size_t len) {
    char t[64];
    if (before == after) {
        snprintf(buf, len, "-");
    } else if (before > after) {
        report_size_cell(before - after, t, sizeof t);
        snprintf(buf, len, "%s", t);
    } else {
        report_size_cell(after - before, t, sizeof t);
        snprintf(buf, len, "-%s", t);
    }
}

/* The cells of one row (row = -1: before; else stage index) for rank r, after the rank column. */
static void row_cells(const opt_plan_result *p, const opt_cols *cols, int row, int r,
                      char cells[C_MAX][96]) {
    const opt_mem *m = row < 0 ? &p->before[r] : &p->stages[row].after[r];
    const opt_mem *prev = row < 0 ? m : stage_before(p, (size_t)row, r);
    for (size_t c = 0; c < C_MAX; c++)   /* same_cells compares every cell, set or not */
        cells[c][0] = '\0';
    snprintf(cells[C_STAGE], 96, "%s", row < 0 ? "before" : opt_kind_names[p->stages[row].kind]);
    snprintf(cells[C_KEPT], 96, "%s", row < 0 ? "" : p->stages[row].kept ? "yes" : "no");
    size_cell(m->steady[VIEW_REQUESTED], cells[C_REQ_STEADY], 96);
    size_cell(m->peak[VIEW_REQUESTED], cells[C_REQ_PEAK], 96);
    saved_cell(prev->peak[VIEW_REQUESTED], m->peak[VIEW_REQUESTED], cells[C_SAVED], 96);
    size_cell(m->steady[VIEW_DEVICE], cells[C_DEV_STEADY], 96);
    size_cell(m->peak[VIEW_DEVICE], cells[C_DEV_PEAK], 96);
    size_cell(p->floor[r], cells[C_FLOOR], 96);
    for (size_t c = C_COUNT; c < cols->n; c++)
        size_cell(m->peak[cols->series[c]], cells[c], 96);
    cells[C_RANKS][0] = '\0';
}

static bool same_cells(const opt_plan_result *p, const opt_cols *cols, int row, int a, int b) {
    char x[C_MAX][96], y[C_MAX][96];
    row_cells(p, cols, row, a, x);
    row_cells(p, cols, row, b, y);
    for (int c = 0; c < C_MAX; c++)
        if (strcmp(x[c], y[c]))
            return false;
    return true;
}

static void add_rows(report_grid *g, const opt_cols *cols, const opt_result *r,
                     const opt_plan_result *p,
                     const char *name) {
    for (int row = -1; row < (int)p->n_stages; row++)
        for (int first = 0; first < r->world;) {
            int last = first;
            while (last + 1 < r->world && same_cells(p, cols, row, first, last + 1))
                last++;
            char cells[C_MAX][96];
            row_cells(p, cols, row, first, cells);
            if (last > first)
                snprintf(cells[C_RANKS], 96, "%d-%d", first, last);
            else
                snprintf(cells[C_RANKS], 96, "%d", first);
            if (name)
                report_grid_add(g, name);
            for (int c = 0; c < (int)g->cols - (name != NULL); c++)
                report_grid_add(g, cells[c]);
            first = last + 1;
        }
}

/* "after: 256 MiB requested peak, 0 B above the floor (256 MiB) on ranks 0-3" */
static void summary(const opt_result *r, const opt_plan_result *p, const char *indent, ml_str *out) {
    for (int first = 0; first < r->world;) {
        const opt_mem *m = final_mem(p, first);
        int last = first;
        while (last + 1 < r->world && final_mem(p, last + 1)->peak[VIEW_REQUESTED] ==
                                          m->peak[VIEW_REQUESTED] &&
               p->floor[last + 1] == p->floor[first] &&
               p->before[last + 1].peak[VIEW_REQUESTED] == p->before[first].peak[VIEW_REQUESTED])
            last++;
        char b[64], a[64], f[64], d[64], ranks[32];
        report_size_cell(p->before[first].peak[VIEW_REQUESTED], b, sizeof b);
        report_size_cell(m->peak[VIEW_REQUESTED], a, sizeof a);
        report_size_cell(p->floor[first], f, sizeof f);
        uint64_t above = m->peak[VIEW_REQUESTED] - (p->floor[first] < m->peak[VIEW_REQUESTED]
                                                        ? p->floor[first]
                                                        : m->peak[VIEW_REQUESTED]);
        report_size_cell(above, d, sizeof d);
        if (last > first)
            snprintf(ranks, sizeof ranks, "ranks %d-%d", first, last);
        else
            snprintf(ranks, sizeof ranks, "rank %d", first);
        ml_str_printf(out, "%srequested peak %s -> %s, floor %s: %s above the floor (%s)\n", indent,
                      b, a, f, d, ranks);
        first = last + 1;
    }
    /* what the rewrite costs in time (timemodel.h) and in host waits */
    ml_str_printf(out, "%sstep time %.1f -> %.1f us (predicted), host syncs added: %d\n", indent,
                  p->step_before_us, p->step_after_us, p->host_syncs_added);
}

static void stage_notes(const opt_plan_result *p, const char *indent, ml_str *out) {
    for (size_t k = 0; k < p->n_stages; k++)
        ml_str_printf(out, "%s%s: %s\n", indent, opt_kind_names[p->stages[k].kind],
                      p->stages[k].why);
}

/* The notes under a plan's grid, as one paragraph of the document. */
static void notes(report_doc *d, unsigned mask, const opt_result *r, const opt_plan_result *p,
                  const char *indent) {
    ml_str t = {0};
    ml_str_append(&t, "", 0);
    stage_notes(p, indent, &t);
    summary(r, p, indent, &t);
    report_doc_printf(d, mask, "%s", t.s);
    ml_str_free(&t);
}

static bool any_kept(const opt_result *r) {
    for (size_t k = 0; k < r->n_plans; k++)
        if (r->plans[k].any_kept)
            return true;
    return false;
}

/* How the rewritten file was written (patch_text.h): the input's text with edits, and the steps
 * in it the emitter wrote whole, or the emitter's whole file and why. */
static void written_line(const opt_result *r, const char *indent, ml_str *out) {
    if (!any_kept(r))
        return;
    if (r->emitted_whole)
        ml_str_printf(out, "%srewritten file: written whole by the emitter (%s): only the "
                      "comments above steps are kept\n", indent, r->patch.why);
    else
        ml_str_printf(out, "%srewritten file: the input's text with %u edit%s%s", indent,
                      r->patch.edits, r->patch.edits == 1 ? "" : "s",
                      r->patch.emitted ? "; " : "\n");
    if (!r->emitted_whole && r->patch.emitted)
        ml_str_printf(out, "%u block step%s written by the emitter (a body changed: the comments "
                      "inside moved above it)\n", r->patch.emitted, r->patch.emitted == 1 ? "" : "s");
}

static void build_table(const opt_result *r, report_doc *d) {
    bool first = true;
    for (size_t k = 0; k < r->n_plans; k++) {
        const opt_plan_result *p = &r->plans[k];
        if (!p->optimized)
            continue;
        char name[256];
        plan_title(r, p, name, sizeof name);
        report_doc_printf(d, DOC_TABLE, "%s%s (%s, verified at %s)\n", first ? "" : "\n", name,
                          r->original->file, r->verified);
        first = false;
        report_grid g;
        opt_cols cols;
        pick_cols(r, &cols);
        report_grid_init(&g, cols.n, cols.headers, cols.right);
        for (size_t c = 0; c < cols.n; c++)
            report_grid_priority(&g, c, cols.prio[c]);
        add_rows(&g, &cols, r, p, NULL);
        report_doc_grid(d, DOC_TABLE, &g, "  ");
        notes(d, DOC_TABLE, r, p, "  ");
    }
    ml_str t = {0};
    ml_str_append(&t, "", 0);
    written_line(r, "", &t);
    report_doc_printf(d, DOC_TABLE, "%s", t.s);
    ml_str_free(&t);
}

static void build_md(const opt_result *r, report_doc *d) {
    const char *h[C_MAX + 1] = {"schedule"};
    bool rt[C_MAX + 1] = {false};
    opt_cols cols;
    pick_cols(r, &cols);
    size_t nc = cols.n;
    for (size_t c = 0; c < nc; c++) {
        h[c + 1] = cols.headers[c];
        rt[c + 1] = cols.right[c];
    }
    report_grid g;
    report_grid_init(&g, (size_t)nc + 1, h, rt);
    for (size_t k = 0; k < r->n_plans; k++) {
        char name[256];
        plan_title(r, &r->plans[k], name, sizeof name);
        if (r->plans[k].optimized)
            add_rows(&g, &cols, r, &r->plans[k], name);
    }
    report_doc_grid(d, DOC_MD, &g, "");
    report_doc_printf(d, DOC_MD, "\nVerified at %s.\n\n", r->verified);
    for (size_t k = 0; k < r->n_plans; k++) {
        if (!r->plans[k].optimized)
            continue;
        char name[256];
        plan_title(r, &r->plans[k], name, sizeof name);
        report_doc_printf(d, DOC_MD, "- `%s`:\n", name);
        notes(d, DOC_MD, r, &r->plans[k], "  - ");
    }
    ml_str t = {0};
    ml_str_append(&t, "", 0);
    written_line(r, "\n", &t);
    report_doc_printf(d, DOC_MD, "%s", t.s);
    ml_str_free(&t);
}

/* ---- JSON ------------------------------------------------------------------------------------- */

/* {view: {steady, peak}} for every view predicted (report_view_json). */
static json_t *mem_json(const opt_mem *m) {
    json_t *o = json_object();
    for (int view = 0; view < MV_COUNT; view++)
        if (m->on[view])
            json_object_set_new(o, ml_views[view].name,
                                report_view_json((ml_view_id)view, m->steady, m->peak, NULL,
                                                 NULL));
    return o;
}

static json_t *plan_json(const opt_result *r, const opt_plan_result *p) {
    const sched_plan *pl = &r->original->plans[p->plan_index];
    json_t *o = json_object();
    json_object_set_new(o, "plan", pl->name[0] ? json_string(pl->name) : json_null());
    json_object_set_new(o, "optimized", json_boolean(p->optimized));
    json_t *stages = json_array(), *ranks = json_array();
    for (size_t k = 0; k < p->n_stages; k++)
        json_array_append_new(stages, json_pack("{s:s, s:b, s:I, s:s}", "stage",
                                                opt_kind_names[p->stages[k].kind], "kept",
                                                p->stages[k].kept, "changes",
                                                (json_int_t)p->stages[k].changes, "why",
                                                p->stages[k].why));
    for (int rk = 0; p->optimized && rk < r->world; rk++) {
        const opt_mem *fin = final_mem(p, rk);
        json_t *x = json_object(), *st = json_array();
        json_object_set_new(x, "rank", json_integer(rk));
        json_object_set_new(x, "floor", json_integer((json_int_t)p->floor[rk]));
        json_object_set_new(x, "before", mem_json(&p->before[rk]));
        json_object_set_new(x, "after", mem_json(fin));
        json_object_set_new(x, "above_floor",
                            json_integer((json_int_t)fin->peak[VIEW_REQUESTED] -
                                         (json_int_t)p->floor[rk]));
        for (size_t k = 0; k < p->n_stages; k++) {
            const opt_mem *a = &p->stages[k].after[rk], *b = stage_before(p, k, rk);
            json_t *s = json_object();
            json_object_set_new(s, "stage", json_string(opt_kind_names[p->stages[k].kind]));
            json_object_set_new(s, "kept", json_boolean(p->stages[k].kept));
            json_object_set_new(s, "after", mem_json(a));
            json_object_set_new(
                s, "saving",
                json_pack("{s:I, s:I, s:I}", "requested_peak",
                          (json_int_t)b->peak[VIEW_REQUESTED] - (json_int_t)a->peak[VIEW_REQUESTED],
                          "device_peak",
                          (json_int_t)b->peak[VIEW_DEVICE] - (json_int_t)a->peak[VIEW_DEVICE],
                          "requested_steady",
                          (json_int_t)b->steady[VIEW_REQUESTED] -
                              (json_int_t)a->steady[VIEW_REQUESTED]));
            json_array_append_new(st, s);
        }
        json_object_set_new(x, "stages", st);
        json_array_append_new(ranks, x);
    }
    json_object_set_new(o, "stages", stages);
    json_object_set_new(o, "ranks", ranks);
    json_object_set_new(o, "host_syncs_added", json_integer(p->host_syncs_added));
    json_object_set_new(o, "time", json_pack("{s:f, s:f}", "step_before_us", p->step_before_us,
                                             "step_after_us", p->step_after_us));
    return o;
}

static void build_json(const opt_result *r, report_doc *d) {
    json_t *root = json_object();
    json_object_set_new(root, "command", json_string("optimize"));
    json_object_set_new(root, "file", json_string(r->original->file));
    json_object_set_new(root, "name", json_string(r->original->name));
    json_object_set_new(root, "world", json_integer(r->world));
    json_object_set_new(root, "verified", json_string(r->verified));
    json_t *plans = json_array();
    for (size_t k = 0; k < r->n_plans; k++)
        json_array_append_new(plans, plan_json(r, &r->plans[k]));
    json_object_set_new(root, "plans", plans);
    if (any_kept(r))
        json_object_set_new(root, "rewrite",
                            json_pack("{s:b, s:I, s:I, s:o}", "patched", !r->emitted_whole,
                                      "edits", (json_int_t)r->patch.edits, "emitted_steps",
                                      (json_int_t)r->patch.emitted, "why",
                                      r->emitted_whole ? json_string(r->patch.why) : json_null()));
    report_doc_json(d, root, 0);
}

static void build_human(const void *ctx, bool md, report_doc *d) {
    if (md)
        build_md(ctx, d);
    else
        build_table(ctx, d);
}

static void build_json_part(const void *ctx, report_doc *d) { build_json(ctx, d); }

/* optimize's document: table, Markdown and JSON parts; no CSV grid. */
static const report_family opt_family = {build_human, build_json_part, NULL};

int opt_report(const opt_result *r, report_format fmt, ml_str *out) {
    return report_family_render(&opt_family, r, fmt, out);
}

unsigned opt_formats(void) { return report_family_formats(&opt_family); }
