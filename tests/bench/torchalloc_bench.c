/* SPDX-License-Identifier: MIT */
/* torchalloc_bench.c — replays 10M random malloc/free events through the caching-allocator
 * model and prints "torchalloc events/s: N" (an event is one malloc or one free).  The mix
 * resembles a training step's tensors: mostly small and medium sizes, some large ones, up to
 * 2048 live blocks, one stream, no limit.  Timed in process CPU time, as tests/bench/cputime.c
 * does: the benchmark machines are shared and noisy.  Which machine it ran on is the caller's
 * to report.
 * Usage: torchalloc_bench [EVENTS [PYTORCH_CUDA_ALLOC_CONF [LIVE [watch|snapshot]]]] (LIVE <=
 * 65536, default 2048; "watch": count the segment-order ties, torchalloc_watch_ties, as the
 * torch view does until its first tie; "snapshot": shaped like tests/bench/import_bench.sh's
 * snapshot, sizes uniform in 1 B .. 64 MiB, hundreds of segments, and torchalloc_stats after
 * every event, as predict's torch view asks for them) */
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "torch/torchalloc.h"

#define MAXLIVE 65536

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* x in [0, n) from 32 random bits, without a division (the harness should cost little) */
static uint64_t below(uint64_t bits32, uint64_t n) { return (bits32 * n) >> 32; }

static uint64_t size_of(uint64_t r, int snapshot) {
    if (snapshot)
        return 1 + below(r & 0xffffffffu, 64 << 20);
    uint64_t kind = below(r & 0xffffffffu, 10), b = r >> 32;
    if (kind < 4)
        return 1 + below(b, 64 << 10);        /* <= 64 KiB */
    if (kind < 7)
        return 1 + below(b, 1 << 20);         /* <= 1 MiB */
    if (kind < 9)
        return (1 << 20) + below(b, 16 << 20); /* 1..17 MiB */
    return (16 << 20) + below(b, 256 << 20);   /* 16..272 MiB */
}

int main(int argc, char **argv) {
    long long events = argc > 1 ? atoll(argv[1]) : 10000000LL;
    torchalloc_conf c;
    char err[256];
    size_t off;
    if (torchalloc_conf_parse(argc > 2 ? argv[2] : "", &c, &off, err, sizeof err)) {
        fprintf(stderr, "torchalloc_bench: %s at offset %zu\n", err, off);
        return 2;
    }
    torchalloc *ta = torchalloc_new(&c, 0);
    torchalloc_watch_ties(ta, argc > 4 && !strcmp(argv[4], "watch"));
    int snapshot = argc > 4 && !strcmp(argv[4], "snapshot");
    uint64_t segs_max = 0, sum = 0;   /* sum: the stats read, so the compiler keeps the call */
    static int64_t live[MAXLIVE];
    size_t cap = argc > 3 ? (size_t)atoll(argv[3]) : 2048;
    if (cap < 1 || cap > MAXLIVE)
        cap = 2048;
    size_t nlive = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (long long e = 0; e < events; e++) {
        uint64_t r = next();
        int do_alloc = nlive == 0 || (nlive < cap && (r & 1));
        if (do_alloc) {
            int64_t id = torchalloc_malloc(ta, size_of(next(), snapshot), 0, NULL);
            if (id < 0)
                return 1;
            live[nlive++] = id;
        } else {
            size_t k = (size_t)below(r >> 32, nlive);
            torchalloc_free(ta, live[k]);
            live[k] = live[--nlive];
        }
        if (snapshot) {
            struct torchalloc_stats now;
            torchalloc_stats(ta, &now);
            sum += now.free_in_used_segments + now.whole_free_segments;
            if (now.segments > segs_max)
                segs_max = now.segments;
        }
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    struct torchalloc_stats st;
    torchalloc_stats(ta, &st);
    fprintf(stderr, "torchalloc_bench: %lld events in %.3f s CPU, reserved peak %llu MiB, "
            "%llu segments (at most %llu), %llu ties, %llu\n", events, s,
            (unsigned long long)(st.reserved_peak >> 20), (unsigned long long)st.segments,
            (unsigned long long)segs_max, (unsigned long long)st.order_ties,
            (unsigned long long)(sum & 1));
    printf("torchalloc events/s: %.0f\n", (double)events / s);
    torchalloc_destroy(ta);
    return 0;
}
