/* SPDX-License-Identifier: MIT */
/* suggest.h — "did you mean": the closest known word to a mistyped one (commands, option names,
 * enumerated values). */
#ifndef MEMLIFE_SUGGEST_H
#define MEMLIFE_SUGGEST_H

#include <stddef.h>

/* The closest of cands[0..n) (NULL entries skipped) to word, or NULL when none is close enough
 * to be a likely typo: edit distance 1 for words of up to 4 characters, 2 beyond, where a swap
 * of two neighbours counts 1 (optimal string alignment). 'xml' suggests nothing among table,
 * json, csv, md; 'prdict' suggests 'predict', 'jsn' 'json'. */
const char *ml_suggest(const char *word, const char *const *cands, size_t n);

#endif
