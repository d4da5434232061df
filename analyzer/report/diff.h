/* SPDX-License-Identifier: MIT */
/* diff.h — two plans side by side (`memlife diff A B`): per rank and view, steady and peak of
 * each and the delta (B - A), and the lifetimes that make the peaks differ.
 *
 * The explanation starts from the side with the higher peak ("hi"). The op that first reaches
 * hi's peak is normally an alloc of some buffer y; the other side ("lo") is looked at where it
 * allocates y too (the same occurrence of the name), else at its own peak. Buffers live on hi
 * there and not on lo are the lifetimes that cost the difference; the sentence reads
 *   gathered (256 MiB) allocated at 7:5 while 'full' (256 MiB) is still live: +256 MiB at the
 *   all_gather (9:5); B frees 'full' at 10:5, before it allocates 'gathered'
 * Buffers are matched between the plans by name; sizes are requested bytes. Independently of that
 * alignment, each side also lists the buffers live at its own peak that are not live at the
 * other side's peak. */
#ifndef MEMLIFE_DIFF_H
#define MEMLIFE_DIFF_H

#include "report/series.h"
#include "report/report.h"

typedef struct {
    const char *name;          /* the schedule's arena */
    uint64_t bytes;
} diff_buf;

typedef struct {
    uint64_t steady, peak;
    size_t peak_op;            /* SIZE_MAX: no peak (nothing allocated) */
    ml_mark peak_mark;
    char peak_what[96];        /* "alloc gathered" */
    diff_buf *live;            /* live at the peak, in alloc order */
    size_t n_live;
    diff_buf *only;            /* live at this peak, not live at the other side's peak */
    size_t n_only;
} diff_side;

typedef struct {
    int rank;
    ml_mem_view view;
    diff_side side[2];         /* A, B */
    int64_t delta_steady, delta_peak;     /* B - A */
    int hi;                    /* 0 (A) or 1 (B): the side with the higher peak; -1 when equal */
    char cause[768];           /* the sentence above; "" when the peaks are equal */
    uint64_t cause_bytes;      /* bytes live on hi and not on lo at the aligned point */
} diff_row;

typedef struct {
    const series *a, *b;
    diff_row *rows;            /* rank-major: (0, requested), (0, device), (1, requested), ... */
    size_t n_rows;
} diff_result;

/* Compares a and b (same world). Returns 0, or -1 with a diagnostic. */
int diff_series(const series *a, const series *b, diff_result *out, ml_diags *d);
void diff_result_free(diff_result *r);

/* The formats diff's document has parts for (bits 1 << FMT_*): no CSV grid. */
unsigned diff_formats(void);
/* Writes r as FMT_TABLE, FMT_JSON or FMT_MD (a pull-request comment). -1 for other formats. */
int diff_write(const diff_result *r, report_format fmt, ml_str *out);

#endif
