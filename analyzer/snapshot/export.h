/* SPDX-License-Identifier: MIT */
/* export.h — a schedule's predicted torch view as a PyTorch memory snapshot that memory_viz
 * opens (python -m torch.cuda._memory_viz trace_plot OUT.pickle -o out.html, or the page at
 * pytorch.org/memory_viz).
 *
 * One rank's plan is replayed through PyTorch's caching allocator model (analyzer/torch): every
 * allocator event the model makes (alloc, free_requested, free_completed, segment_alloc /
 * segment_free / segment_map / segment_unmap) becomes a device_traces entry with the model's
 * address, and its frame names the schedule's step (filename = the schedule, line = the step's
 * line, name = "alloc 'x' (col 5)"); the final state is walked into `segments` with their
 * blocks, as torch.cuda.memory._snapshot() lists them. memory_viz rebuilds the timeline by
 * walking the trace back from those segments, so the two agree by construction.
 *
 * What each op does to the allocator is the torch view's rule: alloc mallocs, free frees,
 * collectives / copies / scales / inits / computes submit work on their stream, sync completes
 * streams (an event: its stream up to the record), record notes the stream's submit count. */
#ifndef MEMLIFE_SNAPSHOT_EXPORT_H
#define MEMLIFE_SNAPSHOT_EXPORT_H

#include <jansson.h>

#include "ir/plan.h"
#include "torch/torchalloc.h"

/* The snapshot dict of plan p's replay through the torch view (a new reference): the view's
 * configuration is the plan's (the schedule's `torch:` key under --torch-conf / --torch-limit).
 * NULL with the first diagnostic in err ("FILE:L:C: error: would run out of memory at ..." or a
 * conf the allocator refuses). */
json_t *snapshot_export(const rank_plan *p, char *err, size_t errlen);

#endif
