/* stats.h — the benchmark's statistics: median, P95, coefficient of variation, and the
 * chapter's rule for when a ratio of two medians may be stated at all.
 *
 * Definitions (docs/bench.md), so that every number can be recomputed by hand:
 *   median  the middle of the sorted samples; the mean of the two middle ones for even n.
 *   P95     linear interpolation between the closest ranks (numpy's default): position
 *           0.95 * (n - 1) in the sorted samples.
 *   CV      sample standard deviation (n - 1) over the mean. Undefined (NaN) for fewer than two
 *           samples or a mean of 0: one sample says nothing about its spread.
 *   ratio   median(B) / median(A), stated only when both CVs are at most cv_max percent; else
 *           the pair is "unstable" and only the raw medians, P95s and CVs are kept. */
#ifndef MEMLIFE_STATS_H
#define MEMLIFE_STATS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    size_t n;
    double median, p95, mean, stdev, cv;   /* cv as a fraction (0.05 = 5%); NaN when undefined */
    double min, max;
} st_summary;

/* Summarizes x[0..n) (not modified). Returns 0, or -1 when n is 0 or a sample is not finite. */
int st_summarize(const double *x, size_t n, st_summary *out);

/* Quantile q in [0, 1] of sorted[0..n), linear between the closest ranks; NaN when n is 0. */
double st_quantile(const double *sorted, size_t n, double q);

typedef struct {
    bool stable;        /* both CVs defined and at most the threshold */
    double ratio;       /* median(b) / median(a) when stable, else NaN */
} st_ratio;

/* The chapter's rule: b against a, with the CV threshold in percent (default 5). */
st_ratio st_ratio_rule(const st_summary *a, const st_summary *b, double cv_max_percent);

#endif
