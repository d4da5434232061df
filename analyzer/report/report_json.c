/* SPDX-License-Identifier: MIT */
/* report_json.c — the JSON report (jansson). Key names are the stable interface described in
 * report.h; byte values are exact integers. */
#include "report/doc.h"
#include "predict/commmodel.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static json_t *bytes_json(uint64_t v) { return json_integer((json_int_t)v); }

/* jansson refuses invalid UTF-8 (json_string returns NULL, and the key would silently vanish);
 * a file name or buffer name with such bytes is reported with '?' in their place. */
static json_t *text_json(const char *s) {
    json_t *j = json_string(s);
    if (j)
        return j;
    char *copy = ml_xstrdup(s);
    for (char *c = copy; *c; c++)
        if ((unsigned char)*c >= 0x80)
            *c = '?';
    j = json_string(copy);
    free(copy);
    return j;
}

json_t *report_view_json(ml_view_id view, const uint64_t *steady, const uint64_t *peak,
                         report_series_add *add, const void *ctx) {
    const ml_view_info *vi = &ml_views[view];
    json_t *o = vi->n_series > 1 ? json_object() : NULL;
    for (int k = 0; k < vi->n_series; k++) {
        ml_mem_view v = vi->series[k];
        json_t *pair = json_object();
        json_object_set_new(pair, "steady", bytes_json(steady[v]));
        json_object_set_new(pair, "peak", bytes_json(peak[v]));
        if (add)
            add(v, pair, ctx);
        if (!o)
            return pair;
        json_object_set_new(o, ml_series[v].key, pair);
    }
    return o;
}

/* {index, line, col, op} of op k of plan p, or null when there is no such op. */
static json_t *step_json(const rank_plan *p, size_t op) {
    if (op >= p->n_ops)
        return json_null();
    ml_mark m = plan_op_mark(plan_op_at(p, op));
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer((json_int_t)op));
    json_object_set_new(o, "line", json_integer(m.line));
    json_object_set_new(o, "col", json_integer(m.col));
    json_object_set_new(o, "op", text_json(report_op_label(p, op)));
    return o;
}

static json_t *names_json(const report_schedule *rs, const uint32_t *syms, uint32_t n) {
    json_t *a = json_array();
    for (uint32_t k = 0; k < n; k++)
        json_array_append_new(a, text_json(sched_sym_name(rs->s, SYM_BUFFER, syms[k])));
    return a;
}

static json_t *segments_json(const report_schedule *rs, const pred_torch_peak *pk) {
    json_t *a = json_array();
    for (size_t k = 0; pk && k < pk->n_segments; k++) {
        const pred_segment *g = &pk->segments[k];
        json_t *o = json_object();
        json_object_set_new(o, "size", bytes_json(g->size));
        json_object_set_new(o, "allocated", bytes_json(g->allocated));
        json_object_set_new(o, "requested", bytes_json(g->requested));
        json_object_set_new(o, "stream", text_json(sched_sym_name(rs->s, SYM_STREAM, g->stream)));
        json_object_set_new(o, "pool", text_json(g->large ? "large" : "small"));
        json_object_set_new(o, "expandable", json_boolean(g->expandable));
        json_array_append_new(a, o);
    }
    return a;
}

/* {predicted, other_order}: a value of this model and of the one with the other segment order */
static json_t *two_orders(const uint64_t v[2]) {
    json_t *o = json_object();
    json_object_set_new(o, "predicted", bytes_json(v[0]));
    json_object_set_new(o, "other_order", bytes_json(v[1]));
    return o;
}

/* Where the segments' address order decides allocated (pred_torch_order), or null. */
static json_t *order_json(const rank_plan *p, const pred_torch *t) {
    if (!t || !t->order.decides)
        return json_null();
    const pred_torch_order *d = &t->order;
    json_t *o = json_object();
    json_object_set_new(o, "tie_step", step_json(p, d->tie_op));
    json_object_set_new(o, "first_difference_step", step_json(p, d->diff_op));
    bool oom = d->oom_op != SIZE_MAX;   /* at diff_op itself: no allocated there */
    json_object_set_new(o, "allocated", d->oom_op == d->diff_op ? json_null() : two_orders(d->at_diff));
    json_object_set_new(o, "peak_allocated", two_orders(d->peak));
    json_object_set_new(o, "other_order_oom_step", oom ? step_json(p, d->oom_op) : json_null());
    return o;
}

