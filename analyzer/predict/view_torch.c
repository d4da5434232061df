/* SPDX-License-Identifier: MIT */
/* view_torch.c — the torch view: PyTorch's CUDA caching allocator (analyzer/torch/torchalloc.h)
 * replayed over the rank's ops. Series: allocated (memory_allocated(): blocks, rounded, with any
 * tail not split off) and reserved (memory_reserved(): segments).
 *
 * What each op does to the allocator, and why:
 * - alloc: torch.empty on the alloc's `stream:` (PyTorch's current stream; one pool per stream).
 *   A chunked buffer is one tensor here: the allocator has no chunks, and `release` changes
 *   nothing in this view.
 * - free: del of the tensor's last reference. A block that record_stream marked waits for an
 *   event recorded now on each use-stream; the allocator looks at those events at the start of
 *   each malloc and in empty_cache (torchalloc.h).
 * - record_stream, empty_cache: the allocator calls of the same names.
 * - collectives, copy, scale, init, compute: work enqueued on their stream (a pending event
 *   recorded on that stream completes only once the host knows the work is done).
 *   ProcessGroupNCCL in 2.11 does not recordStream a collective's tensors (measured,
 *   tests/torch/fixtures/pg_nccl_probe.json: free_completed right after free_requested, the
 *   block reused at once), so a collective adds no stream use of its own.
 * - sync: device completes every stream; {stream: S} completes S; {event: E} completes the stream
 *   E was recorded on, up to the record. wait (a stream waiting on an event) tells the host
 *   nothing.
 * - out of memory (with `limit:`): after the allocator's retry path (free cached blocks, retry)
 *   still no room: an error at the alloc, as a prediction, before anything runs.
 *
 * Segment order.  Best fit takes the lowest address among equal free blocks, and the model puts
 * each new cudaMalloc segment below the others (what the H200's driver did in every fixture; it
 * is not documented). At the first alloc whose best fit had an equal block in another segment
 * (torchalloc stats' order_ties), a second model with new segments above the old replays the
 * ops so far and then goes on beside the first; where their allocated differs, the prediction
 * depends on the driver's placement (pred_torch_order). Up to that first tie both models make
 * the same choices, so comparing from there misses nothing the best fit decides. The predicted
 * numbers stay the first model's. */
#include "predict/view_model.h"
#include "torch/torchalloc.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct torch_state torch_state;
struct torch_state {
    torchalloc *ta;
    int64_t *block;           /* [buffer] the live block id, -1 */
    uint32_t n_bufs;
    uint32_t *event_stream;   /* [event] the stream of its latest record, UINT32_MAX none */
    uint64_t *event_upto;     /* [event] that stream's submit count at the record */
    uint32_t n_events;
    /* The segment order (top of file).  The predictor shows no refused op (expect_error): the
     * ranges it skipped, [skip[2k], skip[2k+1]), are skipped again when the other model
     * catches up. */
    torch_state *alt;         /* new segments above; NULL before the first tie (or in alt) */
    bool is_alt, alt_done;    /* alt_done: the other model ran out of memory */
    size_t next_op;           /* the op after the last one shown */
    size_t *skip;
    size_t n_skip, cap_skip;
    size_t first_tie;         /* the op of the first tie (torchalloc stats' order_ties) */
    pred_torch_order order;
};

/* "256 MiB", "70.2 GiB", "1000 B": the sizes of an out-of-memory message, as PyTorch's own
 * ("Tried to allocate 256.00 MiB") but without trailing zeros. */
static void human(uint64_t b, char *buf, size_t len) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)b);
    else if (v == (double)(uint64_t)v)
        snprintf(buf, len, "%llu %s", (unsigned long long)v, unit[u]);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
}

int pred_torch_conf_check(const char *text, size_t *offset, char *msg, size_t len) {
    torchalloc_conf conf;
    return torchalloc_conf_parse(text, &conf, offset, msg, len) == 0 ? 0 : -1;
}

static void *torch_open_order(const rank_plan *p, bool alt, ml_diags *d) {
    torchalloc_conf conf;
    size_t at = 0;
    char msg[256];
    if (torchalloc_conf_parse(p->torch.conf, &conf, &at, msg, sizeof msg) != 0) {
        ml_mark m = p->torch.conf_from_file ? p->torch.conf_mark : p->s->torch.mark;
        if (p->torch.conf_from_file)
            m.col += (uint32_t)at;   /* one-line strings: the loader's check gives exact marks */
        ml_error(d, p->s->file, m, "%s", msg);
        return NULL;
    }
    torch_state *st = ml_xcalloc(1, sizeof *st);
    st->n_bufs = p->s->syms[SYM_BUFFER].n;
    st->n_events = p->s->syms[SYM_EVENT].n;
    st->block = ml_xmalloc((st->n_bufs + 1) * sizeof *st->block);
    st->event_stream = ml_xmalloc((st->n_events + 1) * sizeof *st->event_stream);
    st->event_upto = ml_xcalloc(st->n_events + 1, sizeof *st->event_upto);
    st->ta = torchalloc_new(&conf, p->torch.limit);
    if (!st->ta)
        ml_out_of_memory(sizeof(torchalloc_conf));   /* the model's own state */
    torchalloc_set_capacity(st->ta, p->torch.capacity);   /* 0: unlimited */
    torchalloc_set_segment_addresses(st->ta, p->torch.addresses, p->torch.n_addresses);
    for (uint32_t k = 0; k <= st->n_bufs; k++)
        st->block[k] = -1;
    for (uint32_t k = 0; k <= st->n_events; k++)
        st->event_stream[k] = UINT32_MAX;
    st->is_alt = alt;
    torchalloc_set_segment_order(st->ta, alt);
    /* until the first tie starts the other model; with the segments' addresses given, the
     * order is not a guess and there is no other */
    torchalloc_watch_ties(st->ta, !alt && !p->torch.addresses);
    st->order.oom_op = SIZE_MAX;
    return st;
}

