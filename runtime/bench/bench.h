/* SPDX-License-Identifier: MIT */
/* bench.h — `memlife bench`: the timed loop driver (docs/bench.md).
 *
 * A plan's timed part is the span from its first region to its last one (top level), or, without
 * regions, from its first collective to its last. It may hold only collectives, copies,
 * record/wait, compute and regions: buffers are allocated and initialized before it, once per
 * size, and checked and freed after it, as the chapter timed the collective alone.
 *
 * For one size, every plan's setup runs once (allocations, inits, anything before the timed
 * part), then `warmup` cycles and `cycles` measured cycles. A cycle times each entry (plan x
 * mode) once: even measured cycles in order (A, then B), odd ones in reverse (B, then A), so a
 * drift of clock, temperature or allocator cannot side with one plan; a plan's modes sit next to
 * each other, their order counterbalanced (bench_cycle_order). Every timed run resets the inputs
 * first (device-side copies of what the setup left in the buffers it wrote), waits
 * for the device and lines the ranks up (a host barrier) outside the timing; then each rank times the span with the backend's time_begin /
 * time_end (CUDA events per rank and stream; the monotonic clock on the host) and the cycle keeps
 * the critical rank, the largest time over all ranks.
 * Modes: memlife (the executor issues the timed part: validation, bookkeeping, NVTX ranges),
 * bare (the same collectives on the same buffers and streams through collective_bare, nothing
 * around them: the yardstick of memlife's overhead), graph (one CUDA graph per rank captured from
 * `replays` back-to-back runs of the timed part and replayed; the span divided by `replays`).
 * With `align` (the default) every mode's span starts after a one-element AllReduce has lined
 * the ranks up on the device (time_begin's align), so host skew stays out of the GPU span; graph
 * replays are always aligned. Since that hides launch overhead behind the aligning collective,
 * each timed run also keeps the host's issue time: the monotonic clock from just before the
 * first collective call to the return of the last one (the whole timed part as the host issues
 * it), per process, the largest over the job. After the last cycle the plans' teardown runs
 * (data checks and frees): a check there sees the data of one run of the plan, since each run
 * began from reset inputs (after repeated graph replays each plan is reset and run once more,
 * untimed, first).
 * The kernel pass (bench_kernels) runs each plan's timed part once more, eagerly, under CUPTI,
 * with every local GPU synchronized at each region boundary; see kernels.h. */
#ifndef MEMLIFE_BENCH_H
#define MEMLIFE_BENCH_H

#include "exec/rt.h"
#include "exec/kernels.h"

typedef enum { BENCH_MEMLIFE, BENCH_BARE, BENCH_GRAPH, BENCH_MODE_COUNT } bench_mode;
extern const char *const bench_mode_names[BENCH_MODE_COUNT];   /* "memlife", "bare", "graph" */

typedef struct {
    int warmup, cycles;      /* default 3, 10 */
    bool bare;               /* time the bare calls too (default true) */
    bool graph;              /* time CUDA graph replays too (needs be->graph_begin) */
    bool align;              /* memlife and bare spans start aligned on the device (default
                                true; false: after the host barrier only, `--no-align`) */
    int graph_replays;       /* copies of the timed part per graph (per timed replay); 0
                                (default): bench_graph_replays */
} bench_options;
void bench_options_default(bench_options *o);

/* Copies of the timed part per graph at a payload of `payload` bytes: 20 below 16 MiB, where
 * one run is a few microseconds and the launch of the next rank's graph (in one process, one
 * thread launches every local GPU's graph after the aligning collective) would be a visible
 * share of it; 1 from 16 MiB on. */
enum { BENCH_GRAPH_REPLAYS_SMALL = 20 };
#define BENCH_GRAPH_REPLAYS_BELOW ((uint64_t)16 << 20)
int bench_graph_replays(uint64_t payload);

