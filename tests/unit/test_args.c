/* SPDX-License-Identifier: MIT */
/* test_args.c — the CLI's option parser on getopt_long (cli/args.c), its "did you mean"
 * (cli/suggest.c) and the usage text rendered from the option rows (cli/help.c). Expected values
 * are the options' meanings as cli/args.h states them. */
#include "testutil.h"
#include "cli/args.h"
#include "cli/help.h"
#include "cli/suggest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -qw4 is -q -w 4; -fjson is --format json; values attach to short and long names. */
static void test_bundled_and_attached(void **state) {
    (void)state;
    char *argv[] = {"predict", "-qw4", "-fjson", "x.yaml", "--plan=p", "--set", "M=1"};
    ml_args a;
    assert_int_equal(ml_args_parse(&a, "predict", 7, argv, NULL, 0, false), 0);
    assert_true(a.quiet);
    assert_int_equal(a.world, 4);
    assert_int_equal(a.format, FMT_JSON);
    assert_true(a.format_set);
    assert_string_equal(a.plan, "p");
    assert_int_equal(a.set.n, 1);
    assert_int_equal(a.files.n, 1);
    assert_string_equal(((const char **)a.files.items)[0], "x.yaml");
    /* the caller's argv is not permuted (run relaunches itself with it) */
    assert_string_equal(argv[3], "x.yaml");
    ml_args_free(&a);
}

/* `--` ends the options: what follows is a file even when it looks like one; '-' is a file. */
static void test_double_dash_and_stdin(void **state) {
    (void)state;
    char *argv[] = {"check", "-", "--world=2", "--", "-w", "--quiet"};
    ml_args a;
    assert_int_equal(ml_args_parse(&a, "check", 6, argv, NULL, 0, false), 0);
    assert_int_equal(a.world, 2);
    assert_false(a.quiet);
    assert_int_equal(a.files.n, 3);
    const char **f = (const char **)a.files.items;
    assert_string_equal(f[0], "-");
    assert_string_equal(f[1], "-w");
    assert_string_equal(f[2], "--quiet");
    ml_args_free(&a);
}

/* The parser runs more than once per process (equiv, the man generator): no state is left. */
static void test_reentrant(void **state) {
    (void)state;
    for (int k = 0; k < 3; k++) {
        char *argv[] = {"predict", "x.yaml", "-w", "3"};
        ml_args a;
        assert_int_equal(ml_args_parse(&a, "predict", 4, argv, NULL, 0, false), 0);
        assert_int_equal(a.world, 3);
        assert_int_equal(a.files.n, 1);
        ml_args_free(&a);
    }
}

static void test_suggest(void **state) {
    (void)state;
    const char *cmds[] = {"predict", "check", "run", "plot", "trace", "diff"};
    assert_string_equal(ml_suggest("prdict", cmds, 6), "predict");
    assert_string_equal(ml_suggest("chekc", cmds, 6), "check");   /* a swap counts 1 */
    assert_null(ml_suggest("frobnicate", cmds, 6));
    const char *fmts[] = {"table", "json", "csv", "md"};
    assert_string_equal(ml_suggest("jsn", fmts, 4), "json");
    assert_null(ml_suggest("xml", fmts, 4));   /* 2 edits from 'md': too far for 3 letters */
}

/* --help text: the command's prose, "options:" rendered from the rows (a documentation row
 * re-describes --output), then the text after "@options". */
static void test_usage_from_rows(void **state) {
    (void)state;
    bool deep = false;
    const ml_opt extra[] = {
        {"--deep", NULL, OPT_FLAG, &deep, 0, 0, NULL, NULL, "look deeper"},
        {"--output", NULL, OPT_FLAG, NULL, 0, 0, NULL, NULL, "write the thing to FILE"},
    };
    char *argv[] = {"predict", "--help"};
    ml_args a;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(ml_args_parse(&a, "predict", 2, argv, extra, 2, false), 0);
    assert_true(a.help);
    ml_opt rows[2 + ML_ARGS_MAX_FIXED];
    size_t n = ml_args_rows(&a, "predict", extra, 2, rows);
    ml_help_render(f, "predict", "usage: memlife x\n\nprose\n\n@options\nexit codes: 0\n", rows,
                   n);
    fclose(f);
    assert_non_null(strstr(buf, "usage: memlife x\n\nprose\n\noptions:\n      --deep"));
    assert_non_null(strstr(buf, "  -o, --output FILE     write the thing to FILE\n"));
    assert_non_null(strstr(buf, "  -w, --world N         world size"));
    assert_non_null(strstr(buf, "  -h, --help            this text\n\nexit codes: 0\n"));
    free(buf);
    ml_args_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bundled_and_attached),
        cmocka_unit_test(test_double_dash_and_stdin),
        cmocka_unit_test(test_reentrant),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_usage_from_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
