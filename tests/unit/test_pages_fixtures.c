/* SPDX-License-Identifier: MIT */
/* test_pages_fixtures.c — the device page model replayed over alloc/free sequences measured on
 * one H200 (driver 580.159.04, CUDA 13.0): tests/gpu/fixtures/pages (*.txt), written by
 * tests/gpu/probe/pages.py, hold every step with the address cudaMalloc returned and the device's
 * used bytes (cudaMemGetInfo) above the start of the sequence. At every step the model must be
 * exact and equal to the measurement (1508 steps in nine files: six fitted, three held out);
 * a model that called itself inexact would at least have to hold its bounds (lo <= measured <=
 * hi), and is reported, but fails the file's count of exact steps. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict/analyzer.h"

#define DIR_PAGES "tests/gpu/fixtures/pages"
#define MAX_IDS 4096

typedef struct {
    unsigned steps, exact_equal, bounded;
} replay_counts;

/* Replays one fixture; fails the test at the first step the model gets wrong. */
static replay_counts replay(const char *path) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    devmodel *m = devmodel_new();
    static int64_t handle[MAX_IDS];
    for (int k = 0; k < MAX_IDS; k++)
        handle[k] = -1;
    replay_counts c = {0, 0, 0};
    char line[256];
    unsigned lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        unsigned id;
        uint64_t bytes, used;
        char addr[40];
        if (sscanf(line, "alloc %u %" SCNu64 " %39s %" SCNu64, &id, &bytes, addr, &used) == 4) {
            assert_true(id < MAX_IDS);
            handle[id] = devmodel_alloc(m, bytes);
            assert_true(handle[id] >= 0);
        } else if (sscanf(line, "free %u %" SCNu64, &id, &used) == 2) {
            assert_true(id < MAX_IDS && handle[id] >= 0);
            devmodel_release(m, handle[id]);
            handle[id] = -1;
        } else {
            fail_msg("%s:%u: not a fixture line: %s", path, lineno, line);
        }
        c.steps++;
        uint64_t lo, hi;
        devmodel_bounds(m, &lo, &hi);
        if (devmodel_exact(m)) {
            if (devmodel_bytes(m) != used)
                fail_msg("%s:%u: model %" PRIu64 " B (exact), measured %" PRIu64 " B", path,
                         lineno, devmodel_bytes(m), used);
            c.exact_equal++;
        } else {
            if (lo > used || used > hi)
                fail_msg("%s:%u: measured %" PRIu64 " B outside the bounds %" PRIu64 "..%" PRIu64,
                         path, lineno, used, lo, hi);
            c.bounded++;
        }
    }
    fclose(f);
    devmodel_free(m);
    return c;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void every_fixture(void **state) {
    (void)state;
    DIR *d = opendir(DIR_PAGES);
    assert_non_null(d);
    char *names[64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".txt") == 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    assert_int_equal(n, 9);   /* pages.py writes nine sequences */
    qsort(names, n, sizeof *names, by_name);
    unsigned all = 0, exact = 0;
    for (size_t k = 0; k < n; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", DIR_PAGES, names[k]);
        replay_counts c = replay(path);
        printf("  %s: %u steps, %u exact and equal, %u inexact within bounds\n", names[k],
               c.steps, c.exact_equal, c.bounded);
        assert_int_equal(c.exact_equal, c.steps);
        all += c.steps;
        exact += c.exact_equal;
        free(names[k]);
    }
    printf("  all fixtures: %u of %u steps exact and equal\n", exact, all);
    assert_int_equal(all, 1508);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_fixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
