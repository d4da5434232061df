/* SPDX-License-Identifier: MIT */
/* trace.h — Chrome trace-event JSON of a schedule or a run (`memlife trace`), for Perfetto and
 * chrome://tracing.
 *
 * One process per (series, rank), named "LABEL rank R"; thread 0 "host" holds syncs, regions and
 * buffer events, thread 1 + s the stream s ("stream default"). Per rank: counter tracks ("C")
 * "requested bytes" and "device bytes" (args {predicted, measured where a run measured it}),
 * complete events ("X") for collectives (cat "collective", args bytes, send_bytes, recv_bytes,
 * count, op, dtype, stream, in_place, root, line), regions (cat "region") and syncs (cat "sync"),
 * instant events ("i", cat "buffer") for alloc, free and release. Timestamps: op k spans
 * [k, k+1) microseconds, unless the series has measured times: then op k spans from the sample
 * before it to its own sample. A counter sample at an op's start carries the bytes after it. */
#ifndef MEMLIFE_TRACE_H
#define MEMLIFE_TRACE_H

#include "report/series.h"

/* Appends the trace document to out. Returns 0, or -1 with a diagnostic. */
int trace_json(const series *items, size_t n, ml_str *out, ml_diags *d);

#endif
