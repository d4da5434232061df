/* SPDX-License-Identifier: MIT */
/* optimize_inplace.c — collectives in place, by NCCL's rules (docs/design.md):
 *
 *   ReduceScatter send S (a view of A), recv the whole buffer B: when nothing names A after the
 *   collective but its free, the collective writes into S's rank slice instead,
 *   recv = A[off(S) + rank*q : q] (NCCL's in-place rule: recvbuff == sendbuff + rank*recvcount),
 *   B is no longer allocated, and every later use of B becomes that view of A.
 *   AllGather send S = X[off : q], recv the whole buffer G of world*q elements: when nothing
 *   names X after the collective but its free, and X[off - rank*q : world*q] lies inside X on
 *   every rank, the collective gathers into that view (sendbuff == recvbuff + rank*sendcount),
 *   G is no longer allocated, and every later use of G becomes the view.
 * The language has no alias, so later uses are rewritten to the view. The surviving buffer's
 * free goes to where the later of the two was freed (nowhere when the removed buffer lived to
 * the end: the survivor now holds the result). B and G must be allocated in the same block,
 * without init or chunks, named by nothing between their alloc and the collective, and not
 * allocated, freed, released or wrapped by expect_error again before their free. */
#include "optimize/optimize_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t from, to;     /* views of `from` become views of `to` */
    const char *base;      /* `from` starts at element `base` of `to` */
    const char *count;     /* elements of `from` */
    bool whole;            /* `from` is all of `to` */
    opt_ctx *c;
} alias;

static void rewrite_view(void *ctx, sched_view *v) {
    alias *a = ctx;
    if (v->buf != a->from)
        return;
    v->buf = a->to;
    if (a->whole)
        return;
    if (!v->offset) {
        v->offset = opt_expr(a->c, "%s", a->base);
        v->count = opt_expr(a->c, "%s", a->count);
        return;
    }
    v->offset = opt_expr(a->c, "%s + %s", opt_paren(a->c, a->base),
                         opt_paren(a->c, expr_text(v->offset)));
}

static void rewrite_node(opt_node *n, alias *a) {
    opt_unshare(a->c, n);
    opt_each_view(&n->st, rewrite_view, a);
    for (size_t k = 0; k < n->body.n; k++)
        rewrite_node(&n->body.v[k], a);
}

/* Steps that would make the rewrite wrong if they name buf: an alloc, a free or release, an
 * expect_error (its wrapped step is not rewritten). */
static bool only_views(const opt_node *n, uint32_t buf) {
    switch (n->st.kind) {
    case ST_ALLOC:
        if (n->st.u.alloc.buf == buf)
            return false;
        break;
    case ST_FREE:
        for (uint32_t k = 0; k < n->st.u.free.n; k++)
            if (n->st.u.free.bufs[k] == buf)
                return false;
        break;
    case ST_RELEASE:
        if (n->st.u.release.buf == buf)
            return false;
        break;
    case ST_EXPECT_ERROR:
        if (opt_refs(n, buf))
            return false;
        break;
    default:
        break;
    }
    for (size_t k = 0; k < n->body.n; k++)
        if (!only_views(&n->body.v[k], buf))
            return false;
    return true;
}

static bool frees(const opt_node *n, uint32_t buf) {
    return n->st.kind == ST_FREE && n->st.u.free.n == 1 && n->st.u.free.bufs[0] == buf;
}

/* The latest alloc of buf before node i, when nothing names buf in between; SIZE_MAX else. */
static size_t fresh_alloc(const opt_block *b, const bool *gone, size_t i, uint32_t buf) {
    for (size_t k = i; k-- > 0;) {
        if (gone[k] || !opt_refs(&b->v[k], buf))
            continue;
        return b->v[k].st.kind == ST_ALLOC && b->v[k].st.u.alloc.buf == buf ? k : SIZE_MAX;
    }
    return SIZE_MAX;
}

static size_t last_alloc(const opt_block *b, const bool *gone, size_t i, uint32_t buf) {
    for (size_t k = i; k-- > 0;)
        if (!gone[k] && b->v[k].st.kind == ST_ALLOC && b->v[k].st.u.alloc.buf == buf)
            return k;
    return SIZE_MAX;
}

/* The first node after i naming buf, or b->n. */
static size_t next_ref(const opt_block *b, const bool *gone, size_t i, uint32_t buf) {
    for (size_t k = i + 1; k < b->n; k++)
        if (!gone[k] && opt_refs(&b->v[k], buf))
            return k;
    return b->n;
}

/* Checks that survivor `to` is named after node i only by its free (returned in *free_to), and
 * that `from` is used after i only through views up to its free (*free_from, or b->n). */
