/* SPDX-License-Identifier: MIT */
/* test_devmodel.c — the device page model against the page rules measured on H200
 * (DESIGN.md, "Memory views": driver 580, CUDA 13.0, cudaMemGetInfo after every step). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "predict/analyzer.h"

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)

/* Allocates n blocks of `bytes` each; returns the model's bytes afterwards. */
static uint64_t alloc_n(devmodel *m, int n, uint64_t bytes, int64_t *handles) {
    for (int i = 0; i < n; i++) {
        int64_t h = devmodel_alloc(m, bytes);
        assert_true(h >= 0);
        if (handles)
            handles[i] = h;
    }
    return devmodel_bytes(m);
}

static void small_1000_x_1kib(void **state) {
    devmodel *m = devmodel_new();
    /* measured: 1000 × 1 KiB → 2 MiB */
    assert_int_equal(alloc_n(m, 1000, KiB, NULL), 2 * MiB);
    assert_true(devmodel_exact(m));
    devmodel_free(m);
}

static void small_4096_x_512(void **state) {
    devmodel *m = devmodel_new();
    /* measured: 4096 × 512 B → 2 MiB, one more → 4 MiB */
    assert_int_equal(alloc_n(m, 4096, 512, NULL), 2 * MiB);
    assert_int_equal(alloc_n(m, 1, 512, NULL), 4 * MiB);
    devmodel_free(m);
}

static void small_8193_x_1(void **state) {
    devmodel *m = devmodel_new();
    /* measured: 8193 × 1 B → 6 MiB (each rounded up to 512 B) */
    assert_int_equal(alloc_n(m, 8193, 1, NULL), 6 * MiB);
    devmodel_free(m);
}

static void small_3_x_700kib(void **state) {
    devmodel *m = devmodel_new();
    /* measured: 3 × 700 KiB → 4 MiB */
    assert_int_equal(alloc_n(m, 3, 700 * KiB, NULL), 4 * MiB);
    devmodel_free(m);
}

static void small_10_x_600kib(void **state) {
    devmodel *m = devmodel_new();
    /* measured: 10 × 600 KiB → 8 MiB (three per page) */
    assert_int_equal(alloc_n(m, 10, 600 * KiB, NULL), 8 * MiB);
    devmodel_free(m);
}

static void small_8_x_1mib_plus_1(void **state) {
    devmodel *m = devmodel_new();
    /* measured: 8 × (1 MiB + 1) → 16 MiB: two no longer fit a page */
    assert_int_equal(alloc_n(m, 8, MiB + 1, NULL), 16 * MiB);
    devmodel_free(m);
}

static void small_pair_shares_page(void **state) {
    devmodel *m = devmodel_new();
    /* measured: a 1 MiB + 4 KiB request shared a page with a 611 KiB one → 2 MiB */
    devmodel_alloc(m, MiB + 4 * KiB);
    devmodel_alloc(m, 611 * KiB);
    assert_int_equal(devmodel_bytes(m), 2 * MiB);
    devmodel_free(m);
}

static void big_rounding(void **state) {
    devmodel *m = devmodel_new();
    /* measured: 2 MiB + 1 → 4 MiB */
    int64_t a = devmodel_alloc(m, 2 * MiB + 1);
    assert_int_equal(devmodel_bytes(m), 4 * MiB);
    devmodel_release(m, a);
    assert_int_equal(devmodel_bytes(m), 0);
    /* measured: 64 MiB + 4 KiB → 66 MiB */
    devmodel_alloc(m, 64 * MiB + 4 * KiB);
    assert_int_equal(devmodel_bytes(m), 66 * MiB);
    /* exactly 2 MiB is a whole page of its own, not a small block */
    devmodel_alloc(m, 2 * MiB);
    devmodel_alloc(m, 1);
    assert_int_equal(devmodel_bytes(m), 70 * MiB);
    assert_true(devmodel_exact(m));
    devmodel_free(m);
}

static void page_returned_when_empty(void **state) {
    devmodel *m = devmodel_new();
    int64_t h[3];
    /* measured rule: a page is returned as soon as it is empty */
    assert_int_equal(alloc_n(m, 3, 700 * KiB, h), 4 * MiB);
    devmodel_release(m, h[2]);               /* the second page held only this block */
    assert_int_equal(devmodel_bytes(m), 2 * MiB);
    devmodel_release(m, h[0]);
    assert_int_equal(devmodel_bytes(m), 2 * MiB);
    devmodel_release(m, h[1]);
    assert_int_equal(devmodel_bytes(m), 0);
    assert_true(devmodel_exact(m));
    devmodel_free(m);
}

