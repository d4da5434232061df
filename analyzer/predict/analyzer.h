/* SPDX-License-Identifier: MIT */
/* analyzer.h — the lifetime predictor and its device page model, expectations (lint has its own
 * header, lint/lint.h).
 *
 * Everything here works from the IR (sched.h) and expanded rank plans (plan.h) alone. It must
 * never read the runtime's accounting: comparing prediction with measurement only means something
 * when the two come from different arithmetic. */
#ifndef MEMLIFE_ANALYZER_H
#define MEMLIFE_ANALYZER_H

#include "ir/plan.h"
#include "ir/views.h"

/* ---- Device page model (analyzer/devmodel.c) -------------------------------------------------
 * What cudaMemGetInfo shows, modelled with the page rules measured on H200 (docs/design.md):
 * requests under 2 MiB are rounded up to 512 B and sub-allocated inside shared 2 MiB pages, the
 * hole chosen best fit (the smallest hole, across pages, that fits; ties: the oldest hole, the
 * one that has had its extent longest; the block at the hole's start); a page is returned as
 * soon as it is empty; requests of 2 MiB or more get pages of their own, rounded up to 2 MiB. VMM chunks (alloc with chunks:) are physical
 * allocations of their own, each rounded up to 2 MiB.
 * The rule reproduced the used bytes at every step of 1508 replayed on H200 at the 2 MiB edges
 * and in churn (tests/gpu/fixtures/pages, three sequences held out): the model is exact, and its
 * bounds are its answer. */
#define DEVMODEL_PAGE ((uint64_t)2 << 20)
#define DEVMODEL_SMALL_ROUND 512u

typedef struct devmodel devmodel;
devmodel *devmodel_new(void);
void devmodel_free(devmodel *m);
/* Returns a handle (>= 0) for the block. */
int64_t devmodel_alloc(devmodel *m, uint64_t bytes);
int64_t devmodel_alloc_chunk(devmodel *m, uint64_t bytes);   /* own pages whatever the size */
void devmodel_release(devmodel *m, int64_t handle);
uint64_t devmodel_bytes(const devmodel *m);                  /* pages in use * 2 MiB */
/* Bounds on what the driver can show now: lo == hi == devmodel_bytes (the model is exact, above;
 * the predictor reports bounds for every view, and this one's are its answer). */
void devmodel_bounds(const devmodel *m, uint64_t *lo, uint64_t *hi);
bool devmodel_exact(const devmodel *m);

/* ---- Predictor (analyzer/predict.c, one model per view: view_model.h) ------------------------
 * Every array indexed by a series (ml_mem_view, views.h) holds 0 for a view that is off. */
typedef struct {
    size_t op;             /* index into the rank plan's ops */
    uint64_t live[VIEW_COUNT];
} pred_point;

/* One segment of PyTorch's caching allocator (torch.cuda.memory_snapshot()'s segments). */
typedef struct {
    uint64_t size;            /* total_size */
    uint64_t allocated;       /* allocated_size: its allocated blocks */
    uint64_t requested;       /* requested_size */
    uint32_t stream;          /* the stream symbol whose pool it belongs to */
    bool large, expandable;
} pred_segment;

/* The torch view's state at a peak. Fragmentation: reserved - allocated, split into the free
 * tails inside segments that hold an allocated block, whole free segments, and blocks freed but
 * waiting for a stream's event (record_stream). */
typedef struct {
    pred_segment *segments;   /* in address order */
    size_t n_segments;
    uint64_t allocated, reserved;
    uint64_t free_in_used_segments, whole_free_segments, pending_free;
} pred_torch_peak;

/* Whether the prediction depends on where cudaMalloc put the segments (view_torch.c): the
 * model places each new segment below the others; a second model placing them above replays
 * the ops from the first alloc whose best fit had two equal free blocks in different segments.
 * decides: the two models' allocated differ after some op. */
typedef struct {
    bool decides;
    size_t tie_op;            /* the first such alloc, where the second model starts */
    size_t diff_op;           /* the first op after which allocated differs */
    uint64_t at_diff[2];      /* allocated after diff_op: [0] this model, [1] the other order
                                 (0 when the other order ran out of memory there) */
    uint64_t peak[2];         /* allocated's peak: [0] this model, [1] the other order (up to
                                 its out-of-memory) */
    size_t oom_op;            /* where the other order runs out of memory; SIZE_MAX: nowhere */
} pred_torch_order;

typedef struct {
    pred_torch_peak at[2];    /* [0] the allocated peak, [1] the reserved peak */
    uint64_t requested_peak;  /* requested_bytes' peak (it drops at free_completed) */
    uint64_t alloc_retries;   /* num_alloc_retries at the end: mallocs that found no room
                                 under the limit until the cache was freed (slow, not fatal) */
    pred_torch_order order;
} pred_torch;

