/* SPDX-License-Identifier: MIT */
/* stats.c — median, P95, CV and the ratio rule (stats.h). */
#include "report/stats.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double st_quantile(const double *sorted, size_t n, double q) {
    if (n == 0)
        return NAN;
    if (q <= 0)
        return sorted[0];
    if (q >= 1)
        return sorted[n - 1];
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    double frac = pos - (double)lo;
    if (lo + 1 >= n)
        return sorted[n - 1];
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

int st_summarize(const double *x, size_t n, st_summary *out) {
    memset(out, 0, sizeof *out);
    out->cv = out->stdev = out->median = out->p95 = out->mean = NAN;
    if (n == 0)
        return -1;
    double *s = ml_xmalloc(n * sizeof *s);
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(x[k])) {
            free(s);
            return -1;
        }
        s[k] = x[k];
        sum += x[k];
    }
    qsort(s, n, sizeof *s, cmp_double);
    out->n = n;
    out->min = s[0];
    out->max = s[n - 1];
    out->mean = sum / (double)n;
    out->median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    out->p95 = st_quantile(s, n, 0.95);
    if (n >= 2) {
        double ss = 0;
        for (size_t k = 0; k < n; k++)
            ss += (s[k] - out->mean) * (s[k] - out->mean);
        out->stdev = sqrt(ss / (double)(n - 1));
        if (out->mean != 0)
            out->cv = out->stdev / fabs(out->mean);
    }
    free(s);
    return 0;
}

st_ratio st_ratio_rule(const st_summary *a, const st_summary *b, double cv_max_percent) {
    st_ratio r = {false, NAN};
    double limit = cv_max_percent / 100.0;
    /* A CV that is NaN (one sample) fails both comparisons: no ratio from it. */
    if (a->cv <= limit && b->cv <= limit && a->median > 0) {
        r.stable = true;
        r.ratio = b->median / a->median;
    }
    return r;
}

int st_median_ci(const double *x, size_t n, double level, st_interval *out) {
    out->lo = out->hi = out->coverage = NAN;
    out->k = 0;
    if (n == 0 || !(level > 0 && level < 1))
        return -1;
    double tail = (1 - level) / 2;
    /* P(B < k) for B ~ Binomial(n, 1/2), summed term by term: P(B = j) = C(n, j) / 2^n, taken
     * through lgamma so that no n overflows or underflows on the way. */
    double below = 0;
    size_t k = 0;
    for (size_t j = 0; j < n / 2; j++) {
        double dn = (double)n, dj = (double)j;
        double term = exp(lgamma(dn + 1) - lgamma(dj + 1) - lgamma(dn - dj + 1) - dn * log(2.0));
        if (below + term > tail)
            break;
        below += term;
        k = j + 1;   /* P(B < k) = below <= tail */
    }
    if (k == 0)
        return -1;
    double *s = ml_xmalloc(n * sizeof *s);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            free(s);
            return -1;
        }
        s[i] = x[i];
    }
    qsort(s, n, sizeof *s, cmp_double);
    out->lo = s[k - 1];
    out->hi = s[n - k];
    out->coverage = 1 - 2 * below;
    out->k = k;
    free(s);
    return 0;
}