static void *torch_open(const rank_plan *p, ml_diags *d) { return torch_open_order(p, false, d); }

static int out_of_memory(const rank_plan *p, const plan_op *op, const torchalloc_oom *oom,
                         ml_diags *d) {
    char req[40], al[40], res[40], lim[40];
    human(op->u.alloc.bytes, req, sizeof req);
    human(oom->allocated, al, sizeof al);
    human(oom->reserved, res, sizeof res);
    human(oom->limit, lim, sizeof lim);
    ml_error(d, p->s->file, sched_part_mark(p->s, op->step, SCHED_AT_SIZE),   /* its size */
             "would run out of memory at alloc '%s' (%s): allocated %s, reserved %s, %s %s "
             "(torch view, rank %d)",
             sched_sym_name(p->s, SYM_BUFFER, op->u.alloc.buf), req, al, res,
             p->torch.limit ? "limit" : "capacity", lim, p->rank);   /* oom->limit says which */
    return -1;
}

struct torchalloc *pred_torch_model(void *state) { return ((torch_state *)state)->ta; }

static void submit(torch_state *st, uint32_t stream) { torchalloc_stream_submit(st->ta, stream); }

static int torch_step(torch_state *st, const rank_plan *p, size_t i, ml_diags *d) {
    const plan_op *op = &p->ops[i];
    switch (op->kind) {
    case OP_ALLOC: {
        uint32_t buf = op->u.alloc.buf;
        if (st->block[buf] >= 0)
            torchalloc_free(st->ta, st->block[buf]);   /* lint reports the alloc of a live name */
        torchalloc_oom oom;
        uint32_t stream = op->step->kind == ST_ALLOC ? op->step->u.alloc.stream : SCHED_DEFAULT_STREAM;
        st->block[buf] = torchalloc_malloc(st->ta, op->u.alloc.bytes, stream, &oom);
        if (st->block[buf] < 0)
            return st->is_alt ? -1 : out_of_memory(p, op, &oom, d);
        break;
    }
    case OP_FREE:
        if (st->block[op->u.free.buf] >= 0)
            torchalloc_free(st->ta, st->block[op->u.free.buf]);
        st->block[op->u.free.buf] = -1;
        break;
    case OP_RECORD_STREAM:
        if (st->block[op->u.record_stream.buf] >= 0)
            torchalloc_record_stream(st->ta, st->block[op->u.record_stream.buf],
                                     op->u.record_stream.stream);
        break;
    case OP_EMPTY_CACHE:
        torchalloc_empty_cache(st->ta);
        break;
    case OP_COLL: submit(st, op->u.coll.stream); break;
    case OP_COPY: submit(st, op->u.copy.stream); break;
    case OP_SCALE: submit(st, op->u.scale.stream); break;
    case OP_COMPUTE: submit(st, op->u.compute.stream); break;
    case OP_INIT: submit(st, SCHED_DEFAULT_STREAM); break;
    case OP_RECORD:
        if (op->u.event.event < st->n_events) {
            st->event_stream[op->u.event.event] = op->u.event.stream;
            st->event_upto[op->u.event.event] = torchalloc_stream_submitted(st->ta, op->u.event.stream);
        }
        break;
    case OP_SYNC:
        if (op->u.sync.kind == SYNC_DEVICE)
            torchalloc_device_synchronize(st->ta);
        else if (op->u.sync.kind == SYNC_STREAM)
            torchalloc_stream_complete(st->ta, op->u.sync.stream);
        else if (op->u.sync.event < st->n_events && st->event_stream[op->u.sync.event] != UINT32_MAX)
            torchalloc_stream_complete_upto(st->ta, st->event_stream[op->u.sync.event],
                                            st->event_upto[op->u.sync.event]);
        break;
    default:
        break;   /* release (no chunks here), wait, check, regions */
    }
    return 0;
}

/* The other model across op i (caught up to op i - 1 already); it stops at its out-of-memory. */
static void alt_step(torch_state *st, const rank_plan *p, size_t i) {
    if (st->alt_done || torch_step(st->alt, p, i, NULL) == 0)
        return;
    st->alt_done = true;
    st->order.oom_op = i;
}

