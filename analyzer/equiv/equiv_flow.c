/* SPDX-License-Identifier: MIT */
/* equiv_flow.c — the data flow behind row 1 of `memlife equiv` (equiv.h).
 *
 * Both plans are followed for every rank at once (collectives need every rank's data), each
 * buffer as a list of segments whose elements share one symbolic value: "element index+j of
 * pattern P", "that element reduced over the ranks with op", scaled by a factor, plus the steps
 * that touched it (the reduction, the reduce_scatter that left it as a shard and its owner, the
 * all_gather, a scale, a copy that moved it). At the end the result buffers are compared segment
 * by segment; the first difference on a rank is classified by the chapter's checklist and named
 * with its step. Values the flow does not model (compute steps, reductions of reductions, data
 * that differs between ranks in other ways) make it undecided rather than wrong.
 *
 * With communicators (`comm:`) a collective takes the members of one group: its reduction
 * combines theirs only, its shards are 1/the group's size, its root and source ranks are ranks
 * within the group. A reduced value remembers the set of ranks it combines (rank_sets), so that
 * reductions over disjoint groups of the same data (a reduce_scatter on tp, an all_reduce on dp)
 * combine into one over their union, and a value reduced over a group differs from one reduced
 * over the world. */
#include "equiv/equiv.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef enum { AV_UNDEF, AV_INPUT, AV_REDUCED, AV_OPAQUE } av_kind;

typedef struct {
    av_kind kind;
    ml_dtype dtype;
    const sched_init *pattern;     /* INPUT, REDUCED: the init pattern the data starts from */
    ml_redop op;                   /* REDUCED */
    uint32_t over;                 /* REDUCED: the ranks combined (rank_sets; 0: every rank) */
    int64_t index;                 /* pattern index of the segment's first element */
    int64_t scale, scale_den;      /* product of the scale factors applied: scale/scale_den */
    int owner;                     /* a reduce_scatter shard not yet gathered: its rank; else -1;
                                      OWNER_EACH in a reduction's result: each member's own */
    bool scaled_as_shard;          /* scaled while it was such a shard */
    bool pre_scaled;               /* scaled before the reduction */
    const plan_op *made, *reduced_by, *rs, *ag, *scaled, *moved, *copied, *bad_owner;
    int bad_owner_rank;
} aval;

typedef struct {
    uint64_t start, n;
    aval v;
} seg;

typedef struct {
    seg *s;
    size_t n;
    bool live;
    uint64_t count;
    const plan_op *alloc;
} seglist;

/* A reduction (over another communicator) of shards that each member holds as its own leaves
 * each member its own shard still: the result's owner until it is written to a member. */
enum { OWNER_EACH = -2 };

/* The sets of ranks reductions combine, interned so that equal sets have one index, shared by
 * both plans: a value compares its set by index. Set 0 is every rank, the only set where the
 * world is the only communicator. */
typedef struct {
    int world;
    size_t words;                  /* uint64_t per set */
    uint64_t *bits;                /* [n * words] */
    uint32_t n, cap;
} rank_sets;

typedef struct {
    const series *sr;
    rank_sets *sets;
    seglist **bufs;                /* [world][n buffers] */
    uint32_t n_bufs;
    size_t *pc;                    /* [world] next op */
    bool stopped;                  /* the flow lost track (divergent ranks) */
    const plan_op *partial;        /* first collective that reduces part of its input buffer */
    uint64_t partial_count, partial_buf_count;
} side_state;

/* ---- Values -----------------------------------------------------------------------------------*/

/* Constant and identity patterns have the same value at every index. */
static bool positional(const aval *v) {
    return (v->kind == AV_INPUT || v->kind == AV_REDUCED) && v->pattern &&
           v->pattern->kind != INIT_CONST && v->pattern->kind != INIT_IDENTITY;
}

static bool text_same(const expr *a, const expr *b) {
    const char *x = a ? expr_text(a) : "", *y = b ? expr_text(b) : "";
    for (;;) {
        while (isspace((unsigned char)*x))
            x++;
        while (isspace((unsigned char)*y))
            y++;
        if (*x != *y)
            return false;
        if (!*x)
            return true;
        x++;
        y++;
    }
}

static bool pattern_same(const sched_init *a, const sched_init *b) {
    if (a == b)
        return true;
    if (!a || !b || a->kind != b->kind)
        return false;
    int64_t x, y;
    switch (a->kind) {
    case INIT_RANK_IOTA: return true;
    case INIT_IDENTITY: return a->op == b->op;
    default:
        if (a->value && b->value && expr_const_value(a->value, &x) && expr_const_value(b->value, &y))
            return x == y;
        return text_same(a->value, b->value);
    }
}

/* Same value at element `at` of a and element `bt` of b (offsets into their segments). */
/* v's factor times num/den, kept in lowest terms (plan.c gives num/den in lowest terms, den > 0;
 * the products wrap only beyond 2^63, where no schedule's factors go). */
static void scale_by(aval *v, int64_t num, int64_t den) {
    v->scale *= num;
    v->scale_den *= den;
    int64_t a = v->scale < 0 ? -v->scale : v->scale, b = v->scale_den;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    if (a > 1) {
        v->scale /= a;
        v->scale_den /= a;
    }
}

/* "3", "1/4": a factor for messages. */
static const char *frac_text(int64_t num, int64_t den, char *buf, size_t len) {
    if (den == 1)
        snprintf(buf, len, "%lld", (long long)num);
    else
        snprintf(buf, len, "%lld/%lld", (long long)num, (long long)den);
    return buf;
}

/* value_same but for the set of ranks a reduction combined. */
static bool value_same_but_over(const aval *a, uint64_t at, const aval *b, uint64_t bt) {
    if (a->kind != b->kind || a->kind == AV_OPAQUE || a->kind == AV_UNDEF)
        return false;   /* undefined data is never known to be equal */
    if (a->dtype != b->dtype || a->scale != b->scale || a->scale_den != b->scale_den ||
        !pattern_same(a->pattern, b->pattern))
        return false;
    if (a->kind == AV_REDUCED && a->op != b->op)
        return false;
    return !positional(a) || a->index + (int64_t)at == b->index + (int64_t)bt;
}

