/* SPDX-License-Identifier: MIT */
/* cmd_predict.c — `memlife predict`: lint and predict every rank of every schedule, then report.
 * Expectations are evaluated and shown but do not change the exit code (that is `check`). */
#include "cmd.h"
#include "analysis.h"

const char cmd_predict_usage[] =
    "usage: memlife predict [OPTIONS] FILE...\n"
    "\n"
    "Loads each schedule, expands every rank's plan, lints it (hazards, collective contracts,\n"
    "cross-rank order) and predicts live memory after every step in two views: requested (the\n"
    "sum of live buffer sizes) and device (cudaMemGetInfo by the page model). Prints steady and\n"
    "peak per rank, where the peak is reached and what is live there, and the schedule's\n"
    "expectations (shown, not gating: use 'memlife check' for that).\n"
    "\n"
    "@options\n"
    "exit codes: 0 ok, 2 bad input (syntax, lint error or hazard)\n";

int cmd_predict(int argc, char **argv) {
    ml_args a;
    int rc;
    if (!ml_args_begin(&a, "predict", cmd_predict_usage, argc, argv, NULL, 0, false, &rc))
        return rc;
    pipeline_opts o;
    pipeline_opts_default(&o);
    ml_analysis an;
    rc = ml_analyze(&a, "predict", &o, &an);
    if (rc == ML_EXIT_OK && (!a.quiet || a.output))
        if (report_emit(&an.rep, a.format, a.output) != 0)
            rc = ML_EXIT_RUNTIME;
    ml_analysis_free(&an);
    ml_args_free(&a);
    return rc;
}
