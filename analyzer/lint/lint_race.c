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
    ml_vec_init(&r->acc, sizeof(plan_access));
    ml_vec_init(&r->dyn, sizeof(plan_access));
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
    ml_vec_free(&r->acc);
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

/* An entry is emptied by its op alone (the rest is left as it was: no memset per access), so
 * two empty entries are the same whatever else they hold. */
static bool same_access(const lint_race_access *a, const lint_race_access *b) {
    return a->op == b->op && (!a->op || (a->seq == b->seq && a->view == b->view));
}

/* Segment k's reads emptied: one store per stream. */
static void clear_reads(lint_race_access *rd, uint32_t n_streams) {
    for (uint32_t u = 0; u < n_streams; u++)
        rd[u].op = NULL;
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
static inline __attribute__((always_inline)) bool before(const lint_clocks *c,
                                                      const lint_race_access *e, uint32_t s) {
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

void lint_race_text(lint_race *r, const rank_plan *p, const lint_race_found *f, char *out,
                    size_t len, lint_note *other) {
    const lint_race_access *e = &f->other;
    const char *other_name;
    const plan_view *ov;
    describe(r, p, e, &other_name, &ov);
    char mine[200], theirs[200];
    range_text(p->s, f->v, mine, sizeof mine);
    range_text(p->s, ov, theirs, sizeof theirs);
    const char *sn = sched_sym_name(p->s, SYM_STREAM, f->me.stream);
    const char *on = sched_sym_name(p->s, SYM_STREAM, e->stream);
    snprintf(out, len,
             "%s on '%s' %s %s while %s on '%s' %s %s; add record/wait or sync: {stream: %s}",
             plan_op_name(f->me.op), sn, f->writes ? "writes" : "reads", mine, other_name, on,
             f->other_writes ? "writes" : "reads", theirs, on);
    other->mark = plan_view_mark(p->s, e->op, e->view);
    snprintf(other->text, sizeof other->text, "%s on '%.40s' %s %.120s here", other_name, on,
             f->other_writes ? "writes" : "reads", theirs);
}

/* The first race, kept for lint_race_text (lint_race_op adds the access that met it). */
static bool hit_at(lint_race_found *hit, const lint_race_access *e, bool e_writes) {
    hit->other = *e;
    hit->other_writes = e_writes;
    return true;
}

/* The conflicts of [lo, hi) with segments [from, to) (they overlap it), and the entries every
 * stream (or the host) has waited for dropped on the way; with report, the first race into hit.
 * Returns whether one was found. An entry that lint_clocks_before_all drops is before this
 * access too, so the drops change no verdict, only what stays: in a segment inside [lo, hi) a
 * write then replaces every entry, and a read every read before it (steps 2 and 3 of
 * other_access), so there only a read's drop of the write is kept. Inlined into other_access's
 * two calls (gcc put it out of line once there were two: a call per access). */
static inline __attribute__((always_inline)) bool
conflicts(lint_race *r, const lint_clocks *c, lint_race_list *l, bool writes, uint32_t stream,
          uint32_t from, uint64_t lo, uint64_t hi, bool report, lint_race_found *hit) {
    bool found = false;
    for (uint32_t k = from; k < l->n && l->segs[k].lo < hi; k++) {
        bool inside = l->segs[k].lo >= lo && l->segs[k].hi <= hi;
        lint_race_access *w = &l->segs[k].write;
        if (w->op && !(inside && writes) && lint_clocks_before_all(c, w->stream, w->seq))
            w->op = NULL;
        if (w->op && !found && report && !before(c, w, stream))
            found = hit_at(hit, w, true);
        lint_race_access *rd = reads_of(r, l, k);
        for (uint32_t u = 0; u < r->n_streams; u++) {
            if (rd[u].op && !inside && lint_clocks_before_all(c, rd[u].stream, rd[u].seq))
                rd[u].op = NULL;
            if (rd[u].op && writes && !found && report && !before(c, &rd[u], stream))
                found = hit_at(hit, &rd[u], false);
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
            clear_reads(reads_of(r, l, k), r->n_streams);
        }
        at = l->segs[k].hi;
        k++;
    }
    *last = k;
    return first;
}

/* A write's steps 2 and 3 at once (the segments from k on that overlap [lo, hi) are those of
 * conflicts): they become the part of segment k before lo, one segment [lo, hi) holding the write
 * alone, and the part of the last one after hi, each part with its state as it was. cover then 3
 * would leave the same: its pieces of [lo, hi) all hold this write and no read, touch, and merge
 * into one; here one move of the segments after them does it. Returns the new segment's index. */
static uint32_t write_over(const lint_race *r, lint_race_list *l, uint32_t k, uint64_t lo,
                           uint64_t hi, const lint_race_access *me) {
    uint32_t e = k;   /* [k, e): the segments that overlap [lo, hi) */
    while (e < l->n && l->segs[e].lo < hi)
        e++;
    bool left = k < e && l->segs[k].lo < lo, right = k < e && l->segs[e - 1].hi > hi;
    /* segment k stays where it is as the left part; the last one moves, as the right part, with
     * the segments after it, to just after the new one (k == e - 1 with both parts: it is both) */
    uint32_t at = k + left, src = right ? e - 1 : e, dst = at + 1;
    uint32_t n = l->n + dst - src;   /* dst > src by at most 2 */
    while (n > l->cap)
        grow(r, l);
    memmove(&l->segs[dst], &l->segs[src], (l->n - src) * sizeof *l->segs);
    memmove(reads_of(r, l, dst), reads_of(r, l, src),
            (size_t)(l->n - src) * r->n_streams * sizeof *l->reads);
    l->n = n;
    if (left)
        l->segs[k].hi = lo;
    if (right)
        l->segs[dst].lo = hi;
    l->segs[at] = (lint_race_seg){.lo = lo, .hi = hi, .write = *me};
    clear_reads(reads_of(r, l, at), r->n_streams);
    return at;
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

/* The access exactly covers the buffer's one segment (whole views, the usual: nothing to split,
 * no neighbour to merge), in one pass. The same outcome as conflicts and step 3 of the general
 * way below: an entry that lint_clocks_before_all drops is also before this access (before all
 * streams implies before its stream), so dropping it first changes no verdict; a write replaces
 * every entry anyway, and a read drops every read before it, those included. */
static bool exact_one(lint_race *r, const lint_clocks *c, lint_race_list *l,
                      const lint_race_access *me, bool writes, bool report, lint_race_found *hit) {
    uint32_t s = me->stream;
    lint_race_access *w = &l->segs[0].write, *rd = l->reads;
    bool found = false;
    if (writes) {   /* the write, then the reads in stream order; each read emptied as met */
        if (report && w->op && !before(c, w, s))
            found = hit_at(hit, w, true);
        for (uint32_t u = 0; u < r->n_streams; u++)
            if (rd[u].op) {
                if (report && !found && !before(c, &rd[u], s))
                    found = hit_at(hit, &rd[u], false);
                rd[u].op = NULL;
            }
        *w = *me;
        return found;
    }
    if (w->op) {
        if (lint_clocks_before_all(c, w->stream, w->seq))
            w->op = NULL;
        else if (report && !before(c, w, s))
            found = hit_at(hit, w, true);
    }
    /* reads ordered before this one say nothing a later write would not learn from it */
    for (uint32_t u = 0; u < r->n_streams; u++)
        if (rd[u].op && before(c, &rd[u], s))
            rd[u].op = NULL;
    rd[s] = *me;
    return found;
}

/* A read of part of the buffer's one segment [L, H) (L <= lo, hi <= H, not both ends equal: an
 * all_reduce of a slice after a whole write), other_access's four steps at once.
 * 1, conflicts from segment 0: it is not inside [lo, hi), so every entry lint_clocks_before_all
 * drops goes, and only the write can race with a read. 2, cover: [L, lo) and [hi, H), where not
 * empty ranges, keep that state S; [lo, hi) gets it too. 3: [lo, hi)'s reads before this one
 * go, and it holds this read. 4, merge: there is no other segment; [lo, hi) holds this access,
 * which S does not (a new sequence number, or this op's other view), so it equals neither part;
 * the parts are not neighbours; they go when S is empty. So: [lo, hi) alone when S is empty,
 * else the parts that are not empty ranges around it, each holding S. */
static __attribute__((noinline)) bool read_in_one(lint_race *r, const lint_clocks *c,
                                                  lint_race_list *l, const lint_race_access *me,
                                                  uint64_t lo, uint64_t hi, bool report,
                                                  lint_race_found *hit) {
    uint32_t s = me->stream, ns = r->n_streams;
    lint_race_access *w = &l->segs[0].write, *rd = l->reads;
    bool found = false, empty = true;
    if (w->op && lint_clocks_before_all(c, w->stream, w->seq))
        w->op = NULL;
    if (w->op) {
        empty = false;
        if (report && !before(c, w, s))
            found = hit_at(hit, w, true);
    }
    for (uint32_t u = 0; u < ns; u++) {
        if (rd[u].op && lint_clocks_before_all(c, rd[u].stream, rd[u].seq))
            rd[u].op = NULL;
        empty &= !rd[u].op;
    }
    uint64_t L = l->segs[0].lo, H = l->segs[0].hi;
    if (empty) {   /* S empty: the parts go, and [lo, hi) holds this read alone */
        l->segs[0].lo = lo;
        l->segs[0].hi = hi;
        rd[s] = *me;
        return found;
    }
    bool left = L < lo, right = hi < H;
    l->n = 1 + left + right;
    while (l->n > l->cap)
        grow(r, l);
    lint_race_access wr = l->segs[0].write;
    if (right) {   /* from segment 0, before [lo, hi) may overwrite it */
        l->segs[1 + left] = (lint_race_seg){.lo = hi, .hi = H, .write = wr};
        memcpy(reads_of(r, l, 1 + left), l->reads, ns * sizeof *l->reads);
    }
    if (left) {
        l->segs[0].hi = lo;
        memcpy(reads_of(r, l, 1), l->reads, ns * sizeof *l->reads);
    }
    l->segs[left] = (lint_race_seg){.lo = lo, .hi = hi, .write = wr};
    rd = reads_of(r, l, left);
    for (uint32_t u = 0; u < ns; u++)
        if (rd[u].op && before(c, &rd[u], s))
            rd[u].op = NULL;
    rd[s] = *me;
    return found;
}

/* An op's read of a buffer's one segment, exactly, then its write of it (a collective in place
 * on one view: send view 0, recv view 1), as exact_one's read then its write would do them:
 * the read meets the write (a race there is view 0's, a read meeting a write), drops it where
 * it is before every stream, drops the reads before it and holds this op's read; the write,
 * asked only where the read found no race, meets the write left (before this op's stream, or
 * the race already found: nothing new), then the reads in stream order (those left are the ones
 * not before this stream, and this op's own read, before it: program order), and replaces them
 * all. Returns the view whose access races first (hit: the other access), or -1; me is left
 * holding the write (view 1), as the segment does. Every access reports (report is true for the
 * first of an op's accesses, and for all of the coarse lint's). */
static int read_then_write(lint_race *r, const lint_clocks *c, lint_race_list *l,
                           lint_race_access *me, lint_race_found *hit) {
    uint32_t s = me->stream;
    lint_race_access *w = &l->segs[0].write, *rd = l->reads;
    int at = -1;
    if (w->op && !lint_clocks_before_all(c, w->stream, w->seq) && !before(c, w, s)) {
        hit_at(hit, w, true);
        at = 0;
    }
    for (uint32_t u = 0; u < r->n_streams; u++)
        if (rd[u].op) {
            if (at < 0 && !before(c, &rd[u], s)) {
                hit_at(hit, &rd[u], false);
                at = 1;
            }
            rd[u].op = NULL;
        }
    me->view = 1;
    *w = *me;
    return at;
}

/* The general way, apart from lint_race_access_check's short ones (the call of those then saves
 * no registers for this one). */
static __attribute__((noinline)) bool other_access(lint_race *r, const lint_clocks *c,
                                                   lint_race_list *l, const lint_race_access *me,
                                                   uint64_t lo, uint64_t hi, bool writes,
                                                   bool report, lint_race_found *hit) {
    uint32_t stream = me->stream;
    /* A write over every segment (an all_gather into the whole buffer after slice accesses):
     * write_over would leave the one segment [lo, hi) holding it, with no part on either side,
     * and merge would find nothing to do; here without first_after, moves or merge. */
    if (writes && l->segs[0].lo >= lo && l->segs[l->n - 1].hi <= hi) {
        bool found = conflicts(r, c, l, writes, stream, 0, lo, hi, report, hit);
        l->segs[0] = (lint_race_seg){.lo = lo, .hi = hi, .write = *me};
        clear_reads(l->reads, r->n_streams);
        l->n = 1;
        return found;
    }
    /* 1. conflicts, and the host-ordered entries dropped on the way */
    uint32_t k = first_after(l, lo);
    bool found = conflicts(r, c, l, writes, stream, k, lo, hi, report, hit);
    /* An access of exactly one segment (an all_gather's send slice, the compute that wrote
     * it): nothing to split or fill, and merge would change nothing. No segment is ever left
     * empty (every path merges all it touched, the one before and the one after), so its
     * neighbours stay; neither can equal it, for none holds this access, which it now does. */
    if (k < l->n && l->segs[k].lo == lo && l->segs[k].hi == hi) {
        lint_race_access *rd = reads_of(r, l, k);
        if (writes) {   /* step 2 and 3 of a write: it alone */
            l->segs[k].write = *me;
            clear_reads(rd, r->n_streams);
            return found;
        }
        for (uint32_t u = 0; u < r->n_streams; u++)   /* step 3 of a read */
            if (rd[u].op && before(c, &rd[u], stream))
                rd[u].op = NULL;
        rd[stream] = *me;
        return found;
    }

    if (writes) {   /* 2 and 3 at once, then 4 */
        uint32_t at = write_over(r, l, k, lo, hi, me);
        /* merge's outcome here: the new segment holds this access, which no other does, so
         * it equals neither neighbour; only the one after or before it, if conflicts emptied
         * it, goes (the one after first: the other's removal moves it) */
        if (at + 1 < l->n && empty_state(r, l, at + 1))
            remove_range(r, l, at + 1, 1);
        if (at > 0 && empty_state(r, l, at - 1))
            remove_range(r, l, at - 1, 1);
        return found;
    }

    /* 2. segments [first, last) exactly covering [lo, hi): split at the ends, fill the gaps */
    uint32_t last;
    uint32_t first = cover(r, l, k, lo, hi, &last);

    /* 3. the new state: reads ordered before this one say nothing a later write would not learn
     * from it */
    for (uint32_t j = first; j < last; j++) {
        lint_race_access *rd = reads_of(r, l, j);
        for (uint32_t u = 0; u < r->n_streams; u++)
            if (rd[u].op && before(c, &rd[u], stream))
                rd[u].op = NULL;
        rd[stream] = *me;
    }

    /* 4. merge equal neighbours and drop empty segments, from one before to one after */
    merge(r, l, first, last);
    return found;
}

/* One access (me, at view v, of a buffer, with elements, on a stream) checked and recorded;
 * with report, the first race into *hit. */
static inline __attribute__((always_inline)) bool
access_check(lint_race *r, const lint_clocks *c, const lint_race_access *me, const plan_view *v,
             bool writes, bool report, lint_race_found *hit) {
    uint32_t stream = me->stream;   /* lint_race_op checked it, the buffer and the count */
    lint_race_list *l = &r->bufs[v->buf];
    uint64_t lo = v->offset, hi = v->offset + v->count;   /* lint checked the bounds */
    /* The common cases take a short way with the same outcome. A buffer nothing touched since
     * its alloc (no segment): nothing to conflict with, and [lo, hi) becomes its one segment,
     * where other_access's step 2 would insert it as a gap; after 3 it holds this access, so 4
     * would change nothing. An access covering the buffer's one segment exactly: exact_one. */
    if (l->n == 0) {
        if (!l->cap)   /* insert_at's first growth, without its moves of nothing */
            grow(r, l);
        l->segs[0] = (lint_race_seg){.lo = lo, .hi = hi};
        clear_reads(l->reads, r->n_streams);
        if (writes)
            l->segs[0].write = *me;
        else
            l->reads[stream] = *me;
        l->n = 1;
        return false;
    }
    if (l->n == 1 && l->segs[0].lo == lo && l->segs[0].hi == hi)
        return exact_one(r, c, l, me, writes, report, hit);
    if (l->n == 1 && !writes && l->segs[0].lo <= lo && hi <= l->segs[0].hi)
        return read_in_one(r, c, l, me, lo, hi, report, hit);
    return other_access(r, c, l, me, lo, hi, writes, report, hit);
}

/* lint_race_op, lint_race_op_only and lint_race_op_coarse: one body, only and coarse constants
 * in each (so that the whole walk's accesses pay no test for them). coarse: every access one
 * element, [0, 1), a reduce's recv written on every rank, each race marked in dirty. */
static inline __attribute__((always_inline)) bool
race_op(lint_race *r, const lint_clocks *c, const rank_plan *p, int rank, const plan_op *op,
        uint32_t stream, uint64_t seq, lint_race_found *f, const uint8_t *only, bool coarse,
        uint8_t *dirty) {
    if (stream >= r->n_streams)
        return false;   /* none of its accesses is recorded, none can race */
    bool found = false;
    lint_race_access me = {.op = op, .seq = seq, .stream = stream};
    /* A compute's views as they are (reads, then writes: plan_op_accesses' order, each read or
     * written), without an array of accesses written per compute to be read back; the other
     * ops' one or two as views two[k], written where bit k of wr is set. One loop, so
     * access_check is inlined once (twice, gcc put exact_one and conflicts out of line, a call
     * per access: more than it saved). */
    const plan_view *cv = NULL, *two[PLAN_FIXED_ACCESSES];
    uint32_t nr = 0, nw = 0, wr = 0;
    size_t n;
    if (op->kind == OP_COMPUTE) {
        cv = plan_compute_views(p, op, &nr, &nw);
        n = (size_t)nr + nw;
    } else if (op->kind == OP_COLL && !ml_colls[op->u.coll.coll].p2p) {
        /* plan_op_accesses' two of a collective, without its call: send read, recv written
         * (read too in place: a write all the same here). Most of the benchmark's ops: the
         * call and its switch were a tenth of this function. NCCL's reduce writes recv on the
         * root only: elsewhere an out-of-place recv is not touched (the last access, so n is
         * 1), an in-place one only read (it is the send side). */
        bool written = coarse || !ml_colls[op->u.coll.coll].flow.root_only ||
                       op->u.coll.root == rank;
        two[0] = &op->u.coll.send;
        two[1] = &op->u.coll.recv;
        n = written || op->u.coll.in_place ? 2 : 1;
        wr = written ? 2 : 0;
    } else if (op->kind == OP_INIT) {
        /* plan_op_accesses' of an init (every alloc's with `init:`), likewise: dst written,
         * then the source read where it copies one */
        two[0] = &op->u.init.dst;
        two[1] = &op->u.init.src;
        n = op->u.init.src.count ? 2 : 1;
        wr = 1;
    } else {
        /* at most PLAN_FIXED_ACCESSES (a compute's many are above), each read or written */
        plan_access fixed[PLAN_FIXED_ACCESSES];
        const plan_access *acc;
        n = plan_op_accesses(p, op, fixed, &acc, &r->acc);
        for (size_t k = 0; k < n; k++) {
            two[k] = acc[k].v;
            wr |= (uint32_t)acc[k].write << k;
        }
    }
    /* A collective in place on one view (all_reduce or broadcast with `buf:`; in the coarse
     * lint, where each access is the buffer's one element, any in one buffer) whose buffer is
     * that view's one segment: its read and its write in one pass (read_then_write). */
    if (!cv && n == 2 && wr == 2 && two[0]->buf == two[1]->buf && two[0]->buf < r->n_bufs &&
        two[0]->count && two[1]->count && (!only || only[two[0]->buf]) &&
        (coarse || (two[0]->offset == two[1]->offset && two[0]->count == two[1]->count))) {
        lint_race_list *l = &r->bufs[two[0]->buf];
        uint64_t lo = coarse ? 0 : two[0]->offset, hi = coarse ? 1 : lo + two[0]->count;
        if (l->n == 1 && l->segs[0].lo == lo && l->segs[0].hi == hi) {
            lint_race_found hit;
            int at = read_then_write(r, c, l, &me, coarse ? &hit : f);
            if (at >= 0 && coarse)
                dirty[two[0]->buf] = 1;
            else if (at >= 0) {
                f->me = me;
                f->me.view = (uint32_t)at;
                f->v = two[at];
                f->writes = at == 1;
            }
            return at >= 0;
        }
    }
    for (size_t k = 0; k < n; k++) {
        const plan_view *v;
        bool writes;
        if (cv) {
            v = &cv[k];
            writes = k >= nr;
        } else {
            v = two[k];
            writes = wr >> k & 1;
        }
        /* no buffer (SCHED_NO_SYM is past every one), or no element: nothing to order */
        if (v->buf >= r->n_bufs || !v->count || (only && !only[v->buf]))
            continue;
        me.view = (uint32_t)k;
        if (coarse) {
            const plan_view one = {.offset = 0, .count = 1, .buf = v->buf};
            lint_race_found hit;
            if (access_check(r, c, &me, &one, writes, true, &hit))
                dirty[v->buf] = 1;
            continue;
        }
        if (access_check(r, c, &me, v, writes, !found, f)) {
            f->me = me;
            f->v = v;
            f->writes = writes;
            found = true;
        }
    }
    return found;
}

/* flatten: exact_one inlined here as it was when this was the only caller (a call per access
 * otherwise: mix's lint 141 M -> 145 M instructions at 100 k steps) */
__attribute__((flatten)) bool lint_race_op(lint_race *r, const lint_clocks *c, const rank_plan *p,
                                           int rank, const plan_op *op, uint32_t stream,
                                           uint64_t seq, lint_race_found *f) {
    return race_op(r, c, p, rank, op, stream, seq, f, NULL, false, NULL);
}

bool lint_race_op_only(lint_race *r, const lint_clocks *c, const rank_plan *p, int rank,
                       const plan_op *op, uint32_t stream, uint64_t seq, lint_race_found *f,
                       const uint8_t *only) {
    return race_op(r, c, p, rank, op, stream, seq, f, only, false, NULL);
}

/* flatten: exact_one, which nearly every coarse access takes (one element), inlined */
__attribute__((flatten)) void lint_race_op_coarse(lint_race *r, const lint_clocks *c,
                                                  const rank_plan *p, const plan_op *op,
                                                  uint32_t stream, uint64_t seq,
                                                  const uint8_t *only, uint8_t *dirty) {
    race_op(r, c, p, 0, op, stream, seq, NULL, only, true, dirty);
}
