/* SPDX-License-Identifier: MIT */
/* rankshare.c — which ranks share an expansion, a member's ops from its base's (rankshare.h). */
#include "pipeline/rankshare.h"

#include <stdlib.h>
#include <string.h>

/* Sharing a base's prediction within its shape is exact: what the prediction reads of an op
 * is, in the views' models (view_requested.c, view_device.c, view_torch.c), allocs' bytes and
 * chunks, frees, releases, record_stream, streams, events and syncs; in the time model
 * (timemodel.c) views' and collectives' counts and dtypes, streams, events and compute times;
 * in the peaks' live sets allocs and frees; none of them reads a view's offset or an in-place
 * flag, and none of those values can differ across the ranks of a shape: plan_offsets_new and
 * plan_shapes_new refuse rank in every expression but an offset with a written count and a
 * `when:` of rank, world and lets, and lets that differ; the `when:`s' truth values are the
 * shape, the same on its ranks, so they keep the same steps, whose other values are one for
 * every rank (plan.c). The one reader of offsets and in-place flags is the floor (floor.c:
 * view_lo, inplace_share with the rank), which predict_rank_shared computes on each rank's own
 * ops, from its base's floor record (whose vary set is the base's own entries). Expectations
 * are evaluated per rank as ever. */

/* A subset member's absent ops (plan_shapes_absent) and, once its first rank has run it, the
 * time model's totals, which every rank with those absent ops shares: the time model reads
 * counts, dtypes, streams, events and compute times, no offset (predict_rank_shared).
 *
 * Where no absent compute has a time (plan_absent_timed false) the totals are the base's. Such
 * a compute lasts 0 (tm_op_duration) and pushes no interval (iv_push drops an empty one); all
 * it does is ready[s] = max(ready[s], host), host then h. Say ready[s] is A with it and B
 * without: A = max(B, h) holds after it, and every later op keeps it, because host never falls
 * below h: a stream op starts at max(ready[s], host) (the same on both, so ready[s] is equal
 * after it), a record and a sync take max(ready[s], host) too, a wait sets ready[s] =
 * max(ready[s], event) (max(B, e, h) = max(max(B, e), h)) and its span is over max(ready[s],
 * host) (equal where A > that start, as A = B there), and the step is max(ready..., host).
 * Every total is one of those values. */
typedef struct {
    plan_absent *a;
    bool timed;
    double step_us, comm_us, exposed_comm_us;
} group_subset;

/* One group's base: the rank whose expansion is in the op array, the entries that rewrite it
 * into each later rank of its shape, and its floor's forward facts. */
typedef struct {
    rank_plan *plan;
    int rank;
    plan_offsets *po;         /* NULL: the next rank has another shape (next_joins) */
    bool own_po;              /* po is the group's (plan_shapes_offsets), else rankshare's */
    floor_forward *fw;        /* its floor facts: its members' (predict_rank_shared) */
    floor_vary vary;          /* what its floor record follows (rankshare_base_floor) */
    size_t *merged;           /* vary.ops where they are not po's own */
    ml_vec subsets;           /* group_subset: the absent ops its subset members had so far */
    const plan_absent *applied;     /* those OP_ABSENT in the array now, or NULL */
} group_base;

struct rankshare {
    rankshare_kind kind;
    plan_offsets *po;         /* OFFSETS: rank 0's entries */
    plan_shapes *sh;          /* GROUPS: the ranks' shapes */
    int world;
    /* subset members (rankshare_joins): their prediction is the base's but for what reads their
     * absent computes, the floor and the time model, redone; the timeline (one point per op,
     * the base's) and the torch view (a compute enqueues work its stream's pending frees wait
     * for: view_torch.c) read them too, so with either on every such rank is a base */
    bool subsets;
    bool in_group;            /* g is a base's */
    group_base g;
    group_subset *member;     /* the member rankshare_joins took: its absent ops, or NULL */
};

/* The one switch to the reference pass (docs/design.md): every rank expanded, linted and
 * predicted on its own. Read here only, so that nothing shares behind it. */
static bool share_forced_off(void) {
    const char *v = getenv("MEMLIFE_NO_SHARE");
    return v && *v;
}

