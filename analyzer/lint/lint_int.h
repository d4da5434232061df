/* SPDX-License-Identifier: MIT */
/* lint_int.h — the parts of lint shared between its files (not a public interface).
 *
 * lint.c walks each rank's plan (lifetimes, views, contracts, expect_error) and merges what it
 * finds across ranks; lint_hazard.c keeps the stream/event clocks; lint_cross.c compares the
 * ranks' collective sequences; lint_contract.c holds the per-collective contract; lint_moved.c
 * is lint_walk_rank_moved, the walk of a rank whose ops are its base's but for some views. */
#ifndef MEMLIFE_LINT_INT_H
#define MEMLIFE_LINT_INT_H

#include "lint/lint.h"

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
void lint_clocks_sync(lint_clocks *c, sched_sync_kind kind, uint32_t stream, uint32_t event);
/* The ones below are asked for every op that uses a stream, every record, wait and free, every
 * entry an access meets (lint_race.c): inline, a call costs as much as the question. */
/* The op's sequence number. */
static inline uint64_t lint_clocks_enqueue(lint_clocks *c, uint32_t stream) {
    if (stream >= c->n_streams)
        stream = SCHED_DEFAULT_STREAM;
    return ++c->seq[stream];
}
static inline void lint_clocks_record(lint_clocks *c, uint32_t event, uint32_t stream) {
    if (event >= c->n_events || stream >= c->n_streams)
        return;
    uint64_t *ev = &c->event[(size_t)event * c->n_streams];
    const uint64_t *clock = &c->clock[(size_t)stream * c->n_streams];
    for (uint32_t u = 0; u < c->n_streams; u++)
        ev[u] = clock[u];
    ev[stream] = c->seq[stream];
    c->recorded[event] = true;
}
static inline void lint_clocks_wait(lint_clocks *c, uint32_t event, uint32_t stream) {
    if (event >= c->n_events || stream >= c->n_streams)
        return;
    uint64_t *clock = &c->clock[(size_t)stream * c->n_streams];
    const uint64_t *ev = &c->event[(size_t)event * c->n_streams];
    for (uint32_t u = 0; u < c->n_streams; u++)
        if (ev[u] > clock[u])
            clock[u] = ev[u];
}
/* True when the op with sequence number seq on stream u is known complete for a host free that
 * is ordered on the default stream (cudaFreeAsync on it, or the host after a sync). */
static inline bool lint_clocks_done_for_free(const lint_clocks *c, uint32_t u, uint64_t seq) {
    if (u == SCHED_DEFAULT_STREAM || u >= c->n_streams)
        return true;   /* stream order: the free comes after it on the same stream */
    return c->host[u] >= seq || c->clock[(size_t)SCHED_DEFAULT_STREAM * c->n_streams + u] >= seq;
}
/* The op with sequence number seq on stream u is complete before the next op enqueued on stream
 * s: s waited for it through events, or the host waited for it before enqueueing. */
static inline bool lint_clocks_ordered(const lint_clocks *c, uint32_t u, uint64_t seq,
                                       uint32_t s) {
    if (u == s)
        return true;   /* program order on one stream */
    if (u >= c->n_streams || s >= c->n_streams)
        return false;
    return c->host[u] >= seq || c->clock[(size_t)s * c->n_streams + u] >= seq;
}
/* It is before everything enqueued from now on, on every stream: the host waited for it, or
 * every other stream waited on an event recorded after it (its own stream by program order). */
static inline bool lint_clocks_before_all(const lint_clocks *c, uint32_t u, uint64_t seq) {
    if (u >= c->n_streams)
        return false;
    if (c->host[u] >= seq)
        return true;
    for (uint32_t t = 0; t < c->n_streams; t++)
        if (t != u && c->clock[(size_t)t * c->n_streams + u] < seq)
            return false;
    return true;
}

/* A second place of a diagnostic, printed as a note after it (lint.c). mark.line 0: none. */
typedef struct {
    ml_mark mark;
    char text[200];
} lint_note;

