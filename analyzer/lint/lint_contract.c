/* SPDX-License-Identifier: MIT */
/* lint_contract.c — the contract of one collective call, as NCCL and PyTorch's ProcessGroupNCCL
 * enforce it: counts from coll.h's table, one dtype on both sides, a reduction only where the
 * collective reduces, a root inside the world, and overlap of send and recv only at NCCL's
 * in-place offset. The first broken rule (lint_int.h: lint_coll_broken, their order) is the
 * error the call raises. */
#include "lint/lint_int.h"

#include <stdio.h>

typedef unsigned long long ull;

void lint_view_text(const sched *s, const plan_view *v, char *buf, size_t len) {
    const char *name = sched_sym_name(s, SYM_BUFFER, v->buf);
    if (v->whole)
        snprintf(buf, len, "'%s'", name);
    else
        snprintf(buf, len, "'%s[%llu:%llu]'", name, (ull)v->offset, (ull)v->count);
}

sched_error_code lint_coll_contract(const plan_op *op, int world, int rank, char *detail,
                                    size_t len, lint_contract_at *at) {
    lint_contract_at ignored;
    if (!at)
        at = &ignored;
    ml_coll c = op->u.coll.coll;
    const ml_coll_info *ci = &ml_colls[c];
    const plan_view *send = &op->u.coll.send, *recv = &op->u.coll.recv;
    uint64_t count = plan_coll_count(op);
    /* the side that breaks the rule, the sides before it being right: recv unless the send
     * count is wrong, or the rule is about the root or the op */
    switch (lint_coll_broken(op, world, rank)) {
    case LINT_RULE_SEND_COUNT:
        *at = LINT_AT_SEND;
        /* only a collective whose send side is world × count gets here (else count is send's) */
        snprintf(detail, len, "%s send count %llu is not world (%d) × recv count %llu (%llu)",
                 ci->name, (ull)send->count, world, (ull)count,
                 (ull)ml_coll_send_count(c, count, world));
        return ERR_SIZE_MISMATCH;
    case LINT_RULE_RECV_COUNT:
        *at = LINT_AT_RECV;
        if (ci->recv_n == CNT_WORLD_X_COUNT)
            snprintf(detail, len, "%s recv count %llu is not world (%d) × send count %llu (%llu)",
                     ci->name, (ull)recv->count, world, (ull)count,
                     (ull)ml_coll_recv_count(c, count, world));
        else
            snprintf(detail, len, "%s recv count %llu is not send count %llu", ci->name,
                     (ull)recv->count, (ull)count);
        return ERR_SIZE_MISMATCH;
    case LINT_RULE_PER_RANK:
        *at = LINT_AT_SEND;
        snprintf(detail, len, "%s count %llu does not divide by the world (%d): each rank gets "
                 "count/world elements", ci->name, (ull)count, world);
        return ERR_SIZE_MISMATCH;
    case LINT_RULE_DTYPE:
        *at = LINT_AT_RECV;
        snprintf(detail, len, "%s send dtype %s differs from recv dtype %s", ci->name,
                 ml_dtypes[send->dtype].name, ml_dtypes[recv->dtype].name);
        return ERR_DTYPE_MISMATCH;
    case LINT_RULE_OP:
        *at = LINT_AT_STEP;
        snprintf(detail, len, "%s is not valid for %s: it does not reduce",
                 ml_redops[op->u.coll.op].name, ci->name);
        return ERR_BAD_OP;
    case LINT_RULE_PEER:
        *at = LINT_AT_ROOT;
        snprintf(detail, len, "%s peer %d %s", ci->name, op->u.coll.root,
                 op->u.coll.root == rank ? "is the rank itself" : "is outside the world");
        return ERR_OUT_OF_BOUNDS;
    case LINT_RULE_ROOT:
        *at = LINT_AT_ROOT;
        snprintf(detail, len, "%s root %d is outside the world (%d ranks)", ci->name,
                 op->u.coll.root, world);
        return ERR_OUT_OF_BOUNDS;
    case LINT_RULE_INPLACE: {
        *at = LINT_AT_RECV;   /* recv is where in-place would have to be */
        int64_t delta;
        if (!ml_coll_inplace_at(c, count, rank, &delta))
            snprintf(detail, len, "%s send [%llu:%llu] and recv [%llu:%llu] overlap in one buffer, "
                     "but it never runs in place", ci->name, (ull)send->offset,
                     (ull)send->count, (ull)recv->offset, (ull)recv->count);
        else
            snprintf(detail, len,
                     "%s send [%llu:%llu] and recv [%llu:%llu] overlap in one buffer, but nccl "
                     "runs in place only at recv - send = %lld elements on rank %d",
                     ci->name, (ull)send->offset, (ull)send->count, (ull)recv->offset,
                     (ull)recv->count, (long long)delta, rank);
        return ERR_BAD_INPLACE;
    }
    case LINT_RULE_NONE:
        break;
    }
    *at = LINT_AT_RECV;
    if (len)
        detail[0] = '\0';
    return ERR_NONE;
}
