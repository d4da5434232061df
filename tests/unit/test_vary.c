/* SPDX-License-Identifier: MIT */
/* test_vary.c — the fit of a parametric capture's sizes (snapshot/vary.h): multi-affine integer
 * forms through the grid's corner, checked at every point, and their text. */
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_let),
        cmocka_unit_test(test_two_lets),
        cmocka_unit_test(test_misfits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
