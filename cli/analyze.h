/* analyze.h — the pipeline predict, check (and run) share: load every file, expand every rank's
 * plan, lint, predict, evaluate expectations, and gather the results into one report.
 *
 * One item per (file, plan): files with `plans:` give one item per plan ("name/plan" in the
 * report), or only the plan named by --plan. Diagnostics of every file are collected before
 * anything is reported, so a bad file never leaves a partial report behind. */
#ifndef MEMLIFE_ANALYZE_H
#define MEMLIFE_ANALYZE_H

#include "args.h"
#include "predict/analyzer.h"
#include "report/report.h"

typedef struct {
    sched *s;
    int plan_index;
    int world;
    rank_plan *plans;          /* [world] */
    pred_rank *pred;           /* [world]; NULL until predicted */
    expect_row *expects;
    size_t n_expects;
    int expect_failures;       /* -1: the schedule has no expectations */
    lint_result lint;
    report_check *checks;      /* the lint's expect_error contract rows */
    size_t n_checks;
    bool shared;               /* one expansion and prediction serve every rank (analyze.c) */
} ml_item;

typedef struct {
    bool predict;              /* run the predictor and expectations (else load + lint only) */
    lint_options lint;
    const char *link;          /* --link alpha_us=A,busbw_gbps=B for the time model, or NULL */
} ml_analysis_opts;

typedef struct {
    ml_vec scheds;             /* sched *, one per loaded file */
    ml_vec items;              /* ml_item */
    report_schedule *report_items;
    report rep;
    ml_diags diags;
} ml_analysis;

void ml_analysis_opts_default(ml_analysis_opts *o);
/* Runs the pipeline for a's files. Prints the diagnostics (errors and warnings) to stderr.
 * Returns ML_EXIT_OK, or ML_EXIT_INPUT when any file failed to load, expand, lint or evaluate;
 * out must be freed either way. */
int ml_analyze(const ml_args *a, const char *command, const ml_analysis_opts *o, ml_analysis *out);
void ml_analysis_free(ml_analysis *an);

#endif