static bool can_merge(const opt_block *b, const bool *gone, size_t i, uint32_t to, uint32_t from,
                      size_t *free_to, size_t *free_from) {
    size_t f = next_ref(b, gone, i, to);
    if (f == b->n || !frees(&b->v[f], to))
        return false;   /* the survivor's data (beyond the slice) is needed, or is a result */
    *free_to = f;
    for (size_t k = i + 1; k < b->n; k++) {
        if (gone[k] || !opt_refs(&b->v[k], from))
            continue;
        if (frees(&b->v[k], from)) {
            *free_from = k;
            return true;
        }
        if (!only_views(&b->v[k], from))
            return false;
    }
    *free_from = b->n;
    return true;
}

/* Applies the alias after node i; moves the survivor's free to the later of the two frees. */
static void merge(opt_ctx *c, opt_block *b, bool *gone, size_t i, alias *a, size_t alloc_from,
                  size_t free_to, size_t free_from) {
    for (size_t k = i + 1; k < b->n && k < free_from; k++) {
        if (gone[k])
            continue;
        /* a step whose text changes says why (the rewritten file shows it under a comment) */
        bool named = opt_refs(&b->v[k], a->from);
        rewrite_node(&b->v[k], a);
        if (named && b->v[i].orig_line)
            opt_note(c, &b->v[k], "reads '%s' where it read '%s' (the %s at line %u runs in "
                     "place)", opt_buf_name(c, a->to), opt_buf_name(c, a->from),
                     ml_colls[b->v[i].st.u.coll.coll].name, b->v[i].orig_line);
        else if (named)
            opt_note(c, &b->v[k], "reads '%s' where it read '%s' (in place)",
                     opt_buf_name(c, a->to), opt_buf_name(c, a->from));
    }
    gone[alloc_from] = true;
    c->changes++;
    if (free_from == b->n) {
        gone[free_to] = true;   /* the survivor holds the result to the end */
        c->changes++;
        size_t used = strlen(c->renamed);
        if (a->whole)
            snprintf(c->renamed + used, sizeof c->renamed - used, "%sresult '%s' is now '%s'",
                     used ? "; " : "", opt_buf_name(c, a->from), opt_buf_name(c, a->to));
        else
            snprintf(c->renamed + used, sizeof c->renamed - used, "%sresult '%s' is now %s[%s : %s]",
                     used ? "; " : "", opt_buf_name(c, a->from), opt_buf_name(c, a->to), a->base,
                     a->count);
    } else if (free_from > free_to) {
        gone[free_to] = true;
        opt_node *f = &b->v[free_from];
        f->st.u.free.bufs = ml_arena_alloc(c->arena, sizeof(uint32_t));
        f->st.u.free.bufs[0] = a->to;
        opt_note(c, f, "frees '%s', which now holds what '%s' held", opt_buf_name(c, a->to),
                 opt_buf_name(c, a->from));
        c->changes += 2;
    } else {
        gone[free_from] = true;
        c->changes++;
    }
}

static bool same_dtype(const opt_block *b, size_t x, size_t y) {
    return b->v[x].st.u.alloc.dtype == b->v[y].st.u.alloc.dtype;
}

static bool plain_alloc(const opt_node *n) {
    return !n->st.u.alloc.chunks && n->st.u.alloc.init.kind == INIT_NONE;
}

static void reduce_scatter(opt_ctx *c, opt_block *b, bool *gone, size_t i) {
    sched_step *st = &b->v[i].st;
    uint32_t A = st->u.coll.send.buf, B = st->u.coll.recv.buf;
    /* on a communicator the slot is the group's rank, which `rank * q` does not say */
    if (A == B || st->u.coll.recv.offset || st->u.coll.comm)
        return;
    size_t aB = fresh_alloc(b, gone, i, B), aA = last_alloc(b, gone, i, A), fA, fB;
    if (aB == SIZE_MAX || aA == SIZE_MAX || !plain_alloc(&b->v[aB]) || !same_dtype(b, aA, aB) ||
        !can_merge(b, gone, i, A, B, &fA, &fB))
        return;
    const sched_step *alloc_b = &b->v[aB].st;
    for (int r = 0; r < c->world; r++) {
        int64_t off, cnt, q = opt_alloc_count(c, alloc_b, r);
        if (q < 0 || opt_view_range(c, &st->u.coll.send, &b->v[aA].st, r, &off, &cnt) != 0 ||
            cnt != q * c->world)
            return;
    }
    const char *q = opt_paren(c, opt_alloc_count_text(c, alloc_b));
    char base[400];
    if (st->u.coll.send.offset)
        snprintf(base, sizeof base, "%s + rank * %s", opt_paren(c, expr_text(st->u.coll.send.offset)), q);
    else
        snprintf(base, sizeof base, "rank * %s", q);
    alias a = {.from = B, .to = A, .base = ml_arena_strndup(c->arena, base, strlen(base)),
               .count = q, .c = c};
    rewrite_view(&a, &st->u.coll.recv);
    opt_note(c, &b->v[i],
             "in place: writes this rank's slice of '%s' (NCCL: recv = send + rank*recvcount); "
             "'%s' is not allocated, its uses read %s[%s : %s]",
             opt_buf_name(c, A), opt_buf_name(c, B), opt_buf_name(c, A), a.base, q);
    c->changes++;
    merge(c, b, gone, i, &a, aB, fA, fB);
}