static bool value_same(const aval *a, uint64_t at, const aval *b, uint64_t bt) {
    return value_same_but_over(a, at, b, bt) && (a->kind != AV_REDUCED || a->over == b->over);
}

/* ---- Sets of ranks ---------------------------------------------------------------------------*/

static void sets_init(rank_sets *rs, int world) {
    memset(rs, 0, sizeof *rs);
    rs->world = world;
    rs->words = ((size_t)world + 63) / 64;
}

/* The index of the set `bits` ([words]), added where new; every rank is 0 whatever was added. */
static uint32_t sets_intern(rank_sets *rs, const uint64_t *bits) {
    bool all = true;
    for (int r = 0; r < rs->world && all; r++)
        all = bits[r / 64] >> (r % 64) & 1u;
    if (all)
        return 0;
    for (uint32_t k = 1; k < rs->n; k++)
        if (!memcmp(&rs->bits[k * rs->words], bits, rs->words * sizeof *bits))
            return k;
    if (rs->n == 0)
        rs->n = 1;
    if (rs->n >= rs->cap) {   /* slot 0 unused: every rank is never stored */
        rs->cap = rs->cap ? 2 * rs->cap : 8;
        rs->bits = ml_xrealloc(rs->bits, (size_t)rs->cap * rs->words * sizeof *rs->bits);
    }
    memcpy(&rs->bits[rs->n * rs->words], bits, rs->words * sizeof *bits);
    return rs->n++;
}

/* How many ranks set k holds. */
static int sets_size(const rank_sets *rs, uint32_t k) {
    if (k == 0)
        return rs->world;
    int n = 0;
    for (size_t w = 0; w < rs->words; w++)
        n += __builtin_popcountll(rs->bits[k * rs->words + w]);
    return n;
}

/* Adds set k's ranks to bits; false where one is there already (the sets are not disjoint). */
static bool sets_add(const rank_sets *rs, uint32_t k, uint64_t *bits) {
    bool disjoint = true;
    for (size_t w = 0; w < rs->words; w++) {
        uint64_t add = k == 0 ? (w + 1 < rs->words || rs->world % 64 == 0
                                     ? ~(uint64_t)0
                                     : ((uint64_t)1 << (rs->world % 64)) - 1)
                              : rs->bits[k * rs->words + w];
        disjoint &= !(bits[w] & add);
        bits[w] |= add;
    }
    return disjoint;
}

/* "every rank", "ranks 0, 1" (eight, then "..."). */
static const char *sets_text(const rank_sets *rs, uint32_t k, char *buf, size_t len) {
    if (k == 0) {
        snprintf(buf, len, "every rank");
        return buf;
    }
    size_t at = (size_t)snprintf(buf, len, "ranks ");
    int listed = 0;
    for (int r = 0; r < rs->world && at < len; r++)
        if (rs->bits[k * rs->words + (size_t)r / 64] >> (r % 64) & 1u) {
            if (listed++ == 8) {
                snprintf(buf + at, len - at, ", ...");
                break;
            }
            at += (size_t)snprintf(buf + at, len - at, "%s%d", listed > 1 ? ", " : "", r);
        }
    return buf;
}

/* Adjacent segments that continue each other (for short lists under repeats). */
static bool continues(const seg *a, const seg *b) {
    const aval *x = &a->v, *y = &b->v;
    if (positional(x) && x->index + (int64_t)a->n != y->index)
        return false;
    /* Field by field: a struct copy leaves its padding undefined, so no memcmp. */
    return a->start + a->n == b->start && x->kind == y->kind && x->dtype == y->dtype &&
           x->pattern == y->pattern && x->op == y->op && x->over == y->over && x->scale == y->scale &&
           x->scale_den == y->scale_den &&
           x->owner == y->owner && x->scaled_as_shard == y->scaled_as_shard &&
           x->pre_scaled == y->pre_scaled && x->made == y->made && x->reduced_by == y->reduced_by &&
           x->rs == y->rs && x->ag == y->ag && x->scaled == y->scaled && x->moved == y->moved &&
           x->copied == y->copied && x->bad_owner == y->bad_owner &&
           x->bad_owner_rank == y->bad_owner_rank;
}

/* ---- Segment lists ----------------------------------------------------------------------------*/

static void push(seg **out, size_t *n, size_t *cap, const seg *s) {
    if (s->n == 0)
        return;
    if (*n && continues(&(*out)[*n - 1], s)) {
        (*out)[*n - 1].n += s->n;
        return;
    }
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        *out = ml_xrealloc(*out, *cap * sizeof **out);
    }
    (*out)[(*n)++] = *s;
}

/* Elements [off, off+n) of l as segments starting at 0 (malloc'd). */
static seg *slice(const seglist *l, uint64_t off, uint64_t n, size_t *n_out) {
    seg *out = NULL;
    size_t k = 0, cap = 0;
    for (size_t i = 0; i < l->n; i++) {
        const seg *s = &l->s[i];
        uint64_t lo = s->start > off ? s->start : off;
        uint64_t hi = s->start + s->n < off + n ? s->start + s->n : off + n;
        if (lo >= hi)
            continue;
        seg c = *s;
        if (positional(&c.v))
            c.v.index += (int64_t)(lo - s->start);
        c.start = lo - off;
        c.n = hi - lo;
        push(&out, &k, &cap, &c);
    }
    *n_out = k;
    return out;
}