/* ---- Races between streams (lint_race.c) -----------------------------------------------------
 * Per buffer, disjoint element segments, each with the last write and the last read per stream
 * since it (an access is one view of one op: op, its sequence number, its stream, which of the
 * op's plan_op_accesses). lint_race_op checks every access of one op against them and records
 * it; the first race found is copied into a lint_race_found, and only then does lint_race_text
 * write the message and the note (an op without a race builds no text). */
typedef struct {
    const plan_op *op;        /* NULL: none (its other fields then mean nothing) */
    uint64_t seq;
    uint32_t stream, view;
} lint_race_access;

typedef struct {
    uint64_t lo, hi;          /* elements [lo, hi) */
    lint_race_access write;
} lint_race_seg;

typedef struct {
    lint_race_seg *segs;      /* sorted by lo, disjoint */
    lint_race_access *reads;  /* [cap * n_streams]: segment k's reads at k * n_streams */
    uint32_t n, cap;
} lint_race_list;

typedef struct {
    lint_race_list *bufs;     /* [n_bufs] */
    uint32_t n_bufs, n_streams;
    ml_vec acc;               /* scratch for plan_op_accesses of a compute being checked */
    ml_vec dyn;               /* and of the other access of a race, for its message */
} lint_race;

/* The first race among an op's accesses: the access (me, its view v, whether it writes) and the
 * other one, as it was when met, and whether that one writes. */
typedef struct {
    lint_race_access me, other;
    const plan_view *v;
    bool writes, other_writes;
} lint_race_found;

void lint_race_init(lint_race *r, uint32_t n_bufs, uint32_t n_streams);
void lint_race_reset(lint_race *r);
void lint_race_free(lint_race *r);
/* alloc, free: new memory, nothing before. Inline: one store, asked twice per buffer. */
static inline void lint_race_clear(lint_race *r, uint32_t buf) {
    if (buf < r->n_bufs)
        r->bufs[buf].n = 0;
}
/* Every view op touches (plan_op_accesses of p; NCCL's reduce writes recv on the root only,
 * rank says whether this is it), run on stream with sequence number seq: checked against the
 * accesses before it and recorded. Returns whether one races; the first that does into *f (one
 * race is reported per op). */
bool lint_race_op(lint_race *r, const lint_clocks *c, const rank_plan *p, int rank,
                  const plan_op *op, uint32_t stream, uint64_t seq, lint_race_found *f);
/* lint_race_op for the accesses of the buffers b with only[b] set alone: the others are neither
 * checked nor recorded (lint_walk_rank_moved, whose other buffers' lists go unread). The view
 * indices, the first race and its text are lint_race_op's where only the skipped accesses race
 * with nothing. */
bool lint_race_op_only(lint_race *r, const lint_clocks *c, const rank_plan *p, int rank,
                       const plan_op *op, uint32_t stream, uint64_t seq, lint_race_found *f,
                       const uint8_t *only);
/* A coarser race lint over r's own lists, for lint_walk_rank_moved: each access of a buffer b
 * with only[b] set taken as the whole buffer (one element, [0, 1)) and a reduce's recv as
 * written on every rank; dirty[b] set where one races. Its accesses include every rank's (a
 * view's elements, a rank's in-place or reduce reads and writes: a write conflicts with all a
 * read does), and an access overlaps every other, so a race on any rank, with any offsets, is
 * one here too: a buffer this never marks dirty has no race on any rank with these clocks. That
 * rests on lint_race_op being exact (a race is reported when there is one: see the top of
 * lint_race.c), which holds for one element as for many. */
void lint_race_op_coarse(lint_race *r, const lint_clocks *c, const rank_plan *p,
                         const plan_op *op, uint32_t stream, uint64_t seq, const uint8_t *only,
                         uint8_t *dirty);
/* The race lint_race_op found as the error's text, and the other access as its note, at that
 * access's view. */
void lint_race_text(lint_race *r, const rank_plan *p, const lint_race_found *f, char *text,
                    size_t len, lint_note *other);

/* ---- The contract of one collective (lint_contract.c) ----------------------------------------
 * The rules lint_coll_contract checks, in its order; lint_coll_broken gives the first one op
 * breaks, or LINT_RULE_NONE. Inline: every collective is asked and most break none, so only
 * one that breaks one calls lint_coll_contract for its error and text. */
