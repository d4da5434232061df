/* SPDX-License-Identifier: MIT */
/* test_vary.c — the fit of a parametric capture's sizes (snapshot/vary.h): multi-affine integer
 * forms through the grid's corner, checked at every point, and their text; and the fit of sizes
 * to the world (constants, FSDP2's padded shards and their unsharded sizes). */
#include "testutil.h"

#include <stdint.h>
#include <stdlib.h>

#include "snapshot/vary.h"

static const int64_t MBS3[] = {1, 2, 4};
static const int64_t S3[] = {64, 128, 256};

static char *form(const vary_let *lets, size_t n, const int64_t *coef) {
    static char buf[256];
    ml_str s = {0};
    vary_expr_text(lets, n, coef, &s);
    snprintf(buf, sizeof buf, "%s", s.s);
    ml_str_free(&s);
    return buf;
}

/* One let: y = 1024 + 512*MBS at 1, 2, 4 (the third point checks the line through the first
 * two). */
static void test_one_let(void **state) {
    (void)state;
    vary_let l = {"MBS", MBS3, 3};
    int64_t y[] = {1536, 2048, 3072}, coef[1 << VARY_MAX_LETS];
    size_t bad;
    int64_t fitted;
    assert_int_equal(vary_fit(&l, 1, y, coef, &bad, &fitted), 0);
    assert_int_equal(coef[0], 1024);
    assert_int_equal(coef[1], 512);
    assert_string_equal(form(&l, 1, coef), "1024 + 512*MBS");
    int64_t z[] = {97, 94, 88};   /* 100 - 3*MBS */
    assert_int_equal(vary_fit(&l, 1, z, coef, &bad, &fitted), 0);
    assert_string_equal(form(&l, 1, coef), "100 - 3*MBS");
    int64_t c[] = {7, 7, 7};
    assert_int_equal(vary_fit(&l, 1, c, coef, &bad, &fitted), 0);
    assert_string_equal(form(&l, 1, coef), "7");
    int64_t m[] = {-1, -2, -4};
    assert_int_equal(vary_fit(&l, 1, m, coef, &bad, &fitted), 0);
    assert_string_equal(form(&l, 1, coef), "-MBS");
    int64_t zero[] = {0, 0, 0};
    assert_int_equal(vary_fit(&l, 1, zero, coef, &bad, &fitted), 0);
    assert_string_equal(form(&l, 1, coef), "0");
}

/* Two lets over a 2 x 3 grid: y = 3 + 5*MBS + 7*S + 11*MBS*S, the last let fastest. */
static void test_two_lets(void **state) {
    (void)state;
    vary_let l[] = {{"MBS", MBS3, 2}, {"S", S3, 3}};
    assert_int_equal(vary_grid_points(l, 2, 64), 6);
    assert_int_equal(vary_grid_points(l, 2, 5), 0);
    assert_int_equal(vary_grid_index(l, 2, 4, 0), 1);   /* point 4: MBS=2, S=128 */
    assert_int_equal(vary_grid_index(l, 2, 4, 1), 1);
    char pt[64];
    vary_point_text(l, 2, 5, pt, sizeof pt);
    assert_string_equal(pt, "MBS=2, S=256");
    int64_t y[6], coef[1 << VARY_MAX_LETS];
    for (size_t g = 0; g < 6; g++) {
        int64_t m = MBS3[vary_grid_index(l, 2, g, 0)], s = S3[vary_grid_index(l, 2, g, 1)];
        y[g] = 3 + 5 * m + 7 * s + 11 * m * s;
    }
    size_t bad;
    int64_t fitted;
    assert_int_equal(vary_fit(l, 2, y, coef, &bad, &fitted), 0);
    assert_string_equal(form(l, 2, coef), "3 + 5*MBS + 7*S + 11*MBS*S");
    y[5] += 1;   /* MBS=2, S=256 off the form: the form gives one less there */
    assert_int_equal(vary_fit(l, 2, y, coef, &bad, &fitted), 1);
    assert_int_equal(bad, 5);
    assert_int_equal(fitted, y[5] - 1);
}

/* Sizes of no integer form: a square (the line through MBS = 1 and 2 gives 10 at 4, not 16), a
 * bend, a slope of 1/2, and coefficients past 64 bits. */
static void test_misfits(void **state) {
    (void)state;
    vary_let l = {"MBS", MBS3, 3};
    int64_t coef[1 << VARY_MAX_LETS], fitted;
    size_t bad;
    int64_t sq[] = {1, 4, 16};
    assert_int_equal(vary_fit(&l, 1, sq, coef, &bad, &fitted), 1);
    assert_int_equal(bad, 2);
    assert_int_equal(fitted, 10);
    int64_t half[] = {0, 1, 2};   /* the line through 1 and 2 gives 3 at MBS=4, not 2 */
    assert_int_equal(vary_fit(&l, 1, half, coef, &bad, &fitted), 1);
    assert_int_equal(bad, 2);
    static const int64_t odd[] = {1, 3};
    vary_let o = {"MBS", odd, 2};
    int64_t y[] = {0, 1};
    assert_int_equal(vary_fit(&o, 1, y, coef, &bad, &fitted), 1);
    assert_int_equal(bad, SIZE_MAX);
    int64_t big[] = {INT64_MIN, INT64_MAX, 0};
    assert_int_equal(vary_fit(&l, 1, big, coef, &bad, &fitted), 2);
}