/* The order of the entries (plan p, mode m as p * n_modes + m; the modes in use numbered 0..) in
 * cycle g: plans in order on even g and reversed on odd g (the chapter's alternation); the modes
 * of each plan next to each other, starting from mode floor(g / 2) mod n_modes and wrapping.
 * Why the second rule: the run after a switch of plan inherits the other plan's buffers in the
 * GPU's L2 and the host's caches, and is slower for it. With the modes reversed together with
 * the plans (the first design) the switch always fell on B's memlife and A's bare run: on
 * 2 x H200 at 16 MiB, four runs read memlife/bare (per cycle) 1.013-1.023 for decomposed (B),
 * where memlife adds well under 1 us to a 113 us span (docs/evidence, bench-order log). Now, over
 * any 2 x n_modes consecutive cycles, every mode of a plan follows a switch equally often, and no
 * cycle starts with a switch (it begins with the plan the last one ended with). Warm-up cycles
 * take g = -warmup .. -1, so the first measured cycle does not start with a switch either.
 * out gets n_plans * n_modes. */
void bench_cycle_order(size_t n_plans, size_t n_modes, long g, size_t *out);

/* Kernels of one window of the kernel pass, summed over every rank. */
typedef struct {
    char *label;             /* the region's name; "" for the plan's whole timed part */
    kn_tally tally;
} bench_window;

typedef struct {
    double *seconds[BENCH_MODE_COUNT];   /* [cycles]: the critical rank's time per measured
                                            cycle; NULL for a mode not timed */
    double *issue[BENCH_MODE_COUNT];     /* [cycles]: the host's issue time of the timed part,
                                            the largest over the processes; NULL: not taken */
    int graph_replays;                   /* copies of the timed part per graph (seconds: per
                                            copy); 0 without graphs */
    size_t check_failures;   /* failed data-check rows after the timed part, every rank */
    char check_failure[400]; /* this process's first failed row: "file:l:c: error: ..."; or "" */
    bench_window *windows;   /* kernel pass: the whole part first, then each region */
    size_t n_windows;
    bool kernels_done;
} bench_plan_result;
void bench_plan_result_free(bench_plan_result *r);

typedef struct bench bench;

/* A driver for the ranks this process holds (n_local of world); be->init has run. */
bench *bench_new(const rt_backend_ops *be, const rt_options *o, const bench_options *bo, int world,
                 int n_local);
void bench_free(bench *b);

/* The timed part of p: ops [*first, *end). Returns -1 when p has nothing to time. */
int bench_span(const rank_plan *p, size_t *first, size_t *end);
/* Refuses, before anything runs, a plan whose timed part is missing or holds other ops: errors
 * to d at the op's file:line:col. Returns 0 or -1. */
int bench_check_plan(const rank_plan *p, ml_diags *d);
/* What the timed part moves: payload = the largest full tensor of its collectives (AllReduce
 * and ReduceScatter their send size, AllGather its recv size); bus bytes = the sum over its
 * collectives of full size x the nccl-tests bus factor at p's world. */
void bench_plan_bytes(const rank_plan *p, uint64_t *payload, double *bus_bytes);
/* Collective calls in the timed part of p (repeats unrolled): 1 for the chapter's direct plan,
 * 2 for its decomposed one. */
size_t bench_plan_collectives(const rank_plan *p);

/* Times every plan at one size: plans[i * n_local + k] is plan i of local rank k; out[i] gets
 * plan i's times (on every process; the same critical-rank numbers everywhere). Returns 0, or -1
 * with err ("file:line:col: error: ..." of the rank that failed, where there is one). */
int bench_time(bench *b, const rank_plan *const *plans, size_t n_plans, bench_plan_result *out,
               char *err, size_t len);
/* The kernel pass at one size, under CUPTI (kn_begin / kn_end around it): fills out[i].windows
 * (complete on global rank 0). Returns 0; 1 when some rank cannot collect kernels (err says why,
 * nothing ran, every rank returns 1); -1 on a failure, with err. */
int bench_kernels(bench *b, const rank_plan *const *plans, size_t n_plans, bench_plan_result *out,
                  char *err, size_t len);

#endif