typedef enum {
    LINT_RULE_NONE,
    LINT_RULE_MEMBER,       /* the rank is in no group of the collective's communicator */
    LINT_RULE_SEND_COUNT,   /* send is not world × count where it must be */
    LINT_RULE_RECV_COUNT,
    LINT_RULE_PER_RANK,     /* count does not divide by world where each rank gets count/world */
    LINT_RULE_DTYPE,        /* send's and recv's differ */
    LINT_RULE_OP,           /* a reduction on a collective that does not reduce */
    LINT_RULE_PEER,         /* a send/recv's peer outside the world, or the rank itself */
    LINT_RULE_ROOT,         /* outside the world */
    LINT_RULE_INPLACE       /* send and recv overlap, not at NCCL's in-place offset */
} lint_coll_rule;

/* With `comm:` (comms non-NULL), "world" in these rules is the size of the rank's group and the
 * root or peer a rank within the group (NCCL's nranks and rank of a split communicator). */
static inline lint_coll_rule lint_coll_broken(const plan_op *op, const ml_comms *comms, int world,
                                              int rank) {
    ml_coll c = op->u.coll.coll;
    const ml_coll_info *ci = &ml_colls[c];
    const plan_view *send = &op->u.coll.send, *recv = &op->u.coll.recv;
    uint64_t count = plan_coll_count(op);
    int root = op->u.coll.root;
    if (comms && op->u.coll.comm) {
        world = ml_comms_size(comms, op->u.coll.comm, rank);
        if (world == 0)
            return LINT_RULE_MEMBER;
        rank = ml_comms_local(comms, op->u.coll.comm, rank);
    }
    if (send->count != ml_coll_send_count(c, count, world))
        return LINT_RULE_SEND_COUNT;
    if (recv->count != ml_coll_recv_count(c, count, world))
        return LINT_RULE_RECV_COUNT;
    if (ci->count_per_rank && count % (uint64_t)world)
        return LINT_RULE_PER_RANK;
    if (send->dtype != recv->dtype)
        return LINT_RULE_DTYPE;
    /* NCCL 2.28 reduces every dtype with sum, prod, max and min; what can be wrong is a
     * reduction on a collective that does not reduce (the loader stores sum where no op is
     * written). */
    if (!ci->has_op && op->u.coll.op != RED_SUM)
        return LINT_RULE_OP;
    if (ci->p2p && (root < 0 || root >= world || root == rank))
        return LINT_RULE_PEER;
    if (ci->has_root && (root < 0 || root >= world))
        return LINT_RULE_ROOT;
    if (send->buf == recv->buf && send->offset < recv->offset + recv->count &&
        recv->offset < send->offset + send->count && !op->u.coll.in_place)
        return LINT_RULE_INPLACE;
    return LINT_RULE_NONE;
}

/* ---- Text ------------------------------------------------------------------------------------- */
/* "ranks 0, 1": the members of rank's group of comm, in their order, eight and then "...". */
void lint_group_text(const ml_comms *comms, uint32_t comm, int rank, char *buf, size_t len);
/* "'full'" for a whole view, "'full[768:512]'" otherwise (quotes included). */
void lint_view_text(const sched *s, const plan_view *v, char *buf, size_t len);

/* ---- Cross-rank (lint_cross.c) ---------------------------------------------------------------
 * colls[r] follows rank r's collectives that run (not those refused inside expect_error). Rank
 * 0's are kept, as the reference; every other rank's are compared with it as the walk pushes
 * them (rank 0 is walked first), so only the first difference is kept: no second pass over the
 * ops of every rank. lint_cross_rank adds one diagnostic per rank that diverges from rank 0;
 * plans[0] must then hold all of rank 0's ops (not plan_compact's few). */
typedef struct {
    uint64_t count;
    int32_t root;                 /* 0 unless the collective has a root */
    uint8_t coll, dtype, op;      /* op: 0 unless the collective reduces */
} lint_coll_key;                  /* what must match across ranks, in 16 bytes */

