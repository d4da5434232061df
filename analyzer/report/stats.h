/* SPDX-License-Identifier: MIT */
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
 *           the pair is "unstable" and only the raw medians, P95s and CVs are kept.
 *   median CI  distribution-free: the order statistics x(k) and x(n+1-k) of the sorted samples
 *           (1-based), k the largest with P(Binomial(n, 1/2) < k) <= (1 - level) / 2; its
 *           coverage, 1 - 2 P(Binomial(n, 1/2) < k), is at least the level (n = 10 at 95%:
 *           x(2)..x(9), 97.85%; n = 20: x(6)..x(15), 95.86%). No assumption on the shape of
 *           the timing distribution, which has a long right tail. */
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

typedef struct {
    double lo, hi;      /* the interval; NaN when n is too small for the level */
    double coverage;    /* its exact coverage (>= the level), NaN likewise */
    size_t k;           /* the 1-based order statistic of the lower end; 0 when none */
} st_interval;

/* The median's confidence interval at `level` (0.95) for x[0..n) (not modified). Returns 0, or
 * -1 when n is too small for the level (n < 6 at 95%) or a sample is not finite. */
int st_median_ci(const double *x, size_t n, double level, st_interval *out);

#endif
