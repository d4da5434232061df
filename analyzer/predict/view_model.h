/* SPDX-License-Identifier: MIT */
/* view_model.h — how each memory view is predicted: one row per view of views.h, one file per
 * model (view_requested.c, view_device.c, view_torch.c). The predictor (predict.c) replays a
 * rank's ops through every view that is on, in order, and keeps the timeline, steady and peaks
 * of every series; a model only says what an op does to its own state.
 *
 * The ops of a step an expect_error wraps are refused before they run: the predictor never
 * shows them to a model. */
#ifndef MEMLIFE_VIEW_MODEL_H
#define MEMLIFE_VIEW_MODEL_H

#include "predict/analyzer.h"

typedef struct {
    /* State for one replay of p; NULL with an error in d (a bad configuration). */
    void *(*open)(const rank_plan *p, ml_diags *d);
    /* Moves the state across op i and writes the view's series after it into live[series].
     * Returns 0, or -1 with an error in d (the torch view's predicted out-of-memory). */
    int (*apply)(void *st, const rank_plan *p, size_t i, uint64_t *live, ml_diags *d);
    /* Bounded views: what the hardware can show now whatever its placement (lo == hi: exact). */
    void (*bounds)(void *st, uint64_t *lo, uint64_t *hi);
    /* Optional: details at the peak of series v, from a second replay up to that op. */
    void (*at_peak)(void *st, ml_mem_view v, pred_rank *out);
    void (*close)(void *st);
    /* Bit k: apply changes the state only for ops of kind k (plan_op_kind); 0: for any kind.
     * The predictor skips the ops no model that is on reacts to: their series and bounds stay
     * what they were after the op before. */
    uint32_t kinds;
    /* Optional: what the whole replay found, after its last op (the torch view's segment
     * order, view_torch.c). */
    void (*finish)(void *st, pred_rank *out);
    /* Optional, right after open: only the numbers will be read (PRED_NUMBERS_ONLY), so work
     * kept for the details alone may stop (the torch view's second segment order). */
    void (*numbers_only)(void *st);
} pred_view_model;
_Static_assert(OP_KIND_COUNT <= 32, "pred_view_model.kinds holds one bit per op kind");
#define PRED_KIND(k) (1u << (k))

extern const pred_view_model pred_view_requested, pred_view_device, pred_view_torch;

/* The caching-allocator model inside a state pred_view_torch.open returned, for writers that hook
 * its events or walk its segments while the view replays a plan (analyzer/snapshot/export.c):
 * one replay of the torch view, not a second copy of its rules. */
struct torchalloc *pred_torch_model(void *state);

/* PYTORCH_CUDA_ALLOC_CONF's checker for the loader (sched_load_limits.torch_conf_check). */
int pred_torch_conf_check(const char *text, size_t *offset, char *msg, size_t len);

/* Whether view v is predicted for p (optional views only where configured). */
bool pred_view_on(const rank_plan *p, ml_view_id v);

/* Chunk k of `bytes` in n chunks holds min(c, bytes - k*c) bytes with c = ceil(bytes / n), as
 * the chunked allocator cuts them. */
static inline uint64_t pred_chunk_bytes(uint64_t bytes, uint32_t chunks, uint32_t k) {
    uint64_t c = bytes / chunks + (bytes % chunks != 0);
    uint64_t start = (uint64_t)k * c;
    return start >= bytes ? 0 : (bytes - start < c ? bytes - start : c);
}

#endif