static void freed_hole_reused(void **state) {
    devmodel *m = devmodel_new();
    int64_t h[3];
    /* measured rule: freed holes are reused. 3 × 600 KiB fill one page to 1800 KiB; freeing the
     * middle one leaves a 600 KiB hole that the next 600 KiB request takes: still 2 MiB. */
    assert_int_equal(alloc_n(m, 3, 600 * KiB, h), 2 * MiB);
    devmodel_release(m, h[1]);
    assert_int_equal(alloc_n(m, 1, 600 * KiB, NULL), 2 * MiB);
    devmodel_free(m);
}

static void best_fit_picks_smallest_hole(void **state) {
    devmodel *m = devmodel_new();
    int64_t a[2], c[2];
    /* Page 0: 600 + 1400 KiB, page 1: 200 + 1800 KiB (48 KiB tails). Freeing the first block of
     * each leaves a 600 KiB hole in page 0 and a 200 KiB hole in page 1. Best fit puts a 100 KiB
     * request into page 1's smaller hole, so a 600 KiB request still fits page 0: 4 MiB.
     * First fit (lowest page) would split page 0's hole and need a third page: 6 MiB. */
    alloc_n(m, 1, 600 * KiB, a);
    alloc_n(m, 1, 1400 * KiB, a + 1);
    alloc_n(m, 1, 200 * KiB, c);
    alloc_n(m, 1, 1800 * KiB, c + 1);
    assert_int_equal(devmodel_bytes(m), 4 * MiB);
    devmodel_release(m, a[0]);
    devmodel_release(m, c[0]);
    alloc_n(m, 1, 100 * KiB, NULL);
    alloc_n(m, 1, 600 * KiB, NULL);
    assert_int_equal(devmodel_bytes(m), 4 * MiB);
    devmodel_free(m);
}

static void holes_coalesce(void **state) {
    devmodel *m = devmodel_new();
    int64_t h[3];
    /* 3 × 600 KiB; free the first two: their holes merge into one 1200 KiB hole that a 1 MiB
     * request fits; without merging it would need a second page. */
    alloc_n(m, 3, 600 * KiB, h);
    devmodel_release(m, h[0]);
    devmodel_release(m, h[1]);
    alloc_n(m, 1, MiB, NULL);
    assert_int_equal(devmodel_bytes(m), 2 * MiB);
    devmodel_free(m);
}

static void tie_oldest_hole(void **state) {
    devmodel *m = devmodel_new();
    int64_t p0[3], p1[3];
    /* Two pages of 3 x 600 KiB; freeing the middle block of page 1, then of page 0, leaves two
     * equal 600 KiB holes. The tie goes to the older hole, page 1's (measured on H200: 8 ties of
     * 8 in tests/gpu/fixtures/pages/churn_edges.txt went to the hole that had its extent
     * longest, 4 of them not to the lowest address): page 0 empties once its other two blocks
     * are freed and goes back. */
    alloc_n(m, 3, 600 * KiB, p0);
    alloc_n(m, 3, 600 * KiB, p1);
    devmodel_release(m, p1[1]);
    devmodel_release(m, p0[1]);
    int64_t x = devmodel_alloc(m, 600 * KiB);
    devmodel_release(m, p0[0]);
    devmodel_release(m, p0[2]);
    assert_int_equal(devmodel_bytes(m), 2 * MiB);   /* x sits in page 1 */
    devmodel_release(m, x);
    assert_int_equal(devmodel_bytes(m), 2 * MiB);   /* p1[0], p1[2] */
    devmodel_free(m);
}

static void chunks_own_pages(void **state) {
    devmodel *m = devmodel_new();
    /* VMM chunks are physical allocations of their own, rounded up to 2 MiB even when small. */
    int64_t c0 = devmodel_alloc_chunk(m, 1);
    int64_t c1 = devmodel_alloc_chunk(m, 64 * MiB);
    int64_t c2 = devmodel_alloc_chunk(m, 3 * MiB);
    assert_int_equal(devmodel_bytes(m), (2 + 64 + 4) * MiB);
    devmodel_release(m, c1);
    assert_int_equal(devmodel_bytes(m), 6 * MiB);
    devmodel_release(m, c0);
    devmodel_release(m, c2);
    assert_int_equal(devmodel_bytes(m), 0);
    devmodel_free(m);
}