/* The torch view's details: the segments and the fragmentation at the reserved peak, and whether
 * the segments' address order decides its numbers. */
static void torch_extra(const report_schedule *rs, int r, json_t *o) {
    const pred_torch *t = rs->pred[r].torch;
    const pred_torch_peak *pk = t ? &t->at[1] : NULL;
    json_object_set_new(o, "segments_at_peak", segments_json(rs, pk));
    json_t *f = json_object();
    json_object_set_new(f, "bytes", bytes_json(pk ? pk->reserved - pk->allocated : 0));
    json_object_set_new(f, "free_in_used_segments", bytes_json(pk ? pk->free_in_used_segments : 0));
    json_object_set_new(f, "whole_free_segments", bytes_json(pk ? pk->whole_free_segments : 0));
    json_object_set_new(f, "pending_free", bytes_json(pk ? pk->pending_free : 0));
    json_object_set_new(o, "fragmentation", f);
    json_object_set_new(o, "segment_order", order_json(&rs->plans[r], t));
}

/* What a view adds to its object beyond steady and peak: one row per view that has details. */
static void (*const view_extra[MV_COUNT])(const report_schedule *, int, json_t *) = {
    [MV_TORCH] = torch_extra,
};

/* What a predicted series adds to its pair: a bounded view's exact, peak_lo and peak_hi; a
 * series of a view of several its peak_step. */
typedef struct {
    const report_schedule *rs;
    int r;
} series_at;

static void predicted_series(ml_mem_view v, json_t *o, const void *ctx) {
    const series_at *at = ctx;
    const pred_rank *p = &at->rs->pred[at->r];
    const ml_view_info *vi = &ml_views[ml_series[v].view];
    if (vi->n_series > 1) {
        json_object_set_new(o, "peak_step", step_json(&at->rs->plans[at->r], p->peak_op[v]));
    } else if (vi->bounded) {
        json_object_set_new(o, "exact", json_boolean(p->exact[v]));
        json_object_set_new(o, "peak_lo", bytes_json(p->peak_lo[v]));
        json_object_set_new(o, "peak_hi", bytes_json(p->peak_hi[v]));
    }
}

/* One predicted view (report_view_json), then its details. */
static json_t *view_json(const report_schedule *rs, int r, ml_view_id view) {
    const pred_rank *p = &rs->pred[r];
    series_at at = {rs, r};
    json_t *o = report_view_json(view, p->steady, p->peak, predicted_series, &at);
    if (view_extra[view])
        view_extra[view](rs, r, o);
    return o;
}

static json_t *rank_json(const report_schedule *rs, int r, const bool *on) {
    const pred_rank *p = &rs->pred[r];
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(r));
    for (int view = 0; view < MV_COUNT; view++)
        if (on[view])
            json_object_set_new(o, ml_views[view].name,
                                p->on[view] ? view_json(rs, r, (ml_view_id)view) : json_null());
    char key[64];
    for (int view = 0; view < MV_COUNT; view++) {
        const char *prefix = ml_views[view].peak_prefix;
        if (!prefix)
            continue;   /* the view reports its peaks inside its own object */
        ml_mem_view v = ml_views[view].series[0];
        snprintf(key, sizeof key, "%speak_step", prefix);
        json_object_set_new(o, key, step_json(&rs->plans[r], p->peak_op[v]));
        snprintf(key, sizeof key, "%speak_live", prefix);
        json_object_set_new(o, key, names_json(rs, p->peak_live[v], p->n_peak_live[v]));
    }
    json_object_set_new(o, "floor", bytes_json(p->floor));
    if (p->timed) {   /* the time model (predict/timemodel.h), microseconds */
        json_t *t = json_object();
        json_object_set_new(t, "step_us", json_real(p->step_us));
        json_object_set_new(t, "comm_us", json_real(p->comm_us));
        json_object_set_new(t, "exposed_comm_us", json_real(p->exposed_comm_us));
        json_object_set_new(o, "time", t);
    }
    if (rs->measured && rs->measured[r].present) {
        const report_measured *m = &rs->measured[r];
        json_object_set_new(o, "measured", ml_measure_json(&m->rec, &rs->plans[r]));
        json_object_set_new(o, "match", json_boolean(m->match));
        if (!m->match)
            json_object_set_new(o, "mismatch", text_json(m->mismatch));
    }
    return o;
}

