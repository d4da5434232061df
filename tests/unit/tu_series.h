/* SPDX-License-Identifier: MIT */
/* tu_series.h — builds a series (analyzer/series.h) from schedule text, for the tests of plot,
 * trace and diff; the chapter's naive and optimized RS+AG lifetimes as inline schedules. */
#ifndef MEMLIFE_TU_SERIES_H
#define MEMLIFE_TU_SERIES_H

#include "testutil.h"
#include "report/series.h"

/* seed (chapter 07, lifetime 3): requested steady 256 MiB, peak 576 MiB at world 4. */
static const char tu_naive_yaml[] =
    "name: naive\n"
    "world: 4\n"
    "let: {M: 256MiB}\n"
    "steps:\n"
    "  - alloc: {buf: full, bytes: M}\n"            /* line 5 */
    "  - alloc: {buf: shard, bytes: M/world}\n"     /* line 6 */
    "  - alloc: {buf: gathered, bytes: M}\n"        /* line 7 */
    "  - reduce_scatter: {send: full, recv: shard}\n"
    "  - all_gather: {send: shard, recv: gathered}\n" /* line 9 */
    "  - sync: device\n"
    "  - free: [full, shard]\n";

/* seed (chapter 07, lifetime 4): requested steady 256 MiB, peak 320 MiB at world 4. */
static const char tu_optimized_yaml[] =
    "name: optimized\n"
    "world: 4\n"
    "let: {M: 256MiB}\n"
    "steps:\n"
    "  - alloc: {buf: full, bytes: M}\n"
    "  - alloc: {buf: shard, bytes: M/world}\n"
    "  - reduce_scatter: {send: full, recv: shard}\n"
    "  - sync: device\n"
    "  - free: full\n"                              /* line 9 */
    "  - alloc: {buf: gathered, bytes: M}\n"        /* line 10 */
    "  - all_gather: {send: shard, recv: gathered}\n"
    "  - sync: device\n"
    "  - free: shard\n";

/* Loads yaml and builds the series of its first plan at its world (or `world` when > 0), with
 * `set` overrides (NULL: none). Fails the test on any diagnostic error. */
static inline void tu_series(series *out, const char *yaml, int world, const char *set) {
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    if (!s)
        fail_msg("load: %s", tu_first_error(&d));
    const char *sets[1] = {set};
    sched_params p = {.set = sets, .n_set = set ? 1 : 0, .world = world};
    memset(out, 0, sizeof *out);
    out->owns_sched = true;
    out->source = strdup("t.yaml");
    int w = sched_world(s, &p, &d);
    if (w <= 0 || series_from_sched(s, 0, w, &p, out, &d) < 0)
        fail_msg("series: %s", tu_first_error(&d));
    ml_diags_free(&d);
}

#endif
