/* SPDX-License-Identifier: MIT */
/* suggest.c — "did you mean" by edit distance (suggest.h). */
#include "suggest.h"

#include <string.h>

/* Optimal string alignment distance, capped: words longer than 63 are never typos of ours. */
static size_t distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return (size_t)-1;
    size_t d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

const char *ml_suggest(const char *word, const char *const *cands, size_t n) {
    size_t limit = strlen(word) <= 4 ? 1 : 2;
    const char *best = NULL;
    size_t best_d = limit + 1;
    for (size_t k = 0; k < n; k++) {
        if (!cands[k])
            continue;
        size_t dist = distance(word, cands[k]);
        if (dist < best_d) {
            best_d = dist;
            best = cands[k];
        }
    }
    return best;
}
