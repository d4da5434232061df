/* SPDX-License-Identifier: MIT */
/* optimize.h — `memlife optimize`: rewrite a schedule toward its memory floor, keeping only the
 * rewrites that keep its results.
 *
 * Transformations (one file each, applied in this order, each one a stage):
 *   lifetimes  every free moves to the earliest point after its last use has completed, every
 *              alloc to just before its first use (optimize_lifetimes.c);
 *   inplace    a ReduceScatter whose input is not needed afterwards writes into the input's own
 *              rank slice, an AllGather whose input is this rank's slice of a buffer it may
 *              overwrite gathers in place; the separate recv buffer disappears and its later
 *              uses become views of the input (optimize_inplace.c);
 *   chunked    a buffer of which only this rank's slice is needed after an in-place
 *              ReduceScatter is allocated in `world` chunks and the others are released once the
 *              collective has completed (optimize_chunked.c);
 *   reorder    independent neighbouring steps change places where that lowers a peak: a free
 *              before an alloc at the same point (optimize_reorder.c);
 * then lifetimes once more (the in-place rewrites merge lifetimes), shown only when it changes
 * something.
 *
 * Each stage works on the schedule the previous kept stage made (in memory: its steps in place of
 * the plan's), and is kept only if the rewritten schedule expands, lints with no diagnostic the
 * input did not have (same expect_error contract rows), and lowers memory: the highest requested peak over the
 * ranks, else the highest device peak, else the requested steady, without raising either peak.
 * Everything is verified at one world size (--world or the file's) and one set of --set values;
 * the rewritten file keeps its expressions, but says where it was verified. Proof that results
 * are kept comes from running both files (tests/mpi/optimize_all.sh: `memlife equiv`, or the
 * check rows of `memlife run` on the host backend). */
#ifndef MEMLIFE_OPTIMIZE_H
#define MEMLIFE_OPTIMIZE_H

#include "predict/analyzer.h"
#include "report/format.h"
#include "optimize/patch_text.h"

typedef enum { OPT_LIFETIMES, OPT_INPLACE, OPT_CHUNKED, OPT_REORDER, OPT_KIND_COUNT } opt_kind;
extern const char *const opt_kind_names[OPT_KIND_COUNT];   /* "lifetimes", "inplace", ... */
int opt_kind_lookup(const char *name, size_t len);          /* -1 when unknown */

typedef struct {
    bool allow[OPT_KIND_COUNT];   /* default: all */
    sched_params params;          /* --world, --set */
    const char *plan;             /* only this plan of a file with `plans:`; NULL: every plan */
    bool allow_host_syncs;        /* complete a use before a free with `sync: {stream: S}`
                                     (default: record/wait, keeping the streams overlapped) */
} opt_options;
void opt_options_default(opt_options *o);

/* Memory of one rank, as predict_rank gives it. */
typedef struct {
    uint64_t steady[VIEW_COUNT], peak[VIEW_COUNT];
    bool on[MV_COUNT];            /* the views predicted (views.h) */
} opt_mem;

typedef struct {
    opt_kind kind;
    bool kept;
    uint32_t changes;         /* steps added, removed or rewritten by the stage */
    char why[320];            /* kept: what it did; else why not ("no saving", a lint finding) */
    opt_mem *after;           /* [world]: after the stage (= before it when not kept) */
} opt_stage;

typedef struct {
    int plan_index;
    bool optimized;           /* false: left as it was (--plan named another) */
    opt_mem *before;          /* [world] */
    uint64_t *floor;          /* [world] requested bytes (floor.c) */
    opt_stage *stages;        /* in order */
    size_t n_stages;
    int host_syncs_added;     /* sync steps in the rewrite minus the original's (as written) */
    double step_before_us, step_after_us;   /* the time model's step time, slowest rank */
    bool any_kept;
} opt_plan_result;

typedef struct {
    const sched *original;
    int world;
    opt_plan_result *plans;   /* one per plan of the file */
    size_t n_plans;
    ml_str yaml;              /* the rewritten schedule: the original's text with the edits
                                 spliced in (patch_text.h), or where that is not possible
                                 (emitted_whole, patch.why) the emitter's whole file */
    patch_stats patch;        /* steps the emitter wrote inside the patch (patch.emitted) */
    bool emitted_whole;
    char verified[256];       /* "world 4, --set M=1MiB": where the stages were verified */
} opt_result;

/* Optimizes every plan of s. The input must load, expand and lint cleanly (else -1 with its
 * diagnostics). Returns 0 with r filled (free with opt_result_free), or -1. */
int optimize_sched(const sched *s, const opt_options *o, opt_result *r, ml_diags *d);
void opt_result_free(opt_result *r);

/* The report: one block per plan with a row per stage and rank, in table, json or md (its
 * document, doc.h, has no CSV grid: -1 for csv). */
unsigned opt_formats(void);   /* bits 1 << FMT_* */
int opt_report(const opt_result *r, report_format fmt, ml_str *out);

#endif
