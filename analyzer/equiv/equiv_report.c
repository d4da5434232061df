/* SPDX-License-Identifier: MIT */
/* equiv_report.c — `memlife equiv` results as a table, JSON or Markdown (equiv.h). */
#include "equiv/equiv.h"
#include "report/doc.h"
#include "ir/measure.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *verdict_text(equiv_verdict v) {
    return v == EQV_HOLDS ? "holds" : v == EQV_FAILS ? "does not hold" : "undecided";
}

static void result_name(const equiv_result *r, int side, char *buf, size_t len) {
    snprintf(buf, len, "%s", sched_sym_name(r->side[side]->s, SYM_BUFFER, r->result[side]));
}

static void cause_line(const equiv_result *r, const equiv_cause *c, ml_str *out, const char *pre) {
    if (c->mark.line)
        ml_str_printf(out, "%s%s:%u:%u: %s: %s\n", pre, c->file, c->mark.line, c->mark.col,
                      equiv_causes[c->kind].checklist, c->text);
    else
        ml_str_printf(out, "%s%s: %s: %s\n", pre, c->file, equiv_causes[c->kind].checklist, c->text);
}

static void header(const equiv_result *r, const char *provenance, bool md, ml_str *out) {
    char ra[160], rb[160];
    result_name(r, 0, ra, sizeof ra);
    result_name(r, 1, rb, sizeof rb);
    const char *q = md ? "`" : "";
    ml_str_printf(out, "%sequiv: A = %s%s%s (%s), B = %s%s%s (%s); world %d; results '%s' and '%s'\n",
                  md ? "### " : "", q, r->side[0]->label, q, r->side[0]->s->file, q,
                  r->side[1]->label, q, r->side[1]->s->file, r->world, ra, rb);
    if (provenance) {
        char line[2048];
        ml_provenance_summary(provenance, line, sizeof line);
        ml_str_printf(out, "%s%s\n", md ? "\n" : "", line);
    }
    if (md)
        ml_str_append(out, "\n", 1);
}

/* The human part of equiv's document: the text table (md false) or Markdown. */
static void build_text(const equiv_result *r, bool md, const char *provenance, report_doc *d) {
    static const char *const headers[] = {"meaning", "verdict", "A", "B", "detail"};
    static const bool right[] = {false, false, false, false, false};
    unsigned mask = md ? DOC_MD : DOC_TABLE;
    ml_str out = {0};
    ml_str_append(&out, "", 0);
    header(r, provenance, md, &out);
    report_doc_printf(d, mask, "%s", out.s);
    out.n = 0;
    out.s[0] = '\0';
    report_grid g;
    report_grid_init(&g, 5, headers, right);
    /* A narrow terminal keeps the verdicts: A's and B's sides wrap and go first, the detail
     * (which names both sides' numbers) last. */
    for (size_t c = 2; c < 5; c++) {
        report_grid_wrap(&g, c);
        report_grid_priority(&g, c, c == 4 ? 1 : 2);
    }
    for (int k = 0; k < EQ_ROW_COUNT; k++) {
        report_grid_add(&g, equiv_row_names[k]);
        report_grid_add(&g, verdict_text(r->rows[k].verdict));
        report_grid_add(&g, r->rows[k].a);
        report_grid_add(&g, r->rows[k].b);
        report_grid_add(&g, r->rows[k].detail);
    }
    report_doc_grid(d, mask, &g, md ? "" : "  ");
    if (r->kernels_note[0])
        ml_str_printf(&out, "%s--kernels: %s\n", md ? "\n" : "", r->kernels_note);
    if (r->n_causes) {
        ml_str_printf(&out, "%s", md ? "\n**causes (the chapter's checklist):**\n\n"
                                     : "causes (the chapter's checklist):\n");
        for (size_t k = 0; k < r->n_causes; k++)
            cause_line(r, &r->causes[k], &out, md ? "- " : "  ");
    }
    int code = equiv_exit_code(r);
    ml_str_printf(&out, "%s%s\n", md ? "\n" : "",
                  code == 0 ? "all four hold" : "not all four hold (exit 1)");
    report_doc_printf(d, mask, "%s", out.s);
    ml_str_free(&out);
}

/* ---- JSON -------------------------------------------------------------------------------------*/

