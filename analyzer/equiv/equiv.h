/* SPDX-License-Identifier: MIT */
/* equiv.h — the chapter's four meanings of "AllReduce = ReduceScatter + AllGather", checked for
 * any two plans side by side (`memlife equiv A B`):
 *   1. output semantics — the result buffers hold the same values on every rank (from a run on a
 *      backend with data; the plans' data flow names the step that breaks it);
 *   2. communication    — ring steps and link bytes per rank from the collective table (coll.h);
 *   3. execution structure — public API calls, kernels, synchronization boundaries, intermediate
 *      buffers per rank;
 *   4. state            — steady and peak per rank and view (the predictor), and what is live at
 *      each peak.
 * The chapter: the first two hold under its conditions, the last two usually do not.
 *
 * Rows 2-4 come from the expanded plans alone. Row 1 comes from data the runtime compared
 * (equiv_data_rank per rank, filled by the caller); without data, from the static data flow
 * (analyzer/equiv_flow.c), which follows every element of every buffer symbolically (the input
 * pattern and index it holds, the reduction that combined it over ranks, scale factors, the
 * reduce_scatter owner of a shard) and so proves the outputs equal or names the first step where
 * they part, with the cause from the chapter's troubleshooting checklist. */
#ifndef MEMLIFE_EQUIV_H
#define MEMLIFE_EQUIV_H

#include "report/series.h"
#include "report/report.h"

typedef enum { EQ_OUTPUT, EQ_COMM, EQ_STRUCTURE, EQ_STATE, EQ_ROW_COUNT } equiv_row_id;
/* JSON keys "output", "communication", "structure", "state" and the names people read. */
extern const char *const equiv_row_keys[EQ_ROW_COUNT];
extern const char *const equiv_row_names[EQ_ROW_COUNT];

typedef enum { EQV_HOLDS, EQV_FAILS, EQV_UNKNOWN } equiv_verdict;

/* The chapter's checklist ("RS+AG 与 AR 结果不一致时检查"), plus two causes outside it. */
typedef enum {
    CAUSE_INPUT_COUNT,     /* input count != shard x world */
    CAUSE_PADDING,         /* padding not the op's identity */
    CAUSE_TRIM,            /* trim removes more (or other) than the tail padding */
    CAUSE_OWNER,           /* shard owner not by communicator rank */
    CAUSE_GATHER_ORDER,    /* gathered result not kept source-rank-major */
    CAUSE_OP,              /* reduction op differs */
    CAUSE_DTYPE,           /* dtype differs */
    CAUSE_SCALING,         /* pre/post scaling differs */
    CAUSE_SHARD_CHANGED,   /* the shard changed between the phases */
    CAUSE_SEQUENCE,        /* collective sequences inconsistent across ranks */
    CAUSE_INPUTS,          /* not in the checklist: the plans start from different data */
    CAUSE_LAYOUT,          /* not in the checklist: elements differ for another reason */
    CAUSE_COUNT
} equiv_cause_kind;

typedef struct {
    const char *code;        /* stable JSON name: "reduction_op" */
    const char *checklist;   /* the checklist line: "reduction op differs" */
} equiv_cause_info;
extern const equiv_cause_info equiv_causes[CAUSE_COUNT];

typedef struct {
    equiv_cause_kind kind;
    int side;                /* 0: A, 1: B: the plan holding the step named */
    int rank;                /* first rank where it shows */
    const char *file;
    ml_mark mark;            /* the step; {0, 0} when none */
    char text[640];
} equiv_cause;

/* Per-rank facts of one plan for rows 2 and 3. */
typedef struct {
    uint32_t calls[COLL_COUNT];     /* public API calls by collective */
    uint32_t n_calls;               /* public API calls */
    /* NCCL kernels expected (equiv_kernels_expected), by kernel family (ml_coll_kernel_family:
     * rows with one kernel_match): a call each, but the send/recv ops of one group share a
     * SendRecv kernel */
    uint32_t kernels[COLL_COUNT];
    uint32_t n_kernels;
    int64_t ring_steps;             /* sum of ml_colls[].ring_steps */
    double link_bytes;              /* sum of ml_colls[].link_bytes of each call's full payload */
    int64_t steps_by[COLL_COUNT];   /* the same two sums by collective */
    double bytes_by[COLL_COUNT];
    uint32_t syncs, waits;          /* host synchronizations; stream waits on events */
    uint32_t n_intermediate;        /* buffers allocated and freed within the plan */
    uint64_t intermediate_bytes;
    char intermediates[240];        /* their names, "full, shard" */
} equiv_facts;

/* Row 1's evidence on one rank: the result buffers compared element by element after a run. */
typedef struct {
    bool present;
    ml_dtype dtype[2];
    uint64_t count[2];
    uint64_t compared;              /* min of the counts */
    uint64_t differ_bits;           /* elements not bitwise equal */
    uint64_t differ_tol;            /* elements outside rtol/atol (integers: not equal) */
    double max_abs, max_rel;        /* over compared elements; rel against |A| */
    char first[200];                /* "element 3: 612 vs 88", "" when none differ */
} equiv_data_rank;

/* Row 3's measured evidence on one rank of one plan (`equiv --kernels`, cuda backend with
 * CUPTI): the GPU kernels that ran between the plan's start (after the backend's warm-up) and its
 * end on that rank's GPU. Fixed size: it travels between ranks as one blob. */
