/* SPDX-License-Identifier: MIT */
/* pickle_bench.c — CPU time of pickle_read on a snapshot pickle, best of N runs: the file is read
 * into memory and parsed into a jansson tree each run; freeing the tree is not timed (Python's
 * pickle.load, the comparison, frees nothing inside its timing either). Prints
 * "pickle_read: SECONDS". Usage: pickle_bench FILE [RUNS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "snapshot/pickle.h"

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    unsigned char *data = size >= 0 ? malloc((size_t)size + 1) : NULL;
    *len = data ? fread(data, 1, (size_t)size, f) : 0;
    fclose(f);
    return data;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: pickle_bench FILE [RUNS]\n");
        return 2;
    }
    int runs = argc > 2 ? atoi(argv[2]) : 3;
    double best = -1;
    for (int i = 0; i < runs; i++) {
        double start = cpu_seconds();
        size_t len;
        unsigned char *data = read_file(argv[1], &len);
        if (!data) {
            fprintf(stderr, "%s: error: cannot read\n", argv[1]);
            return 1;
        }
        char err[512];
        json_t *v = pickle_read(data, len, argv[1], err, sizeof err);
        double t = cpu_seconds() - start;
        free(data);
        if (!v) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        json_decref(v);
        if (best < 0 || t < best)
            best = t;
    }
    printf("pickle_read: %.3f\n", best);
    return 0;
}