/* Writes src (segments starting at 0) over [off, off+n) of l. */
static void overwrite(seglist *l, uint64_t off, uint64_t n, const seg *src, size_t n_src) {
    seg *out = NULL;
    size_t k = 0, cap = 0;
    for (size_t i = 0; i < l->n; i++) {
        seg s = l->s[i];
        if (s.start < off) {
            seg c = s;
            c.n = (s.start + s.n < off ? s.start + s.n : off) - s.start;
            push(&out, &k, &cap, &c);
        }
    }
    for (size_t i = 0; i < n_src; i++) {
        seg c = src[i];
        c.start += off;
        push(&out, &k, &cap, &c);
    }
    for (size_t i = 0; i < l->n; i++) {
        seg s = l->s[i];
        if (s.start + s.n > off + n) {
            uint64_t lo = s.start > off + n ? s.start : off + n;
            if (positional(&s.v))
                s.v.index += (int64_t)(lo - s.start);
            s.n = s.start + s.n - lo;
            s.start = lo;
            push(&out, &k, &cap, &s);
        }
    }
    free(l->s);
    l->s = out;
    l->n = k;
}

static void fill(seglist *l, uint64_t off, uint64_t n, const aval *v) {
    seg s = {0, n, *v};
    overwrite(l, off, n, &s, 1);
}

/* ---- Ops of one rank --------------------------------------------------------------------------*/

static seglist *buf_of(side_state *st, int rank, uint32_t buf) {
    return buf < st->n_bufs ? &st->bufs[rank][buf] : NULL;
}

static const sched_init *init_of(const plan_op *op) {
    return op->step->kind == ST_ALLOC ? &op->step->u.alloc.init : &op->step->u.init.init;
}

static aval fresh(av_kind kind, ml_dtype dt, const plan_op *made) {
    aval v;
    memset(&v, 0, sizeof v);
    v.kind = kind;
    v.dtype = dt;
    v.scale = v.scale_den = 1;
    v.owner = -1;
    v.made = made;
    v.bad_owner_rank = -1;
    return v;
}

static void copy_view(side_state *st, int rank, const plan_op *op, const plan_view *src,
                      const plan_view *dst) {
    seglist *s = buf_of(st, rank, src->buf), *d = buf_of(st, rank, dst->buf);
    if (!s || !d)
        return;
    size_t n;
    seg *pieces = slice(s, src->offset, dst->count < src->count ? dst->count : src->count, &n);
    for (size_t k = 0; k < n; k++) {
        pieces[k].v.copied = op;
        if (src->offset != dst->offset)
            pieces[k].v.moved = op;   /* element j of the source lands at another position */
    }
    overwrite(d, dst->offset, dst->count, pieces, n);
    free(pieces);
}

static void local_op(side_state *st, int rank, const plan_op *op) {
    seglist *l;
    switch (op->kind) {
    case OP_ALLOC:
        if (!(l = buf_of(st, rank, op->u.alloc.buf)))
            return;
        free(l->s);
        memset(l, 0, sizeof *l);
        l->live = true;
        l->count = op->u.alloc.count;
        l->alloc = op;
        aval u = fresh(AV_UNDEF, op->u.alloc.dtype, op);
        fill(l, 0, l->count, &u);
        break;
    case OP_FREE:
        if ((l = buf_of(st, rank, op->u.free.buf))) {
            free(l->s);
            memset(l, 0, sizeof *l);
        }
        break;
    case OP_INIT: {
        const sched_init *init = init_of(op);
        if (init->kind == INIT_NONE)
            break;
        if (init->kind == INIT_COPY) {
            copy_view(st, rank, op, &op->u.init.src, &op->u.init.dst);
            break;
        }
        if (!(l = buf_of(st, rank, op->u.init.dst.buf)))
            break;
        aval v = fresh(AV_INPUT, op->u.init.dst.dtype, op);
        v.pattern = init;
        fill(l, op->u.init.dst.offset, op->u.init.dst.count, &v);
        break;
    }
    case OP_COPY: copy_view(st, rank, op, &op->u.copy.src, &op->u.copy.dst); break;
    case OP_SCALE: {
        const plan_view *pv = &op->u.scale.buf;
        if (!(l = buf_of(st, rank, pv->buf)))
            break;
        size_t n;
        seg *pieces = slice(l, pv->offset, pv->count, &n);
        for (size_t k = 0; k < n; k++) {
            aval *v = &pieces[k].v;
            scale_by(v, op->u.scale.factor, op->u.scale.den);
            v->scaled = op;
            v->scaled_as_shard |= v->owner >= 0;
            v->pre_scaled |= v->kind == AV_INPUT;
        }
        overwrite(l, pv->offset, pv->count, pieces, n);
        free(pieces);
        break;
    }
    case OP_COLL:
        /* A recv (advance runs send and recv here, the other collectives in lockstep): what it
         * holds comes from its peer's send in that rank's own order, which this flow does not
         * pair yet, so it is opaque data made by the recv: outputs that depend on it are never
         * claimed equal. A send changes nothing here. */
        if (ml_colls[op->u.coll.coll].p2p == P2P_RECV && (l = buf_of(st, rank, op->u.coll.recv.buf))) {
            aval v = fresh(AV_OPAQUE, op->u.coll.recv.dtype, op);
            fill(l, op->u.coll.recv.offset, op->u.coll.recv.count, &v);
        }
        break;
    case OP_COMPUTE: {
        uint32_t nr, nw;
        const plan_view *views = plan_compute_views(&st->sr->plans[rank], op, &nr, &nw);
        for (uint32_t k = 0; k < nw; k++)
            if ((l = buf_of(st, rank, views[nr + k].buf))) {
                aval v = fresh(AV_OPAQUE, views[nr + k].dtype, op);
                fill(l, views[nr + k].offset, views[nr + k].count, &v);
            }
        break;
    }
    default: break;
    }
}

/* Runs rank's ops up to its next collective; returns true when it stopped at one. An op wrapped
 * by expect_error never runs (the runtime refuses it), so the flow skips it too. */
static bool advance(side_state *st, int rank) {
    const rank_plan *p = &st->sr->plans[rank];
    size_t *pc = &st->pc[rank];
    while (*pc < p->n_ops) {
        const plan_op *op = &p->ops[*pc];
        if (op->kind == OP_EXPECT_BEGIN) {
            *pc += 2;
            continue;
        }
        if (op->kind == OP_COLL && !ml_colls[op->u.coll.coll].p2p)
            return true;
        local_op(st, rank, op);
        (*pc)++;
    }
    return false;
}

