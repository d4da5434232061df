/* SPDX-License-Identifier: MIT */
/* test_expr.c — the expression language: precedence, units, checked arithmetic, error offsets. */
#include "testutil.h"

#include <stdlib.h>

#include "ir/expr.h"

/* Names: world, rank, M (let 0), q (let 1); 'i' only when the context allows it. */
static int resolve(void *ctx, const char *name, size_t len) {
    bool allow_i = ctx != NULL;
    static const char *const names[] = {"world", "rank", "i", "M", "q"};
    for (int k = 0; k < 5; k++)
        if (strlen(names[k]) == len && memcmp(names[k], name, len) == 0)
            return (k == EXPR_SLOT_INDEX && !allow_i) ? -1 : k;
    return -1;
}

/* slots: world 4, rank 2, i 7, M 256 MiB, q 64 MiB */
static const int64_t slots[] = {4, 2, 7, (int64_t)256 << 20, (int64_t)64 << 20};

static int64_t eval_ok(const char *text) {
    ml_arena *a = ml_arena_new();
    expr_error err = {0};
    expr *e = expr_parse(a, text, strlen(text), resolve, (void *)1, &err);
    if (!e)
        fail_msg("'%s' failed to parse: %s at %zu", text, err.msg, err.offset);
    int64_t v = 0;
    if (expr_eval(e, slots, &v, &err) != 0)
        fail_msg("'%s' failed to evaluate: %s at %zu", text, err.msg, err.offset);
    assert_string_equal(expr_text(e), text);
    ml_arena_free(a);
    return v;
}

/* Asserts that text fails (at parse or, if it parses, at evaluation) with msg at offset. */
static void expect_fail(const char *text, const char *msg, size_t offset, bool allow_i) {
    ml_arena *a = ml_arena_new();
    expr_error err = {0};
    expr *e = expr_parse(a, text, strlen(text), resolve, allow_i ? (void *)1 : NULL, &err);
    if (e) {
        int64_t v;
        if (expr_eval(e, slots, &v, &err) == 0)
            fail_msg("'%s' should fail with '%s' but gave %lld", text, msg, (long long)v);
    }
    if (strcmp(err.msg, msg) != 0 || err.offset != offset)
        fail_msg("'%s': expected '%s' at %zu, got '%s' at %zu", text, msg, offset, err.msg,
                 err.offset);
    ml_arena_free(a);
}

static void test_precedence(void **state) {
    assert_int_equal(eval_ok("1 + 2 * 3"), 7);
    assert_int_equal(eval_ok("(1 + 2) * 3"), 9);
    assert_int_equal(eval_ok("10 - 4 - 3"), 3);            /* left associative */
    assert_int_equal(eval_ok("100 / 10 / 5"), 2);
    assert_int_equal(eval_ok("-7 / 2"), -3);               /* truncates toward zero */
    assert_int_equal(eval_ok("-7 % 2"), -1);
    assert_int_equal(eval_ok("--3"), 3);
    assert_int_equal(eval_ok("!0 + 1"), 2);
    assert_int_equal(eval_ok("1 + 2 == 3 && 2 < 1 || 1"), 1);
    assert_int_equal(eval_ok("1 + 1 < 3"), 1);             /* comparison binds looser than + */
    assert_int_equal(eval_ok("3 <= 3"), 1);
    assert_int_equal(eval_ok("3 >= 4"), 0);
    assert_int_equal(eval_ok("3 != 4"), 1);
    assert_int_equal(eval_ok("!(rank == 2)"), 0);
}

static void test_names(void **state) {
    /* seed: RS shard at world 4 of 256 MiB is 64 MiB */
    assert_int_equal(eval_ok("M / world"), (int64_t)64 << 20);
    /* seed: naive RS+AG peak, 2M + M/N = 576 MiB at world 4 */
    assert_int_equal(eval_ok("2*M + M/world"), (int64_t)576 << 20);
    assert_int_equal(eval_ok("rank * q"), (int64_t)128 << 20);
    assert_int_equal(eval_ok("600 + 4*i"), 628);
    assert_int_equal(eval_ok("rank==0"), 0);
}

