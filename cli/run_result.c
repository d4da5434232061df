/* SPDX-License-Identifier: MIT */
/* run_result.c — encode, decode and compare one rank's measurement (run_result.h). */
#include "run_result.h"

#include <inttypes.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static json_t *u64(uint64_t v) { return json_integer((json_int_t)v); }

char *run_result_encode(const rt_rank *r) {
    const rt_account *a = &r->acct;
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(r->rank));
    json_object_set_new(o, "steady", u64(a->live));
    json_object_set_new(o, "peak", u64(a->peak));
    json_object_set_new(o, "has_device", json_boolean(a->has_device));
    json_object_set_new(o, "device_steady", json_integer(a->device_live));
    json_object_set_new(o, "device_peak", json_integer(a->device_peak));
    json_object_set_new(o, "communicator_bytes", u64(r->communicator_bytes));
    json_t *stages = json_array();
    for (uint32_t k = 0; k < r->n_comm_stages && k < RT_COMM_STAGES; k++)
        json_array_append_new(stages, json_pack("[sI]", r->comm_stages[k].name,
                                                (json_int_t)r->comm_stages[k].bytes));
    json_object_set_new(o, "communicator_stages", stages);
    const rt_mem_reading *p = &a->last_reading;
    if (p->has_pool) {
        json_t *pool = json_pack("[IIII]", (json_int_t)p->pool_used_current,
                                 (json_int_t)p->pool_used_high, (json_int_t)p->pool_reserved_current,
                                 (json_int_t)p->pool_reserved_high);
        json_object_set_new(o, "pool", pool);
        if (p->pool_caches)
            json_object_set_new(o, "pool_caches", json_true());
    }
    /* [op, requested, device, t] and, where the backend has a pool, [.., used, reserved]; the
     * baseline's op (SIZE_MAX) travels as -1. */
    json_t *tl = json_array();
    for (size_t k = 0; k < a->samples.n; k++) {
        const rt_sample *s = &ML_VEC_AT(&a->samples, rt_sample, k);
        json_t *e = json_pack("[IIIf]", s->op == SIZE_MAX ? (json_int_t)-1 : (json_int_t)s->op,
                              (json_int_t)s->requested, (json_int_t)s->device, s->t);
        if (s->has_pool) {   /* [.., pool used, pool reserved] */
            json_array_append_new(e, u64(s->pool_used));
            json_array_append_new(e, u64(s->pool_reserved));
        }
        json_array_append_new(tl, e);
    }
    json_object_set_new(o, "timeline", tl);
    json_t *checks = json_array();
    for (size_t k = 0; k < r->checks.n; k++) {
        const rt_check_row *c = &ML_VEC_AT(&r->checks, rt_check_row, k);
        json_array_append_new(checks, json_pack("[sbs]", c->name, c->pass, c->detail));
    }
    json_object_set_new(o, "checks", checks);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text)
        ml_out_of_memory(0);   /* jansson fails only for want of memory here */
    return text;
}

int run_result_decode(const char *text, size_t len, report_measured *m, ml_vec *checks,
                      ml_arena *names, char *err, size_t elen) {
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    memset(m, 0, sizeof *m);
    if (!o) {
        snprintf(err, elen, "a rank's result is not JSON: %s", je.text);
        return -1;
    }
    json_int_t rank, steady, peak, dsteady, dpeak, comm;
    int has_device;
    json_t *tl, *rows, *pool = NULL;
    if (json_unpack_ex(o, &je, 0, "{s:I, s:I, s:I, s:b, s:I, s:I, s:I, s?o, s:o, s:o}", "rank",
                       &rank, "steady", &steady, "peak", &peak, "has_device", &has_device,
                       "device_steady", &dsteady, "device_peak", &dpeak, "communicator_bytes",
                       &comm, "pool", &pool, "timeline", &tl, "checks", &rows) != 0 ||
        !json_is_array(tl) || !json_is_array(rows)) {
        snprintf(err, elen, "a rank's result lacks a field: %s", je.text);
        json_decref(o);
        return -1;
    }
    m->present = true;
    m->steady[VIEW_REQUESTED] = (uint64_t)steady;
    m->peak[VIEW_REQUESTED] = (uint64_t)peak;
    m->has_device = has_device;
    m->steady[VIEW_DEVICE] = dsteady > 0 ? (uint64_t)dsteady : 0;
    m->peak[VIEW_DEVICE] = dpeak > 0 ? (uint64_t)dpeak : 0;
    m->communicator_bytes = (uint64_t)comm;
    json_t *stages = json_object_get(o, "communicator_stages");
    for (size_t k = 0; json_is_array(stages) && k < json_array_size(stages) &&
                       m->n_comm_stages < RT_COMM_STAGES; k++) {
        const char *name = "";
        json_int_t b = 0;
        if (json_unpack(json_array_get(stages, k), "[sI]", &name, &b) != 0 || b < 0)
            continue;
        snprintf(m->comm_stages[m->n_comm_stages].name, sizeof m->comm_stages[0].name, "%s", name);
        m->comm_stages[m->n_comm_stages++].bytes = (uint64_t)b;
    }
    if (pool) {
        json_int_t uc = 0, uh = 0, rc_ = 0, rh = 0;
        json_unpack(pool, "[IIII]", &uc, &uh, &rc_, &rh);
        m->pool = (rt_mem_reading){.pool_used_current = (uint64_t)uc, .pool_used_high = (uint64_t)uh,
                                   .pool_reserved_current = (uint64_t)rc_,
                                   .pool_reserved_high = (uint64_t)rh, .has_pool = true,
                                   .pool_caches = json_is_true(json_object_get(o, "pool_caches"))};
    }
    m->n_timeline = json_array_size(tl);
    m->timeline = ml_xcalloc(m->n_timeline ? m->n_timeline : 1, sizeof *m->timeline);
    for (size_t k = 0; k < m->n_timeline; k++) {
        json_int_t op, req, dev;
        double t;
        json_unpack(json_array_get(tl, k), "[IIIF]", &op, &req, &dev, &t);
        m->timeline[k] = (rt_sample){.op = op < 0 ? SIZE_MAX : (size_t)op,
                                     .requested = (uint64_t)req, .device = (int64_t)dev, .t = t};
        json_int_t used, reserved;
        if (json_array_size(json_array_get(tl, k)) == 6 &&
            json_unpack(json_array_get(tl, k), "[IIIFII]", &op, &req, &dev, &t, &used,
                        &reserved) == 0) {
            m->timeline[k].has_pool = true;
            m->timeline[k].pool_used = (uint64_t)used;
            m->timeline[k].pool_reserved = (uint64_t)reserved;
        }
    }
    for (size_t k = 0; k < json_array_size(rows); k++) {
        const char *name = "", *detail = "";
        int pass = 0;
        json_unpack(json_array_get(rows, k), "[sbs]", &name, &pass, &detail);
        report_check *c = ml_vec_push(checks);
        c->name = ml_arena_strndup(names, name, strlen(name));
        c->rank = (int)rank;
        c->pass = pass;
        snprintf(c->detail, sizeof c->detail, "%s", detail);
    }
    json_decref(o);
    return 0;
}