/* ---- Collectives over every rank --------------------------------------------------------------*/

/* The reduction over the group's members (world of them, world ranks members[]) of each
 * member's pieces (all of n elements). The same input on every member becomes that input
 * reduced over the members; the same input reduced over disjoint sets of ranks, one on each
 * member, becomes it reduced over their union (a reduction in stages over a mesh). */
static seg *reduce_over(rank_sets *rs, const int *members, seg **pieces, const size_t *n_pieces,
                        int world, uint64_t n, ml_redop op, const plan_op *cop, size_t *n_out) {
    seg *out = NULL;
    size_t k = 0, cap = 0;
    size_t *at = ml_xcalloc((size_t)world, sizeof *at);
    uint64_t *bits = ml_xcalloc(rs->words ? rs->words : 1, sizeof *bits);
    for (uint64_t pos = 0; pos < n;) {
        uint64_t end = n;
        for (int r = 0; r < world; r++) {
            while (at[r] < n_pieces[r] && pieces[r][at[r]].start + pieces[r][at[r]].n <= pos)
                at[r]++;
            const seg *s = &pieces[r][at[r]];
            end = s->start + s->n < end ? s->start + s->n : end;
        }
        const seg *s0 = &pieces[0][at[0]];
        aval v = s0->v;
        if (positional(&v))
            v.index += (int64_t)(pos - s0->start);
        bool same = true, undef = v.kind == AV_UNDEF;
        for (int r = 1; r < world; r++) {
            const seg *s = &pieces[r][at[r]];
            same = same && value_same_but_over(&s0->v, pos - s0->start, &s->v, pos - s->start);
            undef = undef && s->v.kind == AV_UNDEF;
        }
        /* the ranks the result combines: the members, or the union of their disjoint sets */
        bool disjoint = true;
        memset(bits, 0, rs->words * sizeof *bits);
        for (int r = 0; r < world && same; r++) {
            if (v.kind == AV_INPUT)
                bits[members[r] / 64] |= (uint64_t)1 << (members[r] % 64);
            else if (v.kind == AV_REDUCED)
                /* an average of averages is the union's only over sets of one size */
                disjoint &= sets_add(rs, pieces[r][at[r]].v.over, bits) &&
                            (op != RED_AVG || sets_size(rs, pieces[r][at[r]].v.over) ==
                                                  sets_size(rs, v.over));
        }
        if (same && v.kind == AV_REDUCED && v.op == op && disjoint && world > 1) {
            bool own = true;
            for (int r = 0; r < world; r++)
                own &= pieces[r][at[r]].v.owner == members[r];
            v.over = sets_intern(rs, bits);
            v.owner = own ? OWNER_EACH : -1;
            v.reduced_by = cop;
        } else if (v.kind == AV_INPUT && same &&
                   !(v.pattern->kind == INIT_IDENTITY && v.pattern->op == op)) {
            v.kind = AV_REDUCED;
            v.op = op;
            v.over = sets_intern(rs, bits);
            v.reduced_by = cop;
        } else if (!(v.kind == AV_INPUT && same)) {
            /* Identities stay identities; anything else (a second reduction, ranks holding
             * different things) is beyond the flow. */
            v = fresh(undef ? AV_UNDEF : AV_OPAQUE, v.dtype, cop);
        }
        seg c = {pos, end - pos, v};
        push(&out, &k, &cap, &c);
        pos = end;
    }
    free(at);
    free(bits);
    *n_out = k;
    return out;
}

static bool holds_own_shard(side_state *st, int rank) {
    for (uint32_t b = 0; b < st->n_bufs; b++) {
        const seglist *l = &st->bufs[rank][b];
        for (size_t k = 0; l->live && k < l->n; k++)
            if (l->s[k].v.owner == rank)
                return true;
    }
    return false;
}

/* The first collective that reduces only part of an initialized input buffer (on rank, its
 * first member). */
static void note_partial(side_state *st, int rank, const plan_op *op, uint64_t send_count) {
    const plan_view *sv = &op->u.coll.send;
    const seglist *l = buf_of(st, rank, sv->buf);
    if (st->partial || !l || sv->offset + send_count >= l->count)
        return;
    for (size_t k = 0; k < l->n; k++)
        if (l->s[k].start + l->s[k].n > sv->offset + send_count && positional(&l->s[k].v) &&
            l->s[k].v.kind == AV_INPUT) {
            st->partial = op;
            st->partial_count = send_count;
            st->partial_buf_count = l->count;
            return;
        }
}

/* An all_gather concatenates what each rank sends by source rank. A rank that sends anything but
 * the shard its reduce_scatter left it (another rank's shard, or unreduced data while it holds its
 * own) breaks the owner-by-communicator-rank condition; the sent data remembers where. */
static void mark_senders(side_state *st, int world, const int *members, const plan_op *const *ops,
                         seg **pieces, const size_t *n_pieces) {
    for (int s = 0; s < world; s++) {
        int rank = members[s];
        bool own = holds_own_shard(st, rank);
        for (size_t k = 0; k < n_pieces[s]; k++) {
            aval *v = &pieces[s][k].v;
            if ((v->owner >= 0 && v->owner != rank) ||
                (v->owner < 0 && v->kind != AV_REDUCED && own)) {
                v->bad_owner = ops[s];
                v->bad_owner_rank = rank;
            }
            v->owner = -1;
            v->ag = ops[s];
        }
    }
}

/* One collective on the members of a group (world of them: members[j] is the world rank of
 * member j, ops[j] its op; every rank without communicators), as its row in coll.h declares its
 * data flow (ml_coll_flow): no collective is named here. Shards, roots and sources are members'
 * indices, NCCL's ranks within the group. */
