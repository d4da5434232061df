/* SPDX-License-Identifier: MIT */
/* equiv_data.c — row 1's evidence on one rank: the two result buffers element by element. */
#include "equiv/equiv.h"
#include "ir/data.h"

#include <math.h>
#include <string.h>

void equiv_compare_data(const void *a, ml_dtype da, uint64_t na, const void *b, ml_dtype db,
                        uint64_t nb, double rtol, double atol, equiv_data_rank *out) {
    memset(out, 0, sizeof *out);
    out->present = true;
    out->dtype[0] = da;
    out->dtype[1] = db;
    out->count[0] = na;
    out->count[1] = nb;
    uint64_t n = na < nb ? na : nb;
    out->compared = n;
    bool is_float = ml_dtypes[da].kind == DTK_FLOAT || ml_dtypes[db].kind == DTK_FLOAT;
    /* Within tolerance: data_compare's rule with A as the expected side. Integers: exact. */
    data_diff tol;
    data_diff_init(&tol);
    data_compare(b, db, a, da, n, 0, is_float ? rtol : 0, is_float ? atol : 0, &tol);
    out->differ_tol = tol.differ;
    if (tol.differ)
        snprintf(out->first, sizeof out->first, "element %llu: %s vs %s",
                 (unsigned long long)tol.first, tol.first_b, tol.first_a);
    size_t size = ml_dtypes[da].size;
    for (uint64_t k = 0; k < n; k++) {
        double x = data_as_double(da, a, k), y = data_as_double(db, b, k);
        bool bits_same = da == db ? !memcmp((const char *)a + k * size, (const char *)b + k * size, size)
                                  : x == y;
        if (bits_same)
            continue;
        if (!out->differ_bits && !out->first[0]) {
            char fa[48], fb[48];
            data_format(da, (const char *)a + k * size, fa, sizeof fa);
            data_format(db, (const char *)b + k * ml_dtypes[db].size, fb, sizeof fb);
            snprintf(out->first, sizeof out->first, "element %llu: %s vs %s", (unsigned long long)k,
                     fa, fb);
        }
        out->differ_bits++;
        double d = fabs(x - y);
        if (d > out->max_abs || isnan(d))
            out->max_abs = d;
        double rel = x != 0 ? d / fabs(x) : (d != 0 ? INFINITY : 0);
        if (rel > out->max_rel || isnan(rel))
            out->max_rel = rel;
    }
}