rankshare *rankshare_new(const rank_plan *rank0, const sched_params *pw, bool offsets,
                         bool groups, bool timeline) {
    rankshare *rs = ml_xcalloc(1, sizeof *rs);
    rs->world = rank0->world;
    rs->kind = RANKSHARE_ALONE;
    if (share_forced_off())
        return rs;
    if (plan_rank_invariant(rank0, pw)) {
        rs->kind = RANKSHARE_IDENTICAL;
        return rs;
    }
    /* a send or recv: pairing reads every rank's own ops */
    if (!offsets || rank0->has_p2p)
        return rs;
    rs->po = plan_offsets_new(rank0, pw);
    if (rs->po) {
        rs->kind = RANKSHARE_OFFSETS;
        return rs;
    }
    rs->sh = groups ? plan_shapes_new(rank0, pw) : NULL;
    if (rs->sh) {
        rs->kind = RANKSHARE_GROUPS;
        rs->subsets = !timeline && !rank0->torch.on;
    }
    return rs;
}

rankshare_kind rankshare_kind_of(const rankshare *rs) { return rs->kind; }

int rankshare_whole_rank(const rankshare *rs, const rank_plan *rank0, int r, rank_plan *out,
                         ml_diags *d) {
    switch (rs->kind) {
    case RANKSHARE_IDENTICAL:
        plan_share(rank0, r, out);
        return 0;
    case RANKSHARE_OFFSETS:
        plan_copy(rank0, r, out);
        return plan_offsets_apply(rs->po, out, r, d);
    default:
        return 1;
    }
}

size_t *rankshare_vary_dup(const rankshare *rs, size_t *n) {
    *n = 0;
    if (rs->kind != RANKSHARE_OFFSETS)
        return NULL;
    const size_t *ops = plan_offsets_ops(rs->po, n);
    size_t *v = ml_xmalloc((*n ? *n : 1) * sizeof *v);
    if (*n)
        memcpy(v, ops, *n * sizeof *v);
    return v;
}

/* True when rank b + 1 joins b's group: it has b's shape, or (subsets on) a shape within b's
 * (a subset member); a base followed by another shape has no members. */
static bool next_joins(const rankshare *rs, int b) {
    const plan_shapes *sh = rs->sh;
    return b + 1 < rs->world && (plan_shape(sh, b + 1) == plan_shape(sh, b) ||
                                 (rs->subsets && plan_shape_within(sh, b + 1, b)));
}

/* The array holds a's ops as OP_ABSENT and no others (a NULL: none). */
static void group_absent_set(group_base *g, const plan_absent *a) {
    if (g->applied == a)
        return;
    if (g->applied)
        plan_absent_restore(g->applied, g->plan);
    if (a)
        plan_absent_apply(a, g->plan);
    g->applied = a;
}

static void group_free(group_base *g) {
    floor_forward_free(g->fw);
    if (g->own_po)
        plan_offsets_free(g->po);
    free(g->merged);
    for (size_t k = 0; k < g->subsets.n; k++)
        plan_absent_free(ML_VEC_AT(&g->subsets, group_subset, k).a);
    ml_vec_free(&g->subsets);
    memset(g, 0, sizeof *g);
}

void rankshare_base(rankshare *rs, rank_plan *plan, int r) {
    if (rs->in_group)
        group_free(&rs->g);
    rs->in_group = true;
    rs->member = NULL;
    group_base *g = &rs->g;
    *g = (group_base){.plan = plan, .rank = r};
    ml_vec_init(&g->subsets, sizeof(group_subset));
    if (rs->kind == RANKSHARE_OFFSETS) {
        g->po = rs->po;   /* every rank is rank 0's */
    } else if (rs->kind == RANKSHARE_GROUPS && next_joins(rs, r)) {
        g->po = plan_shapes_offsets(rs->sh, plan);
        g->own_po = true;
    }
}

/* The floor record's vary set: the entries' ops, and where a later rank's shape is within the
 * base's, the ops of the base's `when:`s that name rank, which such a rank lacks
 * (plan_when_ops); a base without members needs no record. */