static void collective(side_state *st, int world, const int *members, const plan_op *const *ops) {
    const plan_op *op0 = ops[0];
    ml_coll c = op0->u.coll.coll;
    const ml_coll_flow *flow = &ml_colls[c].flow;
    bool reduces = flow->source == FLOW_REDUCTION;
    uint64_t count = plan_coll_count(op0);
    uint64_t send_n = ml_coll_send_count(c, count, world);
    seg **pieces = ml_xcalloc((size_t)world, sizeof *pieces);
    size_t *n_pieces = ml_xcalloc((size_t)world, sizeof *n_pieces);
    for (int r = 0; r < world; r++) {
        const seglist *l = buf_of(st, members[r], ops[r]->u.coll.send.buf);
        pieces[r] = l ? slice(l, ops[r]->u.coll.send.offset, send_n, &n_pieces[r]) : NULL;
    }
    if (reduces)
        note_partial(st, members[0], op0, send_n);
    if (flow->source == FLOW_GATHER)
        mark_senders(st, world, members, ops, pieces, n_pieces);
    size_t nred = 0;
    seg *red = NULL;
    if (reduces)
        red = reduce_over(st->sets, members, pieces, n_pieces, world, send_n, op0->u.coll.op, op0,
                          &nred);
    int root = op0->u.coll.root;
    for (int r = 0; r < world; r++) {
        const plan_view *rv = &ops[r]->u.coll.recv;
        seglist *l = buf_of(st, members[r], rv->buf);
        if (!l || (flow->root_only && r != root))
            continue;
        switch (flow->source) {
        case FLOW_REDUCTION:
            if (flow->shard_of_rank) {
                size_t n;
                seg *mine = slice(&(seglist){.s = red, .n = nred}, (uint64_t)r * count, count, &n);
                for (size_t k = 0; k < n; k++) {
                    mine[k].v.owner = members[r];
                    mine[k].v.rs = ops[r];
                }
                overwrite(l, rv->offset, count, mine, n);
                free(mine);
            } else {
                seg *mine = ml_xmalloc((nred ? nred : 1) * sizeof *mine);
                for (size_t k = 0; k < nred; k++) {
                    mine[k] = red[k];
                    if (mine[k].v.owner == OWNER_EACH)
                        mine[k].v.owner = members[r];
                }
                overwrite(l, rv->offset, count, mine, nred);
                free(mine);
            }
            break;
        case FLOW_GATHER:
            for (int s = 0; s < world; s++)
                overwrite(l, rv->offset + (uint64_t)s * count, count, pieces[s], n_pieces[s]);
            break;
        case FLOW_TRANSPOSE: {   /* recv block s = rank s's send block r */
            uint64_t blk = count / (uint64_t)world;
            for (int s = 0; s < world; s++) {
                size_t n;
                seg *block = slice(&(seglist){.s = pieces[s], .n = n_pieces[s]},
                                   (uint64_t)r * blk, blk, &n);
                overwrite(l, rv->offset + (uint64_t)s * blk, blk, block, n);
                free(block);
            }
            break;
        }
        case FLOW_ROOT_SEND:
            if (root >= 0 && root < world)
                overwrite(l, rv->offset, count, pieces[root], n_pieces[root]);
            break;
        case FLOW_PEER_SEND:   /* send/recv run rank by rank in advance(), never here */
            ml_internal_error("'%s' reached the lockstep collective flow", ml_colls[c].name);
        case FLOW_UNDECLARED:
        default:
            ml_internal_error("collective '%s' declares no data flow (runtime/ir/coll.c)",
                              ml_colls[c].name);
        }
    }
    free(red);
    for (int r = 0; r < world; r++)
        free(pieces[r]);
    free(pieces);
    free(n_pieces);
}

/* The collective rank r stopped at (advance), or NULL where it ran to its end. */
static const plan_op *at_op(const side_state *st, int r) {
    const rank_plan *p = &st->sr->plans[r];
    return st->pc[r] < p->n_ops ? &p->ops[st->pc[r]] : NULL;
}

/* Whether the members of r's group of the collective r is at are all at a collective on that
 * communicator, the same one with the same count: then members[] and ops[] are filled and the
 * group's size returned, else 0. Without communicators the group is every rank. */
static int group_ready(const side_state *st, int r, int *members, const plan_op **ops) {
    const rank_plan *p = &st->sr->plans[r];
    const plan_op *op = at_op(st, r);
    uint32_t comm = p->comms ? op->u.coll.comm : 0;
    int n = plan_comm_size(p->comms, p->world, comm, r);
    for (int j = 0; j < n; j++) {
        int m = plan_comm_global(p->comms, comm, r, j);
        const plan_op *o = at_op(st, m);
        if (!o || (p->comms && o->u.coll.comm != comm) || o->u.coll.coll != op->u.coll.coll ||
            plan_coll_count(o) != plan_coll_count(op))
            return 0;
        members[j] = m;
        ops[j] = o;
    }
    return n;
}

/* Runs every rank to its next collective, then the collective of a group whose members are all
 * at it, until every rank has ended. Groups of different ranks are disjoint, so the order in
 * which ready groups run does not change the data. Ranks left waiting on each other (or, without
 * communicators, not all at one collective) stop the flow: lint's cross-rank checks name it. */
static void run_side(side_state *st) {
    int world = st->sr->world;
    const plan_op **ops = ml_xcalloc((size_t)world, sizeof *ops);
    int *members = ml_xcalloc((size_t)world, sizeof *members);
    bool *waiting = ml_xcalloc((size_t)world, sizeof *waiting);
    for (int r = 0; r < world; r++)
        waiting[r] = advance(st, r);
    for (;;) {
        int ran = 0, left = 0;
        for (int r = 0; r < world; r++) {
            if (!waiting[r])
                continue;
            left++;
            int n = group_ready(st, r, members, ops);
            if (n == 0)
                continue;
            collective(st, n, members, ops);
            for (int j = 0; j < n; j++)
                st->pc[members[j]]++;
            for (int j = 0; j < n; j++)
                waiting[members[j]] = advance(st, members[j]);
            ran++;
        }
        if (left == 0)
            break;
        if (ran == 0) {
            st->stopped = true;
            break;
        }
    }
    free(ops);
    free(members);
    free(waiting);
}

