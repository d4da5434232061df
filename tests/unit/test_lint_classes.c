/* SPDX-License-Identifier: MIT */
/* test_lint_classes.c — the `--no-lint` table (analyzer/lint/lint_classes.c): each class
 * silences exactly its diagnostic codes, and nothing else. */
#include "plantest.h"

/* Three lifetime errors of three classes, one step each (lines 4, 6 and 8). */
static const char three[] = "world: 2\n"
                            "steps:\n"
                            "  - alloc: {buf: x, bytes: 1KiB}\n"
                            "  - alloc: {buf: x, bytes: 1KiB}\n"
                            "  - free: x\n"
                            "  - free: x\n"
                            "  - alloc: {buf: y, bytes: 1KiB}\n"
                            "  - all_reduce: {buf: x}\n"
                            "  - free: y\n";

static size_t lint_with(const char *const *off, size_t n_off, pt_run *r) {
    lint_options o;
    lint_options_default(&o);
    for (size_t k = 0; k < n_off; k++)
        assert_int_equal(lint_options_disable(&o, off[k]), 0);
    pt_load(r, three, 0);
    r->lint_errors = lint_plans(r->plans, r->world, &o, &r->lint, &r->d);
    return r->lint_errors;
}

static void test_each_class_silences_its_codes(void **state) {
    pt_run r;
    /* each error at its buffer's name, followed by its note at the earlier place */
    assert_int_equal(lint_with(NULL, 0, &r), 3);
    assert_string_equal(pt_diag(&r, 0), "t.yaml:4:18: error: alloc of 'x' which is still live");
    assert_string_equal(pt_diag(&r, 1), "t.yaml:3:18: note: 'x' was allocated here");
    assert_string_equal(pt_diag(&r, 2), "t.yaml:6:11: error: 'x' freed twice");
    assert_string_equal(pt_diag(&r, 3), "t.yaml:5:11: note: 'x' was freed here");
    assert_string_equal(pt_diag(&r, 4), "t.yaml:8:23: error: use of 'x' after free");
    assert_string_equal(pt_diag(&r, 5), "t.yaml:5:11: note: 'x' was freed here");
    pt_free(&r);

    const char *df[] = {"double-free"};
    assert_int_equal(lint_with(df, 1, &r), 2);
    assert_string_equal(pt_diag(&r, 0), "t.yaml:4:18: error: alloc of 'x' which is still live");
    assert_string_equal(pt_diag(&r, 2), "t.yaml:8:23: error: use of 'x' after free");
    pt_free(&r);

    const char *da_uaf[] = {"double-alloc", "use-after-free"};
    assert_int_equal(lint_with(da_uaf, 2, &r), 1);
    assert_string_equal(pt_diag(&r, 0), "t.yaml:6:11: error: 'x' freed twice");
    assert_int_equal(r.d.items.n, 2);   /* and its note */
    pt_free(&r);

    /* Classes that name none of these codes change nothing. */
    const char *others[] = {"hazards", "cross-rank", "double-release", "inplace-offsets"};
    assert_int_equal(lint_with(others, 4, &r), 3);
    pt_free(&r);
}

static void test_table(void **state) {
    lint_options o;
    lint_options_default(&o);
    assert_int_equal(lint_options_disable(&o, "races-everywhere"), -1);
    assert_int_equal(o.off, 0);
    assert_true(lint_code_on(&o, "double_free"));
    assert_int_equal(lint_options_disable(&o, "double-free"), 0);
    assert_false(lint_code_on(&o, "double_free"));
    assert_true(lint_code_on(&o, "live_alloc"));
    assert_true(lint_code_on(&o, NULL));   /* a diagnostic without a code is never silenced */
    char list[400];
    lint_class_list(list, sizeof list);
    assert_string_equal(list, "cross-rank, hazards, use-after-free, double-free, double-alloc, "
                              "double-release, inplace-offsets, races");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_class_silences_its_codes),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
