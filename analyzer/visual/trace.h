/* SPDX-License-Identifier: MIT */
/* trace.h — Chrome trace-event JSON of a schedule or a run (`memlife trace`), for Perfetto and
 * chrome://tracing.
 *
 * One process per (series, rank), named "LABEL rank R"; thread 0 "host" holds syncs, regions and
 * buffer events, thread 1 + s the stream s ("stream default"). Per rank: counter tracks ("C")
 * "requested bytes" and "device bytes" (args {predicted, measured where a run measured it}),
 * complete events ("X") for collectives (cat "collective", args bytes, send_bytes, recv_bytes,
 * count, op, dtype, stream, in_place, root, line), regions (cat "region") and syncs (cat "sync"),
 * instant events ("i", cat "buffer") for alloc, free and release. Every other step is a complete
 * event on its lane: collectives, compute, copy, scale, record and wait on their stream's (cat
 * the step's name), copy-inits on default's, syncs, pattern inits and checks on the host's.
 * Timestamps, on one clock per rank (otherData.clock): measured (a run's: op k spans from the
 * sample before it to its own), snapshot (the steps' `time_us:`, an imported snapshot's),
 * model (the time model's start and duration, predict/timemodel.h: streams overlap under
 * happens-before) or op-order (op k at k us, where the model gives no durations). Every track
 * (a counter; a lane) has its events in op order at increasing times, 1 ns apart at least. A
 * counter sample at an op's time carries the bytes after it. */
#ifndef MEMLIFE_TRACE_H
#define MEMLIFE_TRACE_H

#include "report/series.h"

typedef struct {
    const int *ranks;     /* the ranks to write (`--ranks 0,3`); n_ranks 0: every rank */
    size_t n_ranks;
} trace_options;

bool trace_rank_chosen(const trace_options *o, int r);

/* What the trace of items will weigh, before it is built: events (one per op, three per memory
 * op with its counter samples, the metadata) times TRACE_BYTES_PER_EVENT, the mean measured on
 * the seed and FSDP schedules' traces (tests/cli/trace_json.sh checks it stays within 2x). */
enum { TRACE_BYTES_PER_EVENT = 120 };
uint64_t trace_estimate(const series *items, size_t n, const trace_options *o, uint64_t *events);

/* Appends the trace document to out (o may be NULL: every rank). Returns 0, or -1 with a
 * diagnostic. */
int trace_json(const series *items, size_t n, const trace_options *o, ml_str *out, ml_diags *d);

#endif
