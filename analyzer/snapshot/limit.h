/* SPDX-License-Identifier: MIT */
/* limit.h — the one allocator constant under which the torch model gives segments back where a
 * snapshot's allocator did.
 *
 * PyTorch's malloc (c10/cuda/CUDACachingAllocator.cpp, 2.11), when no cached block fits:
 *   if set_fraction && garbage_collection_threshold > 0: garbage_collect_cached_blocks();
 *   alloc_block(p) || (release_available_cached_blocks(p) && alloc_block(p))
 *                  || (release_cached_blocks() && alloc_block(p));
 * alloc_block fails when reserved + alloc_size > allowed_memory_maximum (a memory fraction) or
 * cudaMalloc fails (the device is full). Garbage collection and release_available_cached_blocks
 * give back only some cached segments, so a snapshot's run of segment_free events is then no
 * empty_cache step: the import leaves those releases to the model, which makes them itself under
 * the right constant. This module finds the constants the trace admits (limit_interval_find) and
 * replays the imported steps through the model to check that one reproduces reserved after every
 * event (limit_verify). Depends on torch/torchalloc.h only. */
#ifndef MEMLIFE_SNAPSHOT_LIMIT_H
#define MEMLIFE_SNAPSHOT_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "torch/torchalloc.h"

/* What the trace says at one segment_alloc (a malloc that found no cached block). */
typedef struct {
    size_t at;                /* the segment_alloc's index in the device's trace */
    int64_t reserved;         /* reserved just before it (after the releases before it) */
    int64_t size;             /* the segment: alloc_size */
    int64_t run_start;        /* reserved before the segment_free run just before it; -1: none */
    int64_t run_bytes;        /* what that run released */
    bool run_partial;         /* the run released fewer than all segments holding no block */
    bool large_cached_before; /* a large-pool segment held no block at the malloc (GC could free it) */
    bool large_cached_after;  /* one still held none after the run */
} limit_fact;

typedef struct {
    uint64_t lo, hi;          /* every admissible constant L: lo <= L <= hi */
    size_t lo_at, hi_at;      /* the trace entries that set them (SIZE_MAX: none) */
} limit_interval;

/* gc: garbage_collection_threshold when the constant is a limit (a fraction: GC acts), 0 for a
 * capacity; max_split: max_split_size is set (release_available_cached_blocks acts). Returns 0,
 * or -1 with *at the entry at which no constant is left. */
int limit_interval_find(const limit_fact *f, size_t n, double gc, bool max_split,
                        limit_interval *iv, size_t *at);

/* One imported step, as the torch view runs it (view_torch.c); want: the snapshot's reserved
 * after it, -1 where nothing is compared. */
typedef enum { LIMIT_ALLOC, LIMIT_FREE, LIMIT_RECORD_STREAM, LIMIT_SUBMIT, LIMIT_RECORD,
               LIMIT_SYNC_EVENT, LIMIT_EMPTY_CACHE } limit_op;
typedef struct {
    limit_op op;
    uint32_t buf, stream, event;
    int64_t bytes;
    int64_t want;
    size_t at;                /* the trace entry the step stands for (SIZE_MAX: the prelude) */
} limit_step;

/* Replays steps through a model of conf with the limit (is_limit) or the capacity value, its
 * cudaMalloc segments at addrs (n of them: torchalloc_set_segment_addresses).
 * Returns SIZE_MAX when reserved equals want after every compared step, else the first step
 * that differs, with *got the model's reserved there (-1: it predicted an out-of-memory). */
size_t limit_verify(const torchalloc_conf *conf, bool is_limit, uint64_t value,
                    const uint64_t *addrs, size_t naddrs, const limit_step *s, size_t n,
                    uint32_t nbufs, uint32_t nevents, int64_t *got);

#endif