/* ---- Comparing the results --------------------------------------------------------------------*/

static const char *side_name(int side) { return side ? "B" : "A"; }

static void where(const equiv_result *r, int side, const plan_op *op, char *buf, size_t len) {
    if (!op) {
        snprintf(buf, len, "?");
        return;
    }
    char what[96];
    series_op_label(&r->side[side]->plans[0], op, what, sizeof what);
    ml_mark m = plan_op_mark(op);
    /* Both plans in one file: line:col says where; else the file too. */
    if (!strcmp(r->side[0]->s->file, r->side[1]->s->file))
        snprintf(buf, len, "%s at %u:%u", what, m.line, m.col);
    else
        snprintf(buf, len, "%s at %s:%u:%u", what, r->side[side]->s->file, m.line, m.col);
}

static void view_text(const series *s, const plan_view *v, char *buf, size_t len) {
    snprintf(buf, len, "%s[%llu : %llu]", sched_sym_name(s->s, SYM_BUFFER, v->buf),
             (unsigned long long)v->offset, (unsigned long long)v->count);
}

static void pattern_text(const aval *v, char *buf, size_t len) {
    const sched_init *p = v->pattern;
    if (!p)
        snprintf(buf, len, "nothing");
    else if (p->kind == INIT_RANK_IOTA)
        snprintf(buf, len, "rank_iota");
    else if (p->kind == INIT_IDENTITY)
        snprintf(buf, len, "the identity of %s", ml_redops[p->op].name);
    else
        snprintf(buf, len, "%s %s", p->kind == INIT_CONST ? "const" : p->kind == INIT_RANDOM ? "random" : "expr",
                 p->value ? expr_text(p->value) : "");
}

/* Whether a fill pattern (const or identity) equals op's identity in dtype. */
static bool is_identity_of(const aval *v, ml_redop op) {
    const sched_init *p = v->pattern;
    if (p->kind == INIT_IDENTITY)
        return p->op == op;
    int64_t c;
    if (p->kind != INIT_CONST || !p->value || !expr_const_value(p->value, &c))
        return false;
    return ((op == RED_SUM || op == RED_AVG) && c == 0) || (op == RED_PROD && c == 1);
}

static void identity_text(ml_redop op, ml_dtype dt, char *buf, size_t len) {
    switch (op) {
    case RED_SUM: case RED_AVG: snprintf(buf, len, "0"); break;
    case RED_PROD: snprintf(buf, len, "1"); break;
    case RED_MAX: snprintf(buf, len, "the %s minimum", ml_dtypes[dt].name); break;
    default: snprintf(buf, len, "the %s maximum", ml_dtypes[dt].name); break;
    }
}

/* "B: reduce_scatter at f:12:5 reduces 1000 = shard 250 x world 4 of the 1003 input elements" */
static void partial_text(const equiv_result *r, const side_state *st, int s, char *buf, size_t len) {
    char x[200];
    const plan_op *op = st->partial;
    where(r, s, op, x, sizeof x);
    if (ml_colls[op->u.coll.coll].flow.shard_of_rank)
        snprintf(buf, len, "%s: %s reduces %llu = shard %llu x world %d of the %llu input elements",
                 side_name(s), x, (unsigned long long)st->partial_count,
                 (unsigned long long)plan_coll_count(op), r->world,
                 (unsigned long long)st->partial_buf_count);
    else
        snprintf(buf, len, "%s: %s reduces %llu of the %llu input elements", side_name(s), x,
                 (unsigned long long)st->partial_count, (unsigned long long)st->partial_buf_count);
}