static void test_units(void **state) {
    assert_int_equal(eval_ok("256MiB"), (int64_t)256 << 20);
    assert_int_equal(eval_ok("256 MiB"), (int64_t)256 << 20);
    assert_int_equal(eval_ok("1 MiB + 1"), (1 << 20) + 1);
    assert_int_equal(eval_ok("3B"), 3);
    assert_int_equal(eval_ok("1KiB"), 1024);
    assert_int_equal(eval_ok("2 GiB"), (int64_t)2 << 30);
    assert_int_equal(eval_ok("1TiB"), (int64_t)1 << 40);
    assert_int_equal(eval_ok("1KB"), 1000);
    assert_int_equal(eval_ok("5 MB"), 5000000);
    assert_int_equal(eval_ok("1GB"), 1000000000);
    assert_int_equal(eval_ok("2TB"), 2000000000000);
    assert_int_equal(eval_ok("64 MiB * world"), (int64_t)256 << 20);
    assert_int_equal(expr_unit_count, 9);
    expect_fail("256 Mib", "unknown unit 'Mib'", 4, false);
    expect_fail("MiB", "unit 'MiB' must follow a number", 0, false);
    expect_fail("1.5 GiB", "only integers are allowed", 0, false);
}

static void test_functions(void **state) {
    assert_int_equal(eval_ok("ceil_div(10, 4)"), 3);
    assert_int_equal(eval_ok("ceil_div(8, 4)"), 2);
    assert_int_equal(eval_ok("ceil_div(-7, 2)"), -3);
    assert_int_equal(eval_ok("min(5, 3, 9)"), 3);
    assert_int_equal(eval_ok("max(5, 3, 9)"), 9);
    assert_int_equal(eval_ok("min(rank, 1)"), 1);
    assert_int_equal(eval_ok("align_up(1 MiB + 1, 2 MiB)"), (int64_t)2 << 20);
    assert_int_equal(eval_ok("align_up(M + 1, 512)"), ((int64_t)256 << 20) + 512);
    assert_int_equal(eval_ok("max(rank*2, world)"), 4);
    expect_fail("ceil_div(1)", "ceil_div takes 2 arguments", 0, false);
    expect_fail("foo(1)", "unknown function 'foo'", 0, false);
    expect_fail("1 + min", "function 'min' needs arguments in parentheses", 4, false);
    expect_fail("align_up(5, 0)", "align_up to a non-positive multiple", 0, false);
    expect_fail("ceil_div(5, rank - 2)", "division by zero", 0, false);
    expect_fail("min(1, 2", "unexpected end of expression", 8, false);
}

static void test_overflow(void **state) {
    assert_int_equal(eval_ok("9223372036854775807"), INT64_MAX);
    expect_fail("9223372036854775807 + 1", "integer overflow", 20, false);
    /* 4 GiB * 4 GiB is 2^64 already: the first '*' overflows */
    expect_fail("4 GiB * 4 GiB * 4 GiB", "integer overflow", 6, false);
    expect_fail("2 GiB * 2 GiB * 4 GiB", "integer overflow", 14, false);
    expect_fail("99999999999999999999", "number too large", 0, false);
    expect_fail("10000000 TiB", "integer overflow", 0, false);
    /* Overflow involving names is found at evaluation, at the operator. */
    expect_fail("M * M * M", "integer overflow", 6, false);
    expect_fail("-9223372036854775807 - 2", "integer overflow", 21, false);
}

static void test_division_by_zero(void **state) {
    expect_fail("1 / 0", "division by zero", 2, false);
    expect_fail("M % (rank - 2)", "modulo by zero", 2, false);
    expect_fail("M / (world - 4)", "division by zero", 2, false);
    /* && short-circuits, so a guarded division is fine */
    assert_int_equal(eval_ok("rank == 2 || M / (world - 4)"), 1);
}

static void test_errors_and_offsets(void **state) {
    expect_fail("", "empty expression", 0, false);
    expect_fail("   ", "empty expression", 3, false);
    expect_fail("1 +", "unexpected end of expression", 3, false);
    expect_fail("2 * (3 + x)", "undefined name 'x'", 9, false);
    expect_fail("M + i", "name 'i' is only defined in data patterns and checks", 4, false);
    expect_fail("1 2", "unexpected '2'", 2, false);
    expect_fail("(1", "unexpected end of expression", 2, false);
    expect_fail("1)", "unexpected ')'", 1, false);
    expect_fail("a = 1", "undefined name 'a'", 0, false);
    expect_fail("1 = 1", "unexpected '='", 2, false);
    expect_fail("1 < 2 < 3", "unexpected '<'", 6, false);   /* comparisons do not chain */
    expect_fail("1 < 2 == 0", "unexpected '=='", 6, false);
    expect_fail("1 & 2", "unexpected '&'", 2, false);
    expect_fail("$", "unexpected '$'", 0, false);
}