void rankshare_base_floor(rankshare *rs, const floor_vary **vary, floor_forward ***keep) {
    group_base *g = &rs->g;
    *vary = NULL;
    *keep = NULL;
    if (!g->po)
        return;
    g->vary.ops = plan_offsets_ops(g->po, &g->vary.n);
    bool later = false;
    for (int r = g->rank + 1; rs->sh && rs->subsets && r < rs->world && !later; r++)
        later = plan_shape_within(rs->sh, r, g->rank);
    if (later) {
        g->merged = plan_when_ops(g->plan, g->vary.ops, g->vary.n, &g->vary.n);
        g->vary.ops = g->merged;
    }
    *vary = &g->vary;
    *keep = &g->fw;
}

const floor_forward *rankshare_base_facts(const rankshare *rs) { return rs->g.fw; }

int rankshare_base_rank(const rankshare *rs) { return rs->g.rank; }

/* The array is the base's own again (its values held once: a second evaluation cannot fail). */
void rankshare_base_done(rankshare *rs, bool restore, ml_diags *d) {
    group_base *g = &rs->g;
    if (!rs->in_group)
        return;
    if (restore) {
        group_absent_set(g, NULL);
        if (g->po && plan_offsets_apply(g->po, g->plan, g->rank, d) != 0)
            ml_internal_error("rank %d's view offsets failed on their second evaluation",
                              g->rank);
    }
    group_free(g);
    rs->in_group = false;
    rs->member = NULL;
}

/* The subset entry for rank r (plan_shapes_absent; the one an earlier member had where r's
 * absent ops are its), or NULL where r is not a subset member of g. */
static group_subset *group_subset_of(rankshare *rs, int r) {
    group_base *g = &rs->g;
    for (size_t k = 0; k < g->subsets.n; k++) {
        group_subset *gs = &ML_VEC_AT(&g->subsets, group_subset, k);
        if (plan_absent_fits(gs->a, rs->sh, r))
            return gs;
    }
    group_absent_set(g, NULL);   /* it reads the ops' kinds */
    plan_absent *a = plan_shapes_absent(rs->sh, g->plan, g->po, r);
    if (!a)
        return NULL;
    group_subset *gs = ml_vec_push(&g->subsets);
    *gs = (group_subset){.a = a};
    return gs;
}

bool rankshare_joins(rankshare *rs, int r) {
    rs->member = NULL;
    /* the base's prediction has made its floor record: the merged vary set is read no more */
    free(rs->g.merged);
    rs->g.merged = NULL;
    rs->g.vary = (floor_vary){NULL, 0};
    if (!rs->in_group || (rs->kind != RANKSHARE_OFFSETS && rs->kind != RANKSHARE_GROUPS))
        return false;
    if (!rs->sh || plan_shape(rs->sh, r) == plan_shape(rs->sh, rs->g.rank))
        return true;
    rs->member = rs->subsets && rs->g.po ? group_subset_of(rs, r) : NULL;
    return rs->member != NULL;
}

/* g's op array rewritten in place into r's (plan_offsets_apply: only the offsets that name
 * rank, and the in-place flags; the member's absent ops OP_ABSENT, with their ranges). */
int rankshare_member_ops(rankshare *rs, int r, rank_plan *pl, ml_diags *d) {
    group_base *g = &rs->g;
    group_absent_set(g, rs->member ? rs->member->a : NULL);
    plan_share(g->plan, r, pl);
    return plan_offsets_apply(g->po, pl, r, d);
}

bool rankshare_member_subset(const rankshare *rs) { return rs->member != NULL; }

/* group_subset says why the base's totals are the member's where no absent op takes time. */
bool rankshare_member_time(rankshare *rs, pred_rank *pr) {
    group_subset *sub = rs->member;
    if (!sub || !plan_absent_timed(sub->a))
        return true;
    if (!sub->timed)
        return false;
    pr->step_us = sub->step_us;
    pr->comm_us = sub->comm_us;
    pr->exposed_comm_us = sub->exposed_comm_us;
    return true;
}

void rankshare_member_timed(rankshare *rs, const pred_rank *pr, bool ok) {
    group_subset *sub = rs->member;
    *sub = (group_subset){sub->a, ok, pr->step_us, pr->comm_us, pr->exposed_comm_us};
}

const size_t *rankshare_moved(const rankshare *rs, size_t *n) {
    return plan_offsets_ops(rs->g.po, n);
}

void rankshare_free(rankshare *rs) {
    if (!rs)
        return;
    if (rs->in_group)
        group_free(&rs->g);
    plan_offsets_free(rs->po);
    plan_shapes_free(rs->sh);
    free(rs);
}