/* The first difference of rank's results at element pos: a (A) and b (B) with their offsets. */
static void classify(equiv_result *r, const side_state *st, int rank, uint64_t pos, const aval *a,
                     uint64_t at, const aval *b, uint64_t bt) {
    const aval *v[2] = {a, b};
    char x[512], y[512];
    if (a->kind == AV_OPAQUE || b->kind == AV_OPAQUE) {
        r->flow_known = false;
        return;
    }
    if (a->kind == AV_UNDEF && b->kind == AV_UNDEF) {
        r->flow_uninit = true;
        r->flow_known = false;
        return;
    }
    if (a->kind == AV_REDUCED && b->kind == AV_REDUCED && a->op == b->op && a->over != b->over) {
        char sa[160], sb[160];
        where(r, 1, b->reduced_by, y, sizeof y);
        equiv_add_cause(r, CAUSE_LAYOUT, 1, rank, b->reduced_by,
                        "element %llu of rank %d's result is reduced over %s in A, over %s in B "
                        "(%s)", (unsigned long long)pos, rank, sets_text(st[0].sets, a->over, sa, sizeof sa),
                        sets_text(st[0].sets, b->over, sb, sizeof sb), y);
        return;
    }
    if (a->kind == AV_REDUCED && b->kind == AV_REDUCED && a->op != b->op) {
        where(r, 0, a->reduced_by, x, sizeof x);
        where(r, 1, b->reduced_by, y, sizeof y);
        equiv_add_cause(r, CAUSE_OP, 1, rank, b->reduced_by,
                        "A reduces with %s (%s), B with %s (%s)%s%s%s", ml_redops[a->op].name, x,
                        ml_redops[b->op].name, y, b->ag ? "; the all_gather after it cannot turn "
                                                          : "",
                        b->ag ? ml_redops[b->op].name : "", b->ag ? " back into the other op" : "");
        return;
    }
    for (int s = 0; s < 2; s++)
        if (v[s]->bad_owner && !v[1 - s]->bad_owner) {
            const plan_op *ag = v[s]->bad_owner;
            char sent[160];
            where(r, s, ag, x, sizeof x);
            view_text(r->side[s], &ag->u.coll.send, sent, sizeof sent);
            equiv_add_cause(r, CAUSE_OWNER, s, rank, ag,
                            "%s: rank %d sends '%s' (%s), which is not the shard its "
                            "reduce_scatter left it; element %llu of rank %d's result differs",
                            side_name(s), v[s]->bad_owner_rank, sent, x, (unsigned long long)pos,
                            rank);
            return;
        }
    for (int s = 0; s < 2; s++)
        if (v[s]->scaled_as_shard && (!v[1 - s]->scaled_as_shard || v[s]->scale != v[1 - s]->scale ||
                                      v[s]->scale_den != v[1 - s]->scale_den)) {
            char rs[256], ag[256], sv[160], f1[48], f2[48];
            where(r, s, v[s]->scaled, x, sizeof x);
            where(r, s, v[s]->rs, rs, sizeof rs);
            where(r, s, v[s]->ag, ag, sizeof ag);
            view_text(r->side[s], &v[s]->scaled->u.scale.buf, sv, sizeof sv);
            equiv_add_cause(r, CAUSE_SHARD_CHANGED, s, rank, v[s]->scaled,
                            "%s scales the shard '%s' by %s (%s) between its phases (%s; %s): "
                            "the result is the transformed shard state, %s x the %s",
                            side_name(s), sv,
                            frac_text(v[s]->scaled->u.scale.factor, v[s]->scaled->u.scale.den, f1, sizeof f1),
                            x, rs, ag, frac_text(v[s]->scale, v[s]->scale_den, f2, sizeof f2),
                            ml_redops[v[s]->op].name);
            return;
        }
    if (a->kind == b->kind && a->kind != AV_UNDEF &&
        (a->scale != b->scale || a->scale_den != b->scale_den)) {
        int s = b->scale != 1 || b->scale_den != 1 ? 1 : 0;
        char f1[48], f2[48];
        where(r, s, v[s]->scaled, x, sizeof x);
        equiv_add_cause(r, CAUSE_SCALING, s, rank, v[s]->scaled,
                        "%s scales the data by %s (%s, %s the reduction), %s by %s",
                        side_name(s), frac_text(v[s]->scale, v[s]->scale_den, f1, sizeof f1), x,
                        v[s]->pre_scaled ? "before" : "after",
                        side_name(1 - s), frac_text(v[1 - s]->scale, v[1 - s]->scale_den, f2, sizeof f2));
        return;
    }
    if (a->dtype != b->dtype) {
        where(r, 0, a->made, x, sizeof x);
        where(r, 1, b->made, y, sizeof y);
        equiv_add_cause(r, CAUSE_DTYPE, 1, rank, b->made, "A's data is %s (%s), B's %s (%s)",
                        ml_dtypes[a->dtype].name, x, ml_dtypes[b->dtype].name, y);
        return;
    }
    /* Padding: a reduced fill value that is not the reduction's identity. */
    for (int s = 0; s < 2; s++)
        if (v[s]->kind == AV_REDUCED && !positional(v[s]) && !is_identity_of(v[s], v[s]->op)) {
            char pat[128], id[64];
            pattern_text(v[s], pat, sizeof pat);
            identity_text(v[s]->op, v[s]->dtype, id, sizeof id);
            where(r, s, v[s]->made, x, sizeof x);
            equiv_add_cause(r, CAUSE_PADDING, s, rank, v[s]->made,
                            "%s pads with %s (%s) and reduces it with %s, whose identity is %s: "
                            "element %llu of rank %d's result is the reduced padding",
                            side_name(s), pat, x, ml_redops[v[s]->op].name, id,
                            (unsigned long long)pos, rank);
            return;
        }
    for (int s = 0; s < 2; s++)
        if (v[s]->kind == AV_UNDEF) {
            if (st[s].partial) {
                partial_text(r, &st[s], s, x, sizeof x);
                equiv_add_cause(r, CAUSE_INPUT_COUNT, s, rank, st[s].partial,
                                "%s; element %llu of rank %d's result is never written", x,
                                (unsigned long long)pos, rank);
            } else {
                where(r, s, v[s]->made, x, sizeof x);
                equiv_add_cause(r, CAUSE_LAYOUT, s, rank, v[s]->made,
                                "element %llu of %s's result on rank %d is never written (%s)",
                                (unsigned long long)pos, side_name(s), rank, x);
            }
            return;
        }
    if (!pattern_same(a->pattern, b->pattern)) {
        char pa[128], pb[128];
        pattern_text(a, pa, sizeof pa);
        pattern_text(b, pb, sizeof pb);
        where(r, 0, a->made, x, sizeof x);
        where(r, 1, b->made, y, sizeof y);
        equiv_add_cause(r, CAUSE_INPUTS, 1, rank, b->made,
                        "element %llu of rank %d's result comes from %s in A (%s), %s in B (%s)",
                        (unsigned long long)pos, rank, pa, x, pb, y);
        return;
    }
    if (a->kind != b->kind) {
        int s = a->kind == AV_INPUT ? 0 : 1;
        where(r, s, v[s]->copied ? v[s]->copied : v[s]->made, x, sizeof x);
        equiv_add_cause(r, CAUSE_LAYOUT, s, rank, v[s]->copied ? v[s]->copied : v[s]->made,
                        "element %llu of %s's result on rank %d is not reduced over the ranks "
                        "(%s)", (unsigned long long)pos, side_name(s), rank, x);
        return;
    }
    /* Same values, other positions. */
    long long ia = (long long)(a->index + (int64_t)at), ib = (long long)(b->index + (int64_t)bt);
    for (int s = 0; s < 2; s++)
        if (v[s]->moved && (!v[1 - s]->moved || v[s]->moved != v[1 - s]->moved)) {
            char from[160], to[160];
            const plan_op *m = v[s]->moved;
            const plan_view *src = m->kind == OP_COPY ? &m->u.copy.src : &m->u.init.src;
            const plan_view *dst = m->kind == OP_COPY ? &m->u.copy.dst : &m->u.init.dst;
            where(r, s, m, x, sizeof x);
            view_text(r->side[s], src, from, sizeof from);
            view_text(r->side[s], dst, to, sizeof to);
            equiv_add_cause(r, CAUSE_GATHER_ORDER, s, rank, m,
                            "%s moves '%s' to '%s' (%s): element %llu of rank %d's result holds "
                            "element %lld of the reduced tensor in A, %lld in B",
                            side_name(s), from, to, x, (unsigned long long)pos, rank, ia, ib);
            return;
        }
    equiv_add_cause(r, CAUSE_LAYOUT, 1, rank, b->copied ? b->copied : b->made,
                    "element %llu of rank %d's result holds element %lld of the %s in A, %lld in B",
                    (unsigned long long)pos, rank, ia,
                    a->kind == AV_REDUCED ? "reduced tensor" : "input", ib);
}

