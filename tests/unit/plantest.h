/* SPDX-License-Identifier: MIT */
/* plantest.h — helpers for the analyzer's unit tests: load a schedule from a string, expand it
 * for every rank, lint and predict, and read diagnostics back as the CLI prints them. */
#ifndef MEMLIFE_PLANTEST_H
#define MEMLIFE_PLANTEST_H

#include "testutil.h"
#include "lint/lint.h"
#include "predict/analyzer.h"

#include <stdio.h>
#include <stdlib.h>

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)

typedef struct {
    sched *s;
    ml_diags d;
    int world;
    rank_plan *plans;     /* [world] */
    pred_rank *pred;      /* [world] after pt_predict */
    lint_result lint;
    size_t lint_errors;
} pt_run;

/* The chapter's four lifetimes (seed, chapter 07), as printf formats whose %s is M. */
enum { PT_ALLREDUCE_FULL, PT_RS_ONLY, PT_RS_AG_NAIVE, PT_RS_AG_OPTIMIZED };
static inline const char *pt_seed(int k) {
    static const char allreduce_full[] =
        "let: {M: %s}\n"
        "steps:\n"
        "  - alloc: {buf: full, bytes: M}\n"
        "  - all_reduce: {buf: full}\n"
        "  - sync: device\n";

    /* The optimized RS+AG lifetime is the RS-only one, then the AllGather: one text for both. */
#define PT_RS_ONLY_STEPS                                                                           \
    "let: {M: %s}\n"                                                                               \
    "steps:\n"                                                                                     \
    "  - alloc: {buf: full, bytes: M}\n"                                                           \
    "  - alloc: {buf: shard, bytes: M / world}\n"                                                  \
    "  - reduce_scatter: {send: full, recv: shard}\n"                                              \
    "  - sync: device\n"                                                                           \
    "  - free: full\n"
    static const char rs_only[] = PT_RS_ONLY_STEPS;

    static const char rs_ag_naive[] =
        "let: {M: %s}\n"
        "steps:\n"
        "  - alloc: {buf: full, bytes: M}\n"
        "  - alloc: {buf: shard, bytes: M / world}\n"
        "  - alloc: {buf: gathered, bytes: M}\n"
        "  - reduce_scatter: {send: full, recv: shard}\n"
        "  - all_gather: {send: shard, recv: gathered}\n"
        "  - sync: device\n"
        "  - free: [full, shard]\n";

    static const char rs_ag_optimized[] =
        PT_RS_ONLY_STEPS
        "  - alloc: {buf: gathered, bytes: M}\n"
        "  - all_gather: {send: shard, recv: gathered}\n"
        "  - sync: device\n"
        "  - free: shard\n";
#undef PT_RS_ONLY_STEPS
    static const char *const seeds[] = {allreduce_full, rs_only, rs_ag_naive, rs_ag_optimized};
    return seeds[k];
}

static inline void pt_dump(const ml_diags *d) { ml_diags_print(d, stderr); }

/* Loads yaml and expands plan 0 for every rank at `world` (0: the file's). Fails the test when
 * loading or expansion fails. */
static inline void pt_load_plan(pt_run *r, const char *yaml, int world, int plan_index,
                                const plan_limits *limits) {
    memset(r, 0, sizeof *r);
    ml_diags_init(&r->d);
    r->s = tu_load(yaml, &r->d);
    if (!r->s)
        pt_dump(&r->d);
    assert_non_null(r->s);
    sched_params p = {.world = world};
    r->world = sched_world(r->s, &p, &r->d);
    assert_true(r->world > 0);
    r->plans = calloc((size_t)r->world, sizeof *r->plans);
    for (int k = 0; k < r->world; k++) {
        int rc = plan_expand(r->s, plan_index, &p, r->world, k, limits, &r->plans[k], &r->d);
        if (rc != 0)
            pt_dump(&r->d);
        assert_int_equal(rc, 0);
    }
}

static inline void pt_load(pt_run *r, const char *yaml, int world) {
    pt_load_plan(r, yaml, world, 0, NULL);
}

static inline void pt_lint(pt_run *r) {
    r->lint_errors = lint_plans(r->plans, r->world, NULL, &r->lint, &r->d);
}

static inline void pt_predict(pt_run *r) {
    r->pred = calloc((size_t)r->world, sizeof *r->pred);
    for (int k = 0; k < r->world; k++)
        assert_int_equal(predict_rank(&r->plans[k], &r->pred[k], &r->d), 0);
}

/* Diagnostic k formatted as the CLI prints it ("t.yaml:L:C: error: text [rank N]"). */
static inline const char *pt_diag(pt_run *r, size_t k) {
    static char buf[1024];
    assert_true(k < r->d.items.n);
    ml_diag_format(&ML_VEC_AT(&r->d.items, ml_diag, k), buf, sizeof buf);
    return buf;
}

static inline void pt_free(pt_run *r) {
    if (r->pred)
        for (int k = 0; k < r->world; k++)
            pred_rank_free(&r->pred[k]);
    free(r->pred);
    if (r->plans)
        for (int k = 0; k < r->world; k++)
            plan_free(&r->plans[k]);
    free(r->plans);
    lint_result_free(&r->lint);
    sched_free(r->s);
    ml_diags_free(&r->d);
}

#endif
