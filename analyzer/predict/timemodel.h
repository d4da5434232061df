/* SPDX-License-Identifier: MIT */
/* timemodel.h — a predicted duration for every op and a schedule's time with streams overlapped.
 *
 * Durations:
 *  - a collective: alpha + factor * bytes / busbw (nccl-tests' definitions): bytes is the full
 *    payload (AllReduce, Broadcast, Reduce the buffer; ReduceScatter the send side; AllGather the
 *    receive side), factor the ring's bus factor at the size of its group (the world, or its `comm:`'s group; AllReduce 2(N-1)/N,
 *    ReduceScatter and AllGather (N-1)/N, Broadcast and Reduce 1; ml_colls[].busbw_factor);
 *  - a compute: its `time:` (microseconds), or `flops:` over the device rate, else 0;
 *  - copy, scale and a copy-init: read + write of the bytes over the device's copy bandwidth;
 *  - alloc, free, sync, record, wait, inits of a pattern, checks: 0 (host-side; an init's or a
 *    check's device wait is still a sync below).
 * Defaults, from 2 x H200 (NVLink) nccl-tests at 64 MiB float: AllReduce 250 us, ReduceScatter
 * 161 us, AllGather 158 us. alpha = 10 us is chosen, not fitted: the order of NCCL's
 * small-message latency over NVLink. Each busbw is then fitted so that the model gives exactly the measured time at 64 MiB:
 * AllReduce 67108864 B / 240 us = 279.6 GB/s, ReduceScatter and AllGather 33554432 B / (151 |
 * 148) us = 222.2 | 226.7 GB/s; Broadcast and Reduce take AllReduce's. Compute 790 TFLOP/s (bf16
 * dense, measured); copies 4.3 TB/s of read + write traffic. `link: {alpha_us:, busbw_gbps:}` in
 * the schedule, then `--link alpha_us=A,busbw_gbps=B`, replace alpha and every collective's busbw.
 *
 * Schedule: the host enqueues ops at once (no launch cost); an op starts when its stream is free
 * and the host has enqueued it, and holds its stream for its duration. record takes the stream's
 * finish time, wait moves the waiting stream to at least it, host syncs move the host's clock
 * (device: every stream; stream: that one; event: its record) and so does an init or a check
 * (they wait for the device). A sync's span is the host's wait, a wait's the stream's idle time,
 * a record sits at its stream's position. The step time is when the last stream or the host
 * finishes (the critical path under happens-before); exposed communication is the time a
 * collective runs while no compute, copy or scale does, on any stream. */
#ifndef MEMLIFE_TIMEMODEL_H
#define MEMLIFE_TIMEMODEL_H

#include "ir/plan.h"

typedef struct {
    double alpha_us;
    double busbw_gbps[COLL_COUNT];
    double tflops;          /* compute rate for `flops:` */
    double copy_gbps;       /* read + write bytes per second, in GB/s */
} tm_link;

void tm_link_default(tm_link *l);
/* Applies the schedule's `link:` (evaluated with p's slots). -1 with a diagnostic on a failed
 * or non-positive value. */
int tm_link_from_sched(const rank_plan *p, tm_link *l, ml_diags *d);
/* Applies `--link alpha_us=A,busbw_gbps=B` (either or both; decimals allowed). -1 with a
 * message in err. */
int tm_link_parse(const char *text, tm_link *l, char *err, size_t len);

typedef struct {
    double step_us;          /* critical path: the last stream's or the host's finish */
    double comm_us;          /* union of the time collectives run */
    double exposed_comm_us;  /* of that, the time no compute/copy/scale runs */
    double *start_us, *dur_us;   /* [n_ops] when asked for (spans), else NULL */
} tm_result;

/* Times p's ops. spans: also fill start_us/dur_us for every op. -1 with a diagnostic when a
 * compute's time or flops does not evaluate or is negative. */
int tm_predict(const rank_plan *p, const tm_link *l, bool spans, tm_result *out, ml_diags *d);
void tm_result_free(tm_result *r);
/* The stream an op holds (collective, copy, scale, compute), or -1 for what the host does. */
int tm_op_stream(const plan_op *op);
/* The duration model alone, for one op (microseconds). */
double tm_op_duration(const rank_plan *p, const plan_op *op, const tm_link *l, bool *comm);

#endif
