/* SPDX-License-Identifier: MIT */
/* checked.h — byte arithmetic that cannot wrap.
 *
 * Every byte count memlife predicts, measures or compares ends up in its JSON as a signed 64-bit
 * integer (jansson's json_int_t), so the bound of any sum or product of bytes is
 * ML_BYTES_MAX = 2^63-1 (INT64_MAX), not 2^64-1: a sum above it would print negative. The
 * helpers return false past the bound and then leave *out at UINT64_MAX, which is above the bound
 * too: a caller that keeps adding still sees the overflow at its next check. */
#ifndef MEMLIFE_CHECKED_H
#define MEMLIFE_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

#define ML_BYTES_MAX ((uint64_t)INT64_MAX)
#define ML_BYTES_MAX_TEXT "2^63-1"

/* a + b and a * b in 64 bits: false on wrap-around (past 2^64-1). */
static inline bool ml_add_u64_checked(uint64_t a, uint64_t b, uint64_t *out) {
    if (__builtin_add_overflow(a, b, out)) {
        *out = UINT64_MAX;
        return false;
    }
    return true;
}
static inline bool ml_mul_u64_checked(uint64_t a, uint64_t b, uint64_t *out) {
    if (__builtin_mul_overflow(a, b, out)) {
        *out = UINT64_MAX;
        return false;
    }
    return true;
}

/* The same against ML_BYTES_MAX: false when the result is past 2^63-1 (*out UINT64_MAX). */
static inline bool ml_bytes_add(uint64_t a, uint64_t b, uint64_t *out) {
    if (!ml_add_u64_checked(a, b, out) || *out > ML_BYTES_MAX) {
        *out = UINT64_MAX;
        return false;
    }
    return true;
}
static inline bool ml_bytes_mul(uint64_t a, uint64_t b, uint64_t *out) {
    if (!ml_mul_u64_checked(a, b, out) || *out > ML_BYTES_MAX) {
        *out = UINT64_MAX;
        return false;
    }
    return true;
}

/* a - b for a count that a checked sum made: once it has overflowed (UINT64_MAX) it stays so,
 * and it never goes below 0. */
static inline uint64_t ml_bytes_sub(uint64_t a, uint64_t b) {
    if (a == UINT64_MAX)
        return a;
    return a > b ? a - b : 0;
}

#endif