/* The first tie, at op i: the other model replays ops 0..i as the predictor showed them. */
static void alt_start(torch_state *st, const rank_plan *p, size_t i) {
    st->alt = torch_open_order(p, true, NULL);   /* the configuration parsed already */
    size_t k = 0, g = 0;
    while (k <= i && !st->alt_done) {
        if (g < st->n_skip && k == st->skip[g]) {
            k = st->skip[g + 1];
            g += 2;
            continue;
        }
        alt_step(st, p, k++);
    }
}

static void skipped(torch_state *st, size_t from, size_t to) {
    if (st->n_skip + 2 > st->cap_skip) {
        st->cap_skip = st->cap_skip ? 2 * st->cap_skip : 8;
        st->skip = ml_xrealloc(st->skip, st->cap_skip * sizeof *st->skip);
    }
    st->skip[st->n_skip++] = from;
    st->skip[st->n_skip++] = to;
}

static int torch_apply(void *state, const rank_plan *p, size_t i, uint64_t *live, ml_diags *d) {
    torch_state *st = state;
    if (i > st->next_op && !st->alt)
        skipped(st, st->next_op, i);
    st->next_op = i + 1;
    if (torch_step(st, p, i, d) < 0)
        return -1;
    struct torchalloc_stats s;
    torchalloc_counters(st->ta, &s);   /* after every op: no walk, whatever the configuration */
    live[VIEW_TORCH_ALLOCATED] = s.allocated;
    live[VIEW_TORCH_RESERVED] = s.reserved;
    if (st->alt) {
        alt_step(st, p, i);
    } else if (s.order_ties) {
        st->first_tie = i;
        torchalloc_watch_ties(st->ta, 0);
        alt_start(st, p, i);
    }
    if (st->alt && !st->order.decides) {
        struct torchalloc_stats o = {0};
        if (!st->alt_done)
            torchalloc_counters(st->alt->ta, &o);
        uint64_t other = o.allocated;
        if (st->alt_done || other != s.allocated)
            st->order = (pred_torch_order){true, st->first_tie, i, {s.allocated, other}, {0, 0},
                                           st->order.oom_op};
    }
    return 0;
}

typedef struct {
    pred_segment *seg;
    size_t n, cap;
} seg_list;

static int add_segment(void *user, const torchalloc_segment_info *s) {
    seg_list *l = user;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->seg = ml_xrealloc(l->seg, l->cap * sizeof *l->seg);
    }
    l->seg[l->n++] = (pred_segment){s->size, s->allocated_size, s->requested_size, s->stream,
                                    s->pool == TORCHALLOC_POOL_LARGE, s->expandable != 0};
    return 0;
}

static void torch_at_peak(void *state, ml_mem_view v, pred_rank *out) {
    torch_state *st = state;
    if (!out->torch)
        out->torch = ml_xcalloc(1, sizeof *out->torch);
    pred_torch_peak *pk = &out->torch->at[v == VIEW_TORCH_RESERVED];
    free(pk->segments);
    seg_list l = {0};
    torchalloc_walker w = {add_segment, NULL, &l};
    torchalloc_walk(st->ta, &w);
    struct torchalloc_stats s;
    torchalloc_stats(st->ta, &s);
    *pk = (pred_torch_peak){l.seg, l.n, s.allocated, s.reserved, s.free_in_used_segments,
                            s.whole_free_segments, s.pending_free};
    out->torch->requested_peak = s.requested_peak;
}

/* The segment order's verdict, with both models' allocated peaks. */
static void torch_finish(void *state, pred_rank *out) {
    torch_state *st = state;
    if (!out->torch)
        out->torch = ml_xcalloc(1, sizeof *out->torch);
    struct torchalloc_stats s;
    torchalloc_counters(st->ta, &s);
    out->torch->alloc_retries = s.num_alloc_retries;
    pred_torch_order *o = &out->torch->order;
    *o = st->order;
    if (!o->decides)
        return;
    torchalloc_stats(st->ta, &s);
    o->peak[0] = s.allocated_peak;
    torchalloc_stats(st->alt->ta, &s);
    o->peak[1] = s.allocated_peak;   /* up to its out-of-memory, if it ran out */
}

static void torch_close(void *state) {
    torch_state *st = state;
    if (!st)
        return;
    torch_close(st->alt);
    free(st->skip);
    torchalloc_destroy(st->ta);
    free(st->block);
    free(st->event_stream);
    free(st->event_upto);
    free(st);
}

/* No second segment order: its model's numbers only ever fill pred_torch_order. */
static void torch_numbers_only(void *state) {
    torchalloc_watch_ties(((torch_state *)state)->ta, 0);
}

const pred_view_model pred_view_torch = {
    torch_open, torch_apply, NULL, torch_at_peak, torch_close, 0,   /* streams, events, syncs too */
    torch_finish, torch_numbers_only};