static json_t *stages_json(const commmodel_comm_out *c) {
    json_t *stages = json_array();
    for (int k = 0; k < c->n_stages; k++)
        json_array_append_new(stages, json_pack("{s:s, s:o}", "stage", c->stage_name[k], "bytes",
                                                bytes_json(c->stage_bytes[k])));
    return stages;
}

/* The predicted communicators (commmodel.h): NCCL's own device memory for rank 0's
 * communicators, by stage (init, then each collective's first use) and by term; the world's
 * stages at the top, every communicator's under `communicators` where there are splits. */
static json_t *communicator_json(const report_schedule *rs) {
    json_t *o = json_object();
    commmodel_out m;
    const char *why = NULL;
    int gpu = rs->gpu ? rs->gpu - 1 : COMMMODEL_GPU_DEFAULT;
    if (rs->world <= 0 || commmodel_for_plan(&rs->plans[0], gpu, &m, &why) != 0) {
        json_object_set_new(o, "note", text_json(why ? why : "no plan"));
        commmodel_out_free(&m);
        return o;
    }
    char model[96];
    snprintf(model, sizeof model, "NCCL 2.28 rules, one node over NVLink, %s", commmodel_gpus[gpu].label);
    json_object_set_new(o, "model", text_json(model));
    json_object_set_new(o, "gpu", text_json(commmodel_gpu_names[gpu]));
    json_object_set_new(o, "channels", json_integer(m.comms[0].channels));
    json_object_set_new(o, "stages", stages_json(&m.comms[0]));
    json_object_set_new(o, "total", bytes_json(m.total));
    bool split = m.n_comms > 1;
    if (split) {
        json_t *comms = json_array();
        for (int c = 0; c < m.n_comms; c++)
            json_array_append_new(
                comms, json_pack("{s:s, s:i, s:b, s:i, s:o, s:o}", "name", m.comms[c].name, "size",
                                 m.comms[c].size, "share", m.comms[c].share, "channels",
                                 m.comms[c].channels, "stages", stages_json(&m.comms[c]), "total",
                                 bytes_json(m.comms[c].total)));
        json_object_set_new(o, "communicators", comms);
    }
    json_t *terms = json_array();
    for (int k = 0; k < m.n_terms; k++) {
        const commmodel_term *t = &m.terms[k];
        json_t *row = json_pack("{s:s, s:s, s:o, s:s}", "term", t->name, "stage",
                                m.comms[t->comm].stage_name[t->stage], "bytes",
                                bytes_json(t->bytes), "detail", t->detail);
        if (split)
            json_object_set_new(row, "comm", text_json(m.comms[t->comm].name));
        json_array_append_new(terms, row);
    }
    json_object_set_new(o, "terms", terms);
    /* What cudaMemGetInfo shows on rank 0's GPU at the schedule's device peak: the CUDA context,
     * the communicators, and the device view (requested plus the page model's overhead). */
    uint64_t dev = rs->pred[0].peak[VIEW_DEVICE], req = rs->pred[0].peak[VIEW_REQUESTED];
    uint64_t ctx = commmodel_gpus[gpu].cuda_context;
    json_object_set_new(o, "gpu_total_at_peak",
                        json_pack("{s:o, s:o, s:o, s:o, s:o}", "cuda_context", bytes_json(ctx),
                                  "communicator", bytes_json(m.total), "requested", bytes_json(req),
                                  "allocator_overhead", bytes_json(dev > req ? dev - req : 0),
                                  "total", bytes_json(ctx + m.total + (dev > req ? dev : req))));
    commmodel_out_free(&m);
    return o;
}