typedef struct {
    size_t *ops;                  /* rank 0: its collectives (indices into its ops), for messages */
    lint_coll_key *keys;          /* rank 0: what every other rank must issue */
    size_t n, cap;                /* collectives pushed */
    const plan_op *diff;          /* other ranks: the first unlike rank 0's at its position */
    size_t diff_at;
    plan_op diff_op;              /* what diff points at */
} lint_coll_seq;
/* What op must match on every rank. */
static inline lint_coll_key lint_coll_key_of(const plan_op *op) {
    ml_coll c = op->u.coll.coll;
    return (lint_coll_key){.count = plan_coll_count(op),
                           .root = ml_colls[c].has_root ? op->u.coll.root : 0,
                           .coll = (uint8_t)c,
                           .dtype = (uint8_t)op->u.coll.send.dtype,
                           .op = ml_colls[c].has_op ? (uint8_t)op->u.coll.op : 0};
}
static inline bool lint_coll_same_key(const lint_coll_key *a, const lint_coll_key *b) {
    return a->count == b->count && a->root == b->root && a->coll == b->coll &&
           a->dtype == b->dtype && a->op == b->op;
}
/* lint_coll_seq_push's rare parts (lint_cross.c): rank 0's arrays doubled, another rank's first
 * difference kept. */
void lint_coll_seq_grow(lint_coll_seq *q);
/* Room for n collectives in rank 0's arrays (none taken away). */
void lint_coll_seq_reserve(lint_coll_seq *q, size_t n);
void lint_coll_seq_differs(lint_coll_seq *q, const plan_op *op);
/* ref: rank 0's sequence when q is another rank's, NULL when q is rank 0's. at: op's index in
 * its plan. Inline: asked of every collective of every rank walked, a call cost as much. */
static inline void lint_coll_seq_push(lint_coll_seq *q, const lint_coll_seq *ref,
                                      const plan_op *op, size_t at) {
    lint_coll_key key = lint_coll_key_of(op);
    if (ref) {
        if (!q->diff && (q->n >= ref->n || !lint_coll_same_key(&key, &ref->keys[q->n])))
            lint_coll_seq_differs(q, op);
        q->n++;
        return;
    }
    if (q->n == q->cap)
        lint_coll_seq_grow(q);
    q->ops[q->n] = at;
    q->keys[q->n++] = key;
}
/* True when some rank's sequence differs from rank 0's: lint_cross_rank will name rank 0's ops. */
bool lint_coll_seq_diverged(const lint_coll_seq *colls, int world);
void lint_coll_seq_free(lint_coll_seq *q);
size_t lint_cross_rank(const rank_plan *plans, const lint_coll_seq *colls, int world,
                       ml_diags *d);

/* ---- Divergence within a communicator's groups (lint_cross.c) ------------------------------
 * The collectives with `comm:` C must be issued alike (lint_coll_key) by the members of each
 * group of C; ranks of different groups, and ranks on different communicators, may differ.
 * The reference of a group is its least member, which the walk (ranks 0, 1, ... in order) meets
 * first: its collectives on C are kept, each its key and its step for the messages (the compact
 * path frees a rank's ops after its walk); every other member's are compared with them as the
 * walk pushes them, the first difference kept (a copy of the op). The world's collectives stay lint_coll_seq's.
 * Only schedules with communicators (rank_plan.comms) make one. */
typedef struct lint_groups lint_groups;
lint_groups *lint_groups_new(const ml_comms *c, int world);
void lint_groups_free(lint_groups *g);
/* Before and after the walk of rank (the walk may be redone: begin starts it over). */
void lint_groups_begin(lint_groups *g, int rank);
void lint_groups_end(lint_groups *g, int rank);
/* A collective of rank on op's communicator (not the world), rank being in one of its groups. */
void lint_group_seq_push(lint_groups *g, const plan_op *op, int rank);
/* One error per rank and communicator where the rank diverges from its group's reference, with
 * a note at the reference's collective. Returns the errors added. */
size_t lint_cross_groups(const lint_groups *g, const sched *s, ml_diags *d);

/* ---- The order of collectives across communicators (lint_order.c) ---------------------------
 * Each rank's sequence of collectives (the world's and the other communicators', not send or
 * recv), kept once per distinct sequence; lint_order_check plays the ranks forward, a collective
 * waiting for every member of its group, and reports a cycle of ranks waiting on each other
 * across communicators. Only schedules with communicators make one. lint_p2p's play covers
 * schedules with send or recv, which take that path instead. */
