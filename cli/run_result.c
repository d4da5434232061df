/* SPDX-License-Identifier: MIT */
/* run_result.c — one rank's measurement compared with the prediction (run_result.h). */
#include "run_result.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

void run_result_compare(report_measured *m, const pred_rank *pred, const rank_plan *plan) {
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
        if (!ml_views[ml_series[v].view].measured ||
            (v == VIEW_DEVICE && (!rec->has_device || rec->pool_caches)))
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
