/* SPDX-License-Identifier: MIT */
/* bench_plan.c — what a plan times (bench.h): its span (the regions, else first to last
 * collective), the check that the span holds only what bench can time, its payload and bus bytes.
 * A file of its own because the driver (bench.c) and the sessions (bench_session.c) both need it
 * and sit above it. */
#include "bench/bench_int.h"

#include <stdint.h>

int bench_span(const rank_plan *p, size_t *first, size_t *end) {
    size_t region_first = SIZE_MAX, region_end = 0, coll_first = SIZE_MAX, coll_end = 0;
    int depth = 0;
    for (size_t i = 0; i < p->n_ops; i++) {
        switch (p->ops[i].kind) {
        case OP_EXPECT_BEGIN:
            i++;                  /* the op it wraps is refused, never issued */
            break;
        case OP_REGION_BEGIN:
            if (depth++ == 0 && region_first == SIZE_MAX)
                region_first = i;
            break;
        case OP_REGION_END:
            if (--depth == 0)
                region_end = i + 1;
            break;
        case OP_COLL:
            if (coll_first == SIZE_MAX)
                coll_first = i;
            coll_end = i + 1;
            break;
        default:
            break;
        }
    }
    *first = region_first != SIZE_MAX ? region_first : coll_first;
    *end = region_first != SIZE_MAX ? region_end : coll_end;
    return *first == SIZE_MAX ? -1 : 0;
}

const char *bs_plan_label(const rank_plan *p) {
    const char *n = p->s->plans[p->plan_index].name;
    return n && *n ? n : p->s->name;
}

static bool timed_kind(plan_op_kind k) {
    return k == OP_COLL || k == OP_COPY || k == OP_RECORD || k == OP_WAIT || k == OP_COMPUTE ||
           k == OP_REGION_BEGIN || k == OP_REGION_END;
}

int bench_check_plan(const rank_plan *p, ml_diags *d) {
    const char *file = p->s->file;
    size_t first, end;
    if (bench_span(p, &first, &end) != 0) {
        ml_diag_add(d, ML_DIAG_ERROR, file, p->s->plans[p->plan_index].mark, p->rank, "bench_span",
                    "plan '%s' has no collective to time", bs_plan_label(p));
        return -1;
    }
    bool coll = false;
    for (size_t i = first; i < end; i++) {
        const plan_op *op = &p->ops[i];
        if (!timed_kind(op->kind)) {
            ml_diag_add(d, ML_DIAG_ERROR, file, plan_op_mark(op), p->rank, "bench_span",
                        "'%s' inside the timed part of plan '%s': bench times only collectives, "
                        "copies, record, wait and compute there; allocate, initialize, sync and "
                        "check outside the regions", plan_op_names[op->kind], bs_plan_label(p));
            return -1;
        }
        coll |= op->kind == OP_COLL;
    }
    if (!coll) {
        ml_diag_add(d, ML_DIAG_ERROR, file, plan_op_mark(&p->ops[first]), p->rank, "bench_span",
                    "the timed part of plan '%s' (its regions) holds no collective",
                    bs_plan_label(p));
        return -1;
    }
    return 0;
}

void bench_plan_bytes(const rank_plan *p, uint64_t *payload, double *bus_bytes) {
    size_t first, end;
    *payload = 0;
    *bus_bytes = 0;
    if (bench_span(p, &first, &end) != 0)
        return;
    for (size_t i = first; i < end; i++) {
        const plan_op *op = &p->ops[i];
        if (op->kind != OP_COLL)
            continue;
        ml_coll c = op->u.coll.coll;
        uint64_t send = ml_coll_send_count(c, plan_coll_count(op), p->world);
        uint64_t recv = ml_coll_recv_count(c, plan_coll_count(op), p->world);
        uint64_t full = (send > recv ? send : recv) * ml_dtypes[op->u.coll.send.dtype].size;
        *payload = full > *payload ? full : *payload;
        *bus_bytes += (double)full * ml_colls[c].busbw_factor(p->world);
    }
}

size_t bench_plan_collectives(const rank_plan *p) {
    size_t first, end, n = 0;
    if (bench_span(p, &first, &end) != 0)
        return 0;
    for (size_t i = first; i < end; i++)
        n += p->ops[i].kind == OP_COLL;
    return n;
}

