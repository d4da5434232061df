/* SPDX-License-Identifier: MIT */
/* lint_cross.c — every rank must issue the same collectives in the same order with the same
 * count, dtype, reduction and root, or NCCL hangs (or mixes data). Rank 0 is the reference: each
 * other rank that diverges gets one diagnostic, at its first differing collective. On a
 * communicator other than the world the same holds within each of its groups, whose least
 * member is the reference (lint_int.h: lint_groups). */
#include "lint/lint_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

void lint_coll_seq_differs(lint_coll_seq *q, const plan_op *op) {
    q->diff_op = *op;   /* a copy: the pipeline's compact path frees the rank's ops */
    q->diff = &q->diff_op;
    q->diff_at = q->n;
}

void lint_coll_seq_reserve(lint_coll_seq *q, size_t n) {
    if (n <= q->cap)
        return;
    if (n > SIZE_MAX / sizeof(lint_coll_key))
        ml_internal_error("lint: %zu collectives overflow size_t", n);
    q->ops = ml_xrealloc(q->ops, n * sizeof *q->ops);
    q->keys = ml_xrealloc(q->keys, n * sizeof *q->keys);
    q->cap = n;
}

void lint_coll_seq_grow(lint_coll_seq *q) {
    if (q->cap > SIZE_MAX / 2)
        ml_internal_error("lint: %zu collectives overflow size_t", q->cap);
    lint_coll_seq_reserve(q, q->cap ? 2 * q->cap : 64);
}

void lint_coll_seq_free(lint_coll_seq *q) {
    free(q->ops);
    free(q->keys);
}

/* "all_gather (count 64)", plus the attributes in which it differs from `other`. */
static void describe(const plan_op *op, const plan_op *other, char *buf, size_t len) {
    int n = snprintf(buf, len, "%s (count %llu", ml_colls[op->u.coll.coll].name,
                     (ull)plan_coll_count(op));
    if (op->u.coll.send.dtype != other->u.coll.send.dtype)
        n += snprintf(buf + n, len - (size_t)n, ", %s", ml_dtypes[op->u.coll.send.dtype].name);
    if (ml_colls[op->u.coll.coll].has_op && op->u.coll.op != other->u.coll.op)
        n += snprintf(buf + n, len - (size_t)n, ", op %s", ml_redops[op->u.coll.op].name);
    if (ml_colls[op->u.coll.coll].has_root && op->u.coll.root != other->u.coll.root)
        n += snprintf(buf + n, len - (size_t)n, ", root %d", op->u.coll.root);
    snprintf(buf + n, len - (size_t)n, ")");
}

/* Where op differs from other: its key for another collective, else its op, its send view (count,
 * dtype) or its root, whichever differs first (an op not written: the key). */
static ml_mark diff_mark(const sched *s, const plan_op *op, const plan_op *other) {
    if (op->u.coll.coll != other->u.coll.coll)
        return plan_op_mark(op);
    if (op->u.coll.op != other->u.coll.op)
        return sched_part_mark(s, op->step, SCHED_AT_OP);
    if (plan_coll_count(op) != plan_coll_count(other) ||
        op->u.coll.send.dtype != other->u.coll.send.dtype)
        return plan_view_mark(s, op, 0);
    if (op->u.coll.root != other->u.coll.root)
        return sched_part_mark(s, op->step, SCHED_AT_ROOT);
    return plan_op_mark(op);
}

bool lint_coll_seq_diverged(const lint_coll_seq *colls, int world) {
    for (int r = 1; r < world; r++)
        if (colls[r].diff || colls[r].n != colls[0].n)
            return true;
    return false;
}

size_t lint_cross_rank(const rank_plan *plans, const lint_coll_seq *colls, int world,
                       ml_diags *d) {
    const char *file = plans[0].s->file;
    const lint_coll_seq *ref = &colls[0];
    size_t errors = 0;
    for (int r = 1; r < world; r++) {
        const lint_coll_seq *q = &colls[r];
        if (!q->diff && q->n == ref->n)   /* lint_coll_seq_diverged's test */
            continue;
        errors++;
        size_t i = q->diff ? q->diff_at : q->n;   /* the first position where they differ */
        if (q->diff && i < ref->n) {
            const plan_op *a = &plans[0].ops[ref->ops[i]], *b = q->diff;
            char da[96], db[96];
            describe(a, b, da, sizeof da);
            describe(b, a, db, sizeof db);
            /* the error at rank r's collective, the note at rank 0's (lint.c's two places) */
            const sched *s = plans[0].s;
            ml_diag_add(d, ML_DIAG_ERROR, file, diff_mark(s, b, a), r, "cross_rank",
                        "rank %d issues %s where rank 0 issues %s", r, db, da);
            ml_diag_add(d, ML_DIAG_NOTE, file, diff_mark(s, a, b), r, "cross_rank",
                        "rank 0 issues %s here", da);
        } else if (!q->diff) {   /* nothing of rank r's to point at: rank 0's collective */
            const plan_op *a = &plans[0].ops[ref->ops[i]];
            ml_diag_add(d, ML_DIAG_ERROR, file, plan_op_mark(a), r, "cross_rank",
                        "rank %d ends after %zu collectives while rank 0 issues %s here", r, i,
                        ml_colls[a->u.coll.coll].name);
        } else {
            ml_diag_add(d, ML_DIAG_ERROR, file, plan_op_mark(q->diff), r, "cross_rank",
                        "rank 0 ends after %zu collectives while rank %d issues %s here", i, r,
                        ml_colls[q->diff->u.coll.coll].name);
        }
    }
    return errors;
}

