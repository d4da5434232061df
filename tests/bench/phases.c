/* SPDX-License-Identifier: MIT */
/* phases.c — where the time of `memlife predict` goes: the pipeline's own path for one file, as
 * cmd_predict.c asks for it (pipeline_plan with no timeline and no whole plans: the shared,
 * offsets or rank-by-rank path, expansion, lint and prediction of each rank interleaved, so one
 * phase), then the JSON report to memory (without the contract rows, cli's) and the frees,
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
    /* as `memlife predict` does it (cmd_predict.c): no timeline, no whole plans, the time
     * model, expectations */
    pipeline_opts o;
    pipeline_opts_default(&o);
    o.timeline = false;
    o.keep_plans = false;
    pipeline_item it = {0};
    if (pipeline_plan(s, 0, &p, world, &o, &it, &d) != 0) {
        ml_diags_print(&d, stderr);
        pipeline_item_free(&it);
        return 2;
    }
    phase("plan");
    report_schedule rs = {.s = s, .world = world, .plans = it.plans, .pred = it.pred,
                          .expects = it.expects, .n_expects = it.n_expects,
                          .expect_failures = it.expect_failures};
    report rep = {.items = &rs, .n = 1, .command = "predict"};
    ml_str out = {0};
    report_render(&rep, FMT_JSON, &out);
    ml_str_free(&out);
    phase("report");
    size_t n_ops = it.plans[0].n_ops;
    const char *path = it.shared ? "shared" : it.moved ? "offsets" : "rank by rank";
    pipeline_item_free(&it);
    sched_free(s);
    phase("free");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("(CPU s; %zu ops on rank 0, the %s path, peak RSS %ld MB)\n", n_ops, path,
           ru.ru_maxrss / 1024);
    ml_diags_print(&d, stderr);
    ml_diags_free(&d);
    return 0;
}