static char *wtext(const world_form *f) {
    static char buf[256];
    ml_str s = {0};
    vary_world_text(f, &s);
    snprintf(buf, sizeof buf, "%s", s.s);
    ml_str_free(&s);
    return buf;
}

/* A shard of 1000 rows of 2048 B at worlds 1, 2, 3, 8: 2048000, 1024000, 2048*334, 2048*125.
 * The sizes' gcd is 2048 (125 is odd, 334 even), and world 1 fixes c = 1000. */
static void test_world_forms(void **state) {
    (void)state;
    static const int64_t w[] = {1, 2, 3, 8};
    world_form f;
    int64_t shard[] = {2048000, 1024000, 684032, 256000};
    assert_int_equal(vary_world_fit(w, 4, shard, false, &f), 0);
    assert_int_equal(f.kind, WORLD_SHARD);
    assert_string_equal(wtext(&f), "2048*ceil_div(1000, world)");
    assert_int_equal(f.alternatives, 0);
    int64_t v;
    assert_true(vary_world_eval(&f, 7, &v));
    assert_int_equal(v, 2048 * 143);
    /* its unsharded size, padded to a multiple of the world: 1002 rows at world 3 */
    int64_t full[] = {2048000, 2048000, 2048 * 1002, 2048000};
    assert_int_equal(vary_world_fit(w, 4, full, false, &f), 0);
    assert_string_equal(wtext(&f), "2048*ceil_div(1000, world)*world");
    assert_true(vary_world_eval(&f, 7, &v));
    assert_int_equal(v, 2048 * 143 * 7);
    int64_t k[] = {7, 7, 7, 7};
    assert_int_equal(vary_world_fit(w, 4, k, false, &f), 0);
    assert_string_equal(wtext(&f), "7");
    /* gathered: world times the shard's form */
    assert_int_equal(vary_world_fit(w, 4, shard, true, &f), 0);
    assert_string_equal(wtext(&f), "2048*ceil_div(1000, world)*world");
    assert_true(vary_world_eval(&f, 16, &v));
    assert_int_equal(v, 2048 * 63 * 16);
    assert_int_equal(vary_world_fit(w, 4, k, true, &f), 0);
    assert_string_equal(wtext(&f), "7*world");
}

/* 64 rows of 256 B at worlds 2, 3, 8 (tests/capture/worlds.sh's linear.py): 8192, 5632, 2048.
 * The gcd 512 admits c in (30, 32]: 32 is written; 31, and 256 B with c = 64, fit too. They
 * differ by 512 B at most (512*ceil(32/W) against 512*ceil(31/W) at W = 1 or 31). */
static void test_world_ambiguous(void **state) {
    (void)state;
    static const int64_t w[] = {2, 3, 8};
    world_form f;
    int64_t y[] = {8192, 5632, 2048};
    assert_int_equal(vary_world_fit(w, 3, y, false, &f), 0);
    assert_string_equal(wtext(&f), "512*ceil_div(32, world)");
    assert_int_equal(f.alternatives, 2);
    assert_int_equal(f.stake, 512);
    int64_t v;
    assert_true(vary_world_eval(&f, 5, &v));
    assert_int_equal(v, 3584);   /* the truth, 256*ceil(64/5), is 3328 */
}

static void test_world_misfits(void **state) {
    (void)state;
    static const int64_t w[] = {2, 3, 8};
    world_form f;
    int64_t up[] = {100, 7, 50};    /* neither falls nor rises with the world as a shard does */
    assert_int_equal(vary_world_fit(w, 3, up, false, &f), 1);
    int64_t zero[] = {0, 5, 3};
    assert_int_equal(vary_world_fit(w, 3, zero, false, &f), 1);
    /* two shards of other rows, 256*ceil(64/W) + 4*ceil(100/W): no one form */
    int64_t sum[] = {8192 + 200, 5632 + 136, 2048 + 52};
    assert_int_equal(vary_world_fit(w, 3, sum, false, &f), 1);
    int64_t huge[] = {INT64_MAX, INT64_MAX - 1, 1};
    assert_int_equal(vary_world_fit(w, 3, huge, false, &f), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_let),
        cmocka_unit_test(test_two_lets),
        cmocka_unit_test(test_misfits),
        cmocka_unit_test(test_world_forms),
        cmocka_unit_test(test_world_ambiguous),
        cmocka_unit_test(test_world_misfits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
