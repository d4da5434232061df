/* SPDX-License-Identifier: MIT */
/* pages.c — fresh memory in bulk (pages.h). */
#include "base/pages.h"

#include <stdint.h>
#include <sys/mman.h>

/* Below this, one call costs about what the faults it saves do. */
#define PREFAULT_MIN ((size_t)64 << 10)

void ml_prefault(void *begin, void *end) {
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = 4096;
    uintptr_t a = ((uintptr_t)begin + page - 1) & ~(page - 1);
    uintptr_t b = (uintptr_t)end & ~(page - 1);
    if (b > a && b - a >= PREFAULT_MIN)
        (void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);   /* EINVAL on old kernels: fine */
#else
    (void)begin;
    (void)end;
#endif
}
