/* SPDX-License-Identifier: MIT */
/* series.h — the input of the visual commands (plot, trace, diff): one plan of one schedule,
 * expanded, linted and predicted for every rank, and, when the input is a `memlife run` result
 * (report.h's JSON), the measured timeline of every rank beside it.
 *
 * An input word is `FILE.yaml` (every plan of the file, one series each), `FILE.yaml:PLAN` (that
 * plan) or `RESULT.json` (every schedule in the result; the schedule named by its `file` is loaded
 * again for the predicted curve, relative to the current folder or else to the result's folder). */
#ifndef MEMLIFE_SERIES_H
#define MEMLIFE_SERIES_H

#include "pipeline/pipeline.h"
#include "ir/measure.h"

typedef struct {
    char label[200];            /* "rs-ag-naive-lifetime" or "bench:optimized" */
    char *source;               /* the input word it came from (malloc'd) */
    sched *s;                   /* shared by the series of one file; freed by the owner */
    bool owns_sched;
    int plan_index, world;
    pipeline_item item;         /* the pipeline's run of the plan; plans and pred point into it */
    rank_plan *plans;           /* [world] */
    pred_rank *pred;            /* [world] */
    /* NULL, or [world] records as the result holds them (ml_measure_from_json; n_samples 0
     * where the result has no rank r). */
    ml_measure *measured;
    bool has_time;              /* measured samples carry seconds since the baseline */
} series;

/* Appends one series per plan (or per result schedule) of `word` to out (an ml_vec of series).
 * Lint errors are input errors: they go to d and the call returns -1 (nothing appended). */
int series_load(const char *word, const sched_params *p, ml_vec *out, ml_diags *d);
/* Expands, lints and predicts plan plan_index of s at world for every rank into out (zeroed by
 * the caller; set out->owns_sched to hand s over). Returns 0 or -1 (lint errors included). */
int series_from_sched(sched *s, int plan_index, int world, const sched_params *p, series *out,
                      ml_diags *d);
/* The same through the pipeline with o's choices (equiv: lint findings apart, the prediction
 * later by pipeline_predict on out->item, then out->pred = out->item.pred). The label is set
 * whatever the outcome. */
int series_from_plan(sched *s, int plan_index, int world, const sched_params *p,
                     const pipeline_opts *o, series *out, ml_diags *d);
void series_free(series *s);
void series_vec_free(ml_vec *v);

/* The name of an op for labels: "alloc gathered", "all_gather", "sync", "region fwd". */
void series_op_label(const rank_plan *p, const plan_op *op, char *buf, size_t len);

/* Per-op values of rank r (arrays of plans[r].n_ops): pred[k] the predicted live bytes after op
 * k; when the series has a measured timeline for r that holds the view (requested always; device
 * with device readings; torch allocated / reserved with the pool readings of PyTorch's caching
 * allocator, the torch backend's memory_allocated / memory_reserved), meas[k] the measured bytes
 * after op k (negative device deltas read as 0) and t[k] the seconds at its sample, an op
 * without a sample repeating the one before. meas and t may be NULL. Returns whether measured
 * values were filled. */
bool series_rank_values(const series *s, int r, ml_mem_view view, uint64_t *pred, uint64_t *meas,
                        double *t);

/* Live requested bytes of every buffer (indexed by buffer symbol; bytes must hold
 * s->syms[SYM_BUFFER].n values) after op `op` of p: the latest alloc's size, a chunk's share after
 * a release, 0 once freed. */
void series_live_bytes_at(const rank_plan *p, size_t op, uint64_t *bytes);

/* The buffer an op allocates, frees or releases, SCHED_NO_SYM for others. */
uint32_t series_op_buffer(const plan_op *op);

#endif
