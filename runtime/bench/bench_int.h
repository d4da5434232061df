/* SPDX-License-Identifier: MIT */
/* bench_int.h — what bench.c, bench_session.c and bench_kernels.c share; not a public header.
 *
 * A session holds every plan of one size, set up on this process's ranks. The driver walks each
 * local rank's plan itself, part by part (setup, timed part, teardown), and hands the executor
 * only what the executor does: runs of plain ops (through a view of the plan that holds just
 * them) and collectives (rt_issue_collective, for every local rank at once). It keeps the region
 * markers for itself: NVTX ranges, and the kernel pass's windows. */
#ifndef MEMLIFE_BENCH_INT_H
#define MEMLIFE_BENCH_INT_H

#include "bench/bench.h"

struct bench {
    const rt_backend_ops *real;
    rt_backend_ops ops;        /* what the executor drives: real, spied, without mem_read */
    const rt_options *opt;
    bench_options bo;
    int world, n_local;
};

/* A copy, in the backend's memory, of a buffer as the setup left it (an input): the reset before
 * each timed run copies it back, on the device. */
typedef struct {
    uint32_t buf;
    uint64_t bytes;
    const void *ptr;           /* the buffer's allocation when the copy was taken */
    rt_mem mem;
} bench_snap;

typedef struct {
    const char *name;
    rt_rank *ranks;            /* [n_local] */
    rt_rank **ptrs;
    size_t *first, *end;       /* the timed part of each local rank's plan */
    ml_vec *snaps;             /* per local rank: bench_snap (the reset) */
    ml_vec calls;              /* rt_coll_args, n_local per recorded call (bare mode) */
    bool recorded;
    void **graphs;             /* [n_local] (graph mode) */
} bplan;

typedef struct {
    size_t plan;
    const char *label;
    uint64_t t0, t1;
} interval;

typedef struct {
    bench *b;
    bplan *plans;
    size_t n_plans;
    bool windows;              /* kernel pass: sync and read CUPTI's clock at region markers */
    ml_vec intervals;          /* interval */
    struct {
        const char *label;
        uint64_t t0;
    } open[64];
    int depth;
    char *err;
    size_t elen;
} session;

/* The plan's name for messages and ranges (the schedule's name for a file without plans). */
const char *bs_plan_label(const rank_plan *p);

/* Sets every plan up on this process's ranks: rank state, the backend's warm-up, the setup part.
 * Returns 0, or -1 with err. bs_finish must follow either way. */
int bs_open(session *ss, bench *b, const rank_plan *const *plans, size_t n_plans, char *err,
            size_t len);
/* After rc == 0: every plan's teardown, and the failed check rows of every rank into out[p];
 * then (whatever rc) frees the session. Returns 0 or -1. */
int bs_finish(session *ss, bench_plan_result *out, int rc);
/* Plan p on every local rank: the inputs reset (device-side copies of what the setup left in the
 * buffers it wrote, see bench_snap); every local device
 * synchronized; every rank of the job lined up (a host barrier); the timed part run through the
 * executor; its graph captured (`copies` runs of the timed part, back to back, in one graph).
 * Each returns 0 or -1 with ss->err. */
int bs_reset(session *ss, size_t p);
int bs_sync(session *ss, size_t p);
int bs_line_up(session *ss, size_t p);
int bs_run_timed(session *ss, size_t p);
int bs_capture(session *ss, size_t p, int copies);
/* v[0..count) combined over every rank of the job, on every process: the largest or the sum. */
int bs_over_ranks(session *ss, double *v, size_t count, bool sum);

#endif
