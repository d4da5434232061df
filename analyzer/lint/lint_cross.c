/* SPDX-License-Identifier: MIT */
/* lint_cross.c — every rank must issue the same collectives in the same order with the same
 * count, dtype, reduction and root, or NCCL hangs (or mixes data). Rank 0 is the reference: each
 * other rank that diverges gets one diagnostic, at its first differing collective. */
#include "lint/lint_int.h"

#include <stdio.h>
#include <stdlib.h>

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
