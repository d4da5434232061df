/* SPDX-License-Identifier: MIT */
/* visual.h — what `plot`, `trace` and `diff` share in the CLI: loading their inputs (schedules,
 * FILE.yaml:PLAN, run results) into series, and writing a document to -o or stdout. */
#ifndef MEMLIFE_VISUAL_H
#define MEMLIFE_VISUAL_H

#include "args.h"
#include "report/series.h"

/* Loads every input word of a into out (ml_vec of series); --plan applies to words that name no
 * plan. Diagnostics go to stderr. Returns ML_EXIT_OK or ML_EXIT_INPUT. */
int ml_visual_load(const ml_args *a, ml_vec *out);

/* Writes text to path atomically, or to stdout when path is NULL or "-". Returns ML_EXIT_OK, or
 * ML_EXIT_RUNTIME with a message on stderr. */
int ml_visual_emit(const char *path, const ml_str *text);

/* Renders the loaded series into out; diagnostics to d. Returns 0 or -1. */
typedef int (*ml_visual_render)(const series *items, size_t n, const void *ctx, ml_str *out,
                                ml_diags *d);

/* A whole visual command after option parsing: load a's inputs, render, write to -o or stdout
 * (not with --quiet and no -o). Returns the exit code; a render failure is bad input (2). */
int ml_visual_run(const ml_args *a, ml_visual_render render, const void *ctx);

#endif
