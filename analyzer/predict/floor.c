/* SPDX-License-Identifier: MIT */
/* floor.c — the memory floor of one rank's plan: the requested bytes that must be live at some
 * point by data dependence alone, whatever the schedule does with allocs, frees and syncs.
 *
 * Definition. A byte of buffer b is *needed* after op i when a later op reads it before any
 * later op overwrites it, or when b is still live at the end of the plan (the final buffers are
 * the schedule's result; after a release only the kept chunk is). An op *accesses* the views it
 * reads or writes. At each data op i (collective, copy, scale, compute, init, check; the op an
 * expect_error refuses does not run and is skipped) the bytes that must exist are
 *     B(i) = sum over buffers b of |needed_after_i(b) ∪ accessed_i(b)|  -  inplace(i)
 * where inplace(i) is what NCCL's in-place rule lets an out-of-place collective share:
 *   - ReduceScatter: the recv bytes, when this rank's slice of the send view (recv = send +
 *     rank*recvcount, where NCCL would write in place) is not needed after the op;
 *   - AllGather: the send bytes, when they are not needed after the op (they can live in the
 *     recv view's rank slice, where in-place AllGather reads them);
 *   - AllReduce, Broadcast, Reduce: the send bytes, when they are not needed after the op;
 *   - a collective that never runs in place: nothing.
 * (coll.h's in-place rule of the row says which.)
 * The floor is the maximum of B(i) over the data ops and of the needed bytes at the end.
 *
 * Overwrites: a collective's recv view, an init's and a copy's destination are overwritten
 * entirely. A compute's `writes` are *not* taken as overwrites: compute stands for user work
 * with no data effect (it may accumulate, as FSDP's gradient fold does), so its writes are
 * accesses only. scale reads and writes its view.
 *
 * B(i) never exceeds the requested bytes live at op i in a lint-clean plan (every byte counted
 * is inside a live buffer), so floor <= peak, and peak - floor is how far the plan is from what
 * its data flow allows. Needed bytes are kept as byte intervals per buffer, computed in one
 * backward pass; a buffer with more than FLOOR_MAX_RANGES disjoint needed ranges merges its
 * two closest (an over-estimate inside a live buffer, so still at most the peak). */
#include "predict/analyzer.h"
#include "base/checked.h"

#include <stdlib.h>
#include <string.h>

#define FLOOR_MAX_RANGES 32
#define FLOOR_AHEAD 8   /* ops: how far down the backward pass asks for ops ahead of use */

typedef struct {
    uint64_t lo, hi;   /* [lo, hi) in bytes */
} range;

typedef struct {
    range *r;
    uint32_t n, cap;
    uint64_t total;    /* sum of hi - lo */
} range_set;

static void set_clear(range_set *s) {
    s->n = 0;
    s->total = 0;
}

static void set_reserve(range_set *s, uint32_t n) {
    if (n <= s->cap)
        return;
    uint32_t cap = s->cap ? s->cap * 2 : 4;
    while (cap < n)
        cap *= 2;
    s->r = ml_xrealloc(s->r, cap * sizeof *s->r);
    s->cap = cap;
}

/* Merges the two ranges with the smallest gap (over-estimate, see above). */
static void set_squeeze(range_set *s) {
    uint32_t best = 0;
    for (uint32_t k = 1; k + 1 < s->n; k++)
        if (s->r[k + 1].lo - s->r[k].hi < s->r[best + 1].lo - s->r[best].hi)
            best = k;
    s->total += s->r[best + 1].lo - s->r[best].hi;
    s->r[best].hi = s->r[best + 1].hi;
    memmove(&s->r[best + 1], &s->r[best + 2], (s->n - best - 2) * sizeof *s->r);
    s->n--;
}

static void set_add(range_set *s, uint64_t lo, uint64_t hi) {
    if (lo >= hi)
        return;
    uint32_t k = 0;
    while (k < s->n && s->r[k].hi < lo)
        k++;
    uint32_t j = k;
    while (j < s->n && s->r[j].lo <= hi) {
        lo = s->r[j].lo < lo ? s->r[j].lo : lo;
        hi = s->r[j].hi > hi ? s->r[j].hi : hi;
        s->total -= s->r[j].hi - s->r[j].lo;
        j++;
    }
    /* ranges k..j-1 merge into one */
    if (j == k) {
        set_reserve(s, s->n + 1);
        memmove(&s->r[k + 1], &s->r[k], (s->n - k) * sizeof *s->r);
        s->n++;
    } else if (j > k + 1) {
        memmove(&s->r[k + 1], &s->r[j], (s->n - j) * sizeof *s->r);
        s->n -= j - k - 1;
    }
    s->r[k] = (range){lo, hi};
    s->total += hi - lo;
    if (s->n > FLOOR_MAX_RANGES)
        set_squeeze(s);
}

static void set_sub(range_set *s, uint64_t lo, uint64_t hi) {
    if (lo >= hi)
        return;
    uint32_t out = 0;
    range split = {0, 0};
    for (uint32_t k = 0; k < s->n; k++) {
        range r = s->r[k];
        if (r.hi <= lo || r.lo >= hi) {
            s->r[out++] = r;
            continue;
        }
        s->total -= r.hi - r.lo;
        if (r.lo < lo) {
            s->r[out++] = (range){r.lo, lo};
            s->total += lo - r.lo;
        }
        if (r.hi > hi)
            split = (range){hi, r.hi};   /* at most one range sticks out past hi */
    }
    s->n = out;
    if (split.hi > split.lo)
        set_add(s, split.lo, split.hi);
}

/* Bytes of [lo, hi) already in s. */
static uint64_t set_overlap(const range_set *s, uint64_t lo, uint64_t hi) {
    uint64_t n = 0;
    for (uint32_t k = 0; k < s->n; k++) {
        uint64_t a = s->r[k].lo > lo ? s->r[k].lo : lo, b = s->r[k].hi < hi ? s->r[k].hi : hi;
        if (a < b)
            n += b - a;
    }
    return n;
}

/* ---- one rank ---------------------------------------------------------------------------------*/

typedef struct {
    range_set *need;           /* by buffer symbol */
    uint32_t n_bufs;
    uint64_t total;            /* sum of need[b].total */
} floor_state;

static uint64_t view_lo(const plan_view *v) { return v->offset * ml_dtypes[v->dtype].size; }
static uint64_t view_hi(const plan_view *v) { return view_lo(v) + plan_view_bytes(v); }
static bool has_buf(const floor_state *f, const plan_view *v) {
    return v->buf != SCHED_NO_SYM && v->buf < f->n_bufs && v->count;
}

/* An access of a buffer (has_buf), its byte range computed once: the loops below look at each
 * access of an op several times, at every op of a million. */
typedef struct {
    uint32_t buf;
    bool read, overwrite;
    bool whole;        /* the view is the whole buffer (no offset or count written) */
    uint64_t lo, hi;   /* [lo, hi) in bytes */
} floor_access;

