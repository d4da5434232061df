/* SPDX-License-Identifier: MIT */
/* fit_report.h — the answer of `memlife fit` (cli/cmd_fit.c) in every report format: the text
 * table's sentences, a Markdown table for a pull request, one CSV row, and the JSON that
 * schemas/fit.schema.json describes. Sizes print for people in the text and Markdown (human.h:
 * --bytes gives exact bytes); JSON and CSV carry exact bytes. The varied let prints as a size
 * when the file writes it with a unit (`P: 64MiB`), as a count otherwise (`MBS: 2`). */
#ifndef MEMLIFE_FIT_REPORT_H
#define MEMLIFE_FIT_REPORT_H

#include "report/format.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t value;
    bool predicted;            /* loaded and predicted */
    bool fits;
    uint64_t peak;             /* the largest peak over ranks and plans, in the view */
    int rank;                  /* the rank that has it */
    const char *plan;          /* and its plan: NULL for a file without plans */
    const char *error;         /* !predicted: the first error, "file:line:col: error: ..." */
    uint64_t retries;          /* the torch view: the most allocator retries of a rank (its
                                  free-the-cache-and-retry path: slow, alive) */
} fit_point;

typedef struct {
    const char *file, *let, *view;   /* view: "device", "requested" or "torch" (reserved) */
    bool let_is_size;
    uint64_t budget, reserve, context;
    int world;
    int n_plans;               /* plans predicted at each value (1 without plans:) */
    fit_point at, next;        /* the answer, and the answer + 1 */
} fit_answer;

/* The formats fit renders (all of them). */
unsigned fit_report_formats(void);
/* Renders a in fmt onto out: 0, or -1 when fmt has no part. */
int fit_report_render(const fit_answer *a, report_format fmt, ml_str *out);
/* Renders a in fmt onto stdout (path NULL) or atomically into path: 0, or -1 after saying why
 * on stderr. */
int fit_report_emit(const fit_answer *a, report_format fmt, const char *path);

#endif
