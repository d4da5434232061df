/* SPDX-License-Identifier: MIT */
/* lint_cross.c — every rank must issue the same collectives in the same order with the same
 * count, dtype, reduction and root, or NCCL hangs (or mixes data). Rank 0 is the reference: each
 * other rank that diverges gets one diagnostic, at its first differing collective. */
#include "lint/lint_int.h"

#include <stdio.h>
#include <stdlib.h>

typedef unsigned long long ull;

static lint_coll_key key_of(const plan_op *op) {
    ml_coll c = op->u.coll.coll;
    return (lint_coll_key){.count = op->u.coll.count,
                           .root = ml_colls[c].has_root ? op->u.coll.root : 0,
                           .coll = (uint8_t)c,
                           .dtype = (uint8_t)op->u.coll.send.dtype,
                           .op = ml_colls[c].has_op ? (uint8_t)op->u.coll.op : 0};
}

static bool same_key(const lint_coll_key *a, const lint_coll_key *b) {
    return a->count == b->count && a->root == b->root && a->coll == b->coll &&
           a->dtype == b->dtype && a->op == b->op;
}

void lint_coll_seq_push(lint_coll_seq *q, const lint_coll_seq *ref, const plan_op *op) {
    lint_coll_key key = key_of(op);
    if (ref) {
        if (!q->diff && (q->n >= ref->n || !same_key(&key, &ref->keys[q->n]))) {
            q->diff = op;
            q->diff_at = q->n;
        }
        q->n++;
        return;
    }
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64;
        const plan_op **ops = ml_xrealloc(q->ops, cap * sizeof *ops);
        lint_coll_key *keys = ml_xrealloc(q->keys, cap * sizeof *keys);
        q->ops = ops;
        q->keys = keys;
        q->cap = cap;
    }
    q->ops[q->n] = op;
    q->keys[q->n++] = key;
}

void lint_coll_seq_free(lint_coll_seq *q) {
    free(q->ops);
    free(q->keys);
}

/* "all_gather (count 64)", plus the attributes in which it differs from `other`. */
static void describe(const plan_op *op, const plan_op *other, char *buf, size_t len) {
    int n = snprintf(buf, len, "%s (count %llu", ml_colls[op->u.coll.coll].name,
                     (ull)op->u.coll.count);
    if (op->u.coll.send.dtype != other->u.coll.send.dtype)
        n += snprintf(buf + n, len - (size_t)n, ", %s", ml_dtypes[op->u.coll.send.dtype].name);
    if (ml_colls[op->u.coll.coll].has_op && op->u.coll.op != other->u.coll.op)
        n += snprintf(buf + n, len - (size_t)n, ", op %s", ml_redops[op->u.coll.op].name);
    if (ml_colls[op->u.coll.coll].has_root && op->u.coll.root != other->u.coll.root)
        n += snprintf(buf + n, len - (size_t)n, ", root %d", op->u.coll.root);
    snprintf(buf + n, len - (size_t)n, ")");
}

size_t lint_cross_rank(const rank_plan *plans, const lint_coll_seq *colls, int world,
                       ml_diags *d) {
    const char *file = plans[0].s->file;
    const lint_coll_seq *ref = &colls[0];
    size_t errors = 0;
    for (int r = 1; r < world; r++) {
        const lint_coll_seq *q = &colls[r];
        if (!q->diff && q->n == ref->n)
            continue;
        errors++;
        size_t i = q->diff ? q->diff_at : q->n;   /* the first position where they differ */
        if (q->diff && i < ref->n) {
            const plan_op *a = ref->ops[i], *b = q->diff;
            char da[96], db[96];
            describe(a, b, da, sizeof da);
            describe(b, a, db, sizeof db);
            ml_mark ma = plan_op_mark(a), mb = plan_op_mark(b);
            ml_diag_add(d, ML_DIAG_ERROR, file, mb, r, "cross_rank",
                        "rank 0 issues %s at %u:%u where rank %d issues %s at %u:%u", da, ma.line,
                        ma.col, r, db, mb.line, mb.col);
        } else if (!q->diff) {
            ml_mark ma = plan_op_mark(ref->ops[i]);
            ml_diag_add(d, ML_DIAG_ERROR, file, ma, r, "cross_rank",
                        "rank %d ends after %zu collectives while rank 0 issues %s at %u:%u", r, i,
                        ml_colls[ref->ops[i]->u.coll.coll].name, ma.line, ma.col);
        } else {
            ml_mark mb = plan_op_mark(q->diff);
            ml_diag_add(d, ML_DIAG_ERROR, file, mb, r, "cross_rank",
                        "rank 0 ends after %zu collectives while rank %d issues %s at %u:%u", i, r,
                        ml_colls[q->diff->u.coll.coll].name, mb.line, mb.col);
        }
    }
    return errors;
}
