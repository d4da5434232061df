/* lint_cross.c — every rank must issue the same collectives in the same order with the same
 * count, dtype, reduction and root, or NCCL hangs (or mixes data). Rank 0 is the reference: each
 * other rank that diverges gets one diagnostic, at its first differing collective. */
#include "lint_int.h"

#include <stdio.h>
#include <stdlib.h>

typedef unsigned long long ull;

void lint_coll_seq_push(lint_coll_seq *q, const plan_op *op) {
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64;
        const plan_op **ops = realloc(q->ops, cap * sizeof *ops);
        if (!ops)
            abort();
        q->ops = ops;
        q->cap = cap;
    }
    q->ops[q->n++] = op;
}

static bool same_coll(const plan_op *a, const plan_op *b) {
    ml_coll c = a->u.coll.coll;
    if (c != b->u.coll.coll || a->u.coll.count != b->u.coll.count ||
        a->u.coll.send.dtype != b->u.coll.send.dtype)
        return false;
    if (ml_colls[c].has_op && a->u.coll.op != b->u.coll.op)
        return false;
    return !ml_colls[c].has_root || a->u.coll.root == b->u.coll.root;
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
        size_t i = 0;
        while (i < ref->n && i < q->n && same_coll(ref->ops[i], q->ops[i]))
            i++;
        if (i == ref->n && i == q->n)
            continue;
        errors++;
        if (i < ref->n && i < q->n) {
            const plan_op *a = ref->ops[i], *b = q->ops[i];
            char da[96], db[96];
            describe(a, b, da, sizeof da);
            describe(b, a, db, sizeof db);
            ml_mark ma = plan_op_mark(a), mb = plan_op_mark(b);
            ml_diag_add(d, ML_DIAG_ERROR, file, mb, r, "cross_rank",
                        "rank 0 issues %s at %u:%u where rank %d issues %s at %u:%u", da, ma.line,
                        ma.col, r, db, mb.line, mb.col);
        } else if (i == q->n) {
            ml_mark ma = plan_op_mark(ref->ops[i]);
            ml_diag_add(d, ML_DIAG_ERROR, file, ma, r, "cross_rank",
                        "rank %d ends after %zu collectives while rank 0 issues %s at %u:%u", r, i,
                        ml_colls[ref->ops[i]->u.coll.coll].name, ma.line, ma.col);
        } else {
            ml_mark mb = plan_op_mark(q->ops[i]);
            ml_diag_add(d, ML_DIAG_ERROR, file, mb, r, "cross_rank",
                        "rank 0 ends after %zu collectives while rank %d issues %s at %u:%u", i, r,
                        ml_colls[q->ops[i]->u.coll.coll].name, mb.line, mb.col);
        }
    }
    return errors;
}
