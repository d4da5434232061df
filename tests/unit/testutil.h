/* SPDX-License-Identifier: MIT */
/* testutil.h — helpers shared by the cmocka unit tests: load a schedule from a string and read
 * back the first error exactly as the CLI would print it. */
#ifndef MEMLIFE_TESTUTIL_H
#define MEMLIFE_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ir/sched.h"

/* Loads yaml as the file "t.yaml" with default limits; diagnostics go to d (initialized by the
 * caller). Returns NULL when the loader found an error. */
static inline sched *tu_load(const char *yaml, ml_diags *d) {
    return sched_load_buffer("t.yaml", yaml, strlen(yaml), NULL, d);
}

/* The first error formatted as "t.yaml:L:C: error: text", or "" when there is none. The text
 * lives in a static buffer until the next call. */
static inline const char *tu_first_error(ml_diags *d) {
    static char buf[4096];
    const ml_diag *g = ml_diags_first_error(d);
    if (!g)
        return "";
    ml_diag_format(g, buf, sizeof buf);
    return buf;
}

#endif
