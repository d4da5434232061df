/* SPDX-License-Identifier: MIT */
/* pipeline.h — the one analysis pipeline: load every file, expand every rank's plan, lint,
 * predict, evaluate expectations. predict, check and run (through cli/analysis.c), plot, trace and
 * diff (report/series.c), optimize, bench and equiv all run it; none expands or lints by itself.
 *
 * One item per (file, plan): files with `plans:` give one item per plan, or only the plan named
 * by `plan`. Diagnostics of every file are collected before the caller reports anything, so a bad
 * file never leaves a partial report behind.
 *
 * Every rank is expanded, linted and predicted, but ranks that are alike share an expansion and
 * its prediction (identical ranks, ranks that differ only in views' offsets, groups of ranks
 * that `when:`s of rank split): rankshare.h decides how and says why each is exact. */
#ifndef MEMLIFE_PIPELINE_H
#define MEMLIFE_PIPELINE_H

#include "lint/lint.h"
#include "predict/analyzer.h"

/* What to compute for a plan. */
typedef struct {
    lint_options lint;
    bool predict;              /* the predictor (else expand + lint only) */
    bool expect;               /* and the file's expectations (with predict) */
    /* NULL: lint findings go to the caller's diagnostics and a lint error stops the plan before
     * the prediction. Else they go here and the prediction runs whatever they say (optimize
     * compares candidates' findings; equiv reads cross-rank errors as an answer). */
    ml_diags *lint_diags;
    /* The time model's link (predict/timemodel.h): `--link alpha_us=A,busbw_gbps=B` over the
     * schedule's `link:` over the defaults; NULL: no --link. The caller has parsed it once. */
    const char *link;
    /* Keep every rank's live bytes after every op (pred_rank.timeline): for what prints or
     * compares them (plot, trace, diff, run). Default true; predict and check turn it off. */
    bool timeline;
    /* Keep every rank's whole plan (pipeline_item.plans) for what reads or runs its ops. Default
     * true; predict and check turn it off: then, where ranks expand differently, a rank other
     * than 0 keeps only the ops its report names (plan_compact; read them with plan_op_at). */
    bool keep_plans;
    /* Default true: ranks whose ops differ from rank 0's only in views' offsets are rank 0's
     * expansion with their offsets (whole plans: a copy each), linted on their own, and share
     * its prediction (rankshare.h); with compact plans, also the ranks of one shape after its
     * first (plan_shapes_new). False: each expands on its own (the tests' reference). */
    bool share_offsets;
    /* Default true. False: each rank's numbers alone (PRED_NUMBERS_ONLY: no buffers live at
     * the peaks, no torch details there or segment order), for a command that reads only the
     * peaks (fit); not for one that reports. */
    bool details;
} pipeline_opts;

/* The inputs of a whole run, as plain data (cli converts its options into this). */
typedef struct {
    const char *const *files;
    size_t n_files;
    const char *const *set;    /* --set NAME=VALUE pairs, in order (the last one wins) */
    size_t n_set;
    int world;                 /* 0: each file's own */
    const char *plan;          /* only this plan of files with named plans; NULL: every plan */
    const char *torch_conf;    /* the torch view's conf over the files' (sched_params) */
    bool has_torch_limit;
    uint64_t torch_limit;
    bool has_torch_capacity;
    uint64_t torch_capacity;
    int dtype;                 /* --dtype: ml_dtype + 1 replaces each file's default; 0: none */
    /* NULL: each file is loaded here. Else loaded[f] is file f's schedule, loaded already with
     * this dtype (the caller's; the result does not free it): a command that analyzes one file
     * many times with other --set values (fit) parses it once. */
    const sched *const *loaded;
    pipeline_opts what;
} pipeline_input;

typedef struct {
    const sched *s;            /* not owned */
    int plan_index;
    int world;
    rank_plan *plans;          /* [world]; rank r > 0 shares rank 0's ops when `shared` */
    pred_rank *pred;           /* [world]; NULL until predicted */
    expect_row *expects;
    size_t n_expects;
    int expect_failures;       /* -1: no expectations (or not evaluated) */
    lint_result lint;
    bool shared;               /* one expansion and prediction serve every rank */
    bool moved;                /* each rank rank 0's expansion with its own offsets; rank 0's
                                  prediction but the floor serves every rank (compact plans:
                                  each rank its group's first rank's, rankshare.h) */
    size_t *vary;              /* moved: the ops whose offsets or in-place flags differ
                                  (plan_offsets_ops), n_vary of them, for the floor */
    size_t n_vary;
    int subset_members;        /* ranks the compact path took as a base's ops with some absent
                                  (rankshare.h's subset members; for tests) */
} pipeline_item;

typedef struct {
    ml_vec scheds;             /* sched *, one per loaded file */
    ml_vec items;              /* pipeline_item */
    ml_diags diags;
} pipeline_result;

/* Defaults: lint as lint_options_default, predict and expectations on. */
void pipeline_opts_default(pipeline_opts *o);

/* Runs the pipeline over in's files. Returns 0, or -1 when any file failed to load, expand, lint
 * or evaluate (the reasons in out->diags, printed by the caller); out must be freed either way. */
int pipeline_run(const pipeline_input *in, pipeline_result *out);
void pipeline_result_free(pipeline_result *r);

/* One plan of s at `world` (p's world is ignored): expands every rank into it (zeroed by the
 * caller; it->s is s, not owned), lints, and as o says predicts and evaluates expectations.
 * Returns 0 or -1 (the reasons in d). pipeline_item_free frees it either way. */
int pipeline_plan(const sched *s, int plan_index, const sched_params *p, int world,
                  const pipeline_opts *o, pipeline_item *it, ml_diags *d);
/* The prediction step alone, for an item pipeline_plan expanded without it (o->predict false):
 * every rank, and the expectations when o->expect. Returns 0 or -1. */
int pipeline_predict(pipeline_item *it, const sched_params *p, const pipeline_opts *o,
                     ml_diags *d);
void pipeline_item_free(pipeline_item *it);

/* ---- Many values of one let ----------------------------------------------------------------
 * For a command that runs the pipeline over one loaded file (in->loaded) at many values of a let
 * (fit): pipeline_sizes_new expands and lints once at in's values, where the let reaches the
 * ops only through allocs' sizes (plan_sizes_new; pipeline.c says why that is exact); NULL
 * otherwise, or where that run fails (then run pipeline_run for each value). pipeline_sizes_run
 * is pipeline_run for in (the same file and options, another --set of the let): *out its
 * result (the items' predictions, the diagnostics' first error), valid until the next call.
 * Returns pipeline_run's 0 or -1, or 1 where this value needs the full run (a size that fails
 * to evaluate: the full run reports it). */
typedef struct pipeline_sizes pipeline_sizes;
pipeline_sizes *pipeline_sizes_new(const pipeline_input *in, const char *let);
int pipeline_sizes_run(pipeline_sizes *z, const pipeline_input *in, const pipeline_result **out);
void pipeline_sizes_free(pipeline_sizes *z);

/* ---- Naming inputs ----------------------------------------------------------------------------*/
/* The index of s's plan called name, -1 when none is. */
int pipeline_plan_lookup(const sched *s, const char *name);
/* An input word FILE.yaml or FILE.yaml:PLAN: the path into path[0..len) and *plan the name after
 * the ':' (pointing into path), or NULL for a whole file. A word ending in .yaml/.yml is a path
 * even when it holds a ':'. Returns -1 when the path does not fit. */
int pipeline_split_word(const char *word, char *path, size_t len, const char **plan);

#endif
