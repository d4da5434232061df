/* SPDX-License-Identifier: MIT */
/* analysis.h — predict, check and run's side of the pipeline (pipeline/pipeline.h): the command
 * line's files, --set, --world and --plan as the pipeline's input, its diagnostics printed, its
 * items as one report (report/report.h). */
#ifndef MEMLIFE_CLI_ANALYSIS_H
#define MEMLIFE_CLI_ANALYSIS_H

#include "args.h"
#include "pipeline/pipeline.h"
#include "report/report.h"

typedef struct {
    pipeline_result res;       /* res.items: pipeline_item, one per report item */
    report_check **checks;     /* [items]: the lint's expect_error contract rows of each item */
    report_schedule *report_items;
    report rep;
} ml_analysis;

/* The pipeline's input for a's files and options, computing `what`. Points into a. */
pipeline_input ml_args_pipeline(const ml_args *a, const pipeline_opts *what);

/* Runs the pipeline for a's files. Prints the diagnostics (errors and warnings) to stderr.
 * Returns ML_EXIT_OK, or ML_EXIT_INPUT when any file failed to load, expand, lint or evaluate;
 * out must be freed either way. */
int ml_analyze(const ml_args *a, const char *command, const pipeline_opts *o, ml_analysis *out);
void ml_analysis_free(ml_analysis *an);
/* ml_analyze with stderr sent to /dev/null while it runs when quiet (the diagnostics stay in
 * out->res.diags): for ranks that would repeat rank 0's messages, and for fit's probes. */
int ml_analyze_quietly(const ml_args *a, const char *command, const pipeline_opts *o,
                       ml_analysis *out, bool quiet);

/* ml_analyze without the command line and without printing: the diagnostics stay in
 * out->res.diags (the public API, cli/api.c, hands them to its caller). */
int ml_analysis_run(const pipeline_input *in, const char *command, ml_analysis *out);

#endif