static json_t *schedule_json(const report_schedule *rs, const bool *on) {
    char name[256];
    report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
    const char *plan = rs->s->plans[rs->plan_index].name;
    json_t *o = json_object();
    json_object_set_new(o, "name", text_json(name));
    json_object_set_new(o, "file", text_json(rs->s->file));
    json_object_set_new(o, "plan", plan[0] ? text_json(plan) : json_null());
    json_object_set_new(o, "about", rs->s->about ? text_json(rs->s->about) : json_null());
    json_object_set_new(o, "world", json_integer(rs->world));
    /* The lets as this result used them (the file's values after --set and the sweep), so a
     * result says which sizes it is about: rank 0's values (a let may depend on rank). */
    json_t *lets = json_object();
    for (uint32_t k = 0; rs->world > 0 && rs->plans[0].slots && k < rs->s->n_lets; k++)
        json_object_set_new(lets, rs->s->lets[k].name,
                            json_integer((json_int_t)rs->plans[0].slots[EXPR_SLOT_FIRST_LET + k]));
    json_object_set_new(o, "lets", lets);
    json_object_set_new(o, "expect", text_json(report_expect_status(rs)));
    json_t *ranks = json_array();
    for (int r = 0; r < rs->world; r++)
        json_array_append_new(ranks, rank_json(rs, r, on));
    json_object_set_new(o, "ranks", ranks);
    json_object_set_new(o, "communicator", communicator_json(rs));
    json_t *ex = json_array();
    for (size_t k = 0; k < rs->n_expects; k++) {
        const expect_row *e = &rs->expects[k];
        json_t *row = json_object();
        json_object_set_new(row, "view", text_json(ml_mem_view_names[e->view]));
        json_object_set_new(row, "rank", json_integer(e->rank));
        json_object_set_new(row, "what", text_json(e->is_peak ? "peak" : "steady"));
        json_object_set_new(row, "expected", json_integer(e->expected));
        json_object_set_new(row, "got", json_integer(e->got));
        json_object_set_new(row, "pass", json_boolean(e->pass));
        json_object_set_new(row, "line", json_integer(e->mark.line));
        json_object_set_new(row, "col", json_integer(e->mark.col));
        json_array_append_new(ex, row);
    }
    json_object_set_new(o, "expectations", ex);
    json_t *checks = json_array();
    for (size_t k = 0; k < rs->n_checks; k++) {
        const report_check *c = &rs->checks[k];
        json_t *row = json_object();
        json_object_set_new(row, "name", text_json(c->name));
        json_object_set_new(row, "rank", json_integer(c->rank));
        json_object_set_new(row, "status", text_json(c->pass ? "pass" : "fail"));
        json_object_set_new(row, "detail", text_json(c->detail));
        json_array_append_new(checks, row);
    }
    json_object_set_new(o, "checks", checks);
    return o;
}

/* Provenance keys whose values are counts: JSON integers, not strings. */
static const char *const provenance_counts[] = {"world", "ranks", "gpus"};

static json_t *provenance_value(const char *key, const char *value) {
    for (size_t k = 0; k < ML_ARRAY_LEN(provenance_counts); k++)
        if (!strcmp(key, provenance_counts[k])) {
            char *end;
            long long v = strtoll(value, &end, 10);
            if (end != value && !*end)
                return json_integer(v);
        }
    return text_json(value);
}

/* "key=value\n" lines into an object; a line without '=' keeps the whole line as the key. */
json_t *report_provenance_json(const char *text) {
    json_t *o = json_object();
    while (*text) {
        const char *end = strchr(text, '\n');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        const char *eq = memchr(text, '=', len);
        if (len) {
            size_t klen = eq ? (size_t)(eq - text) : len;
            char *key = ml_xmalloc(klen + 1), *value = ml_xstrdup(eq ? eq + 1 : "");
            memcpy(key, text, klen);
            key[klen] = '\0';
            value[eq ? len - klen - 1 : 0] = '\0';
            json_object_set_new(o, key, provenance_value(key, value));
            free(key);
            free(value);
        }
        text += len + (end ? 1 : 0);
    }
    return o;
}

void report_doc_json_tree(const report *r, report_doc *d) {
    json_t *root = json_object();
    json_object_set_new(root, "command", text_json(r->command ? r->command : ""));
    json_t *list = json_array();
    bool on[MV_COUNT];
    for (int v = 0; v < MV_COUNT; v++)
        on[v] = report_view_on(r, (ml_view_id)v);
    for (size_t k = 0; k < r->n; k++)
        json_array_append_new(list, schedule_json(&r->items[k], on));
    json_object_set_new(root, "schedules", list);
    if (r->provenance)
        json_object_set_new(root, "provenance", report_provenance_json(r->provenance));
    report_doc_json(d, root, 0);
}
