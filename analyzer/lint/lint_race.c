/* SPDX-License-Identifier: MIT */
/* lint_race.c — data races between streams (lint_int.h).
 *
 * Two accesses race when they touch overlapping elements of one buffer, at least one writes, they
 * run on different streams and neither happens before the other. Happens-before is lint_clocks's
 * vector clocks: program order on a stream, record/wait, and host syncs (after one, everything the
 * host waited for is before every op enqueued later, on any stream).
 *
 * Per buffer, the element range is a sorted array of disjoint segments; each holds what a later
 * access must be ordered after: the last write, and per stream the last read since it (FastTrack's
 * epochs, one per segment instead of per element). That is enough: an access unordered with an
 * older write W is unordered with any write that replaced W after W (the replacing one came after
 * W, so being after it implies being after W), and likewise for an older read on the same stream.
 * Entries that every stream (or the host) is known to have waited for are dropped when met: they
 * are before everything that follows. After an access the touched segments hold the same state
 * and merge again, and emptied ones go, so a buffer that whole views use stays one segment;
 * slices make as many segments as there are slice boundaries.
 *
 * Cost: an access costs O(log segments + segments it overlaps) plus the moves of an insertion.
 * A whole-buffer access after k slice accesses visits k segments once; when their entries are
 * ordered before every stream (the usual record/wait both ways, or a host sync) it empties and
 * removes them, so the visit is paid once per slice access: linear over a schedule. What stays
 * superlinear: repeated whole-buffer accesses over slices whose accesses some stream never
 * waits for (each such access visits them all again), and slices created in descending order
 * (each insertion moves the segments after it). */
#include "lint/lint_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

/* n items of size bytes, the product checked (ml_xrealloc exits 3 when memory runs out) */
static void *xrealloc(void *p, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size)
        ml_internal_error("race lint: %zu segments of %zu bytes overflow size_t", n, size);
    return ml_xrealloc(p, (n ? n : 1) * size);
}

void lint_race_init(lint_race *r, uint32_t n_bufs, uint32_t n_streams) {
    r->n_bufs = n_bufs;
    r->n_streams = n_streams ? n_streams : 1;
    r->bufs = ml_xcalloc(n_bufs ? n_bufs : 1, sizeof *r->bufs);
    ml_vec_init(&r->dyn, sizeof(plan_access));
}

void lint_race_clear(lint_race *r, uint32_t buf) {
    if (buf < r->n_bufs)
        r->bufs[buf].n = 0;
}

void lint_race_reset(lint_race *r) {
    for (uint32_t b = 0; b < r->n_bufs; b++)
        r->bufs[b].n = 0;
}

void lint_race_free(lint_race *r) {
    for (uint32_t b = 0; b < r->n_bufs; b++) {
        free(r->bufs[b].segs);
        free(r->bufs[b].reads);
    }
    free(r->bufs);
    ml_vec_free(&r->dyn);
    memset(r, 0, sizeof *r);
}

/* ---- segments ------------------------------------------------------------------------------- */

static lint_race_access *reads_of(const lint_race *r, const lint_race_list *l, uint32_t k) {
    return &l->reads[(size_t)k * r->n_streams];
}

/* Doubles the room for segments (4 at first). */
static void grow(const lint_race *r, lint_race_list *l) {
    l->cap = l->cap ? 2 * l->cap : 4;
    l->segs = xrealloc(l->segs, l->cap, sizeof *l->segs);
    l->reads = xrealloc(l->reads, (size_t)l->cap * r->n_streams, sizeof *l->reads);
}

/* Makes room for one more segment at position k (k..n-1 move up). */
static void insert_at(const lint_race *r, lint_race_list *l, uint32_t k) {
    if (l->n == l->cap)
        grow(r, l);
    memmove(&l->segs[k + 1], &l->segs[k], (l->n - k) * sizeof *l->segs);
    memmove(reads_of(r, l, k + 1), reads_of(r, l, k),
            (size_t)(l->n - k) * r->n_streams * sizeof *l->reads);
    l->n++;
}

static void remove_range(const lint_race *r, lint_race_list *l, uint32_t k, uint32_t count) {
    memmove(&l->segs[k], &l->segs[k + count], (l->n - k - count) * sizeof *l->segs);
    memmove(reads_of(r, l, k), reads_of(r, l, k + count),
            (size_t)(l->n - k - count) * r->n_streams * sizeof *l->reads);
    l->n -= count;
}

