/* SPDX-License-Identifier: MIT */
/* linttime.c — the CPU time of lint_walk_rank alone (lint's share of predict), walked
 * the way the pipeline's offsets path walks it (analyzer/pipeline/rankshare.h, pipeline.c's plan_compact_pass):
 * rank 0 expanded once, each other rank's offsets written into the same ops (plan_share, then
 * plan_offsets_apply), then linted. Only the lint_walk_rank calls are timed (CPU time of the
 * process, clock_gettime): loading, expanding and rewriting offsets are the loader's and the
 * planner's. Best of REPS walks over every rank (default 5), since the machine is shared.
 * Prints "lint_walk_rank xW ranks: best S s, N ns/op/rank (OPS ops per rank, E errors)".
 * LINT_OFF=CLASS turns a lint class off (`--no-lint CLASS`), to see what it costs.
 * For a schedule whose ranks expand alike, or differently in more than offsets, it says so and
 * exits 2. Built like loadtime (tests/bench.sh):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iruntime -Ianalyzer -I. -o build/bench/linttime \
 *       tests/bench/linttime.c build/libmemlife.a $LDLIBS
 * Usage: linttime FILE [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lint/lint.h"
#include "predict/analyzer.h"

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: linttime FILE [REPS]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    ml_diags d;
    ml_diags_init(&d);
    sched_params p = {0};
    sched *s = sched_load_file(argv[1], NULL, &d);
    if (!s) {
        ml_diags_print(&d, stderr);
        return 2;
    }
    int world = sched_world(s, &p, &d);
    p.world = world;
    rank_plan p0 = {0};
    if (world <= 1 || plan_expand(s, 0, &p, world, 0, NULL, &p0, &d) != 0) {
        ml_diags_print(&d, stderr);
        fprintf(stderr, "linttime: needs a world of 2 or more ranks that expands\n");
        return 2;
    }
    plan_offsets *po = plan_rank_invariant(&p0, &p) ? NULL : plan_offsets_new(&p0, &p);
    if (!po) {
        fprintf(stderr, "linttime: the ranks do not differ by view offsets alone\n");
        return 2;
    }
    lint_options o;
    lint_options_default(&o);
    if (getenv("LINT_OFF") && lint_options_disable(&o, getenv("LINT_OFF")) != 0) {
        fprintf(stderr, "linttime: no lint class '%s'\n", getenv("LINT_OFF"));
        return 2;
    }
    rank_plan *plans = calloc((size_t)world, sizeof *plans);   /* lint_walk_end's messages */
    if (!plans)
        return 3;
    plans[0] = p0;
    double best = 0;
    size_t errors = 0;
    for (int rep = 0; rep < reps; rep++) {
        lint_result lr;
        lint_walk *w = lint_walk_new(s, world, &o, &lr);
        double t = 0;
        for (int r = 0; r < world; r++) {
            rank_plan pl = {0};
            const rank_plan *q = &plans[0];
            if (r > 0) {
                plan_share(&plans[0], r, &pl);
                if (plan_offsets_apply(po, &pl, r, &d) != 0) {
                    ml_diags_print(&d, stderr);
                    return 2;
                }
                q = &pl;
            }
            double t0 = cpu_now();
            lint_walk_rank(w, q);
            t += cpu_now() - t0;
            if (r > 0)
                plan_free(&pl);
        }
        if (plan_offsets_apply(po, &plans[0], 0, &d) != 0)   /* rank 0's again, as the pipeline */
            return 2;
        ml_diags_free(&d);
        ml_diags_init(&d);
        errors = lint_walk_end(w, plans, true, &d);
        lint_result_free(&lr);
        if (rep == 0 || t < best)
            best = t;
    }
    printf("lint_walk_rank x%d ranks: best %.4f s, %.2f ns/op/rank (%zu ops per rank, %zu errors)\n",
           world, best, best * 1e9 / world / (double)plans[0].n_ops, plans[0].n_ops, errors);
    plan_offsets_free(po);
    plan_free(&plans[0]);
    free(plans);
    sched_free(s);
    ml_diags_free(&d);
    return 0;
}
