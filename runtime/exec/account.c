/* SPDX-License-Identifier: MIT */
/* account.c — the runtime's one place that counts requested bytes (rt.h).
 *
 * The executor calls rt_account_alloc / rt_account_free with the bytes it asked the backend for
 * (for chunked buffers, the logical chunk sizes of rt_chunk_bytes), and rt_account_sample after
 * every op with what the backend reads of the memory system. Nothing here looks at the plan's
 * sizes or at the predictor: the requested view is what was asked, op by op; the device view is
 * what the backend read, as a delta to the reading taken at the baseline. */
#include "exec/rt.h"

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
