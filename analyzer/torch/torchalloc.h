/* SPDX-License-Identifier: MIT */
/* torchalloc.h — an exact model of PyTorch's CUDA caching allocator (the "native" backend of
 * c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.11; a 2.5 row where the rules differ).
 *
 * Why a model and not a formula: what memory_reserved() reads depends on the order of every
 * malloc and free (best fit, splitting, merging, oversize rules, per-stream pools), so the
 * predictor replays the schedule's allocation events through the same algorithm PyTorch runs.
 * The model keeps PyTorch's data structures (free blocks ordered by (stream, size, address),
 * unmapped ranges ordered by (stream, address), segments as linked block chains) so that ties
 * are broken the same way; only the device is fake: addresses are deterministic and 2 MiB
 * aligned (new cudaMalloc segments ordered as the driver placed them on the H100 and H200,
 * torchplace.c, unless the caller lists the real ones: torchalloc_set_segment_addresses;
 * expandable segments upwards), and "cudaMalloc fails" means a configured limit or capacity is
 * crossed.
 *
 * Depends only on libc.  Not thread safe (PyTorch holds one lock per device; so does the
 * caller).  One torchalloc models one device's DeviceCachingAllocator.
 *
 * Streams and completion.  PyTorch returns a block freed after record_stream() to its pool only
 * when CUDA events recorded at free time on each use-stream have completed, and it looks at
 * those events only at the start of each malloc (process_events) and in empty_cache
 * (synchronize_and_free_events).  A model has no GPU, so completion is told explicitly: every
 * stream has a submit counter, advanced by torchalloc_stream_submit() whenever work is enqueued
 * on it, and a complete counter, set by torchalloc_stream_complete*() when the host learns the
 * stream finished (a stream or event sync; a device sync is torchalloc_device_synchronize()).
 * A free records, per use-stream, that stream's submit counter; the event has completed once
 * complete >= that value.  If nothing was submitted on the stream since its last completion,
 * the event is complete already, but (as in PyTorch) the block still comes back only at the
 * next malloc or empty_cache.
 *
 * Limits.  limit_bytes models torch.cuda.set_per_process_memory_fraction(): allocated segments
 * may not exceed it (alloc_block's "total_allocated_memory + size > allowed_memory_maximum"),
 * and only with it set does garbage_collection_threshold act (PyTorch: set_fraction).  A
 * physical capacity (cudaMalloc / cuMemCreate failing without a fraction) can be set apart
 * with torchalloc_set_capacity(); it never enables garbage collection.
 */
#ifndef TORCHALLOC_H
#define TORCHALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TORCHALLOC_KMIN_BLOCK ((uint64_t)512)              /* kMinBlockSize */
#define TORCHALLOC_KSMALL_SIZE ((uint64_t)1 << 20)         /* kSmallSize: largest small request */
#define TORCHALLOC_KSMALL_BUFFER ((uint64_t)2 << 20)       /* kSmallBuffer: small segment/page */
#define TORCHALLOC_KMIN_LARGE_ALLOC ((uint64_t)10 << 20)   /* kMinLargeAlloc */
#define TORCHALLOC_KROUND_LARGE ((uint64_t)2 << 20)        /* kRoundLarge */
#define TORCHALLOC_KLARGE_BUFFER ((uint64_t)20 << 20)      /* kLargeBuffer (2.5; 2.11 default) */
#define TORCHALLOC_UNLIMITED UINT64_MAX                    /* max_split_size when not set */
#define TORCHALLOC_NDIV 16 /* roundup_power2_divisions intervals: [1 MiB,2 MiB) ... [32 GiB,64 GiB) */

typedef enum {
    TORCHALLOC_V2_11 = 0, /* default */
    TORCHALLOC_V2_5 = 1   /* kLargeBuffer constant, no large_segment_size_mb, fewer keys */
} torchalloc_version;