/* The result buffers hold different element counts: a trim (or the input count) is off. */
static void count_cause(equiv_result *r, const side_state *st, int rank, const seglist *l[2]) {
    int s = l[1]->count < l[0]->count ? 1 : 0;   /* the shorter side */
    char x[512];
    if (st[s].partial) {
        partial_text(r, &st[s], s, x, sizeof x);
        equiv_add_cause(r, CAUSE_INPUT_COUNT, s, rank, st[s].partial,
                        "%s; its result has %llu elements, %s's %llu", x,
                        (unsigned long long)l[s]->count, side_name(1 - s),
                        (unsigned long long)l[1 - s]->count);
        return;
    }
    const seg *last = l[s]->n ? &l[s]->s[l[s]->n - 1] : NULL;
    const plan_op *trim = last && last->v.copied ? last->v.copied : l[s]->alloc;
    where(r, s, trim, x, sizeof x);
    equiv_add_cause(r, CAUSE_TRIM, s, rank, trim,
                    "%s's result keeps %llu elements (%s), %s's %llu: the trim removes %llu more "
                    "than the tail padding", side_name(s), (unsigned long long)l[s]->count, x,
                    side_name(1 - s), (unsigned long long)l[1 - s]->count,
                    (unsigned long long)(l[1 - s]->count - l[s]->count));
}

static void compare_rank(equiv_result *r, const side_state *st, int rank) {
    const seglist *l[2] = {&st[0].bufs[rank][r->result[0]], &st[1].bufs[rank][r->result[1]]};
    bool equal = l[0]->count == l[1]->count;
    uint64_t n = l[0]->count < l[1]->count ? l[0]->count : l[1]->count;
    size_t i = 0, j = 0;
    for (uint64_t pos = 0; pos < n;) {
        while (i < l[0]->n && l[0]->s[i].start + l[0]->s[i].n <= pos)
            i++;
        while (j < l[1]->n && l[1]->s[j].start + l[1]->s[j].n <= pos)
            j++;
        if (i == l[0]->n || j == l[1]->n)
            break;
        const seg *a = &l[0]->s[i], *b = &l[1]->s[j];
        if (a->v.kind == AV_OPAQUE || b->v.kind == AV_OPAQUE) {
            r->flow_known = false;
            equal = false;
        } else if (!value_same(&a->v, pos - a->start, &b->v, pos - b->start)) {
            classify(r, st, rank, pos, &a->v, pos - a->start, &b->v, pos - b->start);
            r->flow_equal = false;
            return;
        }
        uint64_t end = a->start + a->n < b->start + b->n ? a->start + a->n : b->start + b->n;
        pos = end;
    }
    if (l[0]->count != l[1]->count)
        count_cause(r, st, rank, l);
    if (!equal)
        r->flow_equal = false;
}

static void side_init(side_state *st, const series *s, rank_sets *sets) {
    memset(st, 0, sizeof *st);
    st->sr = s;
    st->sets = sets;
    st->n_bufs = s->s->syms[SYM_BUFFER].n;
    st->bufs = ml_xcalloc((size_t)s->world, sizeof *st->bufs);
    st->pc = ml_xcalloc((size_t)s->world, sizeof *st->pc);
    for (int r = 0; r < s->world; r++)
        st->bufs[r] = ml_xcalloc(st->n_bufs + 1, sizeof **st->bufs);
}

static void side_free(side_state *st) {
    for (int r = 0; r < st->sr->world; r++) {
        for (uint32_t b = 0; b < st->n_bufs; b++)
            free(st->bufs[r][b].s);
        free(st->bufs[r]);
    }
    free(st->bufs);
    free(st->pc);
}

void equiv_flow(equiv_result *r) {
    side_state st[2];
    rank_sets sets;
    sets_init(&sets, r->world);
    r->flow_known = r->sequence_ok[0] && r->sequence_ok[1];
    r->flow_equal = true;
    for (int s = 0; s < 2; s++) {
        side_init(&st[s], r->side[s], &sets);
        if (r->flow_known)
            run_side(&st[s]);
        r->flow_known = r->flow_known && !st[s].stopped;
    }
    if (r->flow_known) {
        for (int rank = 0; rank < r->world; rank++) {
            const seglist *la = &st[0].bufs[rank][r->result[0]], *lb = &st[1].bufs[rank][r->result[1]];
            if (la->n && lb->n && la->s[0].v.dtype != lb->s[0].v.dtype) {
                char x[512], y[512];
                where(r, 0, la->alloc, x, sizeof x);
                where(r, 1, lb->alloc, y, sizeof y);
                equiv_add_cause(r, CAUSE_DTYPE, 1, rank, lb->alloc,
                                "A's result is %s (%s), B's %s (%s)",
                                ml_dtypes[la->s[0].v.dtype].name, x,
                                ml_dtypes[lb->s[0].v.dtype].name, y);
                r->flow_equal = false;
                continue;
            }
            compare_rank(r, st, rank);
        }
    }
    r->flow_equal = r->flow_equal && r->flow_known;
    for (int s = 0; s < 2; s++)
        side_free(&st[s]);
    free(sets.bits);
}
