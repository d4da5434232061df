/* SPDX-License-Identifier: MIT */
/* lint.c — checks the expanded plans of every rank before anything runs (analyzer.h).
 *
 * One walk per rank over its ops keeps, per buffer, whether it is live and its shape, and per
 * (buffer, stream) the last op that used it; lint_hazard.c keeps what each stream and the host
 * know to be complete. Findings are merged across ranks: a finding every rank makes (same step,
 * same text) is one diagnostic without a rank; one only some ranks make is one diagnostic per
 * rank with its `rank` set. Inside a repeat a finding is reported once per step, not per
 * iteration.
 *
 * A rank whose ops are rank 0's but for some views' offsets (the pipeline's middle path) can
 * take lint_walk_rank_moved instead: the checks of the buffers those views name alone, when rank
 * 0 was clean (lint_moved.c says why that is exact).
 *
 * expect_error: the op after OP_EXPECT_BEGIN is checked in capture mode: its first error is kept,
 * not reported, and a refused op has no effect (no use, no collective issued). A matching error
 * is a passing contract row; no error, or another one, is a diagnostic. */
#include "lint/lint_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;


/* ---- findings ---------------------------------------------------------------------------------- */

/* Over everything same_finding compares but the note's text: one step that repeats a finding
 * at many places (`free: [a, a, ...]`) must spread over the table, not share one probe chain. */
