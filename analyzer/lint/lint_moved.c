/* SPDX-License-Identifier: MIT */
/* lint_moved.c — lint_walk_rank_moved (analyzer.h): the checks of a rank whose ops are its base's
 * but for some views' offsets, for the buffers those views name alone (below: why that is exact).
 * lint.c keeps the whole walk (lint_rank) and the handlers this one calls (lint_int.h). */
#include "lint/lint_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- a rank that is its base's ops with some views moved (lint_walk_rank_moved) -------------
 *
 * The whole walk (lint_rank) over rank r's ops, where they are the ops the base's walk saw (the
 * base: the rank lint_walk_rank walked last, rank 0 or a group's first rank) but for the offsets
 * and in-place flags of some ops (plan_offsets_apply), and the base's walk reported nothing. Why
 * checking only B, the buffers of the views that can have moved, gives the whole walk's
 * findings, rows, collective sequence and texts:
 *  - Every check is about one buffer: its lifetime (alloc, free, release: ops without views,
 *    the same on both ranks), a view's bounds and chunk (that view and the buffer's alloc and
 *    release), the free hazard (the buffer's last use per stream and the clocks), the race lint
 *    (the buffer's own list of accesses and the clocks), an in-place or copy overlap (two views
 *    of one buffer), the contract (the op alone). The clocks (streams, events, syncs, the host
 *    syncs of inits and checks) follow the op sequence alone: the base's, and kept here as the
 *    whole walk keeps them. So a buffer whose views are all the base's, whose accesses are the
 *    base's, meets the checks the base's walk made of it, with its outcome: nothing. Its ops
 *    are skipped (their clocks kept, their collectives pushed for the cross-rank check).
 *  - The rank itself enters lint in three places: a send/recv's peer (p2p: not taken here), a
 *    collective's in-place rule (of one buffer: that buffer is in B) and NCCL's reduce, which
 *    writes recv on the root alone (lint_race_op: every reduce's recv buffer is in B). And in
 *    expect_error's texts and rows: the base had none, so neither has rank r (the same ops).
 *  - Which views can have moved: those of the moved ops but whole ones with offset 0 (a whole
 *    view has no offset written, resolve_view: it is the whole buffer on every rank; checked,
 *    not assumed), and a same-buffer collective's buffer (its in-place flag). A buffer put in B
 *    that did not move only costs its checks.
 *  - A rank that lacks some computes of the base (OP_ABSENT, rankshare.h's subset members): the
 *    walks skip them, and their views' buffers join B, whose races are redone. Taking out a
 *    compute takes out one enqueue of its stream: the later sequence numbers of that stream
 *    drop by one, and so does every clock entry from it on, which keeps every comparison of
 *    the others' numbers with the clocks (an entry that was the compute's own is the op before
 *    it: ordered after the same ops); so the other buffers' accesses, the same, meet the same
 *    checks. What is not redone of B: an op's own checks are its own, and a free's hazard
 *    reads each stream's last use, the same op or an earlier one of that stream here (done
 *    wherever the later one was done). The records and the coarse verdicts are of one set of
 *    absent ops (moved_absent).
 *  - Two couplings between buffers in the whole walk: an op whose views do not all pass checks
 *    none of its views for races (check_view's false), and an op reports its first race alone.
 *    The second changes nothing: the views of other buffers race with nothing (the base's). The
 *    first would change the accesses recorded for another buffer of the op: there this walk
 *    stops (moved_unsure), what it added is taken back (rank_undo) and lint_rank walks the
 *    rank from its start.
 *  - The race lint of B, the most of what is left (B's slices make segments): the first such
 *    rank runs lint_race_op_coarse instead, which takes every access of B as the whole buffer
 *    and a reduce's recv as written. Its accesses include every rank's and each overlaps every
 *    other, so a buffer it finds no race in has no race on any rank (lint_int.h says why): the
 *    race lint runs only for the buffers it found one in, on that rank in a second walk (the
 *    first's findings taken back, for their order), on the ranks after in their one walk. The
 *    clocks it reads are every rank's; B must be the same (coarse_holds), and the base too (a
 *    new base forgets the verdicts: lint_walk_rank).
 * Anything else that could make rank r's walk differ from the base's but for B (a base walk that
 * reported something, silenced or not, or had expect_error rows; send or recv; another op
 * array; a moved op without views, as an alloc would be) takes lint_rank. */

/* Adds buffer buf to B. */
static void moved_add(lint_ctx *x, uint32_t buf) {
    if (buf >= x->n_bufs || x->moved[buf])
        return;
    x->moved[buf] = 1;
    x->race_only[buf] = 1;
    *(uint32_t *)ml_vec_push(&x->moved_bufs) = buf;
}

/* A view of a moved op that may not be the base's puts its buffer in B. */
static void moved_view(lint_ctx *x, const plan_view *v) {
    if (!(v->whole && v->offset == 0))
        moved_add(x, v->buf);
}

/* The views of a moved op in the order its handler checks them (tmp holds two), *n of them. */
static const plan_view *moved_op_views(const rank_plan *p, const plan_op *op, plan_view tmp[2],
                                       uint32_t *n) {
    switch (op->kind) {
    case OP_COLL:
        tmp[0] = op->u.coll.send, tmp[1] = op->u.coll.recv, *n = 2;
        return tmp;
    case OP_INIT: {   /* data_op's */
        tmp[0] = op->u.init.dst, tmp[1] = op->u.init.src, *n = init_copies(op) ? 2 : 1;
        return tmp;
    }
    case OP_COPY:
        tmp[0] = op->u.copy.src, tmp[1] = op->u.copy.dst, *n = 2;
        return tmp;
    case OP_SCALE:
        *n = 1;
        return &op->u.scale.buf;
    case OP_CHECK:
        tmp[0] = op->u.check.a, tmp[1] = op->u.check.b, *n = 2;
        return tmp;
    case OP_COMPUTE: {
        uint32_t nr, nw;
        const plan_view *v = plan_compute_views(p, op, &nr, &nw);
        *n = nr + nw;
        return v;
    }
    default:
        *n = 0;
        return NULL;
    }
}

/* B for p and the moved ops (moved_ops[0..n)): false where lint_rank must walk it. */
static bool moved_set(lint_ctx *x, const rank_plan *p, const size_t *moved_ops, size_t n) {
    x->snap_ops = NULL;   /* the records are for the B this replaces */
    for (size_t k = 0; k < x->moved_bufs.n; k++) {   /* the rank before's */
        uint32_t b = ML_VEC_AT(&x->moved_bufs, uint32_t, k);
        x->moved[b] = x->race_only[b] = 0;
    }
    x->moved_bufs.n = 0;
    for (size_t k = 0; k < n; k++) {
        if (moved_ops[k] >= p->n_ops)
            return false;
        const plan_op *op = &p->ops[moved_ops[k]];
        plan_view tmp[2];
        uint32_t nv;
        const plan_view *v = moved_op_views(p, op, tmp, &nv);
        if (!v)
            return false;   /* no views to move: not what plan_offsets_apply rewrites */
        for (uint32_t j = 0; j < nv; j++)
            moved_view(x, &v[j]);
        if (op->kind == OP_COLL && op->u.coll.send.buf == op->u.coll.recv.buf)
            moved_add(x, op->u.coll.send.buf);   /* its in-place flag */
    }
    /* every reduce's recv: written on its root alone (the base's reduces, its walk's) */
    for (size_t k = 0; k < x->reduces.n; k++)
        moved_add(x, ML_VEC_AT(&x->reduces, uint32_t, k));
    /* the buffers of the computes p lacks (their views are still the op's) */
    for (size_t k = 0; k < p->n_absent; k++)
        for (size_t i = p->absent[k].lo; i < p->absent[k].hi; i++) {
            const plan_op *op = &p->ops[i];
            const plan_view *v = p->extra_views + op->u.compute.first_view;
            for (uint32_t j = 0; j < op->u.compute.n_reads + op->u.compute.n_writes; j++)
                moved_add(x, v[j].buf);
        }
    return true;
}

/* Before moved op op is walked: what its views' buffers of B are then (lint_buf), for
 * moved_snap_pass. */
static void moved_record(lint_ctx *x, const rank_plan *p, const plan_op *op) {
    plan_view tmp[2];
    uint32_t n;
    const plan_view *v = moved_op_views(p, op, tmp, &n);
    for (uint32_t k = 0; k < n; k++) {
        if (!in_moved(x, v[k].buf))
            continue;
        const lint_buf *b = &x->bufs[v[k].buf];
        x->snaps_ok &= b->live;   /* else lint_snap cannot say it (the base reported it, too) */
        /* ml_vec_push where it must grow; else the slot without its zeroing (written whole) */
        lint_snap *s = x->snaps.n < x->snaps.cap ? &ML_VEC_AT(&x->snaps, lint_snap, x->snaps.n++)
                                                 : ml_vec_push(&x->snaps);
        *s = (lint_snap){b->alloc_op, b->released ? b->release_op : NULL};
    }
}

/* The lint_buf s records (lint_alloc's, then lint_release's). */
static lint_buf snap_buf(const lint_snap *s) {
    const plan_op *a = s->alloc_op, *r = s->release_op;
    lint_buf b = {.ever = true, .live = true, .count = a->u.alloc.count,
                  .bytes = a->u.alloc.bytes, .dtype = a->u.alloc.dtype,
                  .chunks = a->u.alloc.chunks, .alloc_op = a};
    if (r) {
        b.released = true;
        b.keep = r->u.release.keep;
        b.release_op = r;
    }
    return b;
}

/* Whether the coarse verdicts (dirty) hold for B: a whole walk ran them for this very B. */
static bool coarse_holds(const lint_ctx *x) {
    if (!x->coarse_done || x->coarse_bufs.n != x->moved_bufs.n)
        return false;
    return memcmp(x->coarse_bufs.items, x->moved_bufs.items,
                  x->moved_bufs.n * sizeof(uint32_t)) == 0;
}

/* One walk over p's ops the short way, B's checks and its race lint for race_only; false
 * where it stopped for lint_rank (moved_unsure). */
static bool moved_pass(lint_ctx *x, const rank_plan *p) {
    /* B's state as lint_rank starts it; the other buffers' goes unread */
    for (size_t k = 0; k < x->moved_bufs.n; k++) {
        uint32_t b = ML_VEC_AT(&x->moved_bufs, uint32_t, k);
        x->bufs[b] = (lint_buf){0};
        memset(&x->uses[(size_t)b * x->n_streams], 0, x->n_streams * sizeof *x->uses);
        lint_race_clear(&x->race, b);
    }
    lint_clocks_reset(&x->clocks);
    x->moved_abort = false;
    for (size_t i = 0; i < p->n_ops; i++) {
        moved_op(x, p, &p->ops[i]);
        if (x->moved_abort) {
            x->moved_abort = false;
            return false;
        }
    }
    return true;
}

/* What a data, collective or check op does to the clocks, as its handler does it (the host
 * syncs of a host init or a check, the enqueue on its stream), with the coarse race lint of its
 * views of B and a collective's push for the cross-rank check: moved_first_pass's. */
static void moved_clocks(lint_ctx *x, const rank_plan *p, const plan_op *op) {
    uint32_t stream = SCHED_DEFAULT_STREAM;
    bool host = false;
    switch (op->kind) {
    case OP_INIT:   /* a pattern, written by the host (stream_op's n == 1) */
        host = !init_copies(op);
        break;
    case OP_COPY:
        stream = op->u.copy.stream;
        break;
    case OP_SCALE:
        stream = op->u.scale.stream;
        break;
    case OP_COMPUTE:
        stream = op->u.compute.stream;
        break;
    case OP_COLL:
        stream = op->u.coll.stream;
        break;
    case OP_CHECK:
        host = true;
        break;
    default:
        return;
    }
    if (host)
        host_access(x);
    uint64_t seq = lint_clocks_enqueue(&x->clocks, stream);
    if (x->race_on)
        lint_race_op_coarse(&x->coarse, &x->clocks, p, op, stream, seq, x->moved, x->dirty);
    if (host)
        host_access(x);
    if (op->kind == OP_COLL && !ml_colls[op->u.coll.coll].p2p)
        lint_coll_seq_push(&x->colls[x->rank], &x->colls[0], op, (size_t)(op - p->ops));
}

/* The first rank of a B (coarse_done false): no check but the moved ops' own (the others'
 * outcomes are the base's: moved_snap_pass says why, that argument but for the races), with
 * B's lint_buf kept by its allocs, frees and releases as their handlers keep it (the base's
 * walk reported none of them, nor will this one), those of the moved ops' views recorded
 * (snaps), the clocks and the collectives as the whole walk keeps them, and the coarse race
 * lint of B (dirty). False where it stopped for lint_rank (moved_unsure, or moved ops not in
 * increasing order). */
static bool moved_first_pass(lint_ctx *x, const rank_plan *p, const size_t *moved_ops,
                             size_t n) {
    for (size_t k = 0; k < x->moved_bufs.n; k++) {
        uint32_t b = ML_VEC_AT(&x->moved_bufs, uint32_t, k);
        x->bufs[b] = (lint_buf){0};
        x->dirty[b] = 0;
        lint_race_clear(&x->coarse, b);
    }
    lint_clocks_reset(&x->clocks);
    x->snaps.n = 0;
    x->snaps_ok = true;
    size_t m = 0;
    for (size_t i = 0; i < p->n_ops; i++) {
        const plan_op *op = &p->ops[i];
        lint_buf *b;
        switch (op->kind) {
        case OP_ALLOC:
            if (in_moved(x, op->u.alloc.buf)) {
                lint_alloc(x, op);
                lint_race_clear(&x->coarse, op->u.alloc.buf);
            }
            break;
        case OP_FREE:   /* lint_free's state, without its hazard check (the base's outcome) */
            if (in_moved(x, op->u.free.buf)) {
                b = &x->bufs[op->u.free.buf];
                if (b->live) {
                    b->live = false;
                    b->free_op = op;
                }
                lint_race_clear(&x->coarse, op->u.free.buf);
            }
            break;
        case OP_RELEASE:   /* lint_release's, likewise */
            if (!in_moved(x, op->u.release.buf))
                break;
            b = &x->bufs[op->u.release.buf];
            if (b->live && b->chunks && op->u.release.keep < b->chunks && !b->released) {
                b->released = true;
                b->keep = op->u.release.keep;
                b->release_op = op;
            }
            break;
        case OP_RECORD:
            lint_record(x, op);
            break;
        case OP_WAIT:
            lint_wait(x, op);
            break;
        case OP_SYNC:
            lint_sync(x, op);
            break;
        case OP_INIT:
        case OP_COPY:
        case OP_SCALE:
        case OP_COMPUTE:
        case OP_COLL:
        case OP_CHECK:
            if (m < n && moved_ops[m] == i) {
                m++;
                moved_record(x, p, op);
                x->checks_only = true;
                moved_op(x, p, op);
                x->checks_only = false;
                if (x->moved_abort) {
                    x->moved_abort = false;
                    return false;
                }
            }
            moved_clocks(x, p, op);
            break;
        default:   /* record_stream names a live buffer (the base's outcome); the rest, nothing */
            break;
        }
    }
    return m == n;
}

/* A rank after one whose moved_pass recorded B's state at the moved ops (snaps), where the
 * coarse race lint found no race in B. Then the checks whose outcome can differ from the base's
 * are those that read a moved view's offset or a moved in-place flag: the view checks (bounds,
 * the kept chunk) of the moved ops' views, a moved collective's contract, a moved copy's
 * overlap, each at its op. They read the op and its buffers' lint_buf there, which is every
 * such rank's (the same allocs, frees and releases, none refused, none reported by the base);
 * they are redone with that lint_buf, in op order, and nothing else is. The rest is the base's:
 * the other checks of B's views (the same offsets and lint_buf), its hazards (its uses, put by
 * the same ops on the same streams with the same sequence numbers, and the clocks), its races
 * (none: the coarse lint), and what moved_pass would skip. The collective sequence is the one
 * the recording rank pushed, the base's and no unlike rank 0's (the same ops: a collective's
 * key has no offset). An op that moved_unsure stops stops this walk too. */
#define MOVED_AHEAD 8   /* moved ops: how far ahead moved_snap_pass asks for ops */
static bool moved_snap_pass(lint_ctx *x, const rank_plan *p, const size_t *moved_ops,
                            size_t n) {
    size_t at = 0;
    x->checks_only = true;
    for (size_t k = 0; k < n && !x->moved_abort; k++) {
        /* sparse ops of ~100 MB at a million, and the allocs the records name (snap_buf
         * reads them): a cache miss each unless asked for ahead (hints) */
        if (k + MOVED_AHEAD < n)
            __builtin_prefetch(&p->ops[moved_ops[k + MOVED_AHEAD]]);
        if (at + MOVED_AHEAD < x->snaps.n)
            __builtin_prefetch(ML_VEC_AT(&x->snaps, lint_snap, at + MOVED_AHEAD).alloc_op);
        const plan_op *op = &p->ops[moved_ops[k]];
        plan_view tmp[2];
        uint32_t nv;
        const plan_view *v = moved_op_views(p, op, tmp, &nv);
        /* B is the recording rank's (moved_set is not asked again: a pass over the moved ops'
         * views, each a cache miss at a million ops); what it checked of this rank's views,
         * that one not in B is whole at offset 0, is checked here as the views are read */
        x->moved_abort = !v || (op->kind == OP_COLL && op->u.coll.send.buf == op->u.coll.recv.buf &&
                                !in_moved(x, op->u.coll.send.buf));
        for (uint32_t j = 0; j < nv && !x->moved_abort; j++) {
            if (in_moved(x, v[j].buf) && at < x->snaps.n)
                x->bufs[v[j].buf] = snap_buf(&ML_VEC_AT(&x->snaps, lint_snap, at++));
            else if (in_moved(x, v[j].buf) || (v[j].buf < x->n_bufs &&
                                               !(v[j].whole && v[j].offset == 0)))
                x->moved_abort = true;
        }
        if (!x->moved_abort)
            moved_op(x, p, op);
    }
    if (x->moved_abort) {
        x->moved_abort = x->checks_only = false;
        return false;
    }
    x->checks_only = false;
    x->colls[x->rank].n = x->colls[x->base_rank].n;   /* no diff: the recording rank's */
    return true;
}

/* Takes back what the walk of rank x->rank added since the findings numbered n_found: its new
 * findings, its rank in the others (a rank is added once, last: add_finding_at), its
 * collective sequence. What is left is as before that walk (it had no contract rows). */
static void rank_undo(lint_ctx *x, size_t n_found) {
    for (size_t k = n_found; k < x->n_found; k++) {
        free(x->found[k].text);
        free(x->found[k].ranks);
    }
    x->n_found = n_found;
    for (size_t k = 0; k < n_found; k++) {
        lint_finding *f = &x->found[k];
        if (f->n_ranks && f->ranks[f->n_ranks - 1] == x->rank)
            f->n_ranks--;
    }
    if (x->index_cap)
        index_rebuild(x, x->index_cap);
    lint_coll_seq_free(&x->colls[x->rank]);
    x->colls[x->rank] = (lint_coll_seq){0};
}

/* Sets race_only (and race_any) for B: the buffers the coarse lint marked, or none. */
static void race_only_set(lint_ctx *x, bool marked) {
    x->race_any = false;
    for (size_t k = 0; k < x->moved_bufs.n; k++) {
        uint32_t b = ML_VEC_AT(&x->moved_bufs, uint32_t, k);
        x->race_only[b] = marked && x->dirty[b];
        x->race_any |= x->race_only[b];
    }
}

static void lint_rank_moved(lint_ctx *x, const rank_plan *p, const size_t *moved_ops,
                            size_t n) {
    bool sure = x->base_quiet && p->rank > x->base_rank && p->ops == x->base_ops &&
                p->n_ops == x->base_n &&
                p->extra_views == x->base_extra && !p->has_p2p && !p->kept_at && !x->capturing &&
                !p->comms;   /* a collective with `comm:` is checked in the rank's own group */
    if (!sure) {
        lint_rank(x, p);
        return;
    }
    x->rank = p->rank;
    x->plan = p;
    size_t n_found = x->n_found;
    if (p->absent != x->moved_absent) {   /* other ops absent: another B, other clocks */
        x->snap_ops = NULL;
        x->coarse_done = false;
        x->moved_absent = p->absent;
    }
    /* records of these moved ops for the current B, made where the coarse race lint found no
     * race in it: the moved ops' checks alone */
    if (x->snap_ops == moved_ops && x->snap_n == n) {
        if (moved_snap_pass(x, p, moved_ops, n)) {
            x->moved_ranks++;
            return;
        }
        rank_undo(x, n_found);
        lint_rank(x, p);
        return;
    }
    if (!moved_set(x, p, moved_ops, n)) {
        lint_rank(x, p);
        return;
    }
    /* The first rank of this B: moved_first_pass, the moved ops' checks and the coarse race
     * lint; where that lint marks a buffer (a race on some rank), the rank is walked again with
     * the race lint for those (moved_pass), its findings taken back first (rank_undo): the
     * findings in their order. A rank after it: moved_snap_pass where there was no race in B,
     * else moved_pass with the race lint for the marked buffers (a buffer the coarse lint did
     * not mark has no race on any rank: lint_race_op_coarse). */
    bool done;
    if (!coarse_holds(x)) {
        done = moved_first_pass(x, p, moved_ops, n);
        if (done) {
            x->coarse_done = true;
            x->coarse_bufs.n = 0;
            for (size_t k = 0; k < x->moved_bufs.n; k++)
                *(uint32_t *)ml_vec_push(&x->coarse_bufs) =
                    ML_VEC_AT(&x->moved_bufs, uint32_t, k);
            race_only_set(x, true);
            /* the records serve the ranks after it: the collectives as the base's, neither
             * unlike rank 0's, and no race in B */
            const lint_coll_seq *mine = &x->colls[x->rank], *base = &x->colls[x->base_rank];
            if (!x->race_any && x->snaps_ok && !mine->diff && !base->diff && mine->n == base->n) {
                x->snap_ops = moved_ops;
                x->snap_n = n;
            }
            if (x->race_any) {
                rank_undo(x, n_found);
                done = moved_pass(x, p);
            }
        }
    } else {
        race_only_set(x, true);
        done = moved_pass(x, p);
    }
    if (!done) {   /* lint_rank from the start, on what was there before this rank */
        rank_undo(x, n_found);
        lint_rank(x, p);
        return;
    }
    x->moved_ranks++;
}

void lint_walk_rank_moved(lint_walk *w, const rank_plan *p, const size_t *moved_ops, size_t n) {
    lint_rank_moved(&w->x, p, moved_ops, n);
}