/* ---- Within a communicator's groups ---------------------------------------------------------- */

/* A group's reference: its least member's collectives on the communicator, each its key and its
 * step (what the messages read of it: ref_op), 24 bytes instead of a plan_op's 88. */
typedef struct {
    lint_coll_key *keys;
    const sched_step **steps;
    size_t n, cap;
} group_ref;

/* The reference's i-th collective as an op that describe, diff_mark and plan_op_mark read: its
 * key's fields, both counts NCCL's count (plan_coll_count reads one of them), its step. */
static plan_op ref_op(const group_ref *ref, size_t i) {
    const lint_coll_key *k = &ref->keys[i];
    plan_op op;
    memset(&op, 0, sizeof op);
    op.kind = OP_COLL;
    op.step = ref->steps[i];
    op.u.coll.coll = (ml_coll)k->coll;
    op.u.coll.op = (ml_redop)k->op;
    op.u.coll.root = k->root;
    op.u.coll.send.count = op.u.coll.recv.count = k->count;
    op.u.coll.send.dtype = op.u.coll.recv.dtype = (ml_dtype)k->dtype;
    return op;
}

/* op with what its key leaves out zeroed as the key does (a reduction where the collective does
 * not reduce, a root where it has none), so that diff_mark compares it with a ref_op fairly. */
static plan_op key_op(const plan_op *op) {
    plan_op o = *op;
    lint_coll_key k = lint_coll_key_of(op);
    o.u.coll.op = (ml_redop)k.op;
    o.u.coll.root = k.root;
    return o;
}

/* A member that diverges from its group's reference: at its collective `op` (has_op), or where
 * it ends (at == its count) before the reference does. */
typedef struct {
    int rank, ref;
    uint32_t comm;
    int32_t group;
    size_t at;
    bool has_op;
    plan_op op;
} group_diff;

/* The rank being walked, on one communicator. */
typedef struct {
    int32_t group;            /* -1: in none */
    int ref;
    size_t n;
    bool diff;
    size_t diff_at;
    plan_op diff_op;
} group_cur;

struct lint_groups {
    const ml_comms *c;
    int world;
    uint32_t n_comms;
    group_ref **refs;         /* [n_comms][its groups]; [0] unused (the world: lint_coll_seq) */
    int32_t **least;          /* [n_comms][its groups]: a color's or rank list's least member */
    group_cur *cur;           /* [n_comms] */
    ml_vec diffs;             /* group_diff */
};

lint_groups *lint_groups_new(const ml_comms *c, int world) {
    lint_groups *g = ml_xcalloc(1, sizeof *g);
    g->c = c;
    g->world = world;
    g->n_comms = ml_comms_count(c);
    g->refs = ml_xcalloc(g->n_comms, sizeof *g->refs);
    g->least = ml_xcalloc(g->n_comms, sizeof *g->least);
    g->cur = ml_xcalloc(g->n_comms, sizeof *g->cur);
    ml_vec_init(&g->diffs, sizeof(group_diff));
    for (uint32_t k = 1; k < g->n_comms; k++) {
        uint32_t n = ml_comms_groups(c, k);
        g->refs[k] = ml_xcalloc(n ? n : 1, sizeof *g->refs[k]);
        sched_comm_kind kind = ml_comms_def(c, k)->kind;
        if (kind == COMM_WORLD || kind == COMM_MESH)
            continue;   /* member 0 is the least: every coordinate of its dimensions 0 */
        int32_t *least = g->least[k] = ml_xcalloc(n ? n : 1, sizeof *least);
        for (uint32_t j = 0; j < n; j++)
            least[j] = -1;
        for (int r = 0; r < world; r++) {
            int grp = ml_comms_group(c, k, r);
            if (grp >= 0 && least[grp] < 0)
                least[grp] = r;
        }
    }
    return g;
}

void lint_groups_free(lint_groups *g) {
    if (!g)
        return;
    for (uint32_t k = 1; k < g->n_comms; k++) {
        for (uint32_t j = 0, n = ml_comms_groups(g->c, k); j < n; j++) {
            free(g->refs[k][j].keys);
            free(g->refs[k][j].steps);
        }
        free(g->refs[k]);
        free(g->least[k]);
    }
    free(g->refs);
    free(g->least);
    free(g->cur);
    ml_vec_free(&g->diffs);
    free(g);
}

