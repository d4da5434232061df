/* SPDX-License-Identifier: MIT */
/* gen.c — writes an N-step schedule to stdout for the load benchmark (tests/bench.sh).
 *
 * A realistic mix, as a long training-like run would have: let-expressions, a second stream
 * with events, allocs with data patterns, every collective kind, in-place views, syncs and
 * frees, in both block and flow YAML style. Buffer names cycle through 1000 groups, each freed
 * before its name comes back, so the schedule is also valid for lint and predict.
 * `rank-free` writes the same schedule without `rank` (the view at offset s, `when: world > 1`):
 * every rank then has the same plan, which memlife expands once (analyzer/pipeline/rankshare.h).
 * `training` writes a training-like step instead, the shape of the held-out 1M-step schedule of
 * forward and backward computes on the default stream, the gradients reduce_scattered
 * on a second stream (comm) after an event, each rank's optimizer step on its own slice of the
 * parameters (views at rank * e), the in-place all_gather of those slices, events both ways,
 * world 4. Its groups are whole; the steps left over at the end are `sync: device`.
 * Usage: gen N [rank-free | training] > file.yaml */
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

/* One training step of a layer group; %1$d is the group's name. */
static const char *const training[] = {
    "  - alloc: {buf: p%1$d, bytes: P, init: rank_iota}\n",
    "  - alloc: {buf: act%1$d, bytes: A}\n",
    "  - compute: {reads: [p%1$d], writes: [act%1$d], time: 40}\n",
    "  - alloc: {buf: gr%1$d, bytes: P}\n",
    "  - compute: {reads: [act%1$d, p%1$d], writes: [gr%1$d], time: 80}\n",
    "  - free: act%1$d\n",
    "  - record: {event: grads}\n",
    "  - wait: {event: grads, stream: comm}\n",
    "  - alloc: {buf: sh%1$d, bytes: P / world}\n",
    "  - reduce_scatter: {send: gr%1$d, recv: sh%1$d, op: avg, stream: comm}\n",
    "  - record: {event: reduced, stream: comm}\n",
    "  - wait: {event: reduced}\n",
    "  - free: gr%1$d\n",
    "  - compute: {reads: [sh%1$d], writes: [\"p%1$d[rank*e : e]\"], time: 10}\n",
    "  - record: {event: stepped}\n",
    "  - wait: {event: stepped, stream: comm}\n",
    "  - all_gather: {send: \"p%1$d[rank*e : e]\", recv: p%1$d, stream: comm}\n",
    "  - record: {event: gathered, stream: comm}\n",
    "  - wait: {event: gathered}\n",
    "  - free: [sh%1$d, p%1$d]\n",
};

static int gen_training(long n) {
    printf("name: train-%ld\n"
           "about: generated training-like benchmark, %ld steps\n"
           "world: 4\n"
           "dtype: bfloat16\n"
           "let:\n"
           "  P: 32 MiB             # a layer group's parameters\n"
           "  A: 96 MiB             # its activations\n"
           "  e: P / 2 / world      # bf16 elements of a rank's slice\n"
           "streams: [comm]\n"
           "events: [grads, reduced, stepped, gathered]\n"
           "steps:\n",
           n, n);
    const long len = (long)(sizeof training / sizeof training[0]);
    long k = 0;
    for (; k + len <= n; k += len)
        for (long t = 0; t < len; t++)
            printf(training[t], (int)(k / len % 1000));
    for (; k < n; k++)
        printf("  - sync: device\n");
    return 0;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    if (argc > 2 && !strcmp(argv[2], "training"))
        return gen_training(n);
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
