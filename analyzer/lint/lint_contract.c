/* SPDX-License-Identifier: MIT */
/* lint_contract.c — the contract of one collective call, as NCCL and PyTorch's ProcessGroupNCCL
 * enforce it: a rank that is in a group of the communicator, counts from coll.h's table, one
 * dtype on both sides, a reduction only where the collective reduces, a root inside the world,
 * and overlap of send and recv only at NCCL's in-place offset. With `comm:` the world of these
 * rules is the rank's group: its size, its ranks for the root, the peer and the offset. The
 * first broken rule (lint_int.h: lint_coll_broken, their order) is the error the call raises. */
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

/* Appends the members of rank's group of comm to buf at *at ("3, 1"), *listed counting the
 * ranks listed so far: past LINT_LIST_MAX, ", ..." ends the list and *listed is past it. */
enum { LINT_LIST_MAX = 8 };
static void group_append(const ml_comms *comms, uint32_t comm, int rank, char *buf, size_t len,
                         size_t *at, int *listed) {
    int size = ml_comms_size(comms, comm, rank);
    for (int j = 0; j < size && *listed <= LINT_LIST_MAX && *at < len; j++) {
        if (*listed == LINT_LIST_MAX) {
            *at += (size_t)snprintf(buf + *at, len - *at, ", ...");
            ++*listed;
            break;
        }
        *at += (size_t)snprintf(buf + *at, len - *at, "%s%d", *listed ? ", " : "",
                                ml_comms_global(comms, comm, rank, j));
        ++*listed;
    }
}

void lint_group_text(const ml_comms *comms, uint32_t comm, int rank, char *buf, size_t len) {
    size_t at = (size_t)snprintf(buf, len, "ranks ");
    int listed = 0;
    group_append(comms, comm, rank, buf, len, &at, &listed);
}

/* "ranks 3, 1": every group's members, the groups in their order (ml_comms_group). A rank in
 * none of comm's groups gets here only with an error to report, so the walk over the world for
 * each group's first member is paid once per message. */
static void members_text(const ml_comms *comms, uint32_t comm, int world, char *buf, size_t len) {
    size_t at = (size_t)snprintf(buf, len, "ranks ");
    int listed = 0;
    uint32_t groups = ml_comms_groups(comms, comm);
    for (uint32_t g = 0; g < groups && listed <= LINT_LIST_MAX; g++)
        for (int r = 0; r < world; r++)
            if (ml_comms_group(comms, comm, r) == (int)g) {
                group_append(comms, comm, r, buf, len, &at, &listed);
                break;
            }
    if (listed == 0)
        snprintf(buf, len, "no ranks");
}

sched_error_code lint_coll_contract(const plan_op *op, const ml_comms *comms, int world, int rank,
                                    char *detail, size_t len, lint_contract_at *at) {
    lint_contract_at ignored;
    if (!at)
        at = &ignored;
    ml_coll c = op->u.coll.coll;
    const ml_coll_info *ci = &ml_colls[c];
    const plan_view *send = &op->u.coll.send, *recv = &op->u.coll.recv;
    uint64_t count = plan_coll_count(op);
    uint32_t comm = comms ? op->u.coll.comm : 0;
    const char *cname = comm ? ml_comms_name(comms, comm) : "world";
    /* the group's size and the rank's rank in it; "world (4)" or "tp's size (2)" in the texts */
    int size = comm ? ml_comms_size(comms, comm, rank) : world;
    int local = comm ? ml_comms_local(comms, comm, rank) : rank;
    char sz[96];
    if (comm)
        snprintf(sz, sizeof sz, "%s's size (%d)", cname, size);
    else
        snprintf(sz, sizeof sz, "world (%d)", world);
    /* the side that breaks the rule, the sides before it being right: recv unless the send
     * count is wrong, or the rule is about the root or the op */
    switch (lint_coll_broken(op, comms, world, rank)) {
    case LINT_RULE_MEMBER: {
        *at = LINT_AT_KEY;
        char members[160];
        members_text(comms, comm, world, members, sizeof members);
        snprintf(detail, len, "rank %d is not in communicator '%s' (%s)", rank, cname, members);
        return ERR_OUT_OF_BOUNDS;
    }
    case LINT_RULE_SEND_COUNT:
        *at = LINT_AT_SEND;
        /* only a collective whose send side is world × count gets here (else count is send's) */
        snprintf(detail, len, "%s send count %llu is not %s × recv count %llu (%llu)", ci->name,
                 (ull)send->count, sz, (ull)count, (ull)ml_coll_send_count(c, count, size));
        return ERR_SIZE_MISMATCH;
    case LINT_RULE_RECV_COUNT:
        *at = LINT_AT_RECV;
        if (ci->recv_n == CNT_WORLD_X_COUNT)
            snprintf(detail, len, "%s recv count %llu is not %s × send count %llu (%llu)",
                     ci->name, (ull)recv->count, sz, (ull)count,
                     (ull)ml_coll_recv_count(c, count, size));
        else
            snprintf(detail, len, "%s recv count %llu is not send count %llu", ci->name,
                     (ull)recv->count, (ull)count);
        return ERR_SIZE_MISMATCH;
    case LINT_RULE_PER_RANK:
        *at = LINT_AT_SEND;
        if (comm)
            snprintf(detail, len, "%s count %llu does not divide by %s: each member gets "
                     "count/%d elements", ci->name, (ull)count, sz, size);
        else
            snprintf(detail, len, "%s count %llu does not divide by the world (%d): each rank "
                     "gets count/world elements", ci->name, (ull)count, world);
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
        if (!comm)
            snprintf(detail, len, "%s peer %d %s", ci->name, op->u.coll.root,
                     op->u.coll.root == rank ? "is the rank itself" : "is outside the world");
        else if (op->u.coll.root == local)
            snprintf(detail, len, "%s peer %d is the rank itself (rank %d is %d in '%s')",
                     ci->name, op->u.coll.root, rank, local, cname);
        else
            snprintf(detail, len, "%s peer %d is outside communicator '%s' (%d ranks)", ci->name,
                     op->u.coll.root, cname, size);
        return ERR_OUT_OF_BOUNDS;
    case LINT_RULE_ROOT:
        *at = LINT_AT_ROOT;
        if (comm)
            snprintf(detail, len, "%s root %d is outside communicator '%s' (%d ranks)", ci->name,
                     op->u.coll.root, cname, size);
        else
            snprintf(detail, len, "%s root %d is outside the world (%d ranks)", ci->name,
                     op->u.coll.root, world);
        return ERR_OUT_OF_BOUNDS;
    case LINT_RULE_INPLACE: {
        *at = LINT_AT_RECV;   /* recv is where in-place would have to be */
        int64_t delta;
        char who[96];
        if (comm)
            snprintf(who, sizeof who, "rank %d (%d in '%s')", rank, local, cname);
        else
            snprintf(who, sizeof who, "rank %d", rank);
        if (!ml_coll_inplace_at(c, count, local, &delta))
            snprintf(detail, len, "%s send [%llu:%llu] and recv [%llu:%llu] overlap in one buffer, "
                     "but it never runs in place", ci->name, (ull)send->offset,
                     (ull)send->count, (ull)recv->offset, (ull)recv->count);
        else
            snprintf(detail, len,
                     "%s send [%llu:%llu] and recv [%llu:%llu] overlap in one buffer, but nccl "
                     "runs in place only at recv - send = %lld elements on %s",
                     ci->name, (ull)send->offset, (ull)send->count, (ull)recv->offset,
                     (ull)recv->count, (long long)delta, who);
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
