/* SPDX-License-Identifier: MIT */
/* optimize_int.h — what the optimizer's files share (not a public interface).
 *
 * A stage rewrites a tree of steps: each block (the plan's steps, a repeat's or a region's body)
 * is an array of nodes; a node is a sched_step by value (its views and expressions point into
 * the loaded schedule or the optimizer's arena) plus, for repeat and region, its body block, and
 * the comment the rewritten file will carry above it. Transformations edit the tree; the driver
 * (optimize.c) makes it a schedule, evaluates it and keeps it or not. */
#ifndef MEMLIFE_OPTIMIZE_INT_H
#define MEMLIFE_OPTIMIZE_INT_H

#include "optimize/optimize.h"

typedef struct opt_node opt_node;
typedef struct {
    opt_node *v;
    size_t n, cap;
} opt_block;

struct opt_node {
    sched_step st;        /* repeat / region: st.u.*.steps is rebuilt from body when written */
    opt_block body;
    const char *note;     /* comment above the step in the rewritten file, or NULL */
    uint32_t orig_line;   /* the step's line in the original file; 0 for a step a stage added */
};

typedef struct {
    const sched *s;       /* the schedule this stage starts from (loaded from the last kept text) */
    ml_arena *arena;      /* what the rewritten steps hold: notes, new expressions, name lists */
    ml_arena *scratch;    /* what only the stage needs (the tree's node arrays, lifetimes'
                             placement), released once its steps are made; NULL: arena */
    const char *stage;    /* its name: the notes it writes start with it ("lifetimes: ...") */
    int world;
    int64_t **slots;      /* [world]: let values per rank, for concrete checks */
    uint32_t changes;
    bool allow_lifetimes; /* the inplace stage may move frees (it merges lifetimes) */
    bool allow_host_syncs;    /* --allow-host-syncs: complete a use with `sync: {stream: S}`;
                                 else with record/wait, which keeps the streams overlapped */
    bool early_waits;     /* lifetimes: free early with record/wait rather than at a later point
                             the program already orders (tried first; kept if it costs no time) */
    const char *new_events[64];   /* events a stage declares (`events:` of the rewrite) */
    uint32_t n_new_events;
    char renamed[160];    /* results that live on under another name: "'gathered' is now 'full'" */
    char skipped[200];    /* a rewrite the stage left out and why (the report's "nothing to do") */
} opt_ctx;

/* ---- tree (optimize_tree.c) ------------------------------------------------------------------ */
static inline ml_arena *opt_scratch(const opt_ctx *c) { return c->scratch ? c->scratch : c->arena; }
void opt_block_push(opt_ctx *c, opt_block *b, const opt_node *n);
/* The tree of steps[0..n) (notes and original lines by pre-order index from notes/lines, or
 * none when NULL); *pre counts the steps in pre-order. */
void opt_tree_build(opt_ctx *c, opt_block *out, const sched_step *steps, uint32_t n,
                    const char *const *notes, const uint32_t *lines, size_t *pre);
/* sched_step arrays for the writer; notes/lines get one entry per step in pre-order. */
sched_step *opt_tree_steps(opt_ctx *c, const opt_block *b, uint32_t *n, ml_vec *notes,
                           ml_vec *lines);