typedef struct {
    int rank;
    bool on[MV_COUNT];                /* views predicted (requested and device always) */
    uint64_t steady[VIEW_COUNT];      /* end - start (start is 0: the baseline) */
    uint64_t peak[VIEW_COUNT];        /* max - start */
    size_t peak_op[VIEW_COUNT];       /* first op at which the peak is reached; SIZE_MAX: none */
    uint32_t *peak_live[VIEW_COUNT];  /* buffer symbols live at that op, in alloc order */
    uint32_t n_peak_live[VIEW_COUNT];
    pred_point *timeline;             /* live bytes after every op */
    size_t n_timeline;
    /* Bounded views (ml_views[].bounded): the peak the hardware can show lies in [lo, hi];
     * exact when lo == hi == peak. Unbounded series: exact, lo = hi = peak. */
    bool exact[VIEW_COUNT];
    uint64_t peak_lo[VIEW_COUNT], peak_hi[VIEW_COUNT];
    pred_torch *torch;                /* on[MV_TORCH]: details at its peaks; else NULL */
    uint64_t floor;                   /* requested bytes that must be live at some point by data
                                         dependence alone (analyzer/floor.c); 0 when not computed */
    bool timed;                       /* the time model ran (predict/timemodel.h) */
    plan_colls_acc colls;             /* the plan's first collectives, gathered by the
                                         prediction's pass (plan_compact_with) */
    double step_us, comm_us, exposed_comm_us;
} pred_rank;

int predict_rank(const rank_plan *p, pred_rank *out, ml_diags *d);
/* timeline false: no timeline (n_timeline 0), for commands that print none (predict, check):
 * at a million ops it is 40 MB per rank, written once and never read. */
int predict_rank_with(const rank_plan *p, bool timeline, pred_rank *out, ml_diags *d);
/* out: p's prediction, where `same` is predict_rank_forward's for a plan with p's very ops
 * (plan_share) or with p's ops but for views' offsets and in-place flags (plan_offsets_apply),
 * and fw the floor's forward facts it kept: a copy, rank set, with the floor (the one part of a
 * prediction that reads offsets, in-place flags and the rank) p's own. out->timeline is same's,
 * borrowed (set it to NULL before pred_rank_free). Returns 0, or -1 where that floor passes
 * 2^63-1 (predict_rank's error, in d). */
typedef struct floor_forward floor_forward;
int predict_rank_shared(const rank_plan *p, const pred_rank *same, const floor_forward *fw,
                        pred_rank *out, ml_diags *d);
/* The ops of p whose views' offsets or in-place flags may differ on the plans predict_rank_shared
 * is then asked about (plan_offsets_ops; none for plan_share's): ops[0..n), increasing. */
typedef struct {
    const size_t *ops;
    size_t n;
} floor_vary;
/* predict_rank_with, keeping the floor's forward facts of p in *keep (NULL when it fails; free
 * with floor_forward_free) for predict_rank_shared. keep NULL: predict_rank_with. vary
 * (with keep; may be NULL): what the other ranks' plans may have otherwise, for their floors to
 * redo only those ops (floor_rank_record). */
/* what: PRED_TIMELINE keeps the timeline (predict_rank_with's timeline); PRED_NUMBERS_ONLY
 * leaves out what only a report's details read: the buffers live at the peaks and the torch
 * view's details there (peak_live, torch->at), and its segment order (torch->order stays
 * undecided). Every number (steady, peaks, their ops and bounds, the floor, the torch view's
 * retries) and every error is the same either way: those parts replay ops the pass already
 * replayed, or run a second model whose numbers are never the prediction's (view_torch.c). */
enum { PRED_TIMELINE = 1u, PRED_NUMBERS_ONLY = 2u };
int predict_rank_forward(const rank_plan *p, unsigned what, pred_rank *out, floor_forward **keep,
                         const floor_vary *vary, ml_diags *d);
void pred_rank_free(pred_rank *r);

/* ---- Floor (analyzer/floor.c) -----------------------------------------------------------------
 * The requested bytes that must be live at some point by data dependence alone (defined at the
 * top of floor.c): predict_rank stores it in pred_rank.floor. at_op (may be NULL) gets the op
 * where it is reached, SIZE_MAX when that is the end of the plan. */
uint64_t floor_rank(const rank_plan *p, size_t *at_op);
/* The same in two parts, so that the predictor's forward pass gathers what the floor's backward
 * pass starts from (no pass of its own over a million ops): floor_forward_op for every op, in
 * order, that is refused (an expect_error's: refused true) or is an alloc, free or release (any
 * other op may be left out); then floor_rank_after. */
floor_forward *floor_forward_new(const rank_plan *p);
void floor_forward_op(floor_forward *f, const rank_plan *p, size_t i, bool refused);
uint64_t floor_rank_after(const rank_plan *p, const floor_forward *f, size_t *at_op);
/* floor_rank_after, keeping in f what lets floor_rank_after of another plan q with f redo only
 * some ops: q's ops are p's but for the views' offsets and in-place flags of ops vary[0..n_vary)
 * (increasing), and q's rank (floor.c says why that is exact, and when it falls back). */
uint64_t floor_rank_record(const rank_plan *p, floor_forward *f, const size_t *vary,
                           size_t n_vary, size_t *at_op);
/* That short way alone: true with *floor and *at_op (may be NULL) where f has a record and it
 * applies to q, false where floor_rank_after takes the whole pass. */
bool floor_rank_shared(const rank_plan *q, const floor_forward *f, uint64_t *floor,
                       size_t *at_op);
void floor_forward_free(floor_forward *f);

/* ---- Expectations (analyzer/expect.c) ---------------------------------------------------------*/
typedef struct {
    ml_mem_view view;
    int rank;
    bool is_peak;          /* else steady */
    int64_t expected, got;
    bool pass;
    ml_mark mark;
} expect_row;

/* Evaluates the plan's (or schedule's) expectations for every rank against predictions.
 * Appends rows; returns the number of failures, -1 on an evaluation error (to d). */
int expect_eval(const sched *s, int plan_index, const sched_params *p, int world,
                const pred_rank *ranks, expect_row **rows, size_t *n_rows, ml_diags *d);

#endif