static json_t *u64(uint64_t v) { return json_integer((json_int_t)v); }

static json_t *side_json(const equiv_result *r, int side) {
    const series *s = r->side[side];
    const char *plan = s->s->plans[s->plan_index].name;
    char name[160];
    result_name(r, side, name, sizeof name);
    return json_pack("{s:s, s:s, s:s, s:s}", "label", s->label, "file", s->s->file, "plan",
                     plan ? plan : "", "result", name);
}

/* What --kernels measured for one plan on one rank: the collective kernels (to compare with
 * kernels_expected), by collective, every kernel in the window, and the names kept. */
static json_t *kernels_json(const equiv_kernels_rank *k) {
    json_t *by = json_object(), *names = json_array();
    for (int c = 0; c < COLL_COUNT; c++)
        if (k->by_coll[c])
            json_object_set_new(by, ml_colls[c].name, u64(k->by_coll[c]));
    for (uint32_t j = 0; j < k->n_names; j++)
        json_array_append_new(names, json_pack("{s:s, s:o}", "name", k->names[j].name, "count",
                                               u64(k->names[j].count)));
    return json_pack("{s:o, s:o, s:o, s:o}", "collective", u64(equiv_kernels_collective(k)),
                     "by_collective", by, "total", u64(k->total), "names", names);
}

/* The buffers live at the requested peak beside its steady and peak. */
static void with_peak_live(ml_mem_view v, json_t *pair, const void *live) {
    if (v == VIEW_REQUESTED)
        json_object_set_new(pair, "peak_live", json_incref((json_t *)live));
}

static json_t *facts_json(const equiv_result *r, int side, int rank) {
    const equiv_facts *f = &r->facts[side][rank];
    const pred_rank *p = &r->side[side]->pred[rank];
    json_t *calls = json_object();
    for (int c = 0; c < COLL_COUNT; c++)
        if (f->calls[c])
            json_object_set_new(calls, ml_colls[c].name, u64(f->calls[c]));
    json_t *live = json_array();
    for (uint32_t k = 0; k < p->n_peak_live[VIEW_REQUESTED]; k++)
        json_array_append_new(live, json_string(sched_sym_name(r->side[side]->s, SYM_BUFFER,
                                                               p->peak_live[VIEW_REQUESTED][k])));
    json_t *o = json_object();
    json_object_set_new(o, "calls", calls);
    json_object_set_new(o, "api_calls", u64(f->n_calls));
    json_object_set_new(o, "kernels_expected", u64(equiv_kernels_expected(f, r->world, COLL_COUNT)));
    json_object_set_new(o, "kernels_measured", r->kernels[side] ? kernels_json(&r->kernels[side][rank])
                                                                : json_null());
    json_object_set_new(o, "ring_steps", json_integer(f->ring_steps));
    json_object_set_new(o, "link_bytes", json_integer((json_int_t)llround(f->link_bytes)));
    json_object_set_new(o, "syncs", u64(f->syncs));
    json_object_set_new(o, "waits", u64(f->waits));
    json_object_set_new(o, "intermediates", u64(f->n_intermediate));
    json_object_set_new(o, "intermediate_bytes", u64(f->intermediate_bytes));
    json_object_set_new(o, "intermediate_names", json_string(f->intermediates));
    /* Each view the rank predicted (report_view_json); requested also lists the buffers live at
     * its peak. */
    for (int view = 0; view < MV_COUNT; view++)
        if (p->on[view])
            json_object_set_new(o, ml_views[view].name,
                                report_view_json((ml_view_id)view, p->steady, p->peak,
                                                 with_peak_live, live));
    json_decref(live);
    return o;
}

static json_t *data_json(const equiv_data_rank *d) {
    json_t *o = json_object();
    json_object_set_new(o, "dtype_a", json_string(ml_dtypes[d->dtype[0]].name));
    json_object_set_new(o, "dtype_b", json_string(ml_dtypes[d->dtype[1]].name));
    json_object_set_new(o, "count_a", u64(d->count[0]));
    json_object_set_new(o, "count_b", u64(d->count[1]));
    json_object_set_new(o, "compared", u64(d->compared));
    json_object_set_new(o, "bitwise_equal", json_boolean(d->differ_bits == 0 &&
                                                         d->count[0] == d->count[1]));
    json_object_set_new(o, "differ_bitwise", u64(d->differ_bits));
    json_object_set_new(o, "differ_beyond_tolerance", u64(d->differ_tol));
    json_object_set_new(o, "max_abs", json_real(d->max_abs));
    json_object_set_new(o, "max_rel", json_real(d->max_rel));
    json_object_set_new(o, "first_difference", d->first[0] ? json_string(d->first) : json_null());
    return o;
}