typedef struct lint_order lint_order;
lint_order *lint_order_new(const ml_comms *c, int world);
void lint_order_free(lint_order *o);
void lint_order_begin(lint_order *o);
void lint_order_push(lint_order *o, const plan_op *op, int rank);
void lint_order_end(lint_order *o, int rank);
/* Returns the errors added (0 or 1). */
size_t lint_order_check(const lint_order *o, const sched *s, ml_diags *d);

/* ---- Point-to-point (lint_p2p.c) --------------------------------------------------------------
 * Every send pairs with a recv on its peer (the k-th send from r to p with the k-th recv on p
 * from r, NCCL's order per pair), with the same count and dtype: else an error at the send (or
 * at a recv left over) naming the peer. Then the ranks are played forward: a send or recv
 * outside a group blocks until its partner is posted, a group completes when every partner of
 * its ops is posted, a collective when every rank is at it; ranks that can never move are a
 * deadlock, reported with the cycle of ranks waiting on each other. Returns the errors added. */
size_t lint_p2p(const rank_plan *plans, int world, ml_diags *d);
/* A cycle of waits from rank r as "rank 0 -> 1 -> 2 -> 0" (waits[c]: the rank c waits for), cut
 * with "..." where it does not fit len (at least 32). */
void lint_ring_text(int r, const int *waits, char *buf, size_t len);

/* ---- The walk of one rank (lint.c, lint_moved.c) --------------------------------------------- */
typedef struct {
    bool ever, live, released;
    uint64_t count, bytes;
    ml_dtype dtype;
    uint32_t chunks, keep;
    /* Where it was allocated, freed, released: the op, not its mark, which lives in the step
     * and costs a cache miss per op to fetch; only a message needs it. */
    const plan_op *alloc_op, *free_op, *release_op;
} lint_buf;

/* A live buffer's lint_buf as its last alloc and release made it (lint_alloc, lint_release),
 * 16 bytes instead of lint_buf's 64: moved_snap_pass's record of a view (at a million steps,
 * some 150,000). */
typedef struct {
    const plan_op *alloc_op, *release_op;   /* release_op NULL: not released */
} lint_snap;

typedef struct {
    uint64_t seq;             /* 0: no use since the alloc */
    const plan_op *op;
    uint32_t view;            /* which of op's views (plan_op_accesses' order), for its mark */
    bool recorded;            /* record_stream named this stream: the free waits for its work */
} lint_use;

/* A finding is one error at the offending character (mark) and, where a second place explains
 * it (the earlier free of a double free, the other access of a race), one note there: printed
 * after the error as "FILE:L:C: note: TEXT", gcc's style (docs/schedule.md, Diagnostics). */
typedef struct {
    const sched_step *step;
    ml_mark mark;
    const char *code;
    char *text;
    lint_note note;           /* note.mark.line 0: none */
    int *ranks;
    size_t n_ranks, cap_ranks;
} lint_finding;

