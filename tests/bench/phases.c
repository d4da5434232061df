/* SPDX-License-Identifier: MIT */
/* phases.c — where the time of `memlife predict` goes: the same pipeline as analyzer/pipeline/pipeline.c for
 * one file (load, expand every rank, lint, predict every rank with the time model and the
 * expectations, JSON report to memory, free),
 * with the CPU time (user + sys, getrusage) of each phase and the peak RSS. For profiling the
 * benchmark's schedules; tests/bench.sh times the real command and prints this line for the
 * largest size. Usage: phases FILE */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "pipeline/pipeline.h"
#include "predict/analyzer.h"
#include "report/report.h"

static double cpu_now(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static double t_last;
static void phase(const char *name) {
    double t = cpu_now();
    printf("%s %.3f  ", name, t - t_last);
    t_last = t;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: phases FILE\n");
        return 2;
    }
    ml_diags d;
    ml_diags_init(&d);
    sched_params p = {0};
    t_last = cpu_now();
    sched *s = sched_load_file(argv[1], NULL, &d);
    if (!s) {
        ml_diags_print(&d, stderr);
        return 2;
    }
    phase("load");
    int world = sched_world(s, &p, &d);
    if (world <= 0) {
        ml_diags_print(&d, stderr);
        return 2;
    }
    rank_plan *plans = calloc((size_t)world, sizeof *plans);
    pred_rank *pred = calloc((size_t)world, sizeof *pred);   /* replaced by the item's */
    if (!plans || !pred)
        return 3;
    for (int r = 0; r < world; r++)
        if (plan_expand(s, 0, &p, world, r, NULL, &plans[r], &d) != 0) {
            ml_diags_print(&d, stderr);
            return 2;
        }
    phase("expand");
    lint_result lr;
    size_t errors = lint_plans(plans, world, NULL, &lr, &d);
    phase("lint");
    /* as `memlife predict` does it: no timeline, the time model, expectations */
    pipeline_opts o;
    pipeline_opts_default(&o);
    o.timeline = false;
    pipeline_item it = {.s = s, .world = world, .plans = plans, .expect_failures = -1};
    sched_params pw = p;
    pw.world = world;
    if (pipeline_predict(&it, &pw, &o, &d) != 0) {
        ml_diags_print(&d, stderr);
        return 2;
    }
    free(pred);
    pred = it.pred;
    phase("predict");
    report_schedule rs = {.s = s, .world = world, .plans = plans, .pred = pred,
                          .expect_failures = -1};
    report rep = {.items = &rs, .n = 1, .command = "predict"};
    ml_str out = {0};
    report_render(&rep, FMT_JSON, &out);
    ml_str_free(&out);
    phase("report");
    size_t n_ops = plans[0].n_ops;
    for (int r = 0; r < world; r++) {
        pred_rank_free(&pred[r]);
        plan_free(&plans[r]);
    }
    lint_result_free(&lr);
    free(it.expects);
    sched_free(s);
    free(plans);
    free(pred);
    phase("free");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("(CPU s; %zu ops per rank, %zu lint errors, peak RSS %ld MB)\n", n_ops, errors,
           ru.ru_maxrss / 1024);
    ml_diags_print(&d, stderr);
    ml_diags_free(&d);
    return 0;
}
