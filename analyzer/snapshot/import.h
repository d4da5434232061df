/* SPDX-License-Identifier: MIT */
/* import.h — a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot, read by pickle.h) as a
 * memlife schedule whose torch view replays the recorded allocator.
 *
 * What becomes what:
 * - every `alloc` event of the device's trace is an `alloc: {buf, bytes: SIZE, stream}`, every
 *   `free_requested` a `free`, in trace order (SIZE is the trace's size: the requested bytes);
 * - raw cudaStream_t values become named streams s1, s2, ... (0 is `default`);
 * - a free whose `free_completed` does not follow at once waited for another stream's work
 *   (record_stream): it becomes record_stream + compute on the stream `recorded`, the free, and a
 *   `record` of an event; the `sync` on that event stands where the trace completes the free;
 * - a run of `segment_free` / `segment_unmap` events (empty_cache, or the allocator's retry after
 *   a failed cudaMalloc, which releases the same cached segments) is one `empty_cache: {}`; a
 *   run that releases only some cached segments (garbage collection, the oversize blocks before
 *   a retry) is no step: the import infers the `torch: {limit:}` or `{capacity:}` under which
 *   the model makes it, and checks it by replaying the steps (snapshot/limit.h);
 * - the state that existed when recording began is found by walking the trace back from the final
 *   `segments` (as memory_viz does: an alloc in the trace did not exist before it, a freed block
 *   that the trace never allocated did) and rebuilt first, so every view is absolute from an empty
 *   allocator (import.c says how each segment is tiled);
 * - allocator_settings' PYTORCH_CUDA_ALLOC_CONF is `torch: {conf:}`, checked against the other
 *   settings and the segments;
 * - snapshot, user_defined and oom events change no block; anything that would change the
 *   numbers unseen is refused (an unknown action or block state, a private pool, a free waiting
 *   since before recording, settings changed while running, a partial release that no constant
 *   reproduces: docs/snapshot.md);
 * - `expect:` holds the snapshot's own numbers: torch reserved steady (its final segments) and
 *   peak (its segment events), torch allocated steady (its final blocks), requested steady and
 *   peak (the sizes of its alloc and free events, the rebuilt prelude included).
 *
 * Depends on jansson and libyaml (the document's keys and free text go through libyaml's
 * emitter; the steps are names and integers, plain YAML, written directly). */
#ifndef MEMLIFE_SNAPSHOT_IMPORT_H
#define MEMLIFE_SNAPSHOT_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "snapshot/pickle.h"

typedef enum {
    IMPORT_NAMES_FRAMES,   /* the first frame in user code: "train.py-42", made unique */
    IMPORT_NAMES_ADDR,     /* the block's address: "a7f1c2e000000", made unique */
} import_names;

/* One size a step writes: an alloc's bytes, or a captured collective operand's offset or
 * length (bytes: the schedule's dtype is uint8). */
typedef struct {
    int64_t value;
    size_t step;           /* the step's index in file order from 0, region heads counted */
    const char *buf;       /* the buffer it sizes (valid during the call only) */
    const char *what;      /* "bytes", "offset" or "length" */
} import_size;

/* The text a size is written as (an integer expression that stays valid until the import
 * returns), or NULL for the number. */
typedef const char *(*import_size_fn)(void *ctx, const import_size *at);
/* A digest of the trace, made while the pickle is read (pickle_read_hooked with
 * import_digest_hooks): each well-formed block or segment event is kept as a few numbers and the
 * name its frames give, and its dict is dropped at once, so a million-event snapshot never lives
 * whole as a tree. snapshot_import reads the taken entries from the digest (the tree holds None
 * in their place) and the rest from the tree, which refuses what is wrong as without a digest.
 * It must outlive snapshot_import. */
typedef struct import_digest import_digest;
import_digest *import_digest_new(void);
void import_digest_free(import_digest *d);
pickle_hooks import_digest_hooks(import_digest *d);

typedef struct {
    int device;            /* which of device_traces (and segments with that device) */
    import_names names;
    const char *name;      /* the schedule's name: */
    const char *source;    /* the input's file name, for the header comment and about: */
    /* A parametric capture (snapshot/vary.h): with n_lets > 0 the document starts at `name:`
     * (no comment), has `let: {NAME: default, ...}`, lists the varied lets in about: without
     * their values and has no expect: (each capture's numbers hold at its values only); every
     * size of the steps is written as size_text says. */
    const char *const *lets;
    const int64_t *let_defaults;
    size_t n_lets;
    /* A capture at several worlds (snapshot_worlds): parametric as with lets (no comment, no
     * expect:), and about: says "world varied" instead of the capture's world. */
    bool world_varied;
    import_size_fn size_text;
    void *size_ctx;
    const import_digest *digest;   /* the trace's digest, if the pickle was read with one */
} import_opts;

typedef struct {
    size_t events;              /* of the device's trace */
    size_t steps;               /* in the schedule */
    size_t prelude_steps;       /* the first steps, rebuilding the state before recording */
    size_t initial_segments, initial_blocks;
    size_t deferred_frees;      /* frees that waited for another stream (record_stream) */
    int64_t reserved_peak, reserved_final;   /* the snapshot's, absolute */
    int64_t requested_peak, requested_final;
    int64_t allocated_final;
    int exact_prelude;          /* 0: expandable segments before recording, rebuilt approximately */
} import_stats;

/* Writes the schedule for snapshot snap to *yaml (malloc'd, NUL-terminated; *len its length).
 * Returns 0, or -1 with a one-line reason in err ("device_traces[0][12]: 'size' is not an
 * integer"; the caller puts "FILE: error: " before it). */
int snapshot_import(const json_t *snap, const import_opts *o, char **yaml, size_t *len,
                    import_stats *st, char *err, size_t errlen);

#endif
