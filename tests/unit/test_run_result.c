/* SPDX-License-Identifier: MIT */
/* test_run_result.c — a rank's measurement on its way to rank 0 (cli/run_result.c): the JSON text
 * round-trips exactly (64-bit byte counts included), and the comparison with the prediction finds
 * the first op whose requested bytes differ, or passes when every op agrees; a backend's pool
 * (torch's memory_allocated / memory_reserved) travels with every sample. */
#include "testutil.h"
#include "cli/run_result.h"

#include <stdlib.h>

static const char *yaml = "world: 1\n"
                          "steps:\n"
                          "  - alloc: {buf: a, bytes: 256MiB}\n"
                          "  - alloc: {buf: b, bytes: 64MiB}\n"
                          "  - free: a\n";

typedef struct {
    sched *s;
    rank_plan plan;
    pred_rank pred;
    ml_diags d;
} fixture;

static void setup(fixture *f) {
    memset(f, 0, sizeof *f);
    ml_diags_init(&f->d);
    f->s = tu_load(yaml, &f->d);
    assert_non_null(f->s);
    sched_params p = {.world = 1};
    assert_int_equal(plan_expand(f->s, 0, &p, 1, 0, NULL, &f->plan, &f->d), 0);
    assert_int_equal(predict_rank(&f->plan, &f->pred, &f->d), 0);
}

static void teardown(fixture *f) {
    pred_rank_free(&f->pred);
    plan_free(&f->plan);
    sched_free(f->s);
    ml_diags_free(&f->d);
}

/* A rank as the executor leaves it: 256 MiB, then 320 MiB, then 64 MiB after the free. */
static void measured_rank(rt_rank *r, const rank_plan *plan, uint64_t after_op1) {
    memset(r, 0, sizeof *r);
    r->plan = plan;
    r->rank = 0;
    r->world = 1;
    rt_mem_reading base = {0};
    rt_account_init(&r->acct, &base);
    rt_account_alloc(&r->acct, 256u << 20);
    rt_account_sample(&r->acct, 0, &base);
    rt_account_alloc(&r->acct, after_op1 - (256u << 20));
    rt_account_sample(&r->acct, 1, &base);
    rt_account_free(&r->acct, after_op1 - (64u << 20));
    rt_account_sample(&r->acct, 2, &base);
    ml_vec_init(&r->checks, sizeof(rt_check_row));
    rt_check_row *row = ml_vec_push(&r->checks);
    row->name = "exact-sum-equivalence";
    row->pass = true;
    snprintf(row->detail, sizeof row->detail, "equal: 20 of 20 elements");
}

static void test_round_trip_and_match(void **state) {
    fixture f;
    setup(&f);
    rt_rank r;
    measured_rank(&r, &f.plan, 320u << 20);   /* seed: optimized RS+AG peak, 320 MiB */
    char *text = run_result_encode(&r);
    report_measured m;
    ml_vec checks;
    ml_vec_init(&checks, sizeof(report_check));
    ml_arena *names = ml_arena_new();
    char err[200];
    assert_int_equal(run_result_decode(text, strlen(text), &m, &checks, names, err, sizeof err), 0);
    assert_true(m.present);
    assert_int_equal(m.steady[VIEW_REQUESTED], 64u << 20);
    assert_int_equal(m.peak[VIEW_REQUESTED], 320u << 20);
    assert_false(m.has_device);
    assert_int_equal(m.n_timeline, 4);
    assert_true(m.timeline[0].op == SIZE_MAX);    /* the baseline */
    assert_int_equal(m.timeline[2].requested, 320u << 20);
    assert_int_equal(checks.n, 1);
    report_check *c = &ML_VEC_AT(&checks, report_check, 0);
    assert_string_equal(c->name, "exact-sum-equivalence");
    assert_true(c->pass);
    assert_string_equal(c->detail, "equal: 20 of 20 elements");
    run_result_compare(&m, &f.pred, &f.plan);
    assert_true(m.match);
    run_measured_free(&m);
    free(text);
    ml_vec_free(&checks);
    ml_arena_free(names);
    ml_vec_free(&r.checks);
    rt_account_free_all(&r.acct);
    teardown(&f);
}

/* The torch backend's readings: the pool's used / reserved after each op travel with the sample
 * (256 MiB allocated in a 256 MiB segment, then 320 in 320, then 64 allocated with 320 reserved:
 * the caching allocator keeps the freed segment), beyond 2^32 too; the baseline's pool is 0. */