typedef struct {
    const sched *s;
    const lint_options *o;
    bool race_on, hazard_on;  /* lint_code_on of "race" and "hazard": asked once, not per op */
    int world, rank;
    lint_buf *bufs;
    uint32_t n_bufs, n_streams;
    lint_use *uses;           /* [n_bufs * n_streams] */
    lint_clocks clocks;
    lint_race race;           /* what later accesses must be ordered after (lint_race.c) */
    const rank_plan *plan;    /* the rank being walked */
    lint_coll_seq *colls;     /* [world] */
    lint_groups *groups;      /* the collectives with `comm:` (NULL: none yet) */
    lint_order *order;        /* and their order with the world's (NULL: none yet) */
    lint_result *result;

    lint_finding *found;
    size_t n_found, cap_found;
    uint32_t *index;          /* open addressing over found: 0 empty, else position + 1 */
    size_t index_cap;

    bool capturing, captured; /* expect_error: keep the first error instead of reporting it */
    sched_error_code captured_code;
    ml_mark captured_mark;    /* its offending character: an unexpected error is reported there */
    char captured_text[320];

    /* lint_walk_rank_moved (lint_moved.c) */
    size_t reports;           /* vreport's calls, silenced and captured ones too */
    ml_vec reduces;           /* uint32_t: the recv buffers of the rank's reduces (lint_coll) */
    /* the base, the rank lint_walk_rank walked last: its ops, their count, compute views */
    const plan_op *base_ops;
    size_t base_n;
    const plan_view *base_extra;
    int base_rank;
    bool base_quiet;          /* and it reported nothing, had no expect_error, no send or recv */
    uint8_t *moved;           /* [n_bufs + 1]: 1 for the buffers B whose checks are redone */
    ml_vec moved_bufs;        /* uint32_t: those buffers, to clear moved for the next rank */
    bool moved_abort;         /* an op whose outcome may differ for buffers not in B */
    uint8_t *race_only;       /* [n_bufs + 1]: 1 for those of B the race lint is asked about */
    lint_race coarse;         /* lint_race_op_coarse's lists, of B */
    uint8_t *dirty;           /* [n_bufs + 1]: where it found a race */
    ml_vec coarse_bufs;       /* uint32_t: the B it was run for, over a whole walk */
    bool coarse_done;         /* a moved_first_pass ran it to the end, for coarse_bufs */
    bool race_any;            /* some race_only is set (else no op asks the race lint) */
    int moved_ranks;          /* walked the short way to the end (lint_walk_moved_ranks) */
    /* moved_snap_pass: B's lint_buf at each moved op's views, recorded by moved_first_pass */
    ml_vec snaps;             /* lint_snap: per moved op, per view of B (moved_op_views' order) */
    bool snaps_ok;            /* every one was of a live buffer (lint_snap can say it) */
    const size_t *snap_ops;   /* the moved ops they are for, and how many (NULL: none) */
    size_t snap_n;
    bool checks_only;         /* the handlers stop after their checks (moved_snap_pass) */
    const plan_range *moved_absent;   /* the absent ops (rank_plan.absent) of the rank B, the
                                         records and the coarse verdicts were made for */
} lint_ctx;

/* The walk's state between ranks (analyzer.h's lint_walk): the context of lint_rank, whose
 * findings merge across ranks, and the options it points at. */
struct lint_walk {
    lint_ctx x;
    lint_options o;
};

/* Whether lint_walk_rank_moved redoes the checks of buffer buf (SCHED_NO_SYM: none, past every
 * buffer). */
static inline bool in_moved(const lint_ctx *x, uint32_t buf) {
    return buf < x->n_bufs && x->moved[buf];
}

/* An init (its own step's or an alloc's) that copies a view: else it writes a pattern. */
static inline bool init_copies(const plan_op *op) {
    return op->step->kind == ST_INIT ? op->step->u.init.init.kind == INIT_COPY
                                     : op->step->u.alloc.init.kind == INIT_COPY;
}

/* Inits and checks move data between the host and the buffer synchronously, after waiting for
 * everything the rank issued (docs/runtime.md; the cuda backend's cuda_write / cuda_read): a
 * device sync before the access, and the access complete when the host goes on. Without that the
 * race lint would flag the init of a buffer that a side stream then reads, which cannot race.
 * Called before the access (it waits) and after it (it is complete). `init: {copy: V}` is a
 * copy on the default stream instead (backend->copy), like a copy step.
 * The free hazard sees the same syncs, which the runtime does make. */
static inline void host_access(lint_ctx *x) { lint_clocks_sync(&x->clocks, SYNC_DEVICE, 0, 0); }

/* lint.c's, which lint_moved.c calls: the whole walk of a rank, a rebuild of the findings'
 * index, the handlers of lint_op the moved walk calls, and moved_op, lint_op for that walk (the
 * lifetime ops of B, the clocks of all, the views of B). */
void lint_rank(lint_ctx *x, const rank_plan *p);
void index_rebuild(lint_ctx *x, size_t cap);
void lint_alloc(lint_ctx *x, const plan_op *op);
void lint_record(lint_ctx *x, const plan_op *op);
void lint_wait(lint_ctx *x, const plan_op *op);
void lint_sync(lint_ctx *x, const plan_op *op);
void moved_op(lint_ctx *x, const rank_plan *p, const plan_op *op);

#endif