static void all_gather(opt_ctx *c, opt_block *b, bool *gone, size_t i) {
    sched_step *st = &b->v[i].st;
    uint32_t X = st->u.coll.send.buf, G = st->u.coll.recv.buf;
    if (X == G || st->u.coll.recv.offset || !st->u.coll.send.offset || st->u.coll.comm)
        return;
    size_t aG = fresh_alloc(b, gone, i, G), aX = last_alloc(b, gone, i, X), fX, fG;
    if (aG == SIZE_MAX || aX == SIZE_MAX || !plain_alloc(&b->v[aG]) || !same_dtype(b, aX, aG) ||
        !can_merge(b, gone, i, X, G, &fX, &fG))
        return;
    bool whole = true;
    for (int r = 0; r < c->world; r++) {
        int64_t off, cnt, n_x = opt_alloc_count(c, &b->v[aX].st, r), n_g = opt_alloc_count(c, &b->v[aG].st, r);
        if (opt_view_range(c, &st->u.coll.send, &b->v[aX].st, r, &off, &cnt) != 0 || n_x < 0 ||
            n_g != cnt * c->world || off < (int64_t)r * cnt || off - r * cnt + n_g > n_x)
            return;
        whole &= off == (int64_t)r * cnt && n_g == n_x;
    }
    const char *q = opt_paren(c, expr_text(st->u.coll.send.count));
    char base[400], count[300];
    snprintf(base, sizeof base, "%s - rank * %s", opt_paren(c, expr_text(st->u.coll.send.offset)), q);
    snprintf(count, sizeof count, "world * %s", q);
    alias a = {.from = G, .to = X, .base = ml_arena_strndup(c->arena, base, strlen(base)),
               .count = ml_arena_strndup(c->arena, count, strlen(count)), .whole = whole, .c = c};
    rewrite_view(&a, &st->u.coll.recv);
    if (whole)
        opt_note(c, &b->v[i],
                 "in place: gathers into '%s', whose rank slice is the input (NCCL: send = recv + "
                 "rank*sendcount); '%s' is not allocated, its uses read '%s'",
                 opt_buf_name(c, X), opt_buf_name(c, G), opt_buf_name(c, X));
    else
        opt_note(c, &b->v[i],
                 "in place: gathers into %s[%s : %s] (NCCL: send = recv + rank*sendcount); '%s' is "
                 "not allocated, its uses read that view",
                 opt_buf_name(c, X), a.base, a.count, opt_buf_name(c, G));
    c->changes++;
    merge(c, b, gone, i, &a, aG, fX, fG);
}

static void inplace_block(opt_ctx *c, opt_block *b) {
    for (size_t k = 0; k < b->n; k++)
        if (b->v[k].body.n)
            inplace_block(c, &b->v[k].body);
    opt_split_frees(c, b);
    bool *gone = ml_xcalloc(b->n + 1, sizeof *gone);
    for (size_t i = 0; i < b->n; i++) {
        const sched_step *st = &b->v[i].st;
        if (gone[i] || st->kind != ST_COLL || st->when)
            continue;
        /* by the row's in-place rule (coll.h): recv a slot of send, or send a slot of recv */
        if (ml_colls[st->u.coll.coll].inplace == INPLACE_RECV_IN_SEND)
            reduce_scatter(c, b, gone, i);
        else if (ml_colls[st->u.coll.coll].inplace == INPLACE_SEND_IN_RECV)
            all_gather(c, b, gone, i);
    }
    opt_block out = {0};
    for (size_t k = 0; k < b->n; k++)
        if (!gone[k])
            opt_block_push(c, &out, &b->v[k]);
    *b = out;
    free(gone);
}

void opt_inplace(opt_ctx *c, opt_block *b) { inplace_block(c, b); }