#define EQUIV_KERNEL_NAMES 6
typedef struct {
    uint64_t total;                 /* every kernel in the window, collective or not */
    uint64_t by_coll[COLL_COUNT];   /* by kernel family (kn_coll_of: coll.h's kernel_match) */
    uint32_t n_names;               /* names kept below, first seen first; more are counted only */
    struct {
        char name[160];             /* demangled */
        uint64_t count;
    } names[EQUIV_KERNEL_NAMES];
} equiv_kernels_rank;

typedef struct {
    const series *side[2];
    int world;
    uint32_t result[2];             /* buffer symbols of the result buffers */
    equiv_facts *facts[2];          /* [world] */
    equiv_cause *causes;
    size_t n_causes;
    bool flow_equal;                /* the data flow proves the results equal on every rank */
    bool flow_known;                /* the data flow decided (no opaque values on the path) */
    bool flow_uninit;               /* both results come from data never initialized (no init:):
                                       there are no values to compare */
    bool sequence_ok[2];            /* lint's cross-rank check passed for the plan */
    equiv_data_rank *data;          /* [world], or NULL when no run compared data */
    double rtol, atol;              /* used for floats */
    struct {
        equiv_verdict verdict;
        char a[320], b[320], detail[800];
    } rows[EQ_ROW_COUNT];
    /* --kernels: kernels[k][rank] measured for plan k (NULL when not measured); kernels_note says
     * why not when they were asked for ("" otherwise). */
    equiv_kernels_rank *kernels[2];
    char kernels_note[512];
} equiv_result;

/* The result buffers: the names given (name_b NULL: name_a on both sides), else the one name live
 * at the end of both plans, else the one buffer each plan leaves live. A buffer must be live at
 * the end of the plan on every rank. Returns 0, or -1 with an error naming the choice to make. */
int equiv_pick_results(const series *a, const series *b, const char *name_a, const char *name_b,
                       uint32_t out[2], ml_diags *d);

/* Element count and dtype of buf at its last alloc in p (0 and the schedule's dtype if none). */
void equiv_result_shape(const rank_plan *p, uint32_t buf, uint64_t *count, ml_dtype *dt);

/* Rows 2-4, the data flow's verdict and causes. sequence_ok[k] false marks plan k as
 * inconsistent across ranks (lint's cross-rank errors; seq_text the first of them). */
int equiv_analyze(const series *a, const series *b, const uint32_t result[2],
                  const bool sequence_ok[2], const char *const seq_text[2],
                  const ml_mark seq_mark[2], equiv_result *out, ml_diags *d);

/* Default tolerances of a dtype (torch.testing.assert_close): float32 1.3e-6 / 1e-5, float64
 * 1e-7 / 1e-7, float16 1e-3 / 1e-5, bfloat16 1.6e-2 / 1e-5; integers 0 / 0. */
void equiv_default_tolerance(ml_dtype dt, double *rtol, double *atol);

/* Row 1 from data (r->data, r->rtol, r->atol set by the caller) or, without data, from the
 * flow. Call after equiv_analyze. */
void equiv_judge_output(equiv_result *r);

/* NCCL kernels one rank should launch for a plan's calls of collective c (COLL_COUNT: all of
 * them): one per call, except at world 1, where NCCL launches none (measured on H200, NCCL
 * 2.28.3, CUPTI: a one-rank AllReduce, ReduceScatter or AllGather is a copy or nothing). */
uint32_t equiv_kernels_expected(const equiv_facts *f, int world, int c);
/* Row 3 against the measured kernels (r->kernels set by the caller; call after equiv_analyze):
 * the detail gains "kernels per rank: expected X vs Y, measured X' vs Y' (names)", and the row
 * fails where any rank ran another number of kernels of any collective than its calls. */
void equiv_judge_kernels(equiv_result *r);
/* The kernels of k that belong to a collective (the number compared with the calls). */
uint64_t equiv_kernels_collective(const equiv_kernels_rank *k);

/* 0 when all four rows hold, 1 otherwise. */
int equiv_exit_code(const equiv_result *r);

/* Table, JSON or Markdown; provenance ("key=value\n" lines) may be NULL. -1 for other formats. */
/* The formats equiv's document has parts for (bits 1 << FMT_*): no CSV grid. */
unsigned equiv_formats(void);
int equiv_write(const equiv_result *r, report_format fmt, const char *provenance, ml_str *out);

void equiv_result_free(equiv_result *r);

/* ---- Data (analyzer/equiv_data.c) ------------------------------------------------------------
 * Compares one rank's result buffers, read back after the run: a (na elements of da) against b.
 * A is the reference: a float element is within tolerance when |b - a| <= atol + rtol * |a|;
 * integers compare exactly by value. Bitwise equality is counted separately. */
void equiv_compare_data(const void *a, ml_dtype da, uint64_t na, const void *b, ml_dtype db,
                        uint64_t nb, double rtol, double atol, equiv_data_rank *out);

/* ---- Data flow (analyzer/equiv_flow.c) --------------------------------------------------------
 * Follows both plans' data symbolically for every rank and compares the result buffers element
 * by element; sets r->flow_equal / r->flow_known and appends causes. */
void equiv_flow(equiv_result *r);

/* ---- Causes (analyzer/equiv/equiv_cause.c) ---------------------------------------------------
 * Appends a cause to r, once per (kind, side): the first rank where it shows. */
void equiv_add_cause(equiv_result *r, equiv_cause_kind kind, int side, int rank,
                     const plan_op *op, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#endif