static void mismatch(report_measured *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mismatch(report_measured *m, const char *fmt, ...) {
    if (!m->match)
        return;       /* keep the first difference */
    m->match = false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->mismatch, sizeof m->mismatch, fmt, ap);
    va_end(ap);
}

/* Under a caching allocator (the torch backend) freed memory stays with the allocator, so the
 * page model of cudaMalloc/cudaFree does not apply: what cudaMemGetInfo shows must move exactly
 * as the allocator's reserved bytes do, after every op (NCCL and the CUDA context are in the
 * baseline). The torch view holds the reserved bytes themselves to the allocator model. */
static void compare_cached_device(report_measured *m, const rank_plan *plan) {
    const char *file = plan->s->file;
    if (!m->n_timeline || !m->timeline[0].has_pool)
        return;
    int64_t base = (int64_t)m->timeline[0].pool_reserved;
    for (size_t k = 1; k < m->n_timeline && m->match; k++) {
        const rt_sample *s = &m->timeline[k];
        int64_t reserved = (int64_t)s->pool_reserved - base;
        if (s->has_pool && s->op < plan->n_ops && s->device != reserved) {
            ml_mark mk = plan_op_mark(&plan->ops[s->op]);
            mismatch(m, "%s:%u:%u: device after op %zu (%s): measured %" PRId64 " bytes, the "
                        "caching allocator reserved %" PRId64 " (cudaMemGetInfo follows "
                        "memory_reserved under PyTorch)", file, mk.line, mk.col, s->op,
                     plan_op_names[plan->ops[s->op].kind], s->device, reserved);
        }
    }
}

void run_result_compare(report_measured *m, const pred_rank *pred, const rank_plan *plan) {
    const char *file = plan->s->file;
    m->match = true;
    m->mismatch[0] = '\0';
    if (m->n_timeline != plan->n_ops + 1)
        mismatch(m, "%s: measured %zu samples for %zu ops (one per op after the baseline)", file,
                 m->n_timeline, plan->n_ops);
    for (size_t k = 0; k < pred->n_timeline && m->match; k++) {
        const pred_point *p = &pred->timeline[k];
        if (p->op + 1 >= m->n_timeline)
            break;
        uint64_t got = m->timeline[p->op + 1].requested, want = p->live[VIEW_REQUESTED];
        if (got != want) {
            ml_mark mk = plan_op_mark(&plan->ops[p->op]);
            mismatch(m, "%s:%u:%u: requested after op %zu (%s): measured %" PRIu64
                        ", predicted %" PRIu64, file, mk.line, mk.col, p->op,
                     plan_op_names[plan->ops[p->op].kind], got, want);
        }
    }
    if (m->has_device && m->pool.pool_caches)
        compare_cached_device(m, plan);
    for (int v = 0; v < VIEW_COUNT; v++) {
        if (!ml_views[ml_series[v].view].measured ||
            (v == VIEW_DEVICE && (!m->has_device || m->pool.pool_caches)))
            continue;   /* a series no backend measures, the host's missing device, or a device
                           view that a caching allocator (torch backend) hides from the page model */
        const char *view = ml_mem_view_names[v];
        bool bounded = !pred->exact[v];   /* the model gives bounds */
        if (!bounded && m->steady[v] != pred->steady[v])
            mismatch(m, "%s: %s steady: measured %" PRIu64 ", predicted %" PRIu64, file, view,
                     m->steady[v], pred->steady[v]);
        if (!bounded && m->peak[v] != pred->peak[v])
            mismatch(m, "%s: %s peak: measured %" PRIu64 ", predicted %" PRIu64, file, view,
                     m->peak[v], pred->peak[v]);
        if (bounded && (m->peak[v] < pred->peak_lo[v] || m->peak[v] > pred->peak_hi[v]))
            mismatch(m, "%s: %s peak: measured %" PRIu64 ", outside the model's bounds [%"
                        PRIu64 ", %" PRIu64 "]", file, view, m->peak[v], pred->peak_lo[v],
                     pred->peak_hi[v]);
    }
}

void run_measured_free(report_measured *m) {
    free(m->timeline);
    m->timeline = NULL;
    m->n_timeline = 0;
}
