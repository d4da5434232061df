/* torchalloc_bench.c — replays 10M random malloc/free events through the caching-allocator
 * model and prints "torchalloc events/s: N" (an event is one malloc or one free).  The mix
 * resembles a training step's tensors: mostly small and medium sizes, some large ones, up to
 * 2048 live blocks, one stream, no limit.  Which machine it ran on is the caller's to report.
 * Usage: torchalloc_bench [EVENTS] [PYTORCH_CUDA_ALLOC_CONF] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "torch/torchalloc.h"

#define LIVE 2048

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t size_of(uint64_t r) {
    switch (r % 10) {
    case 0: case 1: case 2: case 3: return 1 + (r >> 8) % (64 << 10);        /* <= 64 KiB */
    case 4: case 5: case 6: return 1 + (r >> 8) % (1 << 20);                 /* <= 1 MiB */
    case 7: case 8: return (1 << 20) + (r >> 8) % (16 << 20);                /* 1..17 MiB */
    default: return (16 << 20) + (r >> 8) % (256 << 20);                     /* 16..272 MiB */
    }
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
    static int64_t live[LIVE];
    size_t nlive = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long long e = 0; e < events; e++) {
        uint64_t r = next();
        int do_alloc = nlive == 0 || (nlive < LIVE && (r & 1));
        if (do_alloc) {
            int64_t id = torchalloc_malloc(ta, size_of(r >> 1), 0, NULL);
            if (id < 0)
                return 1;
            live[nlive++] = id;
        } else {
            size_t k = (size_t)((r >> 1) % nlive);
            torchalloc_free(ta, live[k]);
            live[k] = live[--nlive];
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    struct torchalloc_stats st;
    torchalloc_stats(ta, &st);
    fprintf(stderr, "torchalloc_bench: %lld events in %.3f s, reserved peak %llu MiB, %llu segments\n",
            events, s, (unsigned long long)(st.reserved_peak >> 20), (unsigned long long)st.segments);
    printf("torchalloc events/s: %.0f\n", (double)events / s);
    torchalloc_destroy(ta);
    return 0;
}