static void test_pool_samples(void **state) {
    fixture f;
    setup(&f);
    rt_rank r;
    measured_rank(&r, &f.plan, 320u << 20);
    const uint64_t used[3] = {256u << 20, 320u << 20, 64u << 20};
    const uint64_t reserved[3] = {256u << 20, 320u << 20, 5ull << 32};
    for (int k = 0; k < 3; k++) {
        rt_sample *s = &ML_VEC_AT(&r.acct.samples, rt_sample, k + 1);
        s->has_pool = true;
        s->pool_used = used[k];
        s->pool_reserved = reserved[k];
    }
    char *text = run_result_encode(&r);
    report_measured m;
    ml_vec checks;
    ml_vec_init(&checks, sizeof(report_check));
    ml_arena *names = ml_arena_new();
    char err[200];
    assert_int_equal(run_result_decode(text, strlen(text), &m, &checks, names, err, sizeof err), 0);
    assert_int_equal(m.n_timeline, 4);
    assert_false(m.timeline[0].has_pool);
    for (int k = 0; k < 3; k++) {
        assert_true(m.timeline[k + 1].has_pool);
        assert_int_equal(m.timeline[k + 1].pool_used, used[k]);
        assert_int_equal(m.timeline[k + 1].pool_reserved, reserved[k]);
        assert_int_equal(m.timeline[k + 1].requested, ML_VEC_AT(&r.acct.samples, rt_sample, k + 1).requested);
    }
    run_measured_free(&m);
    free(text);
    ml_vec_free(&checks);
    ml_arena_free(names);
    ml_vec_free(&r.checks);
    rt_account_free_all(&r.acct);
    teardown(&f);
}

/* Under the caching allocator the device view follows reserved, not the page model: equal after
 * every op passes (even with device steady 320 MiB where the page model says 64), one byte off
 * names the op. */
static void test_cached_device(void **state) {
    fixture f;
    setup(&f);
    rt_rank r;
    measured_rank(&r, &f.plan, 320u << 20);
    const uint64_t reserved[3] = {256u << 20, 320u << 20, 320u << 20};
    r.acct.has_device = true;
    r.acct.last_reading.has_pool = true;
    r.acct.last_reading.pool_caches = true;
    for (int k = 0; k < 3; k++) {
        rt_sample *s = &ML_VEC_AT(&r.acct.samples, rt_sample, k + 1);
        s->has_pool = true;
        s->pool_reserved = reserved[k];
        s->device = (int64_t)reserved[k];
    }
    ML_VEC_AT(&r.acct.samples, rt_sample, 0).has_pool = true;
    r.acct.device_live = r.acct.device_peak = 320 << 20;
    for (int off = 0; off < 2; off++) {
        ML_VEC_AT(&r.acct.samples, rt_sample, 2).device = (int64_t)reserved[1] + off;
        char *text = run_result_encode(&r);
        report_measured m;
        ml_vec checks;
        ml_vec_init(&checks, sizeof(report_check));
        ml_arena *names = ml_arena_new();
        char err[200];
        assert_int_equal(run_result_decode(text, strlen(text), &m, &checks, names, err, sizeof err), 0);
        assert_true(m.pool.pool_caches);
        run_result_compare(&m, &f.pred, &f.plan);
        if (off == 0) {
            assert_true(m.match);
        } else {
            assert_false(m.match);
            assert_non_null(strstr(m.mismatch, "device after op 1 (alloc): measured 335544321 bytes, "
                                               "the caching allocator reserved 335544320"));
        }
        run_measured_free(&m);
        free(text);
        ml_vec_free(&checks);
        ml_arena_free(names);
    }
    ml_vec_free(&r.checks);
    rt_account_free_all(&r.acct);
    teardown(&f);
}

/* One byte more after op 1 than predicted: the mismatch names the step and both numbers. */
static void test_mismatch(void **state) {
    fixture f;
    setup(&f);
    rt_rank r;
    measured_rank(&r, &f.plan, (320u << 20) + 1);
    char *text = run_result_encode(&r);
    report_measured m;
    ml_vec checks;
    ml_vec_init(&checks, sizeof(report_check));
    ml_arena *names = ml_arena_new();
    char err[200];
    assert_int_equal(run_result_decode(text, strlen(text), &m, &checks, names, err, sizeof err), 0);
    run_result_compare(&m, &f.pred, &f.plan);
    assert_false(m.match);
    assert_string_equal(m.mismatch, "t.yaml:4:5: requested after op 1 (alloc): measured 335544321, "
                                    "predicted 335544320");
    run_measured_free(&m);
    free(text);
    ml_vec_free(&checks);
    ml_arena_free(names);
    ml_vec_free(&r.checks);
    rt_account_free_all(&r.acct);
    teardown(&f);
}

static void test_bad_text(void **state) {
    report_measured m;
    ml_vec checks;
    ml_vec_init(&checks, sizeof(report_check));
    ml_arena *names = ml_arena_new();
    char err[200];
    assert_int_equal(run_result_decode("{\"rank\": 0}", 11, &m, &checks, names, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "lacks a field"));
    assert_int_equal(run_result_decode("not json", 8, &m, &checks, names, err, sizeof err), -1);
    ml_vec_free(&checks);
    ml_arena_free(names);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_match),
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_pool_samples),
        cmocka_unit_test(test_cached_device),
        cmocka_unit_test(test_bad_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