/* The first segment whose end is past lo. */
static uint32_t first_after(const lint_race_list *l, uint64_t lo) {
    uint32_t a = 0, b = l->n;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (l->segs[m].hi <= lo)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* Splits segment k at element at (lo < at < hi): k keeps [lo, at), k+1 gets [at, hi). */
static void split(const lint_race *r, lint_race_list *l, uint32_t k, uint64_t at) {
    insert_at(r, l, k);
    memcpy(reads_of(r, l, k), reads_of(r, l, k + 1), r->n_streams * sizeof *l->reads);
    l->segs[k] = l->segs[k + 1];
    l->segs[k].hi = at;
    l->segs[k + 1].lo = at;
}

static bool same_access(const lint_race_access *a, const lint_race_access *b) {
    return a->op == b->op && a->seq == b->seq && a->view == b->view;
}

static bool same_state(const lint_race *r, const lint_race_list *l, uint32_t a, uint32_t b) {
    if (!same_access(&l->segs[a].write, &l->segs[b].write))
        return false;
    const lint_race_access *ra = reads_of(r, l, a), *rb = reads_of(r, l, b);
    for (uint32_t u = 0; u < r->n_streams; u++)
        if (!same_access(&ra[u], &rb[u]))
            return false;
    return true;
}

static bool empty_state(const lint_race *r, const lint_race_list *l, uint32_t k) {
    if (l->segs[k].write.op)
        return false;
    const lint_race_access *rd = reads_of(r, l, k);
    for (uint32_t u = 0; u < r->n_streams; u++)
        if (rd[u].op)
            return false;
    return true;
}

/* ---- ordering -------------------------------------------------------------------------------- */

/* Entry e (on its stream) happens before the op being checked on stream s. */
static bool before(const lint_clocks *c, const lint_race_access *e, uint32_t s) {
    return e->stream == s || lint_clocks_ordered(c, e->stream, e->seq, s);
}

/* ---- the check ------------------------------------------------------------------------------- */

static void describe(lint_race *r, const rank_plan *p, const lint_race_access *e,
                     const char **name, const plan_view **v) {
    plan_access fixed[PLAN_FIXED_ACCESSES];
    const plan_access *acc;
    size_t n = plan_op_accesses(p, e->op, fixed, &acc, &r->dyn);
    *name = plan_op_name(e->op);
    *v = e->view < n ? acc[e->view].v : NULL;
}

static void range_text(const sched *s, const plan_view *v, char *buf, size_t len) {
    if (!v) {
        snprintf(buf, len, "?");
        return;
    }
    snprintf(buf, len, "%s[%llu:%llu]", sched_sym_name(s, SYM_BUFFER, v->buf), (ull)v->offset,
             (ull)v->count);
}

/* The race as the error's text, and the other access as its note, at that access's view. */
static void race_text(lint_race *r, const rank_plan *p, const plan_op *op,
                      const plan_view *v, bool writes, uint32_t stream,
                      const lint_race_access *e, bool e_writes, char *out, size_t len,
                      lint_note *other) {
    const char *other_name;
    const plan_view *ov;
    describe(r, p, e, &other_name, &ov);
    char mine[200], theirs[200];
    range_text(p->s, v, mine, sizeof mine);
    range_text(p->s, ov, theirs, sizeof theirs);
    const char *sn = sched_sym_name(p->s, SYM_STREAM, stream);
    const char *on = sched_sym_name(p->s, SYM_STREAM, e->stream);
    snprintf(out, len,
             "%s on '%s' %s %s while %s on '%s' %s %s; add record/wait or sync: {stream: %s}",
             plan_op_name(op), sn, writes ? "writes" : "reads", mine, other_name, on,
             e_writes ? "writes" : "reads", theirs, on);
    other->mark = plan_view_mark(p->s, e->op, e->view);
    snprintf(other->text, sizeof other->text, "%s on '%.40s' %s %.120s here", other_name, on,
             e_writes ? "writes" : "reads", theirs);
}

/* The conflicts of [lo, hi) with segments [from, to) (they overlap it), and the entries every
 * stream (or the host) has waited for dropped on the way; with report, the first race into text
 * and other. Returns whether one was found. */
static bool conflicts(lint_race *r, const lint_clocks *c, const rank_plan *p, const plan_op *op,
                      const plan_view *v, bool writes, uint32_t stream, uint32_t from,
                      uint64_t hi, bool report, char *text, size_t len, lint_note *other) {
    lint_race_list *l = &r->bufs[v->buf];
    bool found = false;
    for (uint32_t k = from; k < l->n && l->segs[k].lo < hi; k++) {
        lint_race_access *w = &l->segs[k].write;
        if (w->op && lint_clocks_before_all(c, w->stream, w->seq))
            *w = (lint_race_access){0};
        if (w->op && !found && report && !before(c, w, stream)) {
            race_text(r, p, op, v, writes, stream, w, true, text, len, other);
            found = true;
        }
        lint_race_access *rd = reads_of(r, l, k);
        for (uint32_t u = 0; u < r->n_streams; u++) {
            if (rd[u].op && lint_clocks_before_all(c, rd[u].stream, rd[u].seq))
                rd[u] = (lint_race_access){0};
            if (rd[u].op && writes && !found && report && !before(c, &rd[u], stream)) {
                race_text(r, p, op, v, writes, stream, &rd[u], false, text, len, other);
                found = true;
            }
        }
    }
    return found;
}

/* Segments [first, last) exactly covering [lo, hi), split at the ends and the gaps filled with
 * empty segments; returns first, last into *last. */
static uint32_t cover(const lint_race *r, lint_race_list *l, uint32_t k, uint64_t lo, uint64_t hi,
                      uint32_t *last) {
    if (k < l->n && l->segs[k].lo < lo)
        split(r, l, k++, lo);
    uint32_t first = k;   /* the part before lo stays as it was */
    uint64_t at = lo;
    while (at < hi) {
        if (k < l->n && l->segs[k].lo == at) {
            if (l->segs[k].hi > hi)
                split(r, l, k, hi);
        } else {
            uint64_t end = k < l->n && l->segs[k].lo < hi ? l->segs[k].lo : hi;
            insert_at(r, l, k);
            l->segs[k] = (lint_race_seg){.lo = at, .hi = end};
            memset(reads_of(r, l, k), 0, r->n_streams * sizeof *l->reads);
        }
        at = l->segs[k].hi;
        k++;
    }
    *last = k;
    return first;
}

/* Merges equal neighbours and drops empty segments, from one before first to one after last. */
static void merge(const lint_race *r, lint_race_list *l, uint32_t first, uint32_t last) {
    uint32_t from = first ? first - 1 : 0, to = last < l->n ? last + 1 : l->n;
    uint32_t j = from;
    while (j < to && j < l->n) {
        if (empty_state(r, l, j)) {
            remove_range(r, l, j, 1);
            to--;
            continue;
        }
        if (j + 1 < to && j + 1 < l->n && l->segs[j].hi == l->segs[j + 1].lo &&
            same_state(r, l, j, j + 1)) {
            l->segs[j].hi = l->segs[j + 1].hi;
            remove_range(r, l, j + 1, 1);
            to--;
            continue;
        }
        j++;
    }
}

bool lint_race_access_check(lint_race *r, const lint_clocks *c, const rank_plan *p,
                            const plan_op *op, uint32_t view, const plan_access *a,
                            uint32_t stream, uint64_t seq, bool report, char *text, size_t len,
                            lint_note *other) {
    const plan_view *v = a->v;
    if (v->buf == SCHED_NO_SYM || v->buf >= r->n_bufs || !v->count || stream >= r->n_streams)
        return false;
    lint_race_list *l = &r->bufs[v->buf];
    uint64_t lo = v->offset, hi = v->offset + v->count;   /* lint checked the bounds */
    bool writes = a->write;
    uint32_t first, last;   /* after 1 and 2: segments [first, last) are [lo, hi) */
    /* The common cases take a short way with the same outcome: a buffer nothing touched since
     * its alloc (no segment: [lo, hi) becomes its one segment, where 2 would insert it as a
     * gap), and an access covering the buffer's one segment exactly (whole views, the usual:
     * nothing to split). In both, after 3 the one segment holds this access, so it is neither
     * empty nor has a neighbour: 4 would change nothing. */
    bool one = l->n == 0 || (l->n == 1 && l->segs[0].lo == lo && l->segs[0].hi == hi);

    /* 1. conflicts, and the host-ordered entries dropped on the way */
    uint32_t k = one ? 0 : first_after(l, lo);
    bool found = conflicts(r, c, p, op, v, writes, stream, k, hi, report, text, len, other);

    /* 2. segments exactly covering [lo, hi): split at the ends, fill the gaps */
    if (!one) {
        first = cover(r, l, k, lo, hi, &last);
    } else {
        if (l->n == 0) {
            if (!l->cap)   /* insert_at's first growth, without its moves of nothing */
                grow(r, l);
            l->segs[0] = (lint_race_seg){.lo = lo, .hi = hi};
            memset(reads_of(r, l, 0), 0, r->n_streams * sizeof *l->reads);
            l->n = 1;
        }
        first = 0, last = 1;
    }

    /* 3. the new state */
    lint_race_access me = {.op = op, .seq = seq, .stream = stream, .view = view};
    for (uint32_t j = first; j < last; j++) {
        lint_race_access *rd = reads_of(r, l, j);
        if (writes) {
            l->segs[j].write = me;
            memset(rd, 0, r->n_streams * sizeof *rd);
        } else {
            /* reads ordered before this one say nothing a later write would not learn from it */
            for (uint32_t u = 0; u < r->n_streams; u++)
                if (rd[u].op && before(c, &rd[u], stream))
                    rd[u] = (lint_race_access){0};
            rd[stream] = me;
        }
    }

    /* 4. merge equal neighbours and drop empty segments, from one before to one after */
    if (!one)
        merge(r, l, first, last);
    return found;
}
