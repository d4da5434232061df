/* SPDX-License-Identifier: MIT */
/* account.c — the runtime's one place that counts requested bytes (rt.h).
 *
 * The executor calls rt_account_alloc / rt_account_free with the bytes it asked the backend for
 * (for chunked buffers, the logical chunk sizes of rt_chunk_bytes), and rt_account_sample after
 * every op with what the backend reads of the memory system. Nothing here looks at the plan's
 * sizes or at the predictor: the requested view is what was asked, op by op; the device view is
 * what the backend read, as a delta to the reading taken at the baseline. rt_measure_fill makes
 * the rank's measurement record (ir/measure.h) from it, the one form it travels in. */
#include "exec/rt.h"

#include <stdio.h>
#include <string.h>

void rt_account_init(rt_account *a, const rt_mem_reading *baseline) {
    memset(a, 0, sizeof *a);
    ml_vec_init(&a->samples, sizeof(rt_sample));
    a->peak_op = SIZE_MAX;
    a->device_peak_op = SIZE_MAX;
    if (baseline) {
        a->base_reading = *baseline;
        a->last_reading = *baseline;
        a->has_device = baseline->has_device;
        a->device_base = (int64_t)baseline->device_used;
    }
    a->t0 = ml_now_seconds();
    rt_sample *s = ml_vec_push(&a->samples);
    s->op = SIZE_MAX;
    if (baseline && baseline->has_pool) {
        s->has_pool = true;
        s->pool_used = baseline->pool_used_current;
        s->pool_reserved = baseline->pool_reserved_current;
    }
}

void rt_account_alloc(rt_account *a, uint64_t bytes) {
    a->live += bytes;
    if (a->live > a->peak) {
        a->peak = a->live;
        a->peak_op = SIZE_MAX;    /* set by the next sample: the op that made this peak */
    }
}

/* A free of more than is live is an executor bug; clamp rather than wrap so the numbers that
 * reach the report stay meaningful, and the mismatch with the prediction shows it. */
void rt_account_free(rt_account *a, uint64_t bytes) {
    a->live = bytes > a->live ? 0 : a->live - bytes;
}

void rt_account_sample(rt_account *a, size_t op, const rt_mem_reading *now) {
    rt_sample *s = ml_vec_push(&a->samples);
    s->op = op;
    s->requested = a->live;
    s->t = ml_now_seconds() - a->t0;
    if (a->peak_op == SIZE_MAX && a->live == a->peak && a->peak > 0)
        a->peak_op = op;
    if (now) {
        a->last_reading = *now;
        s->has_pool = now->has_pool;
        s->pool_used = now->pool_used_current;
        s->pool_reserved = now->pool_reserved_current;
        if (a->has_device && now->has_device) {
            a->device_live = (int64_t)now->device_used - a->device_base;
            s->device = a->device_live;
            if (a->device_live > a->device_peak) {
                a->device_peak = a->device_live;
                a->device_peak_op = op;
            }
        }
    }
}

void rt_account_free_all(rt_account *a) {
    ml_vec_free(&a->samples);
}

/* The record's device values are above the baseline: a device reading that fell below it (the
 * driver returned memory it held at the baseline) reads as 0, as the report has always shown it. */
static uint64_t above_base(int64_t v) { return v > 0 ? (uint64_t)v : 0; }

void rt_measure_fill(const rt_rank *r, ml_measure *m) {
    const rt_account *a = &r->acct;
    memset(m, 0, sizeof *m);
    m->rank = r->rank;
    m->steady = a->live;
    m->peak = a->peak;
    m->has_device = a->has_device;
    m->device_steady = a->has_device ? above_base(a->device_live) : 0;
    m->device_peak = a->has_device ? above_base(a->device_peak) : 0;
    m->communicator_bytes = r->communicator_bytes;
    for (uint32_t k = 0; k < r->n_comm_stages && k < RT_COMM_STAGES; k++)
        m->stages[m->n_stages++] = r->comm_stages[k];
    const rt_mem_reading *p = &a->last_reading;
    if (p->has_pool) {
        m->has_pool = true;
        m->pool_caches = p->pool_caches;
        m->pool_used_current = p->pool_used_current;
        m->pool_used_high = p->pool_used_high;
        m->pool_reserved_current = p->pool_reserved_current;
        m->pool_reserved_high = p->pool_reserved_high;
    }
    for (size_t k = 0; k < a->samples.n; k++)
        *ml_measure_push_sample(m) = ML_VEC_AT(&a->samples, rt_sample, k);
    for (size_t k = 0; k < r->checks.n; k++) {
        const rt_check_row *c = &ML_VEC_AT(&r->checks, rt_check_row, k);
        ml_measure_check *row = ml_measure_push_check(m, c->name);
        row->pass = c->pass;
        snprintf(row->detail, sizeof row->detail, "%s", c->detail);
    }
}
