/* SPDX-License-Identifier: MIT */
/* measured.c — what a rank measured, by series, and its comparison with the prediction
 * (measured.h). */
#include "report/measured.h"
#include "report/report_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static bool always(const ml_measure *m) { return true; }
static bool read_device(const ml_measure *m) { return m->has_device; }
static bool torch_pool(const ml_measure *m) { return m->pool_caches; }
static bool requested_of(const ml_sample *s, int64_t *v) {
    *v = (int64_t)s->requested;
    return true;
}
static bool device_of(const ml_sample *s, int64_t *v) {
    *v = s->device;
    return true;
}
static bool pool_used_of(const ml_sample *s, int64_t *v) {
    *v = (int64_t)s->pool_used;
    return s->has_pool;
}
static bool pool_reserved_of(const ml_sample *s, int64_t *v) {
    *v = (int64_t)s->pool_reserved;
    return s->has_pool;
}
static uint64_t requested_steady(const ml_measure *m) { return m->steady; }
static uint64_t requested_peak(const ml_measure *m) { return m->peak; }
static uint64_t device_steady(const ml_measure *m) { return m->device_steady; }
static uint64_t device_peak(const ml_measure *m) { return m->device_peak; }

const report_source report_sources[VIEW_COUNT] = {
    [VIEW_REQUESTED] = {always, requested_of, requested_steady, requested_peak},
    [VIEW_DEVICE] = {read_device, device_of, device_steady, device_peak},
    [VIEW_TORCH_ALLOCATED] = {torch_pool, pool_used_of, NULL, NULL},
    [VIEW_TORCH_RESERVED] = {torch_pool, pool_reserved_of, NULL, NULL},
};

void report_measured_set(report_measured *m, ml_measure *rec) {
    memset(m, 0, sizeof *m);
    m->present = true;
    m->rec = *rec;
    memset(rec, 0, sizeof *rec);   /* m owns its arrays now */
    for (int v = 0; v < VIEW_COUNT; v++)
        if (report_sources[v].steady) {
            m->steady[v] = report_sources[v].steady(&m->rec);
            m->peak[v] = report_sources[v].peak(&m->rec);
        }
}

void report_measured_free(report_measured *m) {
    ml_measure_free(&m->rec);
    m->present = false;
}

bool report_measured_has(const report_measured *m, ml_mem_view v) {
    return m && m->present && ml_views[ml_series[v].view].measured &&
           report_sources[v].has(&m->rec);
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
    const ml_measure *rec = &m->rec;
    if (!rec->n_samples || !rec->samples[0].has_pool)
        return;
    int64_t base = (int64_t)rec->samples[0].pool_reserved;
    for (size_t k = 1; k < rec->n_samples && m->match; k++) {
        const ml_sample *s = &rec->samples[k];
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

void report_measured_compare(report_measured *m, const pred_rank *pred, const rank_plan *plan) {
    const char *file = plan->s->file;
    const ml_measure *rec = &m->rec;
    m->match = true;
    m->mismatch[0] = '\0';
    if (rec->n_samples != plan->n_ops + 1)
        mismatch(m, "%s: measured %zu samples for %zu ops (one per op after the baseline)", file,
                 rec->n_samples, plan->n_ops);
    for (size_t k = 0; k < pred->n_timeline && m->match; k++) {
        const pred_point *p = &pred->timeline[k];
        if (p->op + 1 >= rec->n_samples)
            break;
        uint64_t got = rec->samples[p->op + 1].requested, want = p->live[VIEW_REQUESTED];
        if (got != want) {
            ml_mark mk = plan_op_mark(&plan->ops[p->op]);
            mismatch(m, "%s:%u:%u: requested after op %zu (%s): measured %" PRIu64
                        ", predicted %" PRIu64, file, mk.line, mk.col, p->op,
                     plan_op_names[plan->ops[p->op].kind], got, want);
        }
    }
    if (rec->has_device && rec->pool_caches)
        compare_cached_device(m, plan);
    for (int v = 0; v < VIEW_COUNT; v++) {
        if (!report_measured_has(m, (ml_mem_view)v) || (v == VIEW_DEVICE && rec->pool_caches))
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