/* The parsed PYTORCH_CUDA_ALLOC_CONF.  Sizes are in bytes, as the allocator stores them. */
typedef struct torchalloc_conf {
    torchalloc_version version;
    int expandable_segments;                 /* expandable_segments:True */
    uint64_t max_split_size;                 /* max_split_size_mb; TORCHALLOC_UNLIMITED if unset */
    uint64_t max_non_split_rounding;         /* max_non_split_rounding_mb; default large_segment_size */
    uint64_t large_segment_size;             /* large_segment_size_mb (2.11); 20 MiB */
    uint64_t roundup_power2_divisions[TORCHALLOC_NDIV]; /* 0 or 1: plain 512 B rounding */
    double garbage_collection_threshold;     /* 0: off */
    /* Keys PyTorch accepts that do not change the device allocator's sizing.  Parsed and
     * checked like PyTorch so that a config PyTorch refuses is refused here too. */
    int release_lock_on_cudamalloc;          /* release_lock_on_cudamalloc / _hipmalloc */
    int pinned_use_cuda_host_register;       /* pinned_use_cuda_host_register / _hip_ */
    uint64_t pinned_num_register_threads;    /* power of two, <= 128 */
    uint64_t pinned_reserve_segment_size_mb; /* 2.11, > 0 */
    int pinned_use_background_threads;
    int graph_capture_record_stream_reuse;   /* 2.11 */
    /* per_process_memory_fraction (2.11) does change sizing: it acts as a memory fraction.
     * The model does not know the device's total memory, so the caller multiplies and passes
     * the product as torchalloc_new's limit_bytes. -1 when not given. */
    double per_process_memory_fraction;
} torchalloc_conf;

/* PyTorch defaults for the version (2.11: large_segment_size 20 MiB, max_non_split_rounding
 * 20 MiB, max_split_size unlimited, no rounding divisions, gc off, expandable off). */
void torchalloc_conf_default(torchalloc_conf *c, torchalloc_version v);

/* Keys (2.11), with PyTorch's checks:
 *   expandable_segments:True|False
 *   large_segment_size_mb:N       N > 10; the 1..10 MiB segment tier and the large expandable
 *                                 page (default 20); parsed before the others, whose minimum
 *                                 it sets; 2.5 has no such key (kLargeBuffer, 20 MiB)
 *   max_split_size_mb:N           N >= large_segment_size in MiB (20)
 *   max_non_split_rounding_mb:N   N >= large_segment_size in MiB; default large_segment_size
 *   roundup_power2_divisions:N | [B:N,...,>:N]   N a power of two (list: or 0), B a power of
 *                                 two in MiB (its interval index is log2 B, clamped to 0..15)
 *   garbage_collection_threshold:X  0 < X < 1; acts only with a memory fraction (limit)
 *   per_process_memory_fraction:X   0 <= X <= 1 (2.11; see the field)
 * Accepted and ignored (no effect on device sizing): backend:native, release_lock_on_cudamalloc
 * (and _hipmalloc), pinned_use_cuda_host_register (and _hip_), pinned_num_register_threads
 * (power of two <= 128), pinned_use_background_threads, pinned_reserve_segment_size_mb (2.11,
 * > 0), graph_capture_record_stream_reuse (2.11).
 * 2.5 differences modelled: no large_segment_size_mb / pinned_reserve_segment_size_mb /
 * graph_capture_record_stream_reuse / per_process_memory_fraction keys; the list form's '>'
 * fills from the last boundary's own interval (2.11: the one after it).
 *
 * Parses a PYTORCH_CUDA_ALLOC_CONF string (NULL or "" gives the defaults) for PyTorch 2.11.
 * Returns 0, or -1 with *err_offset the byte offset in text of the offending key or value and
 * err a message naming it, e.g. "unknown key 'foo' in PYTORCH_CUDA_ALLOC_CONF"; value errors
 * carry PyTorch's own message ("CachingAllocator option max_split_size_mb too small, must be
 * >= 20").  Tokenizing follows c10::CachingAllocator::ConfigTokenizer (',' ':' '[' ']' are
 * tokens, whitespace is dropped); numbers follow std::stoull / std::stod (a numeric prefix is
 * enough, "-1" wraps).  Unlike PyTorch, which ignores the result of checkToken(), a missing ':'
 * or ',' is an error here.  backend:cudaMallocAsync is refused: it is a different allocator. */
int torchalloc_conf_parse(const char *text, torchalloc_conf *out, size_t *err_offset, char *err,
                          size_t errlen);
/* The same for another version's parser (keys it lacks are unknown keys). */
int torchalloc_conf_parse_version(const char *text, torchalloc_version v, torchalloc_conf *out,
                                  size_t *err_offset, char *err, size_t errlen);

/* round_size(): < 512 -> 512; with divisions d > 1 for the size's interval and size > 512*d,
 * up to the next of d steps between powers of two; else up to a multiple of 512. */