/* The accesses of acc[0..n) that touch a buffer, in order, into fa (room for n); how many. */
static inline size_t floor_accesses(const floor_state *f, const plan_access *acc, size_t n,
                             floor_access *fa) {
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (has_buf(f, acc[k].v))
            fa[m++] = (floor_access){acc[k].v->buf, acc[k].read, acc[k].overwrite,
                                     acc[k].v->whole, view_lo(acc[k].v), view_hi(acc[k].v)};
    return m;
}

static int by_buf_lo(const void *a, const void *b) {
    const floor_access *x = a, *y = b;
    if (x->buf != y->buf)
        return x->buf < y->buf ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* access_extra of an op with many views (a compute that lists one buffer 100 000 times): the
 * views grouped by buffer by sorting, and each group's ranges merged in order of their start,
 * O(n log n) where the scan of every pair (and a scratch set's insertions) is O(n^2). The same
 * sum: each buffer's union of ranges less its bytes in need. */
#define ACCESS_MANY 32
static __attribute__((noinline)) uint64_t access_extra_many(floor_state *f,
                                                            const floor_access *fa, size_t n) {
    floor_access *s = ml_xmalloc(n * sizeof *s);
    memcpy(s, fa, n * sizeof *s);
    qsort(s, n, sizeof *s, by_buf_lo);
    uint64_t extra = 0;
    for (size_t k = 0; k < n;) {
        const range_set *need = &f->need[s[k].buf];
        uint64_t lo = s[k].lo, hi = s[k].hi;
        for (k++; k < n && s[k].buf == s[k - 1].buf && s[k].lo <= hi; k++)
            hi = s[k].hi > hi ? s[k].hi : hi;
        if (lo < hi)
            ml_bytes_add(extra, (hi - lo) - set_overlap(need, lo, hi), &extra);
    }
    free(s);
    return extra;
}

/* |need(b) ∪ accessed(b)| - |need(b)| summed over the op's accesses (views of one buffer may
 * overlap each other: a scratch set per buffer keeps it exact). */
static inline uint64_t access_extra(floor_state *f, const floor_access *fa, size_t n,
                             range_set *scratch) {
    if (n > ACCESS_MANY)
        return access_extra_many(f, fa, n);
    uint64_t extra = 0;
    for (size_t k = 0; k < n; k++) {
        /* alone: every view of this buffer in the op is this one's bytes (the common case: a
         * single view, or an in-place collective's send and recv): no scratch set needed */
        uint64_t lo = fa[k].lo, hi = fa[k].hi;
        bool first = true, alone = true;
        for (size_t j = 0; j < n; j++)
            if (j != k && fa[j].buf == fa[k].buf) {
                if (j < k)
                    first = false;
                else if (fa[j].lo != lo || fa[j].hi != hi)
                    alone = false;
            }
        if (!first)
            continue;
        const range_set *need = &f->need[fa[k].buf];
        if (alone) {
            ml_bytes_add(extra, (hi - lo) - set_overlap(need, lo, hi), &extra);
            continue;
        }
        set_clear(scratch);
        for (size_t j = k; j < n; j++)
            if (fa[j].buf == fa[k].buf)
                set_add(scratch, fa[j].lo, fa[j].hi);
        for (uint32_t r = 0; r < scratch->n; r++)
            ml_bytes_add(extra, (scratch->r[r].hi - scratch->r[r].lo) -
                                    set_overlap(need, scratch->r[r].lo, scratch->r[r].hi),
                         &extra);
    }
    return extra;
}

static bool needed(const floor_state *f, const plan_view *v, uint64_t lo, uint64_t hi) {
    return has_buf(f, v) && set_overlap(&f->need[v->buf], lo, hi) > 0;
}

/* What NCCL's in-place rule lets an out-of-place collective share (see the top comment). */
static uint64_t inplace_share(const floor_state *f, const plan_op *op, const ml_comms *comms,
                              int rank) {
    const plan_view *s = &op->u.coll.send, *r = &op->u.coll.recv;
    if (op->u.coll.in_place || !has_buf(f, s) || !has_buf(f, r))
        return 0;
    rank = plan_comm_rank(comms, op->u.coll.comm, rank);   /* NCCL's slot: the group's rank */
    if (rank < 0)
        return 0;
    switch (ml_colls[op->u.coll.coll].inplace) {
    case INPLACE_RECV_IN_SEND: {   /* in place, recv is the rank's slot of send: that slot only */
        uint64_t slot = view_lo(s) + (uint64_t)rank * plan_view_bytes(r);
        return needed(f, s, slot, slot + plan_view_bytes(r)) ? 0 : plan_view_bytes(r);
    }
    case INPLACE_SAME:
    case INPLACE_SEND_IN_RECV:     /* send lies inside recv in place: all of it */
        return needed(f, s, view_lo(s), view_hi(s)) ? 0 : plan_view_bytes(s);
    case INPLACE_NEVER:
        return 0;
    case INPLACE_UNDECLARED:
    default:
        ml_internal_error("collective '%s' declares no in-place rule (runtime/ir/coll.c)",
                          ml_colls[op->u.coll.coll].name);
    }
}

static inline void apply_accesses(floor_state *f, const floor_access *fa, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (fa[k].overwrite && !fa[k].read) {
            range_set *s = &f->need[fa[k].buf];
            f->total = ml_bytes_sub(f->total, s->total);
            set_sub(s, fa[k].lo, fa[k].hi);
            ml_bytes_add(f->total, s->total, &f->total);
        }
    for (size_t k = 0; k < n; k++)
        if (fa[k].read) {
            range_set *s = &f->need[fa[k].buf];
            f->total = ml_bytes_sub(f->total, s->total);
            set_add(s, fa[k].lo, fa[k].hi);
            ml_bytes_add(f->total, s->total, &f->total);
        }
}

/* ---- the forward facts: what is live at the end, which ops are refused ----------------------- */

typedef struct {
    bool live;
    uint64_t bytes;
    uint32_t chunks, keep;
    bool released;
} endbuf;

typedef struct floor_share floor_share;

struct floor_forward {
    endbuf *b;          /* by buffer symbol */
    uint32_t n_bufs;
    bool *refused;      /* [n_ops]; NULL while no op is refused (the common case: no array) */
    floor_share *share; /* floor_rank_record's, for the other ranks (floor_rank_shared) */
};

floor_forward *floor_forward_new(const rank_plan *p) {
    floor_forward *f = ml_xcalloc(1, sizeof *f);
    f->n_bufs = p->s->syms[SYM_BUFFER].n;
    f->b = ml_xcalloc(f->n_bufs + 1, sizeof *f->b);
    return f;
}

void floor_forward_op(floor_forward *f, const rank_plan *p, size_t i, bool refused) {
    const plan_op *op = &p->ops[i];
    if (refused) {
        if (!f->refused)
            f->refused = ml_xcalloc(p->n_ops, sizeof *f->refused);
        f->refused[i] = true;
    } else if (op->kind == OP_ALLOC && op->u.alloc.buf < f->n_bufs) {
        f->b[op->u.alloc.buf] = (endbuf){true, op->u.alloc.bytes, op->u.alloc.chunks, 0, false};
    } else if (op->kind == OP_FREE && op->u.free.buf < f->n_bufs) {
        f->b[op->u.free.buf].live = false;
    } else if (op->kind == OP_RELEASE && op->u.release.buf < f->n_bufs &&
               f->b[op->u.release.buf].chunks >= 2) {
        f->b[op->u.release.buf].released = true;
        f->b[op->u.release.buf].keep = op->u.release.keep;
    }
}

static void share_free(floor_share *s);

void floor_forward_free(floor_forward *f) {
    if (!f)
        return;
    share_free(f->share);
    free(f->b);
    free(f->refused);
    free(f);
}

/* The buffers live at the end are needed whole (after a release, only the kept chunk). */
static void end_state(const floor_forward *fw, floor_state *f) {
    for (uint32_t k = 0; k < f->n_bufs; k++) {
        const endbuf *b = &fw->b[k];
        if (!b->live)
            continue;
        uint64_t lo = 0, hi = b->bytes;
        if (b->released) {   /* the chunk cut of predict.c and the executor */
            uint64_t c = b->bytes / b->chunks + (b->bytes % b->chunks != 0);
            lo = (uint64_t)b->keep * c;
            hi = lo + c < b->bytes ? lo + c : b->bytes;
        }
        set_add(&f->need[k], lo, hi);
        ml_bytes_add(f->total, f->need[k].total, &f->total);
    }
}

uint64_t floor_rank(const rank_plan *p, size_t *at_op) {
    /* its own forward pass: the ops an expect_error wraps, as predict.c refuses them */
    floor_forward *fw = floor_forward_new(p);
    const sched_step *wrapped = NULL;
    for (size_t i = 0; i < p->n_ops; i++) {
        const plan_op *op = &p->ops[i];
        bool refused = wrapped && op->step == wrapped;
        if (!refused)
            wrapped = op->kind == OP_EXPECT_BEGIN ? op->step->u.expect_error.step : NULL;
        floor_forward_op(fw, p, i, refused);
    }
    uint64_t floor = floor_rank_after(p, fw, at_op);
    floor_forward_free(fw);
    return floor;
}

/* ---- one backward pass for every rank ------------------------------------------------------
 *
 * Ranks whose ops are rank 0's but for some ops' views' offsets and in-place flags (plan_share,
 * plan_offsets_apply) mostly repeat rank 0's backward pass ("rank 0": the base whose pass
 * records; rank r: any other rank that shares its ops). Call those ops (vary, less the
 * collectives that are the same op on every rank all the same: coll_alike) *varying*; every
 * other op has the same accesses on every rank (buffer, bytes, read and overwrite flags) and,
 * but for the shard-of-rank collectives (whose in-place share reads the rank: inplace_share),
 * the same in-place share. The end state is the same on every rank (the forward facts are rank
 * 0's: predict_rank_shared), and so are the refused ops, which neither pass looks at.
 *
 * Windows. Rank 0's pass marks buffers *open*, going down the ops: a varying op opens each
 * buffer it reads or overwrites (its set after the op may be another on rank r), an op that
 * reads or overwrites a whole view of an open buffer closes it (the set after it is then the
 * whole buffer, or what the op itself reads of it: the same on every rank where the bytes
 * needed lie inside the buffer, and rank r checks that they are), and an alloc or free of an
 * open buffer closes it (both sets empty). An *event* is a varying op, an op that touches an
 * open buffer, a shard-of-rank collective while some buffer is open, or an alloc or free that
 * closes one; the other ops while some buffer is open lie in *gaps*, one between two events.
 * A *sweep* is an event that varies not, is not shard-of-rank, closes every open buffer it
 * touches through a whole view that rank 0's set of it lies inside, and whose in-place share
 * reads no open buffer (share_sweeps: the mix's all_gather).
 *
 * Claim: let D be rank r's running total less rank 0's. If, after every event (in the
 * backward sense: the needs before it in program order), each buffer whose set on rank r is
 * not rank 0's is open on rank 0, then before and after every op rank r's sets of the buffers
 * that are not open are rank 0's; D is 0 where no buffer is open and
 * constant over each gap; and at every op that is no event B_r(i) = B_0(i) + D, where D is
 * that of the op's gap (0 outside the windows); at a sweep whose buffers' sets on rank r lie
 * inside its whole views, B_r = B_0 + D with D that after it.
 *
 * Induction down the ops. At the end nothing is open and the sets are equal (D = 0). An op
 * that is no event touches only buffers that are not open, whose sets are equal: it does the
 * same thing to them on both ranks (same accesses), so the sets stay equal and both totals
 * change by the same amount (D stays); its B is the total plus what its accesses add over
 * those sets less the in-place share of its own send buffer, which is not open and, the op not
 * being shard-of-rank inside a window, reads no rank: B_r = B_0 + D. An event changes the
 * sets of its own buffers only; where a set after it is rank 0's the premise holds for it,
 * where it is not, the premise says the buffer is open after it. A sweep: of each open buffer
 * b it touches, S_r ⊆ whole ⊆ accessed gives |S_r ∪ accessed| = |accessed|, as S_0 ⊆ whole
 * does on rank 0, so
 * b's part of B less b's part of D is the same on both, and the set after it is what the op
 * reads of b (the overwrite covers S, or the read does), the same on both: b's part of D is
 * then 0, and B_r - B_0 is the other open buffers' part, D after it. No saturating step is taken
 * where rank 0's floor is within 2^63-1, which bounds every total rank 0 passes through, and
 * rank r stops where its own passes the bound.
 *
 * So rank 0's pass (floor_rank_record) keeps, for each event, its running total before it and
 * the need sets of its buffers before and after it with whether each is open after it (a
 * sweep: its closed buffers alone, no sets; its B goes with the gap after it, or with `rest`
 * where it closes the last window); for each gap its largest B (the first op reaching it, as
 * the pass's >= keeps it); and the
 * largest B of the ops that are no event outside the windows (`rest`). Rank r
 * (floor_rank_shared) goes down the events with its own sets of the open buffers whose sets
 * differ from rank 0's (rank 0's sets for the others, loaded), its total rank 0's plus D,
 * works out each event's B itself with its own views and rank (at a sweep it checks that its
 * own sets lie inside the whole views, and drops them), and each gap's as rank 0's largest
 * plus D: adding a constant keeps the gap's first op with its largest B first, and
 * share_consider keeps the pass's choice among the events, gaps and rest (the largest, at the
 * least op), so the op named is floor_pass's. After each event it checks the premise: each
 * set equal to rank 0's after the op, or else open on rank 0 after it; where it fails (a
 * window that closes on bytes that differ, test_compact.c's floor cases) the rank takes the
 * whole pass. D is kept as the sum over the buffers whose sets differ of the rank's total of
 * the set less rank 0's (rank 0's set after the last event on the buffer). A shard-of-rank
 * collective outside any window
 * reads the rank alone, in its in-place share, from sets that are rank 0's: rank 0's pass works
 * out its B for every rank of the world at once and keeps each rank's largest (no event, no
 * set).
 * On the training schedule of tests/bench/gen.c 3 ops in 22 vary and no window opens: the
 * optimizer's slice is written, not read, and the all_gather reads the whole buffer. On the mix
 * (gen.c's default) the all_reduce of `w[rank*s : s]` opens w and the all_gather, whose recv
 * overwrites all of w, closes it (a sweep): with the compute that rank 0's members lack (it
 * reads g whole and only writes w: no window), three events in a group of ten steps, no gap. */

/* The record lives while every other rank runs and is RSS: on gen 1000000 training (100,000
 * varying ops, 50,000 shard-of-rank reduce_scatters) 88-byte events, 40-byte sets and rank 0's
 * accesses made it 31 MB, 310 B/step against 280 without it. So it keeps only what the other
 * ranks cannot work out: a 16-byte event per varying op, each set as its buffer and two range
 * counts (its place in the pool and its total follow from the counts: the events, sets and pool
 * are read in the order they were written), and the ranges of a set only where they are not
 * those last kept for its buffer (SHARE_AGAIN: the optimizer's write leaves its parameters'
 * set as the all_gather after it left it, before and after the write, and gen.c's thousand
 * group names bring the same sets back: 2,000 ranges kept of 200,000). 3 MB there, 282 B/step;
 * floor_rank_shared redoes each varying op where it compared rank 0's accesses, 5 M more
 * instructions of predict's 1,654 M at 100,000 steps (callgrind). The windows add an event per
 * op on an open buffer (a sweep: its closed buffers' sets, no ranges) and a 16-byte gap where
 * ops lie between two events inside a window: on gen 1000000 (the mix) three events a group
 * (the compute rank 0's members lack, the all_reduce, the all_gather's sweep), where the
 * broadcast, alike on every rank, was one before; peak RSS 285.4 MB (285 B/step) before and
 * after, training's 264.7 MB and 264.9 MB (cputime). */
typedef struct {
    uint32_t buf;
    uint8_t n[2];             /* its ranges (at most FLOOR_MAX_RANGES) or SHARE_AGAIN: before */
                              /* the op, after it */
    bool open;                /* the buffer's window is open after the op (share_window) */
} share_set;

#define SHARE_AGAIN UINT8_MAX

/* Where the ranges last kept for a buffer are: floor_share.pool[at, at + n). */
typedef struct {
    size_t at;
    uint32_t n;
} share_last;

typedef struct {
    uint64_t total;           /* the running total before the op (the needs after it) */
    uint32_t op;              /* within 2^32 (floor_share.ok) */
    uint8_t n;                /* its buffers' sets, after the last event's in floor_share.sets */
    /* a compute (n_reads + n_writes > 0: a compute's event has an access): its views'
     * counts; where they are is the next of floor_share.views (plan_compute_views), so that
     * the other ranks read them and not the op (a cache miss each, at a million ops) */
    uint8_t n_reads, n_writes;
    uint8_t flags;            /* SHARE_GAP, SHARE_CLEAR, SHARE_SWEEP */
} share_event;

enum {
    SHARE_GAP = 1,            /* the next of floor_share.gaps follows the event */
    SHARE_CLEAR = 2,          /* an alloc or free of an open buffer: its set emptied, no B */
    SHARE_SWEEP = 4,          /* share_sweeps: its sets no ranges, its B in the gap after it */
};

/* The ops between two events while a window is open, none touching an open buffer: their
 * largest B on rank 0 and the first op with it (the pass's >=). */
typedef struct {
    uint64_t max;
    uint32_t op;
} share_gap;

struct floor_share {
    bool ok;                  /* recorded, rank 0's floor within 2^63-1, every count fits */
    size_t n_ops;
    uint64_t end;             /* the needed bytes at the end */
    bool has_rest;            /* the largest B(i) over the ops that are no event, and where */
    uint64_t rest;
    size_t rest_op;
    int world;                /* by rank: the largest B of the shard-of-rank collectives that */
    uint64_t *shard;          /* do not vary, and its op (SIZE_MAX: none) */
    size_t *shard_op;
    /* arrays grown by hand (share_grow): one event in eleven ops on the training schedule,
     * and ml_vec_push's zeroing and call were a third of the recording's cost */
    share_event *events;      /* in backward order */
    size_t n_events, cap_events;
    uint32_t *views;          /* the compute events' first views, in their order */
    size_t n_views, cap_views;
    share_last *last;         /* while recording: by buffer */
    share_set *sets;
    size_t n_sets, cap_sets;
    range *pool;
    size_t n_pool, cap_pool;
    size_t max_sets;          /* the most sets of one event */
    share_gap *gaps;          /* in backward order, one for each event with SHARE_GAP */
    size_t n_gaps, cap_gaps;
    bool *open;               /* while recording: by buffer, its window is open */
    uint32_t n_bufs;          /* while recording: open's */
    size_t n_open;            /* while recording: how many are */
    bool in_gap;              /* while recording: gaps[n_gaps - 1] follows the last event */
};

static void share_free(floor_share *s) {
    if (!s)
        return;
    free(s->events);
    free(s->views);
    free(s->last);
    free(s->sets);
    free(s->pool);
    free(s->shard);
    free(s->shard_op);
    free(s->gaps);
    free(s->open);
    free(s);
}

/* Room for `need` items of `size` bytes in *a (capacity *cap). */
static void share_grow(void **a, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    *a = ml_xrealloc(*a, c * size);
    *cap = c;
}

/* Keeps set r of buffer buf: SHARE_AGAIN where its ranges are those last kept for buf, else
 * copies them into the pool and says how many. */
static uint8_t share_keep(floor_share *s, uint32_t buf, const range_set *r) {
    share_last *l = &s->last[buf];
    if (r->n && l->n == r->n && !memcmp(s->pool + l->at, r->r, r->n * sizeof *r->r))
        return SHARE_AGAIN;
    share_grow((void **)&s->pool, &s->cap_pool, s->n_pool + r->n, sizeof *s->pool);
    if (r->n) {
        memcpy(s->pool + s->n_pool, r->r, r->n * sizeof *r->r);
        *l = (share_last){s->n_pool, r->n};
    }
    s->n_pool += r->n;
    return (uint8_t)r->n;   /* at most FLOOR_MAX_RANGES between ops (set_add squeezes) */
}

/* The ranges a kept set of buf names (n: share_set.n[k]), the pool read in order from *at;
 * last by buffer as share_keep left it when it kept this set. */
static const range *share_ranges(const floor_share *s, share_last *last, uint32_t buf, uint8_t n,
                                 size_t *at, uint32_t *count) {
    if (n == SHARE_AGAIN) {
        *count = last[buf].n;
        return s->pool + last[buf].at;
    }
    if (n)
        last[buf] = (share_last){*at, n};
    *count = n;
    *at += n;
    return s->pool + *at - n;
}

/* A new event for varying op, its buffers (those of fa[0..m), each once, in order) with their
 * need sets before the op. */
static share_event *share_before(floor_share *s, const floor_state *f, const floor_access *fa,
                                 size_t m, size_t op) {
    share_grow((void **)&s->events, &s->cap_events, s->n_events + 1, sizeof *s->events);
    share_event *e = &s->events[s->n_events++];
    *e = (share_event){.total = f->total, .op = (uint32_t)op};
    s->in_gap = false;
    s->ok = s->ok && op <= UINT32_MAX && m < UINT8_MAX;
    for (size_t k = 0; k < m; k++) {
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = fa[j].buf == fa[k].buf;
        if (seen)
            continue;
        share_grow((void **)&s->sets, &s->cap_sets, s->n_sets + 1, sizeof *s->sets);
        share_set *ss = &s->sets[s->n_sets++];
        ss->buf = fa[k].buf;
        ss->n[0] = share_keep(s, ss->buf, &f->need[ss->buf]);
        e->n++;
    }
    s->max_sets = e->n > s->max_sets ? e->n : s->max_sets;
    return e;
}

/* Whether op's send buffer is open (its in-place share reads that buffer's set). */
static bool has_send_open(const floor_share *s, const plan_op *op) {
    const plan_view *v = &op->u.coll.send;
    return v->buf != SCHED_NO_SYM && v->buf < s->n_bufs && v->count && s->open[v->buf];
}

/* Whether buffer b's window is open after an op with accesses fa[0..m) (the rule of the
 * comment above floor_share): it opens where a varying op reads or overwrites b, and closes
 * where a whole view of b is read or overwritten. open: it was open before the op. */
static bool share_window(const floor_access *fa, size_t m, uint32_t b, bool open, bool varying) {
    bool changes = false, whole = false;
    for (size_t k = 0; k < m; k++)
        if (fa[k].buf == b && (fa[k].read || fa[k].overwrite)) {
            changes = true;
            whole = whole || fa[k].whole;
        }
    return (open || (varying && changes)) && !whole;
}

/* The sets of the last event after its op (what the other ranks check), and its buffers'
 * windows after it (fa[0..m): the op's accesses; varying: the op is one of vary). */
static void share_after(floor_share *s, const floor_state *f, const floor_access *fa, size_t m,
                        bool varying) {
    const share_event *e = &s->events[s->n_events - 1];
    for (size_t k = s->n_sets - e->n; k < s->n_sets; k++) {
        share_set *ss = &s->sets[k];
        ss->n[1] = share_keep(s, ss->buf, &f->need[ss->buf]);
        bool was = s->open[ss->buf];
        ss->open = (was || varying) && share_window(fa, m, ss->buf, was, varying);
        s->open[ss->buf] = ss->open;
        s->n_open = s->n_open - was + ss->open;
    }
}

/* Whether the ranges of r, buffer b's set, lie inside one whole view of b among fa[0..m)
 * that the op reads or overwrites. */
static bool set_inside_whole(const range_set *r, uint32_t b, const floor_access *fa, size_t m) {
    for (size_t a = 0; a < m; a++)
        if (fa[a].buf == b && fa[a].whole && (fa[a].read || fa[a].overwrite) &&
            (!r->n || (r->r[0].lo >= fa[a].lo && r->r[r->n - 1].hi <= fa[a].hi)))
            return true;
    return false;
}

/* Whether op, no varying op and not shard-of-rank, with accesses fa[0..m) touching some open
 * buffer, closes every open buffer it touches through a whole view read or overwritten that
 * rank 0's set of it (in f) lies inside, the in-place share reading none of them: then on a
 * rank whose sets of those buffers lie inside the whole views too (floor_rank_shared checks
 * it), each such set S has |S ∪ accessed| the accessed bytes and S after the op what the op
 * reads of it, as on rank 0: its B is rank 0's plus the other open buffers' difference, the
 * difference after it (a sweep: no sets kept). */
static bool share_sweeps(const floor_share *s, const floor_state *f, const plan_op *op,
                         const floor_access *fa, size_t m) {
    if (op->kind == OP_COLL && has_send_open(s, op))
        return false;
    for (size_t k = 0; k < m; k++)
        if (s->open[fa[k].buf] && !set_inside_whole(&f->need[fa[k].buf], fa[k].buf, fa, m))
            return false;   /* stays open, or rank 0's own set is not inside */
    return true;
}

/* A sweep event for op: a set (no ranges) for each open buffer of fa[0..m), each once, all
 * closed. */
static share_event *share_sweep(floor_share *s, const floor_access *fa, size_t m, size_t op) {
    share_grow((void **)&s->events, &s->cap_events, s->n_events + 1, sizeof *s->events);
    share_event *e = &s->events[s->n_events++];
    *e = (share_event){.op = (uint32_t)op, .flags = SHARE_SWEEP};
    s->in_gap = false;
    s->ok = s->ok && op <= UINT32_MAX && m < UINT8_MAX;
    for (size_t k = 0; k < m; k++) {
        if (!s->open[fa[k].buf])
            continue;   /* not open, or a view of a buffer already closed here */
        share_grow((void **)&s->sets, &s->cap_sets, s->n_sets + 1, sizeof *s->sets);
        s->sets[s->n_sets++] = (share_set){.buf = fa[k].buf};
        s->open[fa[k].buf] = false;
        s->n_open--;
        e->n++;
    }
    return e;
}

/* The event of an alloc or free (op) of open buffer b: its set before, empty after, closed.
 * Its own function: share_before and share_after stay inlined at their one call each. */
static void share_clear(floor_share *s, const floor_state *f, uint32_t b, size_t op) {
    share_grow((void **)&s->events, &s->cap_events, s->n_events + 1, sizeof *s->events);
    s->events[s->n_events++] =
        (share_event){.total = f->total, .op = (uint32_t)op, .n = 1, .flags = SHARE_CLEAR};
    s->in_gap = false;
    s->ok = s->ok && op <= UINT32_MAX;
    share_grow((void **)&s->sets, &s->cap_sets, s->n_sets + 1, sizeof *s->sets);
    share_set *ss = &s->sets[s->n_sets++];
    *ss = (share_set){.buf = b};
    ss->n[0] = share_keep(s, b, &f->need[b]);   /* n[1] 0: no ranges after */
    s->open[b] = false;
    s->n_open--;
    s->max_sets = s->max_sets ? s->max_sets : 1;
}

/* An op that is no event, its B here, while a window is open: into the gap after the last
 * event (the first op reaching its largest B, as the pass's >= keeps it). */
static void share_gap_op(floor_share *s, uint64_t here, size_t op) {
    if (!s->in_gap) {
        share_grow((void **)&s->gaps, &s->cap_gaps, s->n_gaps + 1, sizeof *s->gaps);
        s->ok = s->ok && op <= UINT32_MAX;
        s->gaps[s->n_gaps++] = (share_gap){here, (uint32_t)op};
        s->events[s->n_events - 1].flags |= SHARE_GAP;
        s->in_gap = true;
    } else if (here >= s->gaps[s->n_gaps - 1].max) {
        s->gaps[s->n_gaps - 1] = (share_gap){here, (uint32_t)op};
    }
}

/* The pass's choice: the largest B, at the first op that has it (the end: SIZE_MAX, last). */
static void share_consider(uint64_t here, size_t op, uint64_t *best, size_t *best_op) {
    if (here > *best || (here == *best && op < *best_op)) {
        *best = here;
        *best_op = op;
    }
}

/* A collective of vary that is the same op on every rank all the same: both views whole (no
 * offset written, none that plan_offsets_apply could move) and an in-place flag that NCCL's rule
 * gives every rank alike (a broadcast or all_reduce of one buffer: plan_offsets lists every
 * same-buffer collective, as a reduce_scatter's flag may differ). Only collectives: an op of
 * vary that some rank lacks is a compute (the group's members). */
static bool coll_alike(const plan_op *op, int world) {
    const plan_view *s = &op->u.coll.send, *r = &op->u.coll.recv;
    /* on a communicator the slot is the group's rank, which the world's ranks do not walk
     * in order: such a collective is left to each rank (an event) */
    if (op->kind != OP_COLL || !s->whole || !r->whole || op->u.coll.comm)
        return false;
    if (s->buf != r->buf)
        return true;   /* never in place */
    ml_coll c = op->u.coll.coll;
    uint64_t count = plan_coll_count(op);
    int64_t delta;
    /* the views' offsets are equal (0): in place iff NCCL's offset is 0 there */
    bool first = ml_coll_inplace_at(c, count, 0, &delta) && !delta;
    for (int k = 1; k < world; k++)
        if ((ml_coll_inplace_at(c, count, k, &delta) && !delta) != first)
            return false;
    return true;
}

/* The backward pass. rec non-NULL: rank 0's, recording into it (vary[0..n_vary): the ops that
 * may differ on other ranks, increasing). */
static uint64_t floor_pass(const rank_plan *p, const floor_forward *fw, floor_share *rec,
                           const size_t *vary, size_t n_vary, size_t *at_op) {
    floor_state f = {.n_bufs = p->s->syms[SYM_BUFFER].n};
    f.need = ml_xcalloc(f.n_bufs + 1, sizeof *f.need);
    const bool *refused = fw->refused;
    end_state(fw, &f);
    uint64_t best = f.total;
    size_t best_op = SIZE_MAX;
    if (rec)
        rec->end = f.total;
    range_set scratch = {0};
    floor_access *fa = NULL;   /* the op's accesses (floor_accesses), room for fa_cap */
    size_t fa_cap = 0;
    ml_vec dyn;
    ml_vec_init(&dyn, sizeof(plan_access));
    size_t cur = n_vary;       /* vary[cur - 1] is the last varying op at or before i */
    for (size_t i = p->n_ops; i-- > 0;) {
        const plan_op *op = &p->ops[i];
        /* backward over ~100 MB of ops at a million: the hardware's prefetch follows a rising
         * stream better than this falling one, so the op some steps down is asked for (a hint) */
        if (i >= FLOOR_AHEAD)
            __builtin_prefetch(&p->ops[i - FLOOR_AHEAD]);
        if (refused && refused[i])
            continue;
        if (op->kind == OP_ALLOC || op->kind == OP_FREE) {
            /* Before its alloc a buffer does not exist; after its free nothing of it is
             * needed: either way nothing of this name is needed across the op. */
            uint32_t b = op->kind == OP_ALLOC ? op->u.alloc.buf : op->u.free.buf;
            if (b < f.n_bufs) {
                /* rec: an open window closes here, both sets empty: an event, so that the
                 * other ranks drop their own set of b from their running total */
                if (rec && rec->n_open && rec->open[b])
                    share_clear(rec, &f, b, i);
                f.total = ml_bytes_sub(f.total, f.need[b].total);
                set_clear(&f.need[b]);
            }
            continue;
        }
        plan_access fixed[PLAN_FIXED_ACCESSES];
        const plan_access *acc;
        size_t n = plan_op_accesses(p, op, fixed, &acc, &dyn);
        if (!n)
            continue;
        if (n > fa_cap) {
            fa_cap = n;
            fa = ml_xrealloc(fa, fa_cap * sizeof *fa);
        }
        size_t m = floor_accesses(&f, acc, n, fa);
        share_event *ev = NULL;   /* rec: the op's, where it varies or is in a window */
        share_event *sweep = NULL;   /* rec: the op's where it closes its windows (share_sweeps):
                                        its B is rank 0's plus the difference after it */
        bool varying = false;     /* rec: one of vary */
        bool shard = false;       /* rec: a shard-of-rank collective that does not vary, while
                                     no window is open */
        if (rec) {
            while (cur > 0 && vary[cur - 1] > i)
                cur--;
            varying = cur > 0 && vary[cur - 1] == i && !coll_alike(op, rec->world);
            bool of_rank = !varying && op->kind == OP_COLL &&
                           ml_colls[op->u.coll.coll].flow.shard_of_rank;
            bool in_window = false;
            if (rec->n_open) {
                in_window = of_rank;
                for (size_t k = 0; k < m && !in_window; k++)
                    in_window = rec->open[fa[k].buf];
            }
            if (in_window && !varying && !of_rank && share_sweeps(rec, &f, op, fa, m))
                sweep = share_sweep(rec, fa, m, i);
            else if (varying || in_window)
                ev = share_before(rec, &f, fa, m, i);
            else
                shard = of_rank;
        }
        uint64_t here;
        ml_bytes_add(f.total, access_extra(&f, fa, m, &scratch), &here);
        if ((ev || sweep) && op->kind == OP_COMPUTE) {
            share_event *e = ev ? ev : sweep;
            rec->ok = rec->ok && op->u.compute.n_reads <= UINT8_MAX &&
                      op->u.compute.n_writes <= UINT8_MAX;
            e->n_reads = (uint8_t)op->u.compute.n_reads;
            e->n_writes = (uint8_t)op->u.compute.n_writes;
            share_grow((void **)&rec->views, &rec->cap_views, rec->n_views + 1,
                       sizeof *rec->views);
            rec->views[rec->n_views++] = op->u.compute.first_view;
        }
        if (shard)   /* every rank's B here (the premise makes the sets rank 0's) */
            for (int r = 0; r < rec->world; r++)
                share_consider(ml_bytes_sub(here, inplace_share(&f, op, p->comms, r)), i, &rec->shard[r],
                               &rec->shard_op[r]);
        if (op->kind == OP_COLL)
            here = ml_bytes_sub(here, inplace_share(&f, op, p->comms, p->rank));
        if (here >= best) {
            best = here;
            best_op = i;
        }
        if (rec && !ev && !shard && rec->n_open) {   /* a sweep's: after its closes */
            share_gap_op(rec, here, i);
        } else if (rec && !ev && !shard && (!rec->has_rest || here >= rec->rest)) {
            rec->has_rest = true;
            rec->rest = here;
            rec->rest_op = i;
        }
        apply_accesses(&f, fa, m);
        if (ev)
            share_after(rec, &f, fa, m, varying);
    }
    free(fa);
    for (uint32_t k = 0; k < f.n_bufs; k++)
        free(f.need[k].r);
    free(f.need);
    free(scratch.r);
    ml_vec_free(&dyn);
    if (rec) {
        free(rec->last);   /* floor_rank_shared keeps its own */
        rec->last = NULL;
        free(rec->open);
        rec->open = NULL;
        rec->n_ops = p->n_ops;
        rec->ok = rec->ok && best <= ML_BYTES_MAX;
    }
    if (at_op)
        *at_op = best_op;
    return best;
}

uint64_t floor_rank_record(const rank_plan *p, floor_forward *fw, const size_t *vary,
                           size_t n_vary, size_t *at_op) {
    share_free(fw->share);
    floor_share *s = fw->share = ml_xcalloc(1, sizeof *fw->share);
    s->ok = true;
    s->world = p->world > 0 ? p->world : 1;
    s->shard = ml_xcalloc((size_t)s->world, sizeof *s->shard);
    s->shard_op = ml_xmalloc((size_t)s->world * sizeof *s->shard_op);
    for (int r = 0; r < s->world; r++)
        s->shard_op[r] = SIZE_MAX;
    /* sized for the usual event (an op of vary with two buffers of a range or two each):
     * growing by copies cost a tenth of the recording pass at 100,000 steps */
    share_grow((void **)&s->events, &s->cap_events, n_vary + 64, sizeof *s->events);
    s->last = ml_xcalloc(p->s->syms[SYM_BUFFER].n + 1, sizeof *s->last);
    s->open = ml_xcalloc(p->s->syms[SYM_BUFFER].n + 1, sizeof *s->open);
    s->n_bufs = p->s->syms[SYM_BUFFER].n;
    share_grow((void **)&s->sets, &s->cap_sets, 2 * n_vary + 64, sizeof *s->sets);
    share_grow((void **)&s->pool, &s->cap_pool, 4 * n_vary + 64, sizeof *s->pool);
    return floor_pass(p, fw, fw->share, vary, n_vary, at_op);
}

/* Room of a set floor_rank_shared loads: a set holds at most FLOOR_MAX_RANGES ranges between
 * ops and one more inside set_add, so set_reserve never reallocates it. */
#define SHARE_SLOT (FLOOR_MAX_RANGES + 2)

/* The n ranges at pool into r, in room of its own (SHARE_SLOT ranges at slot); its total
 * summed (set_add, set_sub and set_squeeze keep a set's total its ranges' sum). */
static void share_load(const range *pool, uint32_t n, range *slot, range_set *r) {
    uint64_t total = 0;
    for (uint32_t k = 0; k < n; k++) {
        slot[k] = pool[k];
        total += pool[k].hi - pool[k].lo;   /* at most a buffer's bytes, within 2^64 */
    }
    *r = (range_set){slot, n, SHARE_SLOT, total};
}

/* Sum of n ranges' lengths (within a buffer's bytes: no wrap). */
static uint64_t ranges_total(const range *r, uint32_t n) {
    uint64_t t = 0;
    for (uint32_t k = 0; k < n; k++)
        t += r[k].hi - r[k].lo;
    return t;
}

/* a + d, d signed: the bound's saturation of ml_bytes_add, 0 below (never reached where the
 * totals are exact: a B is at least the needs it counts). */
static uint64_t add_signed(uint64_t a, int64_t d) {
    uint64_t out;
    if (d >= 0) {
        ml_bytes_add(a, (uint64_t)d, &out);
        return out;
    }
    return ml_bytes_sub(a, (uint64_t)-(d + 1) + 1);
}

/* A sweep event e (share_sweeps) on rank p, its closed buffers' sets at sets: each set this
 * rank keeps of its own (diverged) must lie inside the op's whole view of the buffer; it is
 * then rank 0's after the op, and leaves the difference *diff. False where one does not. */
static bool share_swept(const rank_plan *p, const share_event *e, const share_set *sets,
                        const uint32_t **views, floor_state *f, bool *diverged,
                        const uint64_t *base_tot, floor_access **fa, size_t *fa_cap, ml_vec *dyn,
                        int64_t *diff) {
    bool compute = e->n_reads + e->n_writes > 0;
    const uint32_t *first = compute ? (*views)++ : NULL;   /* taken whatever the sets say */
    bool any = false;
    for (size_t j = 0; j < e->n && !any; j++)
        any = diverged && diverged[sets[j].buf];
    if (!any)   /* this rank's sets of them are rank 0's: nothing changes */
        return true;
    plan_access fixed[PLAN_FIXED_ACCESSES];
    const plan_access *acc;
    size_t n = compute ? plan_compute_accesses(p->extra_views + *first, e->n_reads, e->n_writes,
                                               &acc, dyn)
                       : plan_op_accesses(p, &p->ops[e->op], fixed, &acc, dyn);
    if (n > *fa_cap) {
        *fa_cap = n;
        *fa = ml_xrealloc(*fa, *fa_cap * sizeof **fa);
    }
    size_t m = floor_accesses(f, acc, n, *fa);
    for (size_t j = 0; j < e->n; j++) {
        uint32_t b = sets[j].buf;
        if (!diverged[b])
            continue;
        range_set *r = &f->need[b];
        if (!set_inside_whole(r, b, *fa, m))
            return false;
        *diff -= (int64_t)r->total - (int64_t)base_tot[b];   /* both within 2^63-1 */
        diverged[b] = false;
        *r = (range_set){0};
    }
    return true;
}

bool floor_rank_shared(const rank_plan *p, const floor_forward *fw, uint64_t *floor,
                       size_t *at_op) {
    const floor_share *s = fw->share;
    if (!s || !s->ok || s->n_ops != p->n_ops || p->rank < 0 || p->rank >= s->world)
        return false;
    /* need[b] points into slots for the event's buffers whose sets are rank 0's (loaded, empty
     * again after the event: no set of its own), and into own[b] for those whose sets differ
     * from rank 0's inside an open window (kept across events: diverged[b]) */
    floor_state f = {.n_bufs = p->s->syms[SYM_BUFFER].n};
    f.need = ml_xcalloc(f.n_bufs + 1, sizeof *f.need);
    range *slots = ml_xmalloc((s->max_sets ? s->max_sets : 1) * SHARE_SLOT * sizeof *slots);
    bool *diverged = NULL;    /* by buffer; allocated at the first buffer that diverges */
    range **own = NULL;       /* by buffer: SHARE_SLOT ranges, allocated once, reused */
    uint64_t *base_tot = NULL;   /* by diverged buffer: rank 0's set's total */
    uint64_t best = s->end;
    size_t best_op = SIZE_MAX;
    if (s->has_rest)
        share_consider(s->rest, s->rest_op, &best, &best_op);
    if (s->shard_op[p->rank] != SIZE_MAX)
        share_consider(s->shard[p->rank], s->shard_op[p->rank], &best, &best_op);
    range_set scratch = {0};
    floor_access *fa = NULL;
    size_t fa_cap = 0;
    ml_vec dyn;
    ml_vec_init(&dyn, sizeof(plan_access));
    bool same = true;
    const share_set *sets = s->sets;   /* the next event's, its ranges from pool[at] */
    const uint32_t *views = s->views;  /* the next compute event's */
    const share_gap *gaps = s->gaps;   /* the next SHARE_GAP event's */
    size_t at = 0;
    int64_t diff = 0;         /* this rank's running total less rank 0's, between events */
    share_last *last = ml_xcalloc(f.n_bufs + 1, sizeof *last);
    for (size_t k = 0; k < s->n_events && same; k++) {
        const share_event *e = &s->events[k];
        /* the events' ops lie down ~100 MB of ops at a million, two in a group of the mix: a
         * miss each where not asked for ahead (a hint, as floor_pass's) */
        if (k + FLOOR_AHEAD < s->n_events) {
            const char *ahead = (const char *)&p->ops[s->events[k + FLOOR_AHEAD].op];
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead + 64);
        }
        if (e->flags & SHARE_SWEEP) {
            same = share_swept(p, e, sets, &views, &f, diverged, base_tot, &fa, &fa_cap, &dyn,
                               &diff);
            if (same && (e->flags & SHARE_GAP)) {
                share_consider(add_signed(gaps->max, diff), gaps->op, &best, &best_op);
                gaps++;
            }
            sets += e->n;
            continue;
        }
        f.total = add_signed(e->total, diff);
        for (size_t j = 0; j < e->n; j++) {
            uint32_t nr, b = sets[j].buf;
            const range *r = share_ranges(s, last, b, sets[j].n[0], &at, &nr);
            if (diverged && diverged[b])   /* its part of diff is worked out again after */
                diff -= (int64_t)f.need[b].total - (int64_t)base_tot[b];
            else
                share_load(r, nr, slots + j * SHARE_SLOT, &f.need[b]);
        }
        if (e->flags & SHARE_CLEAR) {   /* one set: both sides empty it */
            f.total = ml_bytes_sub(f.total, f.need[sets[0].buf].total);
            set_clear(&f.need[sets[0].buf]);
        } else {
            bool compute = e->n_reads + e->n_writes > 0;
            const plan_op *op = &p->ops[e->op];   /* read only where not a compute */
            /* an op p lacks (OP_ABSENT, a subset member's: rankshare.c's vary list holds the
             * ops its `when:`s may drop) accesses nothing and is no data op: no B here, and
             * its sets after are those before (rank 0's, or open: a window) */
            bool absent = p->absent && op->kind == OP_ABSENT;
            views += compute && absent;
            plan_access fixed[PLAN_FIXED_ACCESSES];
            const plan_access *acc = NULL;
            size_t n = absent    ? 0
                       : compute ? plan_compute_accesses(p->extra_views + *views++, e->n_reads,
                                                         e->n_writes, &acc, &dyn)
                                 : plan_op_accesses(p, op, fixed, &acc, &dyn);
            if (n > fa_cap) {
                fa_cap = n;
                fa = ml_xrealloc(fa, fa_cap * sizeof *fa);
            }
            size_t m = floor_accesses(&f, acc, n, fa);
            /* every buffer the op touches here is one rank 0's touched (the same op but for
             * its views' offsets and in-place flag): else the sets loaded are not all it reads */
            for (size_t a = 0; a < m && same; a++) {
                bool known = false;
                for (size_t j = 0; j < e->n && !known; j++)
                    known = sets[j].buf == fa[a].buf;
                same = known;
            }
            if (same && !absent) {
                uint64_t here;
                ml_bytes_add(f.total, access_extra(&f, fa, m, &scratch), &here);
                if (!compute && op->kind == OP_COLL)
                    here = ml_bytes_sub(here, inplace_share(&f, op, p->comms, p->rank));
                share_consider(here, e->op, &best, &best_op);
                apply_accesses(&f, fa, m);
            }
        }
        /* each set after the op: rank 0's (a view that moved but changes no set, as the
         * optimizer's slice written, leaves it as loaded), or else its window still open,
         * where this rank keeps its own set to the next event on the buffer */
        for (size_t j = 0; j < e->n && same; j++) {
            uint32_t b = sets[j].buf, nr;
            range_set *r = &f.need[b];
            const range *want = share_ranges(s, last, b, sets[j].n[1], &at, &nr);
            bool equal = r->n == nr && (!nr || !memcmp(r->r, want, nr * sizeof *want));
            bool was = diverged && diverged[b];
            if (equal) {
                if (was)
                    diverged[b] = false;
            } else if (!sets[j].open) {
                same = false;   /* not converged where rank 0's window closed */
            } else if (was) {
                base_tot[b] = ranges_total(want, nr);
                diff += (int64_t)r->total - (int64_t)base_tot[b];
            } else {
                if (!diverged) {
                    diverged = ml_xcalloc(f.n_bufs + 1, sizeof *diverged);
                    own = ml_xcalloc(f.n_bufs + 1, sizeof *own);
                    base_tot = ml_xcalloc(f.n_bufs + 1, sizeof *base_tot);
                }
                base_tot[b] = ranges_total(want, nr);
                if (!own[b])
                    own[b] = ml_xmalloc(SHARE_SLOT * sizeof *own[b]);
                memcpy(own[b], r->r, r->n * sizeof *r->r);
                *r = (range_set){own[b], r->n, SHARE_SLOT, r->total};
                diverged[b] = true;
                diff += (int64_t)r->total - (int64_t)base_tot[b];
            }
        }
        for (size_t j = 0; j < e->n; j++)
            if (!diverged || !diverged[sets[j].buf])
                f.need[sets[j].buf] = (range_set){0};
        /* diff: the sum over the buffers whose sets differ of this rank's set's total less
         * rank 0's (the others' are equal), each within 2^63-1 where s->ok and this rank's
         * total is, else it stops */
        same = same && f.total <= ML_BYTES_MAX;
        if (same && (e->flags & SHARE_GAP)) {   /* the gap's ops: rank 0's B plus diff */
            share_consider(add_signed(gaps->max, diff), gaps->op, &best, &best_op);
            gaps++;
        }
        sets += e->n;
    }
    free(fa);
    free(last);
    free(slots);
    for (uint32_t b = 0; own && b <= f.n_bufs; b++)
        free(own[b]);
    free(own);
    free(diverged);
    free(base_tot);
    free(f.need);
    free(scratch.r);
    ml_vec_free(&dyn);
    if (!same || best > ML_BYTES_MAX)   /* past the bound: the whole pass names the op */
        return false;
    *floor = best;
    if (at_op)
        *at_op = best_op;
    return true;
}

uint64_t floor_rank_after(const rank_plan *p, const floor_forward *fw, size_t *at_op) {
    uint64_t floor;
    if (floor_rank_shared(p, fw, &floor, at_op))
        return floor;
    return floor_pass(p, fw, NULL, NULL, 0, at_op);
}
