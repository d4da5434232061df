/* SPDX-License-Identifier: MIT */
/* host_streams.h — the host backend's stream order (`memlife run --backend host --stream-order`).
 *
 * The host runs every op at once by default ("program": streams serialized in program order).
 * With "reverse" or "shuffle:SEED" the backend queues the work of streams (collectives, copies)
 * and runs it later in another order that still respects happens-before: program order on each
 * stream and record/wait between streams. Host syncs, host reads and writes (inits, scales,
 * checks), frees and the end of the rank run everything queued first. So a race the lint was told
 * to let through (`--no-lint races`) runs in the other order and shows as a failed data check.
 *
 * The order is a function of the queued ops alone (and the seed): ranks that queue the same ops
 * issue their collectives in the same order, as MPI requires. Ranks whose ops differ (a `when:`
 * on a side stream) may not; their collectives then meet the run's deadline. */
#ifndef MEMLIFE_HOST_STREAMS_H
#define MEMLIFE_HOST_STREAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { HS_PROGRAM, HS_REVERSE, HS_SHUFFLE } hs_order_kind;

typedef struct {
    hs_order_kind kind;
    uint64_t seed;        /* shuffle; default 1 */
} hs_order;

/* Parses "program", "reverse", "shuffle" or "shuffle:SEED" (SEED a decimal uint64). Returns 0,
 * or -1 with a message in err. */
int hs_parse(const char *text, hs_order *out, char *err, size_t len);

/* One queued piece of work: run(item) does it (0, or -1 with err). */
typedef int (*hs_run_fn)(void *item, char *err, size_t len);

/* Starts queueing under order o (HS_PROGRAM: nothing is queued, hs_deferring is false). */
void hs_begin(const hs_order *o);
bool hs_deferring(void);
/* Queues a copy of item (size bytes) on stream. */
void hs_push(uint32_t stream, hs_run_fn run, const void *item, size_t size);
void hs_record(uint32_t event, uint32_t stream);
void hs_wait(uint32_t event, uint32_t stream);
/* Runs everything queued, in the order's sequence. The first failure stops it (the rest is
 * dropped) and is returned. */
int hs_flush(char *err, size_t len);
/* Drops what is queued and every stream and event (rank end, after a flush or a failure). */
void hs_end(void);

#endif
