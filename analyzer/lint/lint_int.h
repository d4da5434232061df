/* SPDX-License-Identifier: MIT */
/* lint_int.h — the parts of lint shared between its files (not a public interface).
 *
 * lint.c walks each rank's plan (lifetimes, views, contracts, expect_error) and merges what it
 * finds across ranks; lint_hazard.c keeps the stream/event clocks; lint_cross.c compares the
 * ranks' collective sequences; lint_contract.c holds the per-collective contract. */
#ifndef MEMLIFE_LINT_INT_H
#define MEMLIFE_LINT_INT_H

#include "predict/analyzer.h"

/* ---- Stream ordering (lint_hazard.c) ----------------------------------------------------------
 * Every op enqueued on stream s gets the next sequence number of s. clock[s][u] is the highest
 * sequence number of stream u known to complete before anything enqueued next on s (through
 * wait on events); event[e][u] what a record captured; host[u] what the host has waited for. */
typedef struct {
    uint32_t n_streams, n_events;
    uint64_t *seq;          /* [n_streams] */
    uint64_t *clock;        /* [n_streams * n_streams] */
    uint64_t *event;        /* [n_events * n_streams] */
    bool *recorded;         /* [n_events] */
    uint64_t *host;         /* [n_streams] */
} lint_clocks;

void lint_clocks_init(lint_clocks *c, uint32_t n_streams, uint32_t n_events);
void lint_clocks_reset(lint_clocks *c);
void lint_clocks_free(lint_clocks *c);
uint64_t lint_clocks_enqueue(lint_clocks *c, uint32_t stream);     /* the op's sequence number */
void lint_clocks_record(lint_clocks *c, uint32_t event, uint32_t stream);
void lint_clocks_wait(lint_clocks *c, uint32_t event, uint32_t stream);
void lint_clocks_sync(lint_clocks *c, sched_sync_kind kind, uint32_t stream, uint32_t event);
/* True when the op with sequence number seq on stream u is known complete for a host free that
 * is ordered on the default stream (cudaFreeAsync on it, or the host after a sync). */
bool lint_clocks_done_for_free(const lint_clocks *c, uint32_t u, uint64_t seq);

/* ---- Text ------------------------------------------------------------------------------------- */
/* "'full'" for a whole view, "'full[768:512]'" otherwise (quotes included). */
void lint_view_text(const sched *s, const plan_view *v, char *buf, size_t len);

/* ---- Cross-rank (lint_cross.c) ---------------------------------------------------------------
 * colls[r] follows rank r's collectives that run (not those refused inside expect_error). Rank
 * 0's are kept, as the reference; every other rank's are compared with it as the walk pushes
 * them (rank 0 is walked first), so only the first difference is kept: no second pass over the
 * ops of every rank. lint_cross_rank adds one diagnostic per rank that diverges from rank 0. */
typedef struct {
    uint64_t count;
    int32_t root;                 /* 0 unless the collective has a root */
    uint8_t coll, dtype, op;      /* op: 0 unless the collective reduces */
} lint_coll_key;                  /* what must match across ranks, in 16 bytes */

typedef struct {
    const plan_op **ops;          /* rank 0: its collectives, for messages */
    lint_coll_key *keys;          /* rank 0: what every other rank must issue */
    size_t n, cap;                /* collectives pushed */
    const plan_op *diff;          /* other ranks: the first unlike rank 0's at its position */
    size_t diff_at;
} lint_coll_seq;
/* ref: rank 0's sequence when q is another rank's, NULL when q is rank 0's. */
void lint_coll_seq_push(lint_coll_seq *q, const lint_coll_seq *ref, const plan_op *op);
void lint_coll_seq_free(lint_coll_seq *q);
size_t lint_cross_rank(const rank_plan *plans, const lint_coll_seq *colls, int world,
                       ml_diags *d);

/* ---- Point-to-point (lint_p2p.c) --------------------------------------------------------------
 * Every send pairs with a recv on its peer (the k-th send from r to p with the k-th recv on p
 * from r, NCCL's order per pair), with the same count and dtype: else an error at the send (or
 * at a recv left over) naming the peer. Then the ranks are played forward: a send or recv
 * outside a group blocks until its partner is posted, a group completes when every partner of
 * its ops is posted, a collective when every rank is at it; ranks that can never move are a
 * deadlock, reported with the cycle of ranks waiting on each other. Returns the errors added. */
size_t lint_p2p(const rank_plan *plans, int world, ml_diags *d);

#endif
