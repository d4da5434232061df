/* SPDX-License-Identifier: MIT */
/* test_input.c — bounded input reads, the byte-count parser, the output-is-an-input check
 * (base/input.h) and the checked byte arithmetic (base/checked.h), also in the torch model. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/checked.h"
#include "base/input.h"
#include "torch/torchalloc.h"

static char dir[] = "/tmp/memlife-input.XXXXXX";

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_checked(void **state) {
    uint64_t v;
    assert_true(ml_add_u64_checked(1, 2, &v));
    assert_int_equal(v, 3);
    assert_false(ml_add_u64_checked(UINT64_MAX, 1, &v));
    assert_true(v == UINT64_MAX);
    assert_false(ml_mul_u64_checked((uint64_t)1 << 32, (uint64_t)1 << 32, &v));
    /* The byte bound is INT64_MAX: 2^62 + 2^62 = 2^63 is one past it (two 4 EiB allocations). */
    assert_true(ml_bytes_add((uint64_t)1 << 62, ((uint64_t)1 << 62) - 1, &v));
    assert_true(v == (uint64_t)INT64_MAX);
    assert_false(ml_bytes_add((uint64_t)1 << 62, (uint64_t)1 << 62, &v));
    assert_true(v == UINT64_MAX);
    /* Sticky: an overflowed sum stays over the bound after a subtraction. */
    assert_true(ml_bytes_sub(v, (uint64_t)1 << 62) == UINT64_MAX);
    assert_int_equal(ml_bytes_sub(5, 7), 0);
    assert_false(ml_bytes_mul((uint64_t)1 << 42, (uint64_t)2 << 20, &v));   /* 2^63: pages */
    assert_true(ml_bytes_mul((uint64_t)1 << 42, (uint64_t)1 << 20, &v));
    assert_true(v == (uint64_t)1 << 62);
}

/* The torch allocator model without a limit or capacity takes requests up to 2^48 bytes
 * (TT_MAX_SIZE, its key packing), each a segment of exactly that size (a 2 MiB multiple). 32767
 * of them reserve 2^63 - 2^48 bytes; the 32768th would reserve 2^63, one past the bound of every
 * byte count: an OOM, not a reserved sum that prints negative. */
static void test_torch_bound(void **state) {
    torchalloc_conf c;
    torchalloc_conf_default(&c, TORCHALLOC_V2_11);
    torchalloc *ta = torchalloc_new(&c, 0);
    torchalloc_oom oom;
    const uint64_t max = (uint64_t)1 << 48;
    for (int k = 0; k < 32767; k++)
        assert_true(torchalloc_malloc(ta, max, 0, &oom) >= 0);
    assert_int_equal(torchalloc_malloc(ta, max, 0, &oom), -1);
    struct torchalloc_stats st;
    torchalloc_stats(ta, &st);
    assert_true(st.reserved == ((uint64_t)1 << 63) - max);
    assert_true(st.allocated == st.reserved);
    assert_true(oom.reserved == st.reserved);
    torchalloc_destroy(ta);
}

static void test_byte_count(void **state) {
    uint64_t v;
    assert_int_equal(ml_parse_byte_count("100", &v), 0);
    assert_int_equal(v, 100);
    assert_int_equal(ml_parse_byte_count("64MiB", &v), 0);
    assert_int_equal(v, 64 << 20);
    assert_int_equal(ml_parse_byte_count("2 GB", &v), 0);
    assert_int_equal(v, 2000000000);
    assert_int_equal(ml_parse_byte_count("0", &v), -1);
    assert_int_equal(ml_parse_byte_count("lots", &v), -1);
    assert_int_equal(ml_parse_byte_count("1e9", &v), -1);
    assert_int_equal(ml_parse_byte_count("-1", &v), -1);
    assert_int_equal(ml_parse_byte_count("8388608TiB", &v), -1);          /* 2^63 */
    assert_int_equal(ml_parse_byte_count("99999999999999999999", &v), -1); /* wraps */
}

