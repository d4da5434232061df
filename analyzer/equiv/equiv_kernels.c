/* SPDX-License-Identifier: MIT */
/* equiv_kernels.c — row 3 of `memlife equiv` against the kernels CUPTI measured (equiv.h): each
 * public API call of a plan is one NCCL kernel on each rank's GPU (none at world 1), except the
 * send/recv ops of one group, which share one SendRecv kernel, so the kernels of each kernel
 * family (coll.h: rows with one kernel_match) measured in the plan's window must equal that,
 * rank by rank. */
#include "equiv/equiv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

uint64_t equiv_kernels_collective(const equiv_kernels_rank *k) {
    uint64_t n = 0;
    for (int c = 0; c < COLL_COUNT; c++)
        n += k->by_coll[c];
    return n;
}

uint32_t equiv_kernels_expected(const equiv_facts *f, int world, int c) {
    if (world == 1)
        return 0;
    return c == COLL_COUNT ? f->n_kernels : f->kernels[c];
}

/* The first collective whose measured kernels differ from the expected, or -1. */
static int mismatch(const equiv_facts *f, int world, const equiv_kernels_rank *k) {
    for (int c = 0; c < COLL_COUNT; c++)
        if (k->by_coll[c] != equiv_kernels_expected(f, world, c))
            return c;
    return -1;
}

/* "ncclDevKernel_AllReduce_Sum_f32_RING_LL ×1, ...": names without their argument list (every
 * NCCL kernel takes the same one), kernels past the names kept counted as "+N more". */
static void names_text(const equiv_kernels_rank *k, ml_str *o) {
    uint64_t named = 0;
    for (uint32_t j = 0; j < k->n_names; j++) {
        const char *name = k->names[j].name, *paren = strchr(name, '(');
        int n = paren ? (int)(paren - name) : (int)strlen(name);
        ml_str_printf(o, "%s%.*s ×%" PRIu64, j ? ", " : "", n, name, k->names[j].count);
        named += k->names[j].count;
    }
    if (!k->n_names)
        ml_str_printf(o, "no kernels");
    if (k->total > named)
        ml_str_printf(o, ", +%" PRIu64 " more", k->total - named);
}

void equiv_judge_kernels(equiv_result *r) {
    if (!r->kernels[0] || !r->kernels[1])
        return;
    int rank = -1, side = 0, coll = -1;
    for (int k = 0; k < r->world && rank < 0; k++)
        for (int s = 0; s < 2 && rank < 0; s++)
            if ((coll = mismatch(&r->facts[s][k], r->world, &r->kernels[s][k])) >= 0) {
                rank = k;
                side = s;
            }
    int k = rank < 0 ? 0 : rank;
    const equiv_kernels_rank *ka = &r->kernels[0][k], *kb = &r->kernels[1][k];
    ml_str o = {0};
    ml_str_printf(&o, "%s", r->rows[EQ_STRUCTURE].detail);
    if (rank < 0)
        ml_str_printf(&o, "%skernels per rank: ", o.n ? "; " : "");
    else
        ml_str_printf(&o, "%skernels on rank %d: ", o.n ? "; " : "", rank);
    ml_str_printf(&o, "expected %u vs %u, measured %" PRIu64 " vs %" PRIu64 " (",
                  equiv_kernels_expected(&r->facts[0][k], r->world, COLL_COUNT),
                  equiv_kernels_expected(&r->facts[1][k], r->world, COLL_COUNT),
                  equiv_kernels_collective(ka),
                  equiv_kernels_collective(kb));
    names_text(ka, &o);
    ml_str_printf(&o, " | ");
    names_text(kb, &o);
    ml_str_printf(&o, ")");
    if (rank >= 0) {
        ml_str_printf(&o, ": measured differs from expected (%s %s: %u call%s, %u kernel%s "
                          "expected, %" PRIu64 " kernel%s)", side ? "B" : "A", ml_colls[coll].name,
                      r->facts[side][k].calls[coll], r->facts[side][k].calls[coll] == 1 ? "" : "s",
                      equiv_kernels_expected(&r->facts[side][k], r->world, coll),
                      equiv_kernels_expected(&r->facts[side][k], r->world, coll) == 1 ? "" : "s",
                      r->kernels[side][k].by_coll[coll],
                      r->kernels[side][k].by_coll[coll] == 1 ? "" : "s");
        r->rows[EQ_STRUCTURE].verdict = EQV_FAILS;
    }
    snprintf(r->rows[EQ_STRUCTURE].detail, sizeof r->rows[EQ_STRUCTURE].detail, "%s", o.s);
    ml_str_free(&o);
}