/* Appends text to a node's note ("; " between notes). */
void opt_note(opt_ctx *c, opt_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- what a step touches ---------------------------------------------------------------------- */
/* True when the node (with its body, and the step an expect_error wraps) names buffer b. */
bool opt_refs(const opt_node *n, uint32_t b);
/* Calls fn for every view of a step (not its body): views in collectives, copies, scales,
 * computes, inits, checks, an alloc's init copy source. */
typedef void (*opt_view_fn)(void *ctx, sched_view *v);
void opt_each_view(sched_step *st, opt_view_fn fn, void *ctx);
/* Copies what a step holds by pointer (a check, a compute's view lists) into the arena, so that
 * rewriting its views leaves the schedule it came from as it was. */
void opt_unshare(opt_ctx *c, opt_node *n);
/* Streams on which the node (or its body) runs asynchronous work that uses b: bit k = stream
 * k (streams beyond 63 share bit 63). Collectives, copy, scale, compute; inits and checks are
 * host-synchronous and complete when the step returns. */
uint64_t opt_async_streams(const opt_node *n, uint32_t b);
bool opt_is_alloc_like(const opt_node *n);   /* an alloc, or a body with one */
/* Calls fn for every buffer the node names (body and wrapped step included), with the stream
 * of its asynchronous use or -1. A buffer may be reported more than once. */
typedef void (*opt_ref_fn)(void *ctx, uint32_t buf, int stream);
void opt_each_ref(const opt_node *n, opt_ref_fn fn, void *ctx);

/* ---- expressions and values ------------------------------------------------------------------- */
/* Parses text over world, rank and the schedule's lets (abort on a parse error: the optimizer
 * writes only expressions it built from parsed ones). */
expr *opt_expr(opt_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "(a)" unless a is a name or a number. */
const char *opt_paren(opt_ctx *c, const char *text);
int opt_eval(const opt_ctx *c, const expr *e, int rank, int64_t *out);
/* Elements of the buffer an alloc step creates, on rank; -1 when it cannot be evaluated. */
int64_t opt_alloc_count(const opt_ctx *c, const sched_step *alloc, int rank);
/* The element count of an alloc as expression text: its count, or bytes / dtype size. */
const char *opt_alloc_count_text(opt_ctx *c, const sched_step *alloc);
/* Offset and count of a view on rank (alloc: the step that made its buffer). */
int opt_view_range(const opt_ctx *c, const sched_view *v, const sched_step *alloc, int rank,
                   int64_t *off, int64_t *count);
const char *opt_buf_name(const opt_ctx *c, uint32_t b);
const char *opt_stream_name(const opt_ctx *c, uint32_t s);

/* ---- transformations: each rewrites the tree in place, counts c->changes ---------------------- */
void opt_lifetimes(opt_ctx *c, opt_block *b);
void opt_inplace(opt_ctx *c, opt_block *b);
void opt_chunked(opt_ctx *c, opt_block *b);
void opt_reorder(opt_ctx *c, opt_block *b);

/* Where a free or release of buf, now at node `limit`, may go once its uses in nodes
 * [from, last] have completed: the index of the node it goes after (an existing host sync that
 * completes them, if waiting for it keeps it behind no alloc), or last with *need set to the
 * streams that need a `sync: {stream: S}` added after node last, or limit when it should stay.
 * alloc_gap[k] (or, when NULL, whether node k allocates) says that an allocation is placed
 * between nodes k-1 and k, k included. A wait of the default stream on an event recorded on S
 * after the use completes it as a host sync does (frees are default-stream ordered).
 * how: OPT_DEFAULT_ORDERED, OPT_PREFER_EXISTING (frees; a release, which no stream orders,
 * passes 0). Used by lifetimes (frees) and chunked (releases). */
enum {
    OPT_DEFAULT_ORDERED = 1,  /* uses on the default stream need nothing (the free follows them) */
    OPT_PREFER_EXISTING = 2   /* an existing completion point is taken even past an allocation */
};
size_t opt_completion_point(const opt_block *b, size_t from, size_t last, size_t limit,
                            uint32_t buf, const bool *alloc_gap, unsigned how, uint64_t *need);
/* A free of several names becomes one free per name (each can then move on its own). */
void opt_split_frees(opt_ctx *c, opt_block *b);
/* A `sync: {stream: s}` node (added by a stage). */
opt_node opt_sync_node(opt_ctx *c, uint32_t stream, const char *why);
/* The event a stage records on stream s to order a later free after s's work ("s_done", or
 * with a number when taken), declared once per stage; its symbol is past the schedule's own. */
uint32_t opt_stream_event(opt_ctx *c, uint32_t stream);
/* `record: {event: e, stream: s}` / `wait: {event: e, stream: s}` nodes (added by a stage). */
opt_node opt_event_node(opt_ctx *c, sched_step_kind kind, uint32_t event, uint32_t stream,
                        const char *why);

#endif