static uint64_t finding_hash(const sched_step *step, ml_mark mark, const lint_note *note,
                             const char *text) {
    uint64_t h = 1469598103934665603ull;
    const uint64_t parts[] = {(uint64_t)(uintptr_t)step, mark.line, mark.col, note->mark.line,
                              note->mark.col};
    for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
        h = (h ^ parts[k]) * 1099511628211ull;
    for (const char *p = text; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* One finding: the same step, text and places (ranks whose earlier free was elsewhere differ). */
static bool same_finding(const lint_finding *g, const sched_step *step, ml_mark mark,
                         const char *text, const lint_note *note) {
    return g->step == step && g->mark.line == mark.line && g->mark.col == mark.col &&
           strcmp(g->text, text) == 0 && g->note.mark.line == note->mark.line &&
           g->note.mark.col == note->mark.col && strcmp(g->note.text, note->text) == 0;
}

void index_rebuild(lint_ctx *x, size_t cap) {
    free(x->index);
    x->index = ml_xcalloc(cap, sizeof *x->index);
    x->index_cap = cap;
    for (size_t k = 0; k < x->n_found; k++) {
        const lint_finding *f = &x->found[k];
        size_t at = finding_hash(f->step, f->mark, &f->note, f->text) & (cap - 1);
        while (x->index[at])
            at = (at + 1) & (cap - 1);
        x->index[at] = (uint32_t)k + 1;
    }
}

static void add_finding_at(lint_ctx *x, const plan_op *op, ml_mark mark, const lint_note *note,
                           const char *code, const char *text) {
    if (!lint_code_on(x->o, code))
        return;   /* --no-lint: the runtime is to refuse it (lint_classes.c) */
    static const lint_note none;
    if (!note)
        note = &none;
    if (2 * (x->n_found + 1) > x->index_cap)
        index_rebuild(x, x->index_cap ? 2 * x->index_cap : 64);
    size_t at = finding_hash(op->step, mark, note, text) & (x->index_cap - 1);
    lint_finding *f = NULL;
    for (; x->index[at]; at = (at + 1) & (x->index_cap - 1)) {
        lint_finding *g = &x->found[x->index[at] - 1];
        if (same_finding(g, op->step, mark, text, note)) {
            f = g;
            break;
        }
    }
    if (!f) {
        if (x->n_found == x->cap_found) {
            x->cap_found = x->cap_found ? 2 * x->cap_found : 32;
            x->found = ml_xrealloc(x->found, x->cap_found * sizeof *x->found);
        }
        f = &x->found[x->n_found];
        *f = (lint_finding){.step = op->step, .mark = mark, .code = code,
                            .text = ml_xstrdup(text), .note = *note};
        x->index[at] = (uint32_t)++x->n_found;
    }
    if (f->n_ranks && f->ranks[f->n_ranks - 1] == x->rank)
        return;   /* this rank said it already (a repeat) */
    if (f->n_ranks == f->cap_ranks) {
        f->cap_ranks = f->cap_ranks ? 2 * f->cap_ranks : 4;
        f->ranks = ml_xrealloc(f->ranks, f->cap_ranks * sizeof *f->ranks);
    }
    f->ranks[f->n_ranks++] = x->rank;
}

static void vreport(lint_ctx *x, const plan_op *op, ml_mark mark, const lint_note *note,
                    sched_error_code err, const char *code, const char *fmt, va_list ap) {
    x->reports++;
    char text[320];
    vsnprintf(text, sizeof text, fmt, ap);
    if (x->capturing) {
        if (!x->captured) {
            x->captured = true;
            x->captured_code = err;
            x->captured_mark = mark;
            memcpy(x->captured_text, text, sizeof text);
        }
        return;
    }
    add_finding_at(x, op, mark, note, code, text);
}

/* Reports an error of op at mark, the offending character, with note (NULL: none) at the
 * second place; `err` is the named error it is (ERR_COUNT_ for lifetime errors). */
static void report_at(lint_ctx *x, const plan_op *op, ml_mark mark, const lint_note *note,
                      sched_error_code err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static void report_at(lint_ctx *x, const plan_op *op, ml_mark mark, const lint_note *note,
                      sched_error_code err, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(x, op, mark, note, err, code, fmt, ap);
    va_end(ap);
}

/* A note at mark: "'x' was freed here". */
static lint_note note_at(ml_mark mark, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static lint_note note_at(ml_mark mark, const char *fmt, ...) {
    lint_note n = {.mark = mark};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n.text, sizeof n.text, fmt, ap);
    va_end(ap);
    return n;
}

/* True when the op being checked was refused inside expect_error: it must have no effect. */
static bool refused(const lint_ctx *x) { return x->capturing && x->captured; }

static size_t emit_findings(lint_ctx *x, ml_diags *d) {
    size_t errors = 0;
    for (size_t k = 0; k < x->n_found; k++) {
        lint_finding *f = &x->found[k];
        bool all = f->n_ranks == (size_t)x->world;
        for (size_t j = 0; j < (all ? 1 : f->n_ranks); j++) {
            int rank = all ? -1 : f->ranks[j];
            ml_diag_add(d, ML_DIAG_ERROR, x->s->file, f->mark, rank, f->code, "%s", f->text);
            if (f->note.mark.line)   /* right after its error, with the same rank */
                ml_diag_add(d, ML_DIAG_NOTE, x->s->file, f->note.mark, rank, f->code, "%s",
                            f->note.text);
        }
        errors += all ? 1 : f->n_ranks;
        free(f->text);
        free(f->ranks);
    }
    x->n_found = 0;   /* emitted and freed (lint_walk_free frees the rest) */
    return errors;
}

/* ---- buffers and views -------------------------------------------------------------------------- */

static const char *buf_name(const lint_ctx *x, uint32_t buf) {
    return sched_sym_name(x->s, SYM_BUFFER, buf);
}

/* Where op's k-th view, or the buffer name of an alloc, free or release, is written. Only a
 * message asks: the mark lives in the step (a cache miss per op) or the schedule's side table
 * (a search), so the checks call it on their error paths only. */
static ml_mark where(const lint_ctx *x, const plan_op *op, uint32_t k) {
    return plan_view_mark(x->s, op, k);
}

/* check_view's findings, for a view that is not plainly fine: the buffer not allocated, freed,
 * the view out of bounds or outside a released buffer's kept chunk. Apart from check_view, whose
 * every call is inlined, so that a view that passes (the usual) costs a few compares. */
static __attribute__((noinline)) bool check_view_findings(lint_ctx *x, const plan_op *op,
                                                          const plan_view *v, uint32_t which) {
    const lint_buf *b = &x->bufs[v->buf];
    /* the name only for a message: a view that passes, the usual, never looks it up */
    if (!b->ever) {
        const char *name = buf_name(x, v->buf);
        report_at(x, op, where(x, op, which), NULL, ERR_COUNT_, "not_allocated",
                  "use of '%s' which is not allocated", name);
        return false;
    }
    if (!b->live) {
        const char *name = buf_name(x, v->buf);
        lint_note n = note_at(where(x, b->free_op, 0), "'%s' was freed here", name);
        report_at(x, op, where(x, op, which), &n, ERR_COUNT_, "use_after_free",
                  "use of '%s' after free", name);
        return false;
    }
    char vt[200];
    if (v->offset > b->count || v->count > b->count - v->offset) {
        lint_view_text(x->s, v, vt, sizeof vt);
        /* at the expression that goes past the end: the offset, or else the count */
        const sched_view *sv = plan_sched_view(op, which);
        ml_mark at = sv ? sched_view_expr_mark(sv, v->offset <= b->count, SCHED_FIRST_TOKEN)
                        : where(x, op, which);
        report_at(x, op, at, NULL, ERR_OUT_OF_BOUNDS, "out_of_bounds",
                  "view %s is outside '%s' (%llu elements)", vt, buf_name(x, v->buf),
                  (ull)b->count);
        return false;
    }
    if (b->released && v->count) {
        /* chunk k holds bytes [k*c, min((k+1)*c, bytes)) with c = ceil(bytes / chunks) */
        uint64_t esize = ml_dtypes[b->dtype].size;
        uint64_t c = (b->bytes + b->chunks - 1) / b->chunks;
        uint64_t lo = (uint64_t)b->keep * c, hi = lo + c < b->bytes ? lo + c : b->bytes;
        if (v->offset * esize < lo || (v->offset + v->count) * esize > hi) {
            lint_view_text(x->s, v, vt, sizeof vt);
            lint_note n = note_at(where(x, b->release_op, 0), "'%s' was released here, keeping "
                                  "chunk %u", buf_name(x, v->buf), b->keep);
            report_at(x, op, where(x, op, which), &n, ERR_COUNT_, "use_after_release",
                      "use of %s outside chunk %u, the only one kept by its release", vt, b->keep);
            return false;
        }
    }
    return true;
}

/* Checks that view v, op's which-th (plan_op_accesses' order), can be used by op. False when its
 * buffer is not there at all (nothing more about it is worth checking). */
static inline bool check_view(lint_ctx *x, const plan_op *op, const plan_view *v,
                              uint32_t which) {
    if (v->buf == SCHED_NO_SYM)
        return true;   /* a closed-form check operand */
    const lint_buf *b = &x->bufs[v->buf];
    if (b->live && !b->released && v->offset <= b->count && v->count <= b->count - v->offset)
        return true;   /* what check_view_findings would pass without a word */
    return check_view_findings(x, op, v, which);
}

/* op's view k (of buffer buf, live; stream < n_streams) is its last use on stream. */
static void put_use(lint_ctx *x, const plan_op *op, uint32_t buf, uint32_t k, uint32_t stream,
                    uint64_t seq) {
    lint_use *u = &x->uses[(size_t)buf * x->n_streams + stream];
    u->seq = seq;
    u->op = op;
    u->view = k;
}

static void note_use(lint_ctx *x, const plan_op *op, const plan_view *v, uint32_t k,
                     uint32_t stream, uint64_t seq) {
    if (v->buf == SCHED_NO_SYM || !x->bufs[v->buf].live || stream >= x->n_streams)
        return;
    put_use(x, op, v->buf, k, stream, seq);
}

/* A free (or release) at the host while an op on another stream may still use the buffer. */
static void check_free_hazard(lint_ctx *x, const plan_op *op, uint32_t buf, const char *verb) {
    if (!x->hazard_on)
        return;
    for (uint32_t u = 0; u < x->n_streams; u++) {
        const lint_use *use = &x->uses[(size_t)buf * x->n_streams + u];
        if (!use->seq || use->recorded || lint_clocks_done_for_free(&x->clocks, u, use->seq))
            continue;
        const char *sn = sched_sym_name(x->s, SYM_STREAM, u);
        lint_note n = note_at(where(x, use->op, use->view), "%s uses '%s' here on stream '%s'",
                              plan_op_name(use->op), buf_name(x, buf), sn);
        report_at(x, op, where(x, op, 0), &n, ERR_COUNT_, "hazard",
                  "%s of '%s' while %s on stream '%s' may still use it: a race under "
                  "stream-ordered allocators (cudaFreeAsync); under plain cudaFree a hidden "
                  "device-wide synchronization — add sync: {stream: %s} or wait on an event",
                  verb, buf_name(x, buf), plan_op_name(use->op), sn, sn);
        return;
    }
}

/* The race lint_race_op found: its text and note, then the error. Only here, off the path of
 * an op without a race, is any text written. */
static __attribute__((noinline, cold)) void report_race(lint_ctx *x, const lint_race_found *f) {
    char text[320];
    lint_note other;
    lint_race_text(&x->race, x->plan, f, text, sizeof text, &other);
    report_at(x, f->me.op, where(x, f->me.op, f->me.view), &other, ERR_COUNT_, "race", "%s",
              text);
}

/* Every view op touches, against the accesses of other streams it is not ordered after: one
 * race reported per op, the first found. Not inside expect_error: a refused op has no effect,
 * and one that runs is there for its contract row, not for its ordering. */
/* moved (a constant at every call): lint_walk_rank_moved's walk, the buffers of B alone. */
static inline __attribute__((always_inline)) void
check_races(lint_ctx *x, const plan_op *op, uint32_t stream, uint64_t seq, bool moved) {
    if (!x->race_on || x->capturing || (moved && !x->race_any))
        return;
    lint_race_found f;
    if (moved ? lint_race_op_only(&x->race, &x->clocks, x->plan, x->rank, op, stream, seq, &f,
                                  x->race_only)
              : lint_race_op(&x->race, &x->clocks, x->plan, x->rank, op, stream, seq, &f))
        report_race(x, &f);
}

/* In lint_walk_rank_moved's walk, view v is left out: another buffer's, whose checks are rank
 * 0's (*other says one was). Constant false in the whole walk. */
static inline __attribute__((always_inline)) bool
skipped(const lint_ctx *x, const plan_view *v, bool moved, bool *other) {
    if (!moved || in_moved(x, v->buf))
        return false;
    *other |= v->buf != SCHED_NO_SYM;
    return true;
}

/* An op of lint_walk_rank_moved's walk with a view of B that failed its check and a view of
 * another buffer: the whole walk would skip that view's race check too (the op's views are
 * checked for races only when all pass), so the other buffer's accesses would no longer be
 * rank 0's. The walk stops, for lint_rank's. */
static inline __attribute__((always_inline)) bool
moved_unsure(lint_ctx *x, bool moved, bool ok, bool other) {
    if (!moved || ok || !other)
        return false;
    x->moved_abort = true;
    return true;
}

/* The handlers of lint_op, one per kind of op, stay functions of their own: lint_op is then a
 * jump to one, and each saves only the registers its own work needs (inlined into lint_op, all of
 * them, with their error paths, made every op of a million pay for the largest). */
#define LINT_HANDLER __attribute__((noinline))

/* ---- ops ----------------------------------------------------------------------------------------- */

LINT_HANDLER void lint_alloc(lint_ctx *x, const plan_op *op) {
    lint_buf *b = &x->bufs[op->u.alloc.buf];
    if (b->live) {
        const char *name = buf_name(x, op->u.alloc.buf);
        lint_note n = note_at(where(x, b->alloc_op, 0), "'%s' was allocated here", name);
        report_at(x, op, where(x, op, 0), &n, ERR_COUNT_, "live_alloc",
                  "alloc of '%s' which is still live", name);
    }
    if (refused(x))
        return;
    *b = (lint_buf){.ever = true, .live = true, .count = op->u.alloc.count,
                    .bytes = op->u.alloc.bytes, .dtype = op->u.alloc.dtype,
                    .chunks = op->u.alloc.chunks, .alloc_op = op};
    /* no use since the alloc: seq 0 (op and view are read only under a seq), not recorded; two
     * stores per stream instead of a call to memset per alloc */
    lint_use *u = &x->uses[(size_t)op->u.alloc.buf * x->n_streams];
    for (uint32_t k = 0; k < x->n_streams; k++) {
        u[k].seq = 0;
        u[k].recorded = false;
    }
    lint_race_clear(&x->race, op->u.alloc.buf);
}

static LINT_HANDLER void lint_free(lint_ctx *x, const plan_op *op) {
    uint32_t buf = op->u.free.buf;
    lint_buf *b = &x->bufs[buf];
    const char *name = b->live ? NULL : buf_name(x, buf);   /* for a message only */
    if (!b->ever) {
        report_at(x, op, where(x, op, 0), NULL, ERR_COUNT_, "not_allocated",
                  "free of '%s' which is not allocated", name);
    } else if (!b->live) {
        lint_note n = note_at(where(x, b->free_op, 0), "'%s' was freed here", name);
        report_at(x, op, where(x, op, 0), &n, ERR_COUNT_, "double_free", "'%s' freed twice", name);
    } else
        check_free_hazard(x, op, buf, "free");
    if (refused(x) || !b->live)
        return;
    b->live = false;
    b->free_op = op;
    lint_race_clear(&x->race, buf);
}

/* An op naming buffer buf (release, record_stream: `verb`) needs it live: else an error at the
 * name, with the free as its note. True when it is live. */
static bool named_live(lint_ctx *x, const plan_op *op, uint32_t buf, const char *verb) {
    const lint_buf *b = &x->bufs[buf];
    const char *name = buf_name(x, buf);
    if (!b->ever) {
        report_at(x, op, where(x, op, 0), NULL, ERR_COUNT_, "not_allocated",
                  "%s of '%s' which is not allocated", verb, name);
    } else if (!b->live) {
        lint_note n = note_at(where(x, b->free_op, 0), "'%s' was freed here", name);
        report_at(x, op, where(x, op, 0), &n, ERR_COUNT_, "use_after_free",
                  "%s of '%s' after free", verb, name);
    }
    return b->live;
}

static LINT_HANDLER void lint_release(lint_ctx *x, const plan_op *op) {
    uint32_t buf = op->u.release.buf;
    lint_buf *b = &x->bufs[buf];
    const char *name = buf_name(x, buf);
    lint_note n;
    if (!named_live(x, op, buf, "release"))
        return;   /* a release of a dead buffer has no effect */
    if (b->chunks == 0) { /* no `chunks:`; `chunks: 1` is one chunk, whose release keeps all */
        n = note_at(where(x, b->alloc_op, 0), "'%s' was allocated here, without 'chunks'", name);
        report_at(x, op, where(x, op, 0), &n, ERR_COUNT_, "no_chunks",
                  "release of '%s' which was not allocated in chunks", name);
    } else if (op->u.release.keep >= b->chunks) {
        n = note_at(where(x, b->alloc_op, 0), "'%s' was allocated here in %u chunks", name,
                    b->chunks);
        report_at(x, op, sched_part_mark(x->s, op->step, SCHED_AT_KEEP), &n, ERR_OUT_OF_BOUNDS,
                  "out_of_bounds", "release of '%s' keeps chunk %u but it has %u chunks", name,
                  op->u.release.keep, b->chunks);
    } else if (b->released) {
        n = note_at(where(x, b->release_op, 0), "'%s' was released here", name);
        report_at(x, op, where(x, op, 0), &n, ERR_COUNT_, "double_release",
                  "release of '%s' which was already released", name);
    } else
        check_free_hazard(x, op, buf, "release");
    if (refused(x) || !b->live || b->chunks == 0 || op->u.release.keep >= b->chunks || b->released)
        return;
    b->released = true;
    b->keep = op->u.release.keep;
    b->release_op = op;
}

static inline __attribute__((always_inline)) void coll_op(lint_ctx *x, const plan_op *op,
                                                          bool moved) {
    bool other = false;
    bool skip_send = skipped(x, &op->u.coll.send, moved, &other);
    bool skip_recv = skipped(x, &op->u.coll.recv, moved, &other);
    bool send_ok = skip_send || check_view(x, op, &op->u.coll.send, 0);
    bool recv_ok = skip_recv || check_view(x, op, &op->u.coll.recv, 1);
    if (moved_unsure(x, moved, send_ok && recv_ok, other))
        return;
    /* the contract reads the rank only in a send/recv's peer and in the in-place rule of one
     * buffer (lint_coll_contract): a collective without a view of B has rank 0's outcome */
    bool mine = !skip_send || !skip_recv;
    /* lint_coll_broken first: the text only for a collective that breaks a rule */
    const ml_comms *comms = x->plan->comms;
    lint_coll_rule broken = LINT_RULE_NONE;
    if (send_ok && recv_ok && mine &&
        (broken = lint_coll_broken(op, comms, x->world, x->rank)) != LINT_RULE_NONE) {
        char detail[240];
        lint_contract_at part;
        sched_error_code err =
            lint_coll_contract(op, comms, x->world, x->rank, detail, sizeof detail, &part);
        if (err != ERR_NONE) {
            ml_mark at = part == LINT_AT_ROOT ? sched_part_mark(x->s, op->step, SCHED_AT_ROOT)
                         : part == LINT_AT_STEP ? sched_part_mark(x->s, op->step, SCHED_AT_OP)
                         : part == LINT_AT_KEY  ? plan_op_mark(op)
                                                : where(x, op, part == LINT_AT_RECV);
            report_at(x, op, at, NULL, err, sched_error_names[err], "%s", detail);
        }
    }
    if (refused(x) || (moved && x->checks_only))   /* checks_only: moved_snap_pass */
        return;
    uint32_t stream = op->u.coll.stream;
    uint64_t seq = lint_clocks_enqueue(&x->clocks, stream);
    if (send_ok && recv_ok && stream < x->n_streams) {   /* live buffers: note_use's tests pass */
        if (!skip_send && op->u.coll.send.buf != SCHED_NO_SYM)
            put_use(x, op, op->u.coll.send.buf, 0, stream, seq);
        if (!skip_recv && op->u.coll.recv.buf != SCHED_NO_SYM)
            put_use(x, op, op->u.coll.recv.buf, 1, stream, seq);
    } else {
        if (!skip_send)
            note_use(x, op, &op->u.coll.send, 0, stream, seq);
        if (!skip_recv)
            note_use(x, op, &op->u.coll.recv, 1, stream, seq);
    }
    if (send_ok && recv_ok && mine)
        check_races(x, op, op->u.coll.stream, seq, moved);
    /* a send/recv pairs with one peer (lint_p2p.c); a collective on a communicator the rank is
     * not in was reported above, and has no group to match */
    if (ml_colls[op->u.coll.coll].p2p || broken == LINT_RULE_MEMBER)
        return;
    if (x->order)
        lint_order_push(x->order, op, x->rank);
    if (comms && op->u.coll.comm)
        lint_group_seq_push(x->groups, op, x->rank);
    else
        lint_coll_seq_push(&x->colls[x->rank], x->rank ? &x->colls[0] : NULL, op,
                           (size_t)(op - x->plan->ops));
}

static LINT_HANDLER void lint_coll(lint_ctx *x, const plan_op *op) {
    if (ml_colls[op->u.coll.coll].flow.root_only)   /* lint_walk_rank_moved's B: moved_set */
        *(uint32_t *)ml_vec_push(&x->reduces) = op->u.coll.recv.buf;
    coll_op(x, op, false);
}
static LINT_HANDLER void moved_coll(lint_ctx *x, const plan_op *op) { coll_op(x, op, true); }

/* Element counts and dtypes of two views one op moves data between (copy, init from a copy);
 * the error is at the destination, op's dst-th view, which must take the source as it is. */
static void check_same_shape(lint_ctx *x, const plan_op *op, const plan_view *src,
                             const plan_view *dst, uint32_t dst_k) {
    if (src->count == dst->count && src->dtype == dst->dtype)
        return;   /* the usual: no texts to write */
    char st[200], dt[200];
    lint_view_text(x->s, src, st, sizeof st);
    lint_view_text(x->s, dst, dt, sizeof dt);
    if (src->count != dst->count)
        report_at(x, op, where(x, op, dst_k), NULL, ERR_SIZE_MISMATCH, "size_mismatch",
                  "%s from %s (%llu elements) into %s (%llu elements)", plan_op_name(op), st,
                  (ull)src->count, dt, (ull)dst->count);
    else if (src->dtype != dst->dtype)
        report_at(x, op, where(x, op, dst_k), NULL, ERR_DTYPE_MISMATCH, "dtype_mismatch",
                  "%s from %s (%s) into %s (%s)", plan_op_name(op), st,
                  ml_dtypes[src->dtype].name, dt, ml_dtypes[dst->dtype].name);
}

/* A copy between overlapping views of one buffer reads what it has already written (the runtime
 * refuses it, a `copy` step's as an `init: {copy: V}`'s); a copy of a view onto itself is a
 * no-op and allowed, as the runtime does. dst_k: the destination's view, where it points. */
static void check_copy_overlap(lint_ctx *x, const plan_op *op, const plan_view *src,
                               const plan_view *dst, uint32_t dst_k) {
    if (src->buf != dst->buf || src->offset == dst->offset || !src->count || !dst->count ||
        src->offset >= dst->offset + dst->count || dst->offset >= src->offset + src->count)
        return;
    char st[200], dt[200];
    lint_view_text(x->s, src, st, sizeof st);
    lint_view_text(x->s, dst, dt, sizeof dt);
    report_at(x, op, where(x, op, dst_k), NULL, ERR_BAD_INPLACE, "bad_inplace",
              "%s from %s into %s: source and destination overlap in '%s'",
              op->kind == OP_INIT ? "init copy" : "copy", st, dt, buf_name(x, src->buf));
}

/* Ops that use views on a stream: checks, then (unless refused) one enqueue and the uses. With
 * moved, the views of B alone (the shape checks read counts and dtypes, rank 0's everywhere; a
 * copy's overlap one buffer's offsets: they are redone where the op has a view of B). */
static inline __attribute__((always_inline)) void
stream_op(lint_ctx *x, const plan_op *op, const plan_view *views, uint32_t n, uint32_t stream,
          bool moved) {
    bool ok = true, mine = !moved, other = false;
    for (uint32_t k = 0; k < n; k++) {
        if (skipped(x, &views[k], moved, &other))
            continue;
        mine = true;
        ok &= check_view(x, op, &views[k], k);
    }
    if (moved_unsure(x, moved, ok, other))
        return;
    if (ok && mine && op->kind == OP_COPY) {
        check_same_shape(x, op, &views[0], &views[1], 1);
        check_copy_overlap(x, op, &views[0], &views[1], 1);
    }
    if (ok && mine && op->kind == OP_INIT && n == 2) {   /* views: dst, src */
        check_same_shape(x, op, &views[1], &views[0], 0);
        check_copy_overlap(x, op, &views[1], &views[0], 0);
    }
    if (refused(x) || (moved && x->checks_only))
        return;
    bool host = op->kind == OP_INIT && n == 1;   /* a pattern, written by the host */
    if (host)
        host_access(x);
    uint64_t seq = lint_clocks_enqueue(&x->clocks, stream);
    if (!mine) {
    } else if (ok && stream < x->n_streams) {   /* every view's buffer is live: note_use's tests pass */
        for (uint32_t k = 0; k < n; k++)
            if (views[k].buf != SCHED_NO_SYM && (!moved || in_moved(x, views[k].buf)))
                put_use(x, op, views[k].buf, k, stream, seq);
        check_races(x, op, stream, seq, moved);
    } else {
        for (uint32_t k = 0; k < n; k++)
            if (!moved || in_moved(x, views[k].buf))
                note_use(x, op, &views[k], k, stream, seq);
    }
    if (host)
        host_access(x);
}

static void lint_stream_op(lint_ctx *x, const plan_op *op, const plan_view *views, uint32_t n,
                           uint32_t stream) {
    stream_op(x, op, views, n, stream, false);
}

static void moved_stream_op(lint_ctx *x, const plan_op *op, const plan_view *views, uint32_t n,
                            uint32_t stream) {
    stream_op(x, op, views, n, stream, true);
}

static inline __attribute__((always_inline)) void check_op(lint_ctx *x, const plan_op *op,
                                                           bool moved) {
    const sched_check *c = op->step->u.check;
    const plan_view *a = &op->u.check.a, *b = &op->u.check.b;
    bool other = false;
    bool skip_a = skipped(x, a, moved, &other), skip_b = skipped(x, b, moved, &other);
    bool a_ok = skip_a || check_view(x, op, a, 0);   /* both errors */
    bool b_ok = skip_b || check_view(x, op, b, 1);
    bool ok = a_ok && b_ok;
    if (moved_unsure(x, moved, ok, other))
        return;
    bool mine = !skip_a || !skip_b;   /* the rest reads counts alone: rank 0's outcome */
    if (ok && mine && a->buf != SCHED_NO_SYM && b->buf != SCHED_NO_SYM && a->count != b->count)
        report_at(x, op, where(x, op, 1), NULL, ERR_SIZE_MISMATCH, "size_mismatch",
                  "check '%s' compares %llu elements with %llu", c->name ? c->name : "",
                  (ull)a->count, (ull)b->count);
    const plan_view *rolled[2] = {op->u.check.roll_a ? a : NULL, op->u.check.roll_b ? b : NULL};
    for (int k = 0; k < 2 && ok && mine; k++) {
        if (rolled[k] && rolled[k]->count % (uint64_t)x->world) {
            char vt[200];
            lint_view_text(x->s, rolled[k], vt, sizeof vt);
            report_at(x, op, where(x, op, (uint32_t)k), NULL, ERR_SIZE_MISMATCH, "size_mismatch",
                      "check '%s' rolls the shards of %s, but %llu elements do not split into "
                      "world (%d) shards", c->name ? c->name : "", vt, (ull)rolled[k]->count,
                      x->world);
        }
    }
    if (refused(x) || (moved && x->checks_only))
        return;
    host_access(x);
    uint64_t seq = lint_clocks_enqueue(&x->clocks, SCHED_DEFAULT_STREAM);
    if (!skip_a)
        note_use(x, op, a, 0, SCHED_DEFAULT_STREAM, seq);
    if (!skip_b)
        note_use(x, op, b, 1, SCHED_DEFAULT_STREAM, seq);
    if (ok && mine)
        check_races(x, op, SCHED_DEFAULT_STREAM, seq, moved);
    host_access(x);
}

static LINT_HANDLER void lint_check(lint_ctx *x, const plan_op *op) { check_op(x, op, false); }
static LINT_HANDLER void moved_check(lint_ctx *x, const plan_op *op) { check_op(x, op, true); }

/* A wait or sync on event ev, which this rank has not recorded yet: an error at the event, with
 * the second place (where this rank records it after all, if it does) as its note. */
static __attribute__((noinline, cold)) void unrecorded_event(lint_ctx *x, const plan_op *op,
                                                             uint32_t ev) {
    const char *name = sched_sym_name(x->s, SYM_EVENT, ev);
    lint_note n = {0};
    for (const plan_op *r = op + 1; r < x->plan->ops + x->plan->n_ops; r++)
        if (r->kind == OP_RECORD && r->u.event.event == ev) {
            n = note_at(sched_part_mark(x->s, r->step, SCHED_AT_EVENT),
                        "'%s' is recorded here, after the %s", name,
                        op->kind == OP_WAIT ? "wait" : "sync");
            break;
        }
    report_at(x, op, sched_part_mark(x->s, op->step, SCHED_AT_EVENT), &n, ERR_COUNT_,
              "unrecorded_event", "%s on event '%s' before any record of it",
              op->kind == OP_WAIT ? "wait" : "sync", name);
}

/* record, wait and sync: a third of a training plan's ops are records and waits, each with a
 * handler of its own (no second test of the kind) */
LINT_HANDLER void lint_record(lint_ctx *x, const plan_op *op) {
    if (!refused(x))
        lint_clocks_record(&x->clocks, op->u.event.event, op->u.event.stream);
}

LINT_HANDLER void lint_wait(lint_ctx *x, const plan_op *op) {
    uint32_t ev = op->u.event.event;
    if (ev < x->clocks.n_events && !x->clocks.recorded[ev])
        unrecorded_event(x, op, ev);
    if (!refused(x))
        lint_clocks_wait(&x->clocks, ev, op->u.event.stream);
}

LINT_HANDLER void lint_sync(lint_ctx *x, const plan_op *op) {
    uint32_t ev = op->u.sync.event;
    if (op->u.sync.kind == SYNC_EVENT && ev < x->clocks.n_events && !x->clocks.recorded[ev])
        unrecorded_event(x, op, ev);
    if (!refused(x))
        lint_clocks_sync(&x->clocks, op->u.sync.kind, op->u.sync.stream, ev);
}

/* record_stream names a live buffer (the tensor must exist to record a use of it). */
static LINT_HANDLER void lint_record_stream(lint_ctx *x, const plan_op *op) {
    uint32_t buf = op->u.record_stream.buf;
    /* the free waits for that stream now */
    if (named_live(x, op, buf, "record_stream") && op->u.record_stream.stream < x->n_streams)
        x->uses[(size_t)buf * x->n_streams + op->u.record_stream.stream].recorded = true;
}

/* The ops that use views on a stream. */
static inline __attribute__((always_inline)) void data_op(lint_ctx *x, const rank_plan *p,
                                                          const plan_op *op, bool moved) {
    void (*const stream)(lint_ctx *, const plan_op *, const plan_view *, uint32_t, uint32_t) =
        moved ? moved_stream_op : lint_stream_op;
    switch (op->kind) {
    case OP_INIT: {
        plan_view v[2] = {op->u.init.dst, op->u.init.src};
        stream(x, op, v, init_copies(op) ? 2 : 1, SCHED_DEFAULT_STREAM);
        break;
    }
    case OP_COPY: {
        plan_view v[2] = {op->u.copy.src, op->u.copy.dst};
        stream(x, op, v, 2, op->u.copy.stream);
        break;
    }
    case OP_SCALE:
        stream(x, op, &op->u.scale.buf, 1, op->u.scale.stream);
        break;
    default: {   /* OP_COMPUTE */
        uint32_t nr, nw;
        const plan_view *v = plan_compute_views(p, op, &nr, &nw);
        stream(x, op, v, nr + nw, op->u.compute.stream);
        break;
    }
    }
}

static LINT_HANDLER void lint_data_op(lint_ctx *x, const rank_plan *p, const plan_op *op) {
    data_op(x, p, op, false);
}
static LINT_HANDLER void moved_data_op(lint_ctx *x, const rank_plan *p, const plan_op *op) {
    data_op(x, p, op, true);
}

/* Inlined into lint_rank's loops (a call per op otherwise; the handlers stay calls). */
static inline __attribute__((always_inline)) void lint_op(lint_ctx *x, const rank_plan *p,
                                                          const plan_op *op) {
    switch (op->kind) {
    case OP_ALLOC:
        lint_alloc(x, op);
        break;
    case OP_FREE:
        lint_free(x, op);
        break;
    case OP_RELEASE:
        lint_release(x, op);
        break;
    case OP_COLL:
        lint_coll(x, op);
        break;
    case OP_SYNC:
        lint_sync(x, op);
        break;
    case OP_RECORD:
        lint_record(x, op);
        break;
    case OP_WAIT:
        lint_wait(x, op);
        break;
    case OP_INIT:
    case OP_COPY:
    case OP_SCALE:
    case OP_COMPUTE:
        lint_data_op(x, p, op);
        break;
    case OP_CHECK:
        lint_check(x, op);
        break;
    case OP_RECORD_STREAM:
        lint_record_stream(x, op);
        break;
    case OP_REGION_BEGIN:
    case OP_EMPTY_CACHE:      /* only the torch view's allocator acts on it */
    case OP_REGION_END:
    case OP_EXPECT_BEGIN:
    case OP_GROUP_BEGIN:
    case OP_GROUP_END:
    case OP_ABSENT:           /* a subset member's (rankshare.h): as if not there */
    case OP_KIND_COUNT:
        break;
    }
}

/* lint_op for this walk: the lifetime ops of B, the clocks of all, the views of B. */
void moved_op(lint_ctx *x, const rank_plan *p, const plan_op *op) {
    switch (op->kind) {
    case OP_ALLOC:
        if (in_moved(x, op->u.alloc.buf))
            lint_alloc(x, op);
        break;
    case OP_FREE:
        if (in_moved(x, op->u.free.buf))
            lint_free(x, op);
        break;
    case OP_RELEASE:
        if (in_moved(x, op->u.release.buf))
            lint_release(x, op);
        break;
    case OP_RECORD_STREAM:
        if (in_moved(x, op->u.record_stream.buf))
            lint_record_stream(x, op);
        break;
    case OP_COLL:
        moved_coll(x, op);
        break;
    case OP_CHECK:
        moved_check(x, op);
        break;
    case OP_INIT:
    case OP_COPY:
    case OP_SCALE:
    case OP_COMPUTE:
        moved_data_op(x, p, op);
        break;
    case OP_RECORD:   /* the clocks', as lint_op */
        lint_record(x, op);
        break;
    case OP_WAIT:
        lint_wait(x, op);
        break;
    case OP_SYNC:
        lint_sync(x, op);
        break;
    default:   /* those lint_op does nothing for */
        break;
    }
}

/* ---- expect_error ------------------------------------------------------------------------------- */

static lint_contract_row *contract_row(lint_ctx *x, const sched_step *es, const char *name) {
    lint_result *r = x->result;
    for (size_t k = r->n_rows; k-- > 0 && r->rows[k].rank == x->rank;)
        if (r->rows[k].step == es)
            return &r->rows[k];
    r->rows = ml_xrealloc(r->rows, (r->n_rows + 1) * sizeof *r->rows);
    lint_contract_row *row = &r->rows[r->n_rows++];
    *row = (lint_contract_row){.name = name, .rank = x->rank, .pass = true, .step = es};
    return row;
}

/* Checks the ops of the wrapped step after the marker at ops[i]; returns how many it consumed. */
static size_t lint_expect(lint_ctx *x, const rank_plan *p, size_t i) {
    const plan_op *mark_op = &p->ops[i];
    const sched_step *es = mark_op->step;
    sched_error_code want = mark_op->u.expect.error;
    const char *name = es->u.expect_error.name ? es->u.expect_error.name : sched_error_names[want];
    /* the wrapped step's ops: one, or one per name of a free list, or alloc + its init */
    size_t n = 0;
    while (i + 1 + n < p->n_ops && p->ops[i + 1 + n].step == es->u.expect_error.step)
        n++;
    const plan_op *op = n ? &p->ops[i + 1] : NULL;
    lint_contract_row *row = contract_row(x, es, name);
    char text[400];
    bool pass = false;
    /* The error goes where the step went wrong, not on the expect_error key: an unexpected
     * error at its own offending character, no error at the wrapped step's key; the note
     * points at the error name the contract expected. */
    ml_mark at = es->u.expect_error.step->mark;
    lint_note expected = note_at(sched_part_mark(x->s, es, SCHED_AT_ERROR),
                                 "expect_error '%s' expects %s here", name,
                                 sched_error_names[want]);
    if (!op) {
        snprintf(text, sizeof text, "expect_error '%s': the step it wraps does not run on rank %d",
                 name, x->rank);
    } else {
        x->capturing = true;
        x->captured = false;
        for (size_t k = 0; k < n; k++)
            lint_op(x, p, &p->ops[i + 1 + k]);   /* once refused, the rest has no effect either */
        x->capturing = false;
        if (x->captured && x->captured_code == want) {
            pass = true;
            snprintf(text, sizeof text, "%s: %s",
                     op->kind == OP_COLL ? "refused before any collective" : "refused",
                     x->captured_text);
        } else if (x->captured) {
            at = x->captured_mark;
            snprintf(text, sizeof text, "expect_error '%s' expected %s but %s raised: %s", name,
                     sched_error_names[want], plan_op_name(op), x->captured_text);
        } else {
            snprintf(text, sizeof text, "expect_error '%s' expected %s but %s raised no error",
                     name, sched_error_names[want], plan_op_name(op));
        }
    }
    if (!pass) {
        add_finding_at(x, mark_op, at, &expected, "expect_error", text);
        row->pass = false;
    }
    if (!pass || row->detail[0] == '\0') {
        size_t len = strnlen(text, sizeof row->detail - 1);   /* a long detail is cut, on purpose */
        memcpy(row->detail, text, len);
        row->detail[len] = '\0';
    }
    return n;
}

/* ---- driver -------------------------------------------------------------------------------------- */

/* How many ops ahead lint_rank asks for what an op will read: a few ops' work covers a miss. */
enum { LINT_AHEAD = 16 };

/* Hints (they change no result) for the lines an op LINT_AHEAD ops ahead (near) and twice as
 * far (far) will read, fetched while the ops before it are linted. At a million ops each is a
 * cache miss otherwise: an init's step (does it copy?) lives in the loader's arena, apart from
 * the ops; a buffer's state (x->bufs, uses, the race lint's list and its segments) was last
 * touched a whole name cycle earlier, an op stream of megabytes ago, and an alloc is followed
 * by its buffer's first uses within a few ops. The race list's segments are found through the
 * list: it is asked for when far, its segments when near, by then from the cache. */
static void prefetch_ahead(const lint_ctx *x, const plan_op *near, const plan_op *far) {
    if (far->kind == OP_ALLOC && far->u.alloc.buf < x->n_bufs) {
        uint32_t b = far->u.alloc.buf;
        __builtin_prefetch(&x->bufs[b], 1);
        __builtin_prefetch(&x->uses[(size_t)b * x->n_streams], 1);
        __builtin_prefetch(&x->race.bufs[b], 1);
    }
    if (near->kind == OP_ALLOC && near->u.alloc.buf < x->n_bufs) {
        const lint_race_list *l = &x->race.bufs[near->u.alloc.buf];
        __builtin_prefetch(l->segs, 1);
        __builtin_prefetch(l->reads, 1);
    } else if (near->kind == OP_INIT) {
        __builtin_prefetch(&near->step->kind);
        __builtin_prefetch(&near->step->u.init.init.kind);
        __builtin_prefetch(&near->step->u.alloc.init.kind);
    }
}

void lint_rank(lint_ctx *x, const rank_plan *p) {
    x->rank = p->rank;
    x->plan = p;
    /* rank 0's collectives, the reference, are kept: room for one per op at once, instead of
     * the doublings' copies (pages never written are never touched) */
    if (x->rank == 0)
        lint_coll_seq_reserve(&x->colls[0], p->n_ops);
    if (p->comms) {
        if (!x->groups) {
            x->groups = lint_groups_new(p->comms, x->world);
            x->order = lint_order_new(p->comms, x->world);
        }
        lint_groups_begin(x->groups, x->rank);
        lint_order_begin(x->order);
    }
    lint_race_reset(&x->race);
    x->reduces.n = 0;
    memset(x->bufs, 0, x->n_bufs * sizeof *x->bufs);
    memset(x->uses, 0, (size_t)x->n_bufs * x->n_streams * sizeof *x->uses);
    lint_clocks_reset(&x->clocks);
    /* the ops with some 2 * LINT_AHEAD ahead, then the last ones (no test per op for the end) */
    size_t ahead = p->n_ops > 2 * LINT_AHEAD ? p->n_ops - 2 * LINT_AHEAD : 0, i = 0;
    for (; i < ahead; i++) {
        prefetch_ahead(x, &p->ops[i + LINT_AHEAD], &p->ops[i + 2 * LINT_AHEAD]);
        if (p->ops[i].kind == OP_EXPECT_BEGIN)
            i += lint_expect(x, p, i);
        else
            lint_op(x, p, &p->ops[i]);
    }
    for (; i < p->n_ops; i++) {
        if (p->ops[i].kind == OP_EXPECT_BEGIN)
            i += lint_expect(x, p, i);
        else
            lint_op(x, p, &p->ops[i]);
    }
    if (p->comms) {
        lint_groups_end(x->groups, x->rank);
        lint_order_end(x->order, x->rank);
    }
}

void lint_options_default(lint_options *o) { o->off = 0; }

lint_walk *lint_walk_new(const sched *s, int world, const lint_options *o, lint_result *r) {
    memset(r, 0, sizeof *r);
    lint_walk *w = ml_xcalloc(1, sizeof *w);
    if (o)
        w->o = *o;
    else
        lint_options_default(&w->o);
    lint_ctx *x = &w->x;
    *x = (lint_ctx){.s = s, .o = &w->o, .world = world, .result = r,
                    .race_on = lint_code_on(&w->o, "race"),
                    .hazard_on = lint_code_on(&w->o, "hazard")};
    x->n_bufs = s->syms[SYM_BUFFER].n;
    x->n_streams = s->syms[SYM_STREAM].n ? s->syms[SYM_STREAM].n : 1;
    x->bufs = ml_xcalloc(x->n_bufs + 1, sizeof *x->bufs);
    x->uses = ml_xcalloc((size_t)(x->n_bufs + 1) * x->n_streams, sizeof *x->uses);
    x->colls = ml_xcalloc((size_t)world, sizeof *x->colls);
    lint_clocks_init(&x->clocks, x->n_streams, s->syms[SYM_EVENT].n);
    lint_race_init(&x->race, x->n_bufs, x->n_streams);
    x->moved = ml_xcalloc(x->n_bufs + 1, sizeof *x->moved);
    x->race_only = ml_xcalloc(x->n_bufs + 1, sizeof *x->race_only);
    x->dirty = ml_xcalloc(x->n_bufs + 1, sizeof *x->dirty);
    ml_vec_init(&x->moved_bufs, sizeof(uint32_t));
    ml_vec_init(&x->coarse_bufs, sizeof(uint32_t));
    ml_vec_init(&x->snaps, sizeof(lint_snap));
    ml_vec_init(&x->reduces, sizeof(uint32_t));
    lint_race_init(&x->coarse, x->n_bufs, x->n_streams);
    return w;
}

void lint_walk_rank(lint_walk *w, const rank_plan *p) {
    lint_ctx *x = &w->x;
    size_t reports = x->reports, rows = x->result->n_rows;
    lint_rank(x, p);
    /* the base lint_walk_rank_moved compares the next ranks with; what was learnt of the one
     * before (the coarse verdicts, the records) was of other ops */
    x->base_ops = p->ops;
    x->base_n = p->n_ops;
    x->base_extra = p->extra_views;
    x->base_rank = p->rank;
    x->base_quiet = x->reports == reports && x->result->n_rows == rows && !p->has_p2p;
    x->coarse_done = false;
    x->snap_ops = NULL;
    x->moved_absent = NULL;
}

int lint_walk_moved_ranks(const lint_walk *w) { return w->x.moved_ranks; }

bool lint_walk_needs_rank0(const lint_walk *w) {
    return lint_code_on(w->x.o, "cross_rank") && lint_coll_seq_diverged(w->x.colls, w->x.world);
}

size_t lint_walk_end(lint_walk *w, const rank_plan *plans, bool cross, ml_diags *d) {
    lint_ctx *x = &w->x;
    size_t errors = emit_findings(x, d);
    if (lint_code_on(x->o, "cross_rank") && cross)
        errors += lint_cross_rank(plans, x->colls, x->world, d) +
                  lint_cross_groups(x->groups, x->s, d);
    if (lint_code_on(x->o, "cross_rank"))   /* send/recv pairing is a cross-rank check too */
        errors += lint_p2p(plans, x->world, d);
    /* the order across communicators, where nothing else explains a hang: with send or recv
     * lint_p2p's play has judged it */
    if (x->order && lint_code_on(x->o, "cross_rank") && cross && errors == 0) {
        bool p2p = false;
        for (int r = 0; r < x->world && !p2p; r++)
            p2p = plans[r].has_p2p;
        if (!p2p)
            errors += lint_order_check(x->order, x->s, d);
    }
    lint_walk_free(w);
    return errors;
}

void lint_walk_free(lint_walk *w) {
    lint_ctx *x = &w->x;
    for (int rank = 0; rank < x->world; rank++)
        lint_coll_seq_free(&x->colls[rank]);
    for (size_t k = 0; k < x->n_found; k++) {   /* emit_findings frees what it emitted */
        free(x->found[k].text);
        free(x->found[k].ranks);
    }
    free(x->colls);
    lint_groups_free(x->groups);
    lint_order_free(x->order);
    lint_clocks_free(&x->clocks);
    lint_race_free(&x->race);
    free(x->found);
    free(x->index);
    free(x->moved);
    free(x->race_only);
    free(x->dirty);
    ml_vec_free(&x->moved_bufs);
    ml_vec_free(&x->coarse_bufs);
    ml_vec_free(&x->snaps);
    ml_vec_free(&x->reduces);
    lint_race_free(&x->coarse);
    free(x->uses);
    free(x->bufs);
    free(w);
}

size_t lint_plans(const rank_plan *plans, int world, const lint_options *o, lint_result *r,
                  ml_diags *d) {
    memset(r, 0, sizeof *r);
    if (world <= 0)
        return 0;
    lint_walk *w = lint_walk_new(plans[0].s, world, o, r);
    /* Plans that share one op array (plan_share) lint alike: a verdict depends on the ops, the
     * world and what earlier ops did, never on the rank, which only appears in message texts
     * (an in-place offset, a rank where a wrapped step does not run). So when rank 0 finds
     * nothing and has no contract rows, neither has any other rank, and identical collective
     * sequences are consistent across ranks. Otherwise every rank is linted, for its texts.
     * Communicators make the rank matter (its group, that group's size, its rank in it). */
    bool shared = !plans[0].comms;   /* a communicator's group, size and ranks are the rank's */
    for (int rank = 1; rank < world; rank++)
        shared &= plans[rank].ops == plans[0].ops && plans[rank].n_ops == plans[0].n_ops &&
                  plans[rank].extra_views == plans[0].extra_views;
    lint_walk_rank(w, &plans[0]);
    bool all_alike = shared && w->x.n_found == 0 && r->n_rows == 0;
    for (int rank = 1; rank < world && !all_alike; rank++)
        lint_walk_rank(w, &plans[rank]);
    return lint_walk_end(w, plans, !all_alike, d);
}

void lint_result_free(lint_result *r) {
    free(r->rows);
    memset(r, 0, sizeof *r);
}
