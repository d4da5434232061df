/* SPDX-License-Identifier: MIT */
/* lint_contract.c — the contract of one collective call, as NCCL and PyTorch's ProcessGroupNCCL
 * enforce it: counts from coll.h's table, one dtype on both sides, a reduction only where the
 * collective reduces, a root inside the world, and overlap of send and recv only at NCCL's
 * in-place offset. The first broken rule is the error the call raises. */
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

static bool overlap(const plan_view *a, const plan_view *b) {
    return a->buf == b->buf && a->offset < b->offset + b->count && b->offset < a->offset + a->count;
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
    uint64_t send_need = ml_coll_send_count(c, count, world);
    uint64_t recv_need = ml_coll_recv_count(c, count, world);
    *at = LINT_AT_SEND;
    if (send->count != send_need) {
        /* only a collective whose send side is world × count gets here (else count is send's) */
        snprintf(detail, len, "%s send count %llu is not world (%d) × recv count %llu (%llu)",
                 ci->name, (ull)send->count, world, (ull)count, (ull)send_need);
        return ERR_SIZE_MISMATCH;
    }
    *at = LINT_AT_RECV;   /* the side that breaks the rule, the send side being right */
    if (recv->count != recv_need) {
        if (ci->recv_mult_world)
            snprintf(detail, len, "%s recv count %llu is not world (%d) × send count %llu (%llu)",
                     ci->name, (ull)recv->count, world, (ull)count, (ull)recv_need);
        else
            snprintf(detail, len, "%s recv count %llu is not send count %llu", ci->name,
                     (ull)recv->count, (ull)count);
        return ERR_SIZE_MISMATCH;
    }
    if (send->dtype != recv->dtype) {
        snprintf(detail, len, "%s send dtype %s differs from recv dtype %s", ci->name,
                 ml_dtypes[send->dtype].name, ml_dtypes[recv->dtype].name);
        return ERR_DTYPE_MISMATCH;
    }
    /* NCCL 2.28 reduces every dtype with sum, prod, max and min; what can be wrong is a reduction
     * on a collective that does not reduce (the loader stores sum where no op is written). */
    if (!ci->has_op && op->u.coll.op != RED_SUM) {
        *at = LINT_AT_STEP;
        snprintf(detail, len, "%s is not valid for %s: it does not reduce",
                 ml_redops[op->u.coll.op].name, ci->name);
        return ERR_BAD_OP;
    }
    *at = LINT_AT_ROOT;
    if (ci->p2p && (op->u.coll.root < 0 || op->u.coll.root >= world || op->u.coll.root == rank)) {
        snprintf(detail, len, "%s peer %d %s", ci->name, op->u.coll.root,
                 op->u.coll.root == rank ? "is the rank itself" : "is outside the world");
        return ERR_OUT_OF_BOUNDS;
    }
    if (ci->has_root && (op->u.coll.root < 0 || op->u.coll.root >= world)) {
        snprintf(detail, len, "%s root %d is outside the world (%d ranks)", ci->name,
                 op->u.coll.root, world);
        return ERR_OUT_OF_BOUNDS;
    }
    *at = LINT_AT_RECV;   /* recv is where in-place would have to be */
    if (overlap(send, recv) && !op->u.coll.in_place) {
        snprintf(detail, len,
                 "%s send [%llu:%llu] and recv [%llu:%llu] overlap in one buffer, but nccl runs "
                 "in place only at recv - send = %lld elements on rank %d",
                 ci->name, (ull)send->offset, (ull)send->count, (ull)recv->offset,
                 (ull)recv->count, (long long)ci->inplace_recv_minus_send(count, rank), rank);
        return ERR_BAD_INPLACE;
    }
    if (len)
        detail[0] = '\0';
    return ERR_NONE;
}