static void exact_for_lifo_frees(void **state) {
    devmodel *m = devmodel_new();
    int64_t keep = devmodel_alloc(m, 100 * KiB);
    /* A temp freed right after its alloc only grows the page's tail hole: still exact. */
    for (int i = 0; i < 1000; i++) {
        int64_t t = devmodel_alloc(m, 300 * KiB);
        devmodel_release(m, t);
    }
    assert_true(devmodel_exact(m));
    uint64_t lo, hi;
    devmodel_bounds(m, &lo, &hi);
    assert_int_equal(lo, 2 * MiB);
    assert_int_equal(hi, 2 * MiB);
    devmodel_release(m, keep);
    assert_int_equal(devmodel_bytes(m), 0);
    devmodel_free(m);
}

/* The cases the model used to call inexact (a free before live data, a grown tail with another
 * page's room): best fit with ties to the oldest hole decides them, and the driver did the same
 * at every step of tests/gpu/fixtures/pages (test_pages_fixtures). */
static void churn_decided_by_best_fit(void **state) {
    devmodel *m = devmodel_new();
    int64_t h[3];
    uint64_t lo, hi;
    /* page 0: 3 x 600 KiB; page 1: 1 x 600 KiB. Freeing page 0's last block grows its tail to
     * 848 KiB; page 1's tail is 1448 KiB: best fit puts the next 600 KiB in page 0. */
    alloc_n(m, 3, 600 * KiB, h);
    devmodel_alloc(m, 600 * KiB);
    devmodel_release(m, h[2]);
    devmodel_alloc(m, 600 * KiB);
    assert_int_equal(devmodel_bytes(m), 4 * MiB);
    assert_true(devmodel_exact(m));
    devmodel_bounds(m, &lo, &hi);
    assert_int_equal(lo, 4 * MiB);
    assert_int_equal(hi, 4 * MiB);
    /* A hole before live data: page 0 now [600 | 600 | 600 | 248 tail] after the free of h[1]
     * has a 600 KiB hole; 500 KiB goes there (best fit), 200 KiB into the 248 KiB tail. */
    devmodel_release(m, h[1]);
    devmodel_alloc(m, 500 * KiB);
    devmodel_alloc(m, 200 * KiB);
    assert_int_equal(devmodel_bytes(m), 4 * MiB);
    devmodel_free(m);
}

static void release_twice_is_ignored(void **state) {
    devmodel *m = devmodel_new();
    int64_t h = devmodel_alloc(m, 4 * MiB);
    devmodel_release(m, h);
    devmodel_release(m, h);
    devmodel_release(m, 12345);
    assert_int_equal(devmodel_bytes(m), 0);
    devmodel_free(m);
}

static void zero_bytes_maps_nothing(void **state) {
    devmodel *m = devmodel_new();
    int64_t h = devmodel_alloc(m, 0);
    assert_true(h >= 0);
    assert_int_equal(devmodel_bytes(m), 0);
    devmodel_release(m, h);
    devmodel_free(m);
}

/* Many live small blocks and churn: stays fast (heaps, not scans); not timed, only must finish. */
static void churn_many_pages(void **state) {
    devmodel *m = devmodel_new();
    enum { N = 200000 };
    static int64_t h[N];
    alloc_n(m, N, 3 * KiB, h);                   /* 682 per page (2046 KiB) → 294 pages */
    assert_int_equal(devmodel_bytes(m), (uint64_t)((N + 681) / 682) * 2 * MiB);
    for (int i = 0; i < N; i += 2)
        devmodel_release(m, h[i]);
    for (int i = 0; i < N / 2; i++)
        devmodel_alloc(m, 3 * KiB);              /* refills the freed holes exactly */
    assert_int_equal(devmodel_bytes(m), (uint64_t)((N + 681) / 682) * 2 * MiB);
    devmodel_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_1000_x_1kib),
        cmocka_unit_test(small_4096_x_512),
        cmocka_unit_test(small_8193_x_1),
        cmocka_unit_test(small_3_x_700kib),
        cmocka_unit_test(small_10_x_600kib),
        cmocka_unit_test(small_8_x_1mib_plus_1),
        cmocka_unit_test(small_pair_shares_page),
        cmocka_unit_test(big_rounding),
        cmocka_unit_test(page_returned_when_empty),
        cmocka_unit_test(freed_hole_reused),
        cmocka_unit_test(best_fit_picks_smallest_hole),
        cmocka_unit_test(holes_coalesce),
        cmocka_unit_test(tie_oldest_hole),
        cmocka_unit_test(chunks_own_pages),
        cmocka_unit_test(exact_for_lifo_frees),
        cmocka_unit_test(churn_decided_by_best_fit),
        cmocka_unit_test(release_twice_is_ignored),
        cmocka_unit_test(zero_bytes_maps_nothing),
        cmocka_unit_test(churn_many_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
