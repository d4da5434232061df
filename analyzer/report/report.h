/* SPDX-License-Identifier: MIT */
/* report.h — results of predict / check / run as one structure, written in every format.
 *
 * predict and check fill the predicted parts; run adds `measured` per rank and the data-check
 * rows. The family builds one neutral document (doc.h: paragraphs, grids, a JSON tree, a CSV
 * grid) and a format of the format table (report_formats[]) renders it; every part handles
 * every field that is present, so a run result is "the predict JSON plus measured".
 *
 * JSON names (kept stable; tests and CI gates read them): top-level `schedules` list; each with
 * `name`, `file`, `plan`, `world`, `lets` {name: value, as rank 0 evaluated them after --set and
 * the sweep}, `expect` ("pass" | "fail" | "none"), `ranks` list of
 * {`rank`, `requested`: {`steady`, `peak`}, `device`: {`steady`, `peak`, `exact`, `peak_lo`,
 * `peak_hi`}, `peak_step`: {`index`, `line`, `col`, `op`}, `peak_live`: [names], `floor`,
 * and for runs `measured` (ir/measure.h writes it: ml_measure_json),
 * `match`: bool}; `communicator` (predicted, commmodel.h): {`model`, `gpu`, `channels`, `stages`:
 * [{`stage`, `bytes`}] (the world's), `total` (every communicator's), `communicators` where
 * the schedule has splits: [{`name`, `size`, `share`, `channels`, `stages`, `total`}], `terms`:
 * [{`term`, `stage`, `bytes`, `detail`, and with splits `comm`}],
 * `gpu_total_at_peak`: {`cuda_context`, `communicator`, `requested`, `allocator_overhead`,
 * `total`}} or {`note`} where the model does not apply; `expectations`: [{`view`, `rank`, `what`, `expected`, `got`, `pass`, `line`}];
 * `checks`: [{`name`, `rank`, `status` ("pass" | "fail"), `detail`}]. Byte values are integers.
 * `provenance` at top level for runs: {key: value}. */
#ifndef MEMLIFE_REPORT_H
#define MEMLIFE_REPORT_H

#include "predict/analyzer.h"
#include "ir/measure.h"
#include "report/format.h"

/* The integer "schema_version" first in every JSON memlife writes (report_json_append; the
 * trace's otherData). It changes when a key changes meaning or goes away; new keys do not
 * change it. The keys are in docs/json.md, the schemas in schemas/. */
#define ML_JSON_SCHEMA_VERSION 1

typedef struct {
    bool present;
    ml_measure rec;                 /* what the rank measured (ir/measure.h), as it travelled */
    /* rec's steady and peak by series (views.h), for the loops over views: requested and
     * device (0 when !rec.has_device); series no backend measures stay 0. */
    uint64_t steady[VIEW_COUNT], peak[VIEW_COUNT];
    bool match;                     /* measured == predicted (requested exactly; device when read) */
    char mismatch[320];             /* first difference: "file:line:col: requested 1024 != 2048" */
} report_measured;

/* Sets m from the record rec (taken over: m owns it now): present, and steady / peak by series. */
void report_measured_set(report_measured *m, ml_measure *rec);
void report_measured_free(report_measured *m);

typedef struct {
    const char *name;
    int rank;
    bool pass;
    char detail[240];
} report_check;

typedef struct {
    const sched *s;
    int plan_index;
    int world;
    const rank_plan *plans;         /* [world] */
    const pred_rank *pred;          /* [world] */
    const expect_row *expects;
    size_t n_expects;
    int expect_failures;            /* -1: no expectations in the file */
    report_measured *measured;      /* [world] or NULL (predict / check) */
    report_check *checks;           /* contract rows (lint expect_error rows + runtime checks) */
    size_t n_checks;
    int gpu;                        /* the communicator model's GPU kind: commmodel_gpus index
                                       + 1; 0: COMMMODEL_GPU_DEFAULT */
} report_schedule;

typedef struct {
    report_schedule *items;
    size_t n;
    const char *command;            /* "predict", "check", "run" */
    const char *provenance;         /* "key=value\n" lines, or NULL */
} report;

/* Renders predict/check/run's report in fmt onto out (its document, built for fmt alone). */
int report_render(const report *r, report_format fmt, ml_str *out);

/* Renders r in fmt; writes to path atomically (temp + rename), or to stdout when path is NULL
 * or "-". Returns 0, or -1 with a message on stderr. */
int report_emit(const report *r, report_format fmt, const char *path);

/* The name an item is reported under: the schedule's name, or "name/plan" for a plan of a file
 * with `plans:`. */
void report_schedule_name(const sched *s, int plan_index, char *buf, size_t len);

/* "expected requested peak 512 MiB on rank 0, predicted 576 MiB": one failed expectation, the
 * same words in check's errors and every report format. */
void report_expect_text(const expect_row *e, char *buf, size_t len);

/* The failed expectations of rs in file order, folded: rows that differ only in their rank are
 * one line, "expected requested peak 96 MiB on ranks 0-7, predicted 160 MiB" (a world of 8 does
 * not say the same thing 8 times). Calls each(ctx, where, text) per line; returns the number of
 * failed rows (ranks counted one by one, as "4 of 8 failed" counts them). */
size_t report_expect_failures(const report_schedule *rs,
                              void (*each)(void *ctx, ml_mark at, const char *text), void *ctx);

/* The view table in the reports (views.h): a view is shown when some rank predicted it (an
 * optional view only where configured). Public for check's summary line, which shows the same
 * views as the report. */
bool report_view_on(const report *r, ml_view_id v);

#endif