void lint_groups_begin(lint_groups *g, int rank) {
    for (uint32_t k = 1; k < g->n_comms; k++) {
        group_cur *q = &g->cur[k];
        q->group = ml_comms_group(g->c, k, rank);
        q->n = 0;
        q->diff = false;
        if (q->group < 0)
            continue;
        q->ref = g->least[k] ? g->least[k][q->group] : ml_comms_global(g->c, k, rank, 0);
        if (q->ref == rank)
            g->refs[k][q->group].n = 0;
    }
    /* a walk done again drops what its first walk found */
    for (size_t j = g->diffs.n; j > 0 && ML_VEC_AT(&g->diffs, group_diff, j - 1).rank == rank; j--)
        g->diffs.n--;
}

void lint_group_seq_push(lint_groups *g, const plan_op *op, int rank) {
    uint32_t k = op->u.coll.comm;
    group_cur *q = &g->cur[k];
    if (k >= g->n_comms || q->group < 0)
        return;
    group_ref *ref = &g->refs[k][q->group];
    lint_coll_key key = lint_coll_key_of(op);
    if (q->ref == rank) {
        if (ref->n == ref->cap) {
            size_t cap = ref->cap ? 2 * ref->cap : 16;
            ref->keys = ml_xrealloc(ref->keys, cap * sizeof *ref->keys);
            ref->steps = ml_xrealloc(ref->steps, cap * sizeof *ref->steps);
            ref->cap = cap;
        }
        ref->steps[ref->n] = op->step;
        ref->keys[ref->n++] = key;
    } else if (!q->diff && (q->n >= ref->n || !lint_coll_same_key(&key, &ref->keys[q->n]))) {
        q->diff = true;
        q->diff_at = q->n;
        q->diff_op = *op;
    }
    q->n++;
}

void lint_groups_end(lint_groups *g, int rank) {
    for (uint32_t k = 1; k < g->n_comms; k++) {
        const group_cur *q = &g->cur[k];
        if (q->group < 0 || q->ref == rank)
            continue;
        const group_ref *ref = &g->refs[k][q->group];
        if (!q->diff && q->n == ref->n)
            continue;
        group_diff *f = ml_vec_push(&g->diffs);
        *f = (group_diff){.rank = rank, .ref = q->ref, .comm = k, .group = q->group,
                          .at = q->diff ? q->diff_at : q->n, .has_op = q->diff};
        if (q->diff)
            f->op = q->diff_op;
    }
}

size_t lint_cross_groups(const lint_groups *g, const sched *s, ml_diags *d) {
    if (!g)
        return 0;
    for (size_t j = 0; j < g->diffs.n; j++) {
        const group_diff *f = &ML_VEC_AT(&g->diffs, group_diff, j);
        const group_ref *ref = &g->refs[f->comm][f->group];
        const char *name = ml_comms_name(g->c, f->comm);
        char members[160];
        lint_group_text(g->c, f->comm, f->rank, members, sizeof members);
        if (f->has_op && f->at < ref->n) {
            plan_op ra = ref_op(ref, f->at), rb = key_op(&f->op);
            const plan_op *a = &ra, *b = &rb;
            char da[96], db[96];
            describe(a, b, da, sizeof da);
            describe(b, a, db, sizeof db);
            ml_diag_add(d, ML_DIAG_ERROR, s->file, diff_mark(s, b, a), f->rank, "cross_rank",
                        "rank %d issues %s where rank %d issues %s in their group of "
                        "communicator '%s' (%s)", f->rank, db, f->ref, da, name, members);
            ml_diag_add(d, ML_DIAG_NOTE, s->file, diff_mark(s, a, b), f->rank, "cross_rank",
                        "rank %d issues %s here", f->ref, da);
        } else if (!f->has_op) {   /* nothing of the rank's to point at: the reference's */
            ml_diag_add(d, ML_DIAG_ERROR, s->file, ref->steps[f->at]->mark, f->rank, "cross_rank",
                        "rank %d ends after %zu collectives on communicator '%s' while rank %d "
                        "issues %s here (their group: %s)", f->rank, f->at, name, f->ref,
                        ml_colls[ref->keys[f->at].coll].name, members);
        } else {
            ml_diag_add(d, ML_DIAG_ERROR, s->file, plan_op_mark(&f->op), f->rank, "cross_rank",
                        "rank %d ends after %zu collectives on communicator '%s' while rank %d "
                        "issues %s here (their group: %s)", f->ref, f->at, name, f->rank,
                        ml_colls[f->op.u.coll.coll].name, members);
        }
    }
    return g->diffs.n;
}
