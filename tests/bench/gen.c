/* SPDX-License-Identifier: MIT */
/* gen.c — writes an N-step schedule to stdout for the load benchmark (tests/bench.sh).
 *
 * A realistic mix, as a long training-like run would have: let-expressions, a second stream
 * with events, allocs with data patterns, every collective kind, in-place views, syncs and
 * frees, in both block and flow YAML style. Buffer names cycle through 1000 groups, each freed
 * before its name comes back, so the schedule is also valid for lint and predict.
 * `rank-free` writes the same schedule without `rank` (the view at offset s, `when: world > 1`):
 * every rank then has the same plan, which memlife expands once (analyzer/pipeline/pipeline.c).
 * Usage: gen N [rank-free] > file.yaml */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *templates[] = {
    "  - alloc: {buf: w%d, bytes: M, init: rank_iota}\n",
    "  - alloc:\n      buf: g%d\n      bytes: q\n",
    "  - reduce_scatter: {send: w%d, recv: g%d, op: sum}\n",
    /* comm's all_gather reads what default's reduce_scatter wrote: ordered by an event (the
     * race lint rejects the schedule without it) */
    "  - record: {event: scattered}\n",
    "  - wait: {event: scattered, stream: comm}\n",
    "  - all_gather: {send: g%d, recv: w%d, stream: comm}\n",
    "  - record: {event: ready, stream: comm}\n",
    "  - wait: {event: ready}\n",
    "  - all_reduce: {buf: \"w%d[rank*s : s]\", op: max}\n",
    "  - when: rank == 0\n    compute: {reads: [g%d], writes: w%d}\n",
    "  - broadcast: {buf: g%d, root: world - 1}\n",
    "  - sync: device\n",
    "  - free: [w%d, g%d]\n",
    "  - free: w%d\n",          /* ends a group cut after its first alloc */
};

/* templates[SYNC_DEVICE] is the step that stands in for a group cut at its first step */
enum { SYNC_DEVICE = 11 };

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    if (argc > 2 && !strcmp(argv[2], "rank-free")) {
        templates[8] = "  - all_reduce: {buf: \"w%d[s : s]\", op: max}\n";
        templates[9] = "  - when: world > 1\n    compute: {reads: [g%d], writes: w%d}\n";
    }
    printf("name: gen-%ld\n"
           "about: generated load benchmark, %ld steps\n"
           "world: 4\n"
           "dtype: float32\n"
           "let:\n"
           "  M: 64 MiB\n"
           "  q: M / world\n"
           "  s: q / 4               # elements of a float32 shard\n"
           "  chunk: ceil_div(q, 4 KiB) * 4 KiB\n"
           "streams: [comm]\n"
           "events: [ready, scattered]\n"
           "expect:\n"
           "  requested: {steady: 0, peak: M + q}\n"
           "steps:\n",
           n, n);
    const long cycle = (long)(sizeof templates / sizeof templates[0]) - 1;
    long groups = (n + cycle - 1) / cycle;
    for (long k = 0; k < n; k++) {
        long g = k / cycle;
        int name = (int)(g % 1000);
        /* A truncated last group still frees what it allocated: both buffers, only w (cut
         * after its first alloc), or nothing (cut at its first step, which becomes a sync). */
        long t = k % cycle;
        if (g == groups - 1 && n % cycle && k == n - 1 && t != cycle - 1)
            t = t >= 2 ? cycle - 1 : t == 1 ? cycle : SYNC_DEVICE;
        printf(templates[t], name, name);
    }
    return 0;
}
