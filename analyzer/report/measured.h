/* SPDX-License-Identifier: MIT */
/* measured.h — what a rank measured, by series: the one table of where each series (views.h)
 * stands in a measurement record (ir/measure.h), which run's result (report_measured), its
 * comparison with the prediction and the visual commands' measured curves (series.c) all read. */
#ifndef MEMLIFE_REPORT_MEASURED_H
#define MEMLIFE_REPORT_MEASURED_H

#include "report/report.h"

/* One row per series. A series without has is measured by no backend. */
typedef struct {
    /* Whether the record measured the series at all (the host backend reads no device; only the
     * torch backend's pool is PyTorch's allocator: the async allocator's pool is CUDA's
     * cudaMemPool, which the torch view does not model). */
    bool (*has)(const ml_measure *m);
    /* Its value in one sample; false: this sample holds none (the op repeats the one before). */
    bool (*value)(const ml_sample *s, int64_t *v);
    /* The record's own steady and peak of it (NULL: the record keeps none, and run compares the
     * series after every op instead, or not at all). */
    uint64_t (*steady)(const ml_measure *m);
    uint64_t (*peak)(const ml_measure *m);
} report_source;

extern const report_source report_sources[VIEW_COUNT];

/* Sets m->match and m->mismatch: requested after every op exactly as predicted (and steady and
 * peak); device steady and peak when the backend read them (exact when the page model is exact,
 * else the peak within the model's bounds); under a caching allocator (the torch backend, the
 * record's pool_caches) the device reading after every op equals the allocator's reserved bytes
 * instead, and the torch view holds those to the allocator model. */
void report_measured_compare(report_measured *m, const pred_rank *pred, const rank_plan *plan);

#endif