static void build_json(const equiv_result *r, const char *provenance, report_doc *d) {
    json_t *root = json_object();
    json_object_set_new(root, "command", json_string("equiv"));
    json_object_set_new(root, "a", side_json(r, 0));
    json_object_set_new(root, "b", side_json(r, 1));
    json_object_set_new(root, "world", json_integer(r->world));
    json_object_set_new(root, "holds", json_boolean(equiv_exit_code(r) == 0));
    json_t *rows = json_array();
    for (int k = 0; k < EQ_ROW_COUNT; k++) {
        equiv_verdict v = r->rows[k].verdict;
        json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:s}", "key",
                                              equiv_row_keys[k], "name", equiv_row_names[k],
                                              "verdict", verdict_text(v), "holds",
                                              v == EQV_UNKNOWN ? json_null() : json_boolean(v == EQV_HOLDS),
                                              "a", r->rows[k].a, "b", r->rows[k].b, "detail",
                                              r->rows[k].detail));
    }
    json_object_set_new(root, "rows", rows);
    json_t *ranks = json_array();
    for (int k = 0; k < r->world; k++) {
        json_t *o = json_pack("{s:i, s:o, s:o}", "rank", k, "a", facts_json(r, 0, k), "b",
                              facts_json(r, 1, k));
        json_object_set_new(o, "data", r->data ? data_json(&r->data[k]) : json_null());
        json_array_append_new(ranks, o);
    }
    json_object_set_new(root, "ranks", ranks);
    /* --kernels: whether every rank's kernels were measured (ranks[].a/b.kernels_measured), and
     * why not when they were asked for and are missing. */
    json_object_set_new(root, "kernels", json_pack("{s:b, s:o}", "measured",
                                                   r->kernels[0] && r->kernels[1], "note",
                                                   r->kernels_note[0] ? json_string(r->kernels_note)
                                                                      : json_null()));
    json_object_set_new(root, "tolerance", json_pack("{s:f, s:f}", "rtol", r->rtol, "atol", r->atol));
    json_object_set_new(root, "flow", json_pack("{s:b, s:b}", "decided", r->flow_known, "equal",
                                                r->flow_equal));
    json_t *causes = json_array();
    for (size_t k = 0; k < r->n_causes; k++) {
        const equiv_cause *c = &r->causes[k];
        json_array_append_new(causes, json_pack("{s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:s}", "code",
                                                equiv_causes[c->kind].code, "checklist",
                                                equiv_causes[c->kind].checklist, "plan",
                                                c->side ? "B" : "A", "rank", c->rank, "file",
                                                c->file, "line", (int)c->mark.line, "col",
                                                (int)c->mark.col, "text", c->text));
    }
    json_object_set_new(root, "causes", causes);
    if (provenance)
        json_object_set_new(root, "provenance", report_provenance_json(provenance));
    report_doc_json(d, root, 0);
}

typedef struct {
    const equiv_result *r;
    const char *provenance;
} equiv_ctx;

static void human_part(const void *ctx, bool md, report_doc *d) {
    const equiv_ctx *c = ctx;
    build_text(c->r, md, c->provenance, d);
}

static void json_part(const void *ctx, report_doc *d) {
    const equiv_ctx *c = ctx;
    build_json(c->r, c->provenance, d);
}

/* equiv's document: table, Markdown and JSON parts; no CSV grid (-1 for csv). */
static const report_family equiv_family = {human_part, json_part, NULL};

int equiv_write(const equiv_result *r, report_format fmt, const char *provenance, ml_str *out) {
    equiv_ctx c = {r, provenance};
    return report_family_render(&equiv_family, &c, fmt, out);
}

unsigned equiv_formats(void) { return report_family_formats(&equiv_family); }