uint64_t torchalloc_round_size(const torchalloc_conf *c, uint64_t size);
/* get_allocation_size() of a rounded size: <= 1 MiB -> 2 MiB; < 10 MiB -> large segment size
 * (20 MiB); else up to a multiple of 2 MiB. */
uint64_t torchalloc_allocation_size(const torchalloc_conf *c, uint64_t rounded);
/* Expandable-segment page size for a pool: 2 MiB small, large_segment_size (20 MiB) large. */
uint64_t torchalloc_page_size(const torchalloc_conf *c, int large_pool);

typedef struct torchalloc torchalloc;

/* limit_bytes: 0 for no memory fraction.  Returns NULL on allocation failure. */
torchalloc *torchalloc_new(const torchalloc_conf *c, uint64_t limit_bytes);
void torchalloc_destroy(torchalloc *ta);
/* Physical memory: a segment (or page) that would take reserved past it fails like cudaMalloc
 * without a fraction set.  0 (the default): unlimited. */
void torchalloc_set_capacity(torchalloc *ta, uint64_t bytes);

/* Where new cudaMalloc segments go: where the driver's placement puts them (0, the default:
 * torchplace.c) or above every live one (1).  The driver does not document its placement; a caller
 * replays a second model with the other order to see whether a prediction depends on it
 * (order_ties, under torchalloc_watch_ties, counts where it might).  Call before the first
 * malloc. */
void torchalloc_set_segment_order(torchalloc *ta, int upwards);
/* The addresses of the first n cudaMalloc segments, in the order they are made (an imported
 * snapshot's segment_alloc events): best fit then breaks ties between equal free blocks in
 * different segments as the driver's placement did, instead of by the model's placement. A
 * listed address whose segment would overlap a live one is not used (the segment goes below
 * every live one); segments past the list go below every live one too. addr stays the caller's and must
 * outlive the model. Call before the first malloc. */
void torchalloc_set_segment_addresses(torchalloc *ta, const uint64_t *addr, size_t n);
/* Count order_ties from now on (1) or stop (0, the default: the check costs a few percent). */
void torchalloc_watch_ties(torchalloc *ta, int on);

/* What PyTorch's OutOfMemoryError reports. */
typedef struct torchalloc_oom {
    uint64_t requested;  /* the caller's size */
    uint64_t rounded;    /* round_size(requested) */
    uint64_t alloc_size; /* the segment PyTorch tried ("Tried to allocate ...") */
    uint64_t allocated;  /* memory_allocated() at the failure, after the cache was released */
    uint64_t reserved;   /* memory_reserved() at the failure */
    uint64_t limit;      /* limit_bytes (0: none), else the capacity */
    uint32_t stream;
} torchalloc_oom;

/* DeviceCachingAllocator::malloc: process_events, best fit, else a new segment, else release
 * oversize cached blocks and retry, else release all unsplit cached segments and retry.
 * Returns a block id >= 0, valid until torchalloc_free; or -1 on predicted out-of-memory with
 * *oom filled (oom may be NULL). */
int64_t torchalloc_malloc(torchalloc *ta, uint64_t requested, uint32_t stream, torchalloc_oom *oom);
/* free(): allocated drops now; with stream uses the block waits for its events, else it merges
 * with free neighbours and goes back to its pool at once.  Ids not allocated are ignored. */
void torchalloc_free(torchalloc *ta, int64_t block);
/* recordStream(): a use on the block's own stream is ignored, as in PyTorch. */
void torchalloc_record_stream(torchalloc *ta, int64_t block, uint32_t stream);
void torchalloc_stream_submit(torchalloc *ta, uint32_t stream);
void torchalloc_stream_complete(torchalloc *ta, uint32_t stream); /* all submitted so far done */
void torchalloc_stream_complete_upto(torchalloc *ta, uint32_t stream, uint64_t upto);
void torchalloc_device_synchronize(torchalloc *ta);                /* every stream complete */
uint64_t torchalloc_stream_submitted(const torchalloc *ta, uint32_t stream);
/* emptyCache(): synchronize outstanding events, free every unsplit cached segment, unmap the
 * free pages of expandable segments. */
void torchalloc_empty_cache(torchalloc *ta);

