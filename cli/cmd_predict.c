/* SPDX-License-Identifier: MIT */
/* cmd_predict.c — `memlife predict`: lint and predict every rank of every schedule, then report.
 * Expectations are evaluated and shown but do not change the exit code (that is `check`). */
#include "cmd.h"
#include "analysis.h"
#include "predict/timemodel.h"

const char cmd_predict_usage[] =
    "usage: memlife predict [OPTIONS] FILE...\n"
    "\n"
    "Loads each schedule, expands every rank's plan, lints it (hazards, collective contracts,\n"
    "cross-rank order) and predicts live memory after every step in two views: requested (the\n"
    "sum of live buffer sizes) and device (cudaMemGetInfo by the page model). Prints steady and\n"
    "peak per rank, where the peak is reached and what is live there, and the schedule's\n"
    "expectations (shown, not gating: use 'memlife check' for that). A time model gives the\n"
    "step time with streams overlapped and the exposed communication (JSON 'time').\n"
    "\n"
    "@options\n"
    "exit codes: 0 ok, 2 bad input (syntax, lint error or hazard)\n";

int cmd_predict(int argc, char **argv) {
    ml_args a;
    int rc;
    const char *link = NULL;
    const ml_opt extra[] = {
        {"--link", NULL, OPT_STRING, &link, 0, 0, NULL, "L",
         "the time model's link: alpha_us=US,busbw_gbps=GBPS (either or both; default alpha "
         "10 us and busbw fitted to 2 x H200)"},
    };
    if (!ml_args_begin(&a, "predict", cmd_predict_usage, argc, argv, extra, ML_ARRAY_LEN(extra),
                       false, &rc))
        return rc;
    tm_link check;
    char why[200];
    tm_link_default(&check);
    if (link && tm_link_parse(link, &check, why, sizeof why)) {
        ml_args_free(&a);
        return ml_usage_error("predict", "%s", why);
    }
    pipeline_opts o;
    pipeline_opts_default(&o);
    o.link = link;
    o.timeline = false;   /* the report prints no timeline */
    o.keep_plans = false; /* nor any op but its peaks' (pipeline_opts) */
    ml_analysis an;
    rc = ml_analyze(&a, "predict", &o, &an);
    if (rc == ML_EXIT_OK && (!a.quiet || a.output))
        if (report_emit(&an.rep, a.format, a.output) != 0)
            rc = ML_EXIT_RUNTIME;
    ml_analysis_free(&an);
    ml_args_free(&a);
    return rc;
}
