/* SPDX-License-Identifier: MIT */
/* test_timemodel.c — the time model (analyzer/predict/timemodel.h): the defaults reproduce the
 * 2 x H200 64 MiB measurements they were fitted to (AllReduce 250 us, ReduceScatter 161 us,
 * AllGather 158 us), ring factors at world 8, --link parsing, and the schedule: an op waits for
 * its stream and the host, record/wait and syncs order streams, exposed communication is the
 * collective time no compute covers. The CLI side is tests/cli/timemodel.sh. */
#include "plantest.h"
#include "predict/timemodel.h"

static tm_result timed(pt_run *r, const char *yaml, int world, bool spans) {
    pt_load(r, yaml, world);
    tm_link l;
    tm_link_default(&l);
    assert_int_equal(tm_link_from_sched(&r->plans[0], &l, &r->d), 0);
    tm_result t;
    assert_int_equal(tm_predict(&r->plans[0], &l, spans, &t, &r->d), 0);
    return t;
}

static void h200_measurements(void **state) {
    pt_run r;
    tm_result t = timed(&r, "world: 2\nsteps:\n  - alloc: {buf: f, bytes: 64MiB}\n"
                            "  - alloc: {buf: h, bytes: 32MiB}\n  - all_reduce: {buf: f}\n"
                            "  - reduce_scatter: {send: f, recv: h}\n"
                            "  - all_gather: {send: h, recv: f}\n", 0, true);
    assert_float_equal(t.dur_us[2], 250.0, 1e-9);
    assert_float_equal(t.dur_us[3], 161.0, 1e-9);
    assert_float_equal(t.dur_us[4], 158.0, 1e-9);
    assert_float_equal(t.step_us, 569.0, 1e-9);
    tm_result_free(&t);
    pt_free(&r);
}

/* world 8, 64 MiB AllReduce: 10 + 2 * 7/8 * 67108864 / (67108864 / 240) = 10 + 420 = 430 us */
static void ring_factor_at_world_8(void **state) {
    pt_run r;
    tm_result t = timed(&r, "world: 8\nsteps:\n  - alloc: {buf: f, bytes: 64MiB}\n"
                            "  - all_reduce: {buf: f}\n", 0, true);
    assert_float_equal(t.dur_us[1], 430.0, 1e-9);
    tm_result_free(&t);
    pt_free(&r);
}

/* side: all_reduce 250 us on 'c' while default computes 100 then (after a wait) 50 more:
 * start of the second compute = 250, step 300; communication 250, of it 150 exposed (the
 * compute covers [0, 100)); a sync's span is the host's wait */
static void overlap_and_exposed(void **state) {
    pt_run r;
    tm_result t = timed(&r, "world: 2\nstreams: [c]\nevents: [e]\nsteps:\n"
                            "  - alloc: {buf: f, bytes: 64MiB}\n"
                            "  - all_reduce: {buf: f, stream: c}\n"
                            "  - record: {event: e, stream: c}\n"
                            "  - compute: {reads: [], time: 100}\n"
                            "  - wait: {event: e, stream: default}\n"
                            "  - compute: {reads: [f], time: 50}\n"
                            "  - sync: device\n", 0, true);
    assert_float_equal(t.start_us[1], 0, 1e-9);
    assert_float_equal(t.start_us[2], 250, 1e-9);   /* the record at c's position */
    assert_float_equal(t.start_us[4], 100, 1e-9);   /* default idles from 100 ... */
    assert_float_equal(t.dur_us[4], 150, 1e-9);     /* ... to 250 */
    assert_float_equal(t.start_us[5], 250, 1e-9);
    assert_float_equal(t.step_us, 300, 1e-9);
    assert_float_equal(t.comm_us, 250, 1e-9);
    assert_float_equal(t.exposed_comm_us, 150, 1e-9);
    assert_float_equal(t.start_us[6], 0, 1e-9);
    assert_float_equal(t.dur_us[6], 300, 1e-9);
    tm_result_free(&t);
    pt_free(&r);
}

static void link_parse(void **state) {
    tm_link l;
    char err[128];
    tm_link_default(&l);
    assert_int_equal(tm_link_parse("alpha_us=2.5,busbw_gbps=100", &l, err, sizeof err), 0);
    assert_float_equal(l.alpha_us, 2.5, 0);
    for (int c = 0; c < COLL_COUNT; c++)
        assert_float_equal(l.busbw_gbps[c], 100, 0);
    assert_int_equal(tm_link_parse("alpha_us=0", &l, err, sizeof err), 0);
    assert_int_equal(tm_link_parse("busbw_gbps=0", &l, err, sizeof err), -1);
    assert_string_equal(err, "--link: busbw_gbps must be positive");
    assert_int_equal(tm_link_parse("alpha_us", &l, err, sizeof err), -1);
    assert_string_equal(err, "--link takes alpha_us=US,busbw_gbps=GBPS, not 'alpha_us'");
    assert_int_equal(tm_link_parse("alpha_us=x", &l, err, sizeof err), -1);
    assert_string_equal(err, "--link: 'x' is not a number >= 0");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(h200_measurements),
        cmocka_unit_test(ring_factor_at_world_8),
        cmocka_unit_test(overlap_and_exposed),
        cmocka_unit_test(link_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