/* A struct tag, not a typedef: the function below takes the plain name. */
struct torchalloc_stats {
    uint64_t allocated, allocated_peak; /* memory_allocated(): sum of allocated block sizes */
    uint64_t reserved, reserved_peak;   /* memory_reserved(): segments (mapped bytes) */
    uint64_t requested, requested_peak; /* requested_bytes: unrounded; drops at free_completed */
    uint64_t active, active_peak;       /* active_bytes: allocated + freed awaiting events */
    uint64_t free_in_used_segments;     /* reserved - active in segments holding an active block */
    uint64_t whole_free_segments;       /* reserved in segments holding none */
    uint64_t pending_free;              /* bytes freed but waiting for stream events */
    uint64_t segments;                  /* segments as a snapshot lists them */
    uint64_t num_allocs, num_frees, num_segment_allocs, num_segment_frees;
    uint64_t num_maps, num_unmaps, num_alloc_retries, num_ooms, num_sync_all_streams;
    /* mallocs whose best fit had another free block of the same stream, pool and size in a
     * different segment: the segments' address order chose between them (not a PyTorch stat);
     * counted only while torchalloc_watch_ties is on */
    uint64_t order_ties;
};
/* reserved - allocated == free_in_used_segments + whole_free_segments + pending_free.
 * O(1) without expandable segments (kept as blocks change state), so a caller may ask after
 * every event; with them, a walk of the expandable segments' blocks. */
void torchalloc_stats(const torchalloc *ta, struct torchalloc_stats *out);
/* The same without the three fields that describe segments (free_in_used_segments,
 * whole_free_segments, segments: 0 here): O(1) with expandable segments too, for a caller that
 * reads allocated and reserved after every event. */
void torchalloc_counters(const torchalloc *ta, struct torchalloc_stats *out);

/* Segment/block walk, in address order, shaped like torch.cuda.memory._snapshot(): an
 * expandable segment is listed as one segment per contiguous mapped range, as PyTorch does. */
typedef enum { TORCHALLOC_POOL_SMALL = 0, TORCHALLOC_POOL_LARGE = 1 } torchalloc_pool;
typedef enum {
    TORCHALLOC_BLOCK_INACTIVE = 0,         /* free in the pool */
    TORCHALLOC_BLOCK_ACTIVE_ALLOCATED = 1, /* allocated */
    TORCHALLOC_BLOCK_ACTIVE_PENDING_FREE = 2 /* freed, waiting for stream events */
} torchalloc_block_state;
typedef struct torchalloc_segment_info {
    uint64_t addr, size;      /* model address, total_size */
    uint64_t allocated_size;  /* sum of allocated blocks */
    uint64_t active_size;     /* allocated + pending */
    uint64_t requested_size;  /* sum of requested sizes of active blocks */
    uint32_t stream;
    torchalloc_pool pool;
    int expandable;
    size_t nblocks;
} torchalloc_segment_info;
typedef struct torchalloc_block_info {
    uint64_t addr, size, requested; /* requested: 0 for inactive blocks */
    torchalloc_block_state state;
    int64_t id; /* the malloc id for active blocks, -1 for inactive */
} torchalloc_block_info;
typedef struct torchalloc_walker {
    /* Either may be NULL; a non-zero return stops the walk. */
    int (*segment)(void *user, const torchalloc_segment_info *s);
    int (*block)(void *user, const torchalloc_segment_info *s, const torchalloc_block_info *b);
    void *user;
} torchalloc_walker;
/* Returns the number of segments visited. */
size_t torchalloc_walk(const torchalloc *ta, const torchalloc_walker *w);

/* Event hook: the actions of PyTorch's snapshot device_traces.  size is the requested size for
 * alloc / free_requested / free_completed, the segment or mapped size for segment actions;
 * for oom, addr is the free memory left under the limit and size the rounded request. */
typedef enum {
    TORCHALLOC_EV_ALLOC = 0,
    TORCHALLOC_EV_FREE_REQUESTED,
    TORCHALLOC_EV_FREE_COMPLETED,
    TORCHALLOC_EV_SEGMENT_ALLOC,
    TORCHALLOC_EV_SEGMENT_FREE,
    TORCHALLOC_EV_SEGMENT_MAP,
    TORCHALLOC_EV_SEGMENT_UNMAP,
    TORCHALLOC_EV_OOM
} torchalloc_action;
typedef void (*torchalloc_hook)(void *user, torchalloc_action action, uint64_t addr, uint64_t size,
                                uint32_t stream);
void torchalloc_set_hook(torchalloc *ta, torchalloc_hook fn, void *user);
/* "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
 * "segment_map", "segment_unmap", "oom": the strings the snapshot uses. */
const char *torchalloc_action_name(torchalloc_action a);

#ifdef __cplusplus
}
#endif
#endif
