/* SPDX-License-Identifier: MIT */
/* test_human.c — sizes for people, the terminal width and the colour switch (base/human.h). */
#include "testutil.h"

#include <stdlib.h>
#include <unistd.h>

#include "base/human.h"

#define KIB ((uint64_t)1 << 10)
#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

static const char *size(uint64_t bytes) {
    static char buf[64];
    ml_human_size(bytes, buf, sizeof buf);
    return buf;
}

/* The rule of human.h: exact multiples of the unit as they are, under 1 KiB exact bytes,
 * anything else 3 significant digits (half up), trailing zeros dropped, marked '~'. */
static void test_exact(void **state) {
    (void)state;
    assert_string_equal(size(0), "0 B");
    assert_string_equal(size(520), "520 B");            /* exact-sum contract peak */
    assert_string_equal(size(1023), "1023 B");
    assert_string_equal(size(4096), "4 KiB");
    assert_string_equal(size(3 * MIB / 2), "1.5 MiB");   /* 1572864 B: 1.5 is exact, no '~' */
    assert_string_equal(size(256 * MIB), "256 MiB");
    assert_string_equal(size(GIB), "1 GiB");
    assert_string_equal(size(1536 * MIB), "1.5 GiB");   /* 1.5 GiB is a whole 1536 MiB too */
    assert_string_equal(size(80 * GIB), "80 GiB");
    assert_string_equal(size((uint64_t)1 << 40), "1 TiB");
}

static void test_rounded(void **state) {
    (void)state;
    /* 34120 B = 33.3203 KiB: 1 decimal between 10 and 100 (padded 1003 contract peak) */
    assert_string_equal(size(34120), "~33.3 KiB");
    /* 10024 B = 9.789 KiB: 2 decimals under 10 */
    assert_string_equal(size(10024), "~9.79 KiB");
    /* 1 MiB + 1 B = 1.00000095 MiB: rounds to 1.00, zeros dropped, still '~' */
    assert_string_equal(size(MIB + 1), "~1 MiB");
    /* 1.5 MiB + 1 B: not the exact 1.5 of test_exact */
    assert_string_equal(size(3 * MIB / 2 + 1), "~1.5 MiB");
    /* 1152 B = 1.125 KiB exactly: 112.5 hundredths, half up -> 1.13; not the exact value, so '~' */
    assert_string_equal(size(1152), "~1.13 KiB");
    /* 1316013 B = 1.255048 MiB -> 1.26 */
    assert_string_equal(size(1316013), "~1.26 MiB");
    /* 9.996 KiB = 10235.9 B: 10236 B rounds to 10.00 -> one decimal fewer, "10" */
    assert_string_equal(size(10236), "~10 KiB");
    /* 99.96 KiB = 102359 B -> 100 */
    assert_string_equal(size(102360), "~100 KiB");
    /* 123.4 MiB: no decimals from 100 on */
    assert_string_equal(size(123 * MIB + 400 * KIB), "~123 MiB");
    /* 1023.6 KiB rounds to 1024 KiB: shown as the next unit */
    assert_string_equal(size(1048166), "~1 MiB");
    /* the largest value: 2^64 - 1 B = 16 EiB less one byte */
    assert_string_equal(size(UINT64_MAX), "~16 EiB");
}

static void test_bytes_flag(void **state) {
    (void)state;
    ml_human_set_bytes(true);
    assert_string_equal(size(256 * MIB), "268435456 B");
    assert_string_equal(size(34120), "34120 B");
    ml_human_set_bytes(false);
    assert_string_equal(size(256 * MIB), "256 MiB");
}

static void test_width(void **state) {
    (void)state;
    setenv("COLUMNS", "80", 1);
    assert_int_equal(ml_term_width(), 80);
    ml_term_set_wide(true);   /* --wide: unlimited, whatever COLUMNS says */
    assert_int_equal(ml_term_width(), 0);
    ml_term_set_wide(false);
    ml_term_set_target(ML_TARGET_FILE);   /* a file: unlimited, whatever COLUMNS says */
    assert_int_equal(ml_term_width(), 0);
    ml_term_set_target(2);                /* stderr: COLUMNS as for stdout */
    assert_int_equal(ml_term_width(), 80);
    ml_term_set_target(1);
    setenv("COLUMNS", "80x", 1);   /* not a number: as if unset; the test's stdout is no tty */
    if (!isatty(1))
        assert_int_equal(ml_term_width(), 0);
    unsetenv("COLUMNS");
}

static void test_color(void **state) {
    (void)state;
    unsetenv("NO_COLOR");
    ml_color_set_mode(ML_COLOR_ALWAYS);
    assert_string_equal(ml_color(ML_HUE_ERROR, 2), "\033[1;31m");
    assert_string_equal(ml_color_end(2), "\033[0m");
    setenv("NO_COLOR", "0", 1);   /* any value turns it off, "0" too (no-color.org) */
    assert_string_equal(ml_color(ML_HUE_ERROR, 2), "");
    setenv("NO_COLOR", "", 1);    /* but the empty string reads as unset */
    assert_string_equal(ml_color(ML_HUE_ERROR, 2), "\033[1;31m");
    unsetenv("NO_COLOR");
    ml_term_set_target(ML_TARGET_FILE);   /* -o FILE: the report's text has no colour */
    assert_string_equal(ml_color(ML_HUE_OK, ML_FD_TARGET), "");
    assert_string_equal(ml_color(ML_HUE_OK, 1), "\033[32m");   /* stdout itself still has */
    ml_term_set_target(2);
    assert_string_equal(ml_color(ML_HUE_OK, ML_FD_TARGET), "\033[32m");
    ml_term_set_target(1);
    ml_color_set_mode(ML_COLOR_NEVER);
    assert_string_equal(ml_color(ML_HUE_OK, 1), "");
    ml_color_set_mode(ML_COLOR_AUTO);
    assert_int_equal(ml_color_on(2), isatty(2) == 1);
    assert_int_equal(ml_visible_len("\033[32mpass\033[0m on", 16), 7);
}

/* A rank under memlife's mpirun: MEMLIFE_TERM says what memlife's own stdout and stderr are
 * ("OE:WIDTH"), not the pseudo-terminal Open MPI gives the rank. */
static void test_launcher_term(void **state) {
    (void)state;
    unsetenv("COLUMNS");
    unsetenv("NO_COLOR");
    ml_color_set_mode(ML_COLOR_AUTO);
    setenv("MEMLIFE_TERM", "10:123", 1);   /* stdout a terminal of 123 columns, stderr a pipe */
    assert_int_equal(ml_term_width(), 123);
    assert_true(ml_color_on(1));
    assert_false(ml_color_on(2));
    setenv("COLUMNS", "90", 1);   /* COLUMNS still wins */
    assert_int_equal(ml_term_width(), 90);
    unsetenv("COLUMNS");
    ml_term_export();   /* exported as read: the same three values */
    assert_string_equal(getenv("MEMLIFE_TERM"), "10:123");
    setenv("MEMLIFE_TERM", "01:0", 1);
    assert_int_equal(ml_term_width(), 0);
    assert_false(ml_color_on(1));
    assert_true(ml_color_on(2));
    unsetenv("MEMLIFE_TERM");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact),      cmocka_unit_test(test_rounded),
        cmocka_unit_test(test_bytes_flag), cmocka_unit_test(test_width),
        cmocka_unit_test(test_color),      cmocka_unit_test(test_launcher_term),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