static void test_read(void **state) {
    char path[256], err[300];
    ml_input in;
    snprintf(path, sizeof path, "%s/a.yaml", dir);
    write_text(path, "world: 2\n");
    unsetenv(ML_INPUT_MAX_ENV);
    assert_int_equal(ml_input_read(path, &in, err, sizeof err), 0);
    assert_int_equal(in.len, 9);
    assert_string_equal(in.data, "world: 2\n");
    ml_input_free(&in);
    setenv(ML_INPUT_MAX_ENV, "9", 1);   /* exactly the size: read */
    assert_int_equal(ml_input_read(path, &in, err, sizeof err), 0);
    ml_input_free(&in);
    setenv(ML_INPUT_MAX_ENV, "8", 1);
    assert_int_equal(ml_input_read(path, &in, err, sizeof err), -1);
    assert_string_equal(err, "is 9 bytes, above the input limit of 8 bytes (MEMLIFE_MAX_INPUT)");
    setenv(ML_INPUT_MAX_ENV, "lots", 1);
    assert_int_equal(ml_input_read(path, &in, err, sizeof err), -1);
    assert_string_equal(err, "MEMLIFE_MAX_INPUT='lots' is not a byte count of at least 1 (e.g. 64MiB)");
    unsetenv(ML_INPUT_MAX_ENV);
    assert_int_equal(ml_input_read(dir, &in, err, sizeof err), -1);
    assert_string_equal(err, "is a directory, not a regular file");
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(ml_input_read(path, &in, err, sizeof err), -1);   /* no writer: a second */
    assert_string_equal(err, "is a FIFO (named pipe) that no process writes to (waited 1000 ms)");
    assert_true(ml_input_once(path));
    assert_true(ml_input_once("-"));
    assert_false(ml_input_once("/dev/null"));
    /* with a writer holding it open, read as a stream: the bytes written, then its end */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "steps: []\n", 10), 10);
    close(fds[1]);
    char fd_path[64];
    snprintf(fd_path, sizeof fd_path, "/dev/fd/%d", fds[0]);
    assert_int_equal(ml_input_read(fd_path, &in, err, sizeof err), 0);
    assert_int_equal(in.len, 10);
    assert_string_equal(in.data, "steps: []\n");
    ml_input_free(&in);
    close(fds[0]);
    assert_int_equal(ml_input_read("/dev/null", &in, err, sizeof err), -1);
    assert_string_equal(err, "is a character device, not a regular file (give '-' to read "
                             "standard input)");
    snprintf(path, sizeof path, "%s/missing.yaml", dir);
    assert_int_equal(ml_input_read(path, &in, err, sizeof err), -1);
    assert_string_equal(err, "cannot open file: No such file or directory");
}

static void test_output_check(void **state) {
    char a[256], b[256], lnk[256], other[256], word[300], err[400];
    snprintf(a, sizeof a, "%s/in.yaml", dir);
    snprintf(b, sizeof b, "%s/../%s/in.yaml", dir, strrchr(dir, '/') + 1);
    snprintf(lnk, sizeof lnk, "%s/link.yaml", dir);
    snprintf(other, sizeof other, "%s/other.json", dir);
    write_text(a, "x");
    write_text(other, "y");
    assert_int_equal(link(a, lnk), 0);
    const char *inputs[] = {a};
    assert_int_equal(ml_output_check(NULL, inputs, 1, err, sizeof err), 0);
    assert_int_equal(ml_output_check("-", inputs, 1, err, sizeof err), 0);
    assert_int_equal(ml_output_check(other, inputs, 1, err, sizeof err), 0);
    assert_int_equal(ml_output_check("/nonexistent/x", inputs, 1, err, sizeof err), 0);
    assert_int_equal(ml_output_check(a, inputs, 1, err, sizeof err), -1);
    char want[600];
    snprintf(want, sizeof want, "output file is the input '%s' (the same file); refusing to "
             "overwrite an input", a);
    assert_string_equal(err, want);
    assert_int_equal(ml_output_check(b, inputs, 1, err, sizeof err), -1);
    assert_int_equal(ml_output_check(lnk, inputs, 1, err, sizeof err), -1);
    snprintf(word, sizeof word, "%s:direct", a);   /* equiv's FILE:PLAN */
    const char *words[] = {other + 0, word};
    assert_int_equal(ml_output_check(a, words + 1, 1, err, sizeof err), -1);
    assert_int_equal(ml_output_check(lnk, words, 1, err, sizeof err), 0);
}

static int setup(void **state) { return mkdtemp(dir) ? 0 : -1; }
static int teardown(void **state) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checked), cmocka_unit_test(test_torch_bound),
        cmocka_unit_test(test_byte_count),
        cmocka_unit_test(test_read), cmocka_unit_test(test_output_check),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