static void test_deep_nesting(void **state) {
    /* Hostile input must fail cleanly, not exhaust the stack. */
    size_t n = 100000;
    char *s = malloc(2 * n + 2);
    memset(s, '(', n);
    s[n] = '1';
    memset(s + n + 1, ')', n);
    s[2 * n + 1] = '\0';
    ml_arena *a = ml_arena_new();
    expr_error err = {0};
    assert_null(expr_parse(a, s, strlen(s), resolve, NULL, &err));
    assert_string_equal(err.msg, "expression nested too deeply");
    /* A long flat sum over a name builds a deep left tree; bounded too. */
    for (size_t k = 0; k < n; k++) {
        s[2 * k] = 'M';
        s[2 * k + 1] = '+';
    }
    s[2 * n - 1] = '\0';
    assert_null(expr_parse(a, s, strlen(s), resolve, NULL, &err));
    assert_string_equal(err.msg, "expression nested too deeply");
    memset(s, '-', n);
    s[n] = '1';
    s[n + 1] = '\0';
    assert_null(expr_parse(a, s, strlen(s), resolve, NULL, &err));
    /* A constant sum folds as it goes: no depth at all. */
    for (size_t k = 0; k < n; k++) {
        s[2 * k] = '1';
        s[2 * k + 1] = '+';
    }
    s[2 * n - 1] = '\0';
    expr *e = expr_parse(a, s, strlen(s), resolve, NULL, &err);
    assert_non_null(e);
    int64_t v;
    assert_true(expr_const_value(e, &v));
    assert_int_equal(v, (int64_t)n);
    free(s);
    ml_arena_free(a);
}

static void test_queries(void **state) {
    ml_arena *a = ml_arena_new();
    expr_error err;
    expr *e = expr_parse(a, "M / world", 9, resolve, NULL, &err);
    assert_true(expr_uses_slot(e, EXPR_SLOT_WORLD));
    assert_false(expr_uses_slot(e, EXPR_SLOT_RANK));
    int64_t v;
    assert_false(expr_const_value(e, &v));
    e = expr_parse(a, "2 * 3 MiB", 9, resolve, NULL, &err);
    assert_true(expr_const_value(e, &v));
    assert_int_equal(v, (int64_t)6 << 20);
    e = expr_parse(a, "rank == 0 && max(i, 1) > 0", 26, resolve, (void *)1, &err);
    assert_true(expr_uses_slot(e, EXPR_SLOT_INDEX));
    assert_true(expr_uses_slot(e, EXPR_SLOT_RANK));
    ml_arena_free(a);
}

/* A number written with a unit makes a size (fit prints such a let as one); a let's name with
 * digits in it ("M2") or a count is not one. */
static void test_has_unit(void **state) {
    static const struct {
        const char *text;
        bool unit;
    } cases[] = {{"64MiB", true}, {"2 * 3 MiB", true}, {"M / 4 KiB", true}, {"(1 B)", true},
                 {"2", false},    {"M * q", false},    {"max(M, 16)", false}, {"q+2", false}};
    for (size_t k = 0; k < ML_ARRAY_LEN(cases); k++) {
        ml_arena *a = ml_arena_new();
        expr_error err;
        expr *e = expr_parse(a, cases[k].text, strlen(cases[k].text), resolve, NULL, &err);
        assert_non_null(e);
        if (expr_has_unit(e) != cases[k].unit)
            fail_msg("expr_has_unit('%s') is %d", cases[k].text, !cases[k].unit);
        ml_arena_free(a);
    }
}

static void test_reserved_names(void **state) {
    const char *reserved[] = {"world", "rank", "i", "MiB", "B", "KB", "TiB", "min", "max",
                              "ceil_div", "align_up"};
    for (size_t k = 0; k < ML_ARRAY_LEN(reserved); k++)
        assert_true(expr_reserved_name(reserved[k], strlen(reserved[k])));
    assert_false(expr_reserved_name("M", 1));
    assert_false(expr_reserved_name("mib", 3));
    assert_false(expr_reserved_name("ranks", 5));
    assert_false(expr_reserved_name("worl", 4));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precedence),    cmocka_unit_test(test_names),
        cmocka_unit_test(test_units),         cmocka_unit_test(test_functions),
        cmocka_unit_test(test_overflow),      cmocka_unit_test(test_division_by_zero),
        cmocka_unit_test(test_errors_and_offsets), cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_queries),       cmocka_unit_test(test_reserved_names),
        cmocka_unit_test(test_has_unit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
