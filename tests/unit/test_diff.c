/* SPDX-License-Identifier: MIT */
/* test_diff.c — `memlife diff` on the chapter's naive vs optimized RS+AG lifetimes: steady and
 * peak deltas per rank and view, and the lifetime that causes the difference. */
#include <jansson.h>
#include <stdlib.h>
#include "tu_series.h"
#include "report/diff.h"

#define MiB ((uint64_t)1 << 20)

static const diff_row *row_of(const diff_result *r, int rank, ml_mem_view v) {
    for (size_t k = 0; k < r->n_rows; k++)   /* rows of the views both sides predicted */
        if (r->rows[k].rank == rank && r->rows[k].view == v)
            return &r->rows[k];
    fail_msg("no diff row for rank %d view %d", rank, (int)v);
    return NULL;
}

/* Builds A and B and diffs them; the result of diff_series is returned, its diagnostic (if
 * any) copied to err. */
static int diff_of(series s[2], diff_result *r, const char *a, const char *b, int world_b,
                   const char *set_b, char *err, size_t len) {
    tu_series(&s[0], a, 0, NULL);
    tu_series(&s[1], b, world_b, set_b);
    ml_diags d;
    ml_diags_init(&d);
    int rc = diff_series(&s[0], &s[1], r, &d);
    snprintf(err, len, "%.400s", tu_first_error(&d));
    ml_diags_free(&d);
    return rc;
}

static void done(series s[2], diff_result *r) {
    diff_result_free(r);
    series_free(&s[1]);
    series_free(&s[0]);
}

static void naive_vs_optimized_world4(void **state) {
    series s[2];
    diff_result r;
    char err[512];
    assert_int_equal(diff_of(s, &r, tu_naive_yaml, tu_optimized_yaml, 0, NULL, err, sizeof err), 0);
    assert_int_equal(r.n_rows, 8);
    for (int rank = 0; rank < 4; rank++) {
        const diff_row *row = row_of(&r, rank, VIEW_REQUESTED);
        /* seed: naive 256 / 576 MiB, optimized 256 / 320 MiB at world 4 */
        assert_int_equal(row->side[0].peak, 576 * MiB);
        assert_int_equal(row->side[1].peak, 320 * MiB);
        assert_int_equal(row->side[0].steady, 256 * MiB);
        assert_int_equal(row->side[1].steady, 256 * MiB);
        assert_int_equal(row->delta_peak, -(int64_t)(256 * MiB));
        assert_int_equal(row->delta_steady, 0);
        assert_int_equal(row->hi, 0);
        assert_int_equal(row->cause_bytes, 256 * MiB);
        assert_string_equal(row->cause,
                            "gathered (256 MiB) allocated at 7:5 while 'full' (256 MiB) is still live: "
                            "+256 MiB at the all_gather (9:5); B frees 'full' at 9:5, before it "
                            "allocates 'gathered'");
        /* at A's peak gathered is live, at B's (the shard alloc, 6:5) it is not yet */
        assert_int_equal(row->side[0].n_only, 1);
        assert_string_equal(row->side[0].only[0].name, "gathered");
        assert_int_equal(row->side[1].n_only, 0);
        /* device view: whole 2 MiB pages, so the same numbers */
        const diff_row *dev = row_of(&r, rank, VIEW_DEVICE);
        assert_int_equal(dev->delta_peak, -(int64_t)(256 * MiB));
    }
    ml_str out = {0};
    assert_int_equal(diff_write(&r, FMT_TABLE, &out), 0);
    assert_non_null(strstr(out.s, "-256 MiB"));
    assert_non_null(strstr(out.s, "why, ranks 0-3, requested peak: A 576 MiB, B 320 MiB (-256 MiB)"));
    assert_non_null(strstr(out.s, "only at A's peak: gathered 256 MiB; only at B's peak: none"));
    out.n = 0;
    assert_int_equal(diff_write(&r, FMT_MD, &out), 0);
    assert_non_null(strstr(out.s, "### memlife diff"));
    assert_non_null(strstr(out.s, "| 0-3 | requested |"));
    assert_non_null(strstr(out.s, "- **cause:** gathered (256 MiB) allocated at 7:5"));
    out.n = 0;
    assert_int_equal(diff_write(&r, FMT_JSON, &out), 0);
    json_error_t je;
    json_t *root = json_loads(out.s, 0, &je);
    assert_non_null(root);
    json_t *row0 = json_array_get(json_object_get(root, "rows"), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(row0, "delta"), "peak")),
                     -(json_int_t)(256 * MiB));
    assert_string_equal(json_string_value(json_object_get(row0, "higher")), "a");
    json_decref(root);
    ml_str_free(&out);
    done(s, &r);
}

static void sizes_explain_when_lifetimes_match(void **state) {
    series s[2];
    diff_result r;
    char err[512];
    assert_int_equal(diff_of(s, &r, tu_naive_yaml, tu_naive_yaml, 0, "M=128MiB", err, sizeof err), 0);
    const diff_row *row = row_of(&r, 0, VIEW_REQUESTED);
    /* 576 MiB vs 2*128 + 32 = 288 MiB: every buffer is smaller, none lives longer */
    assert_int_equal(row->delta_peak, -(int64_t)(288 * MiB));
    assert_int_equal(row->cause_bytes, 288 * MiB);
    assert_non_null(strstr(row->cause, "'full' is 256 MiB on A and 128 MiB on B"));
    assert_non_null(strstr(row->cause, "'gathered' is 256 MiB on A and 128 MiB on B"));
    done(s, &r);
}

static void equal_plans_have_no_cause(void **state) {
    series s[2];
    diff_result r;
    char err[512];
    assert_int_equal(diff_of(s, &r, tu_optimized_yaml, tu_optimized_yaml, 0, NULL, err, sizeof err), 0);
    for (size_t k = 0; k < r.n_rows; k++) {
        assert_int_equal(r.rows[k].hi, -1);
        assert_string_equal(r.rows[k].cause, "");
    }
    ml_str out = {0};
    diff_write(&r, FMT_TABLE, &out);
    assert_non_null(strstr(out.s, "The peaks are equal on every rank and view."));
    ml_str_free(&out);
    done(s, &r);
}

static void worlds_must_match(void **state) {
    series s[2];
    diff_result r;
    char err[512];
    assert_int_equal(diff_of(s, &r, tu_naive_yaml, tu_optimized_yaml, 2, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "worlds differ"));
    done(s, &r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(naive_vs_optimized_world4),
        cmocka_unit_test(sizes_explain_when_lifetimes_match),
        cmocka_unit_test(equal_plans_have_no_cause),
        cmocka_unit_test(worlds_must_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
