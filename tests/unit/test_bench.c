/* SPDX-License-Identifier: MIT */
/* test_bench.c — what `memlife bench` times (runtime/bench.c): the timed part of a plan, the
 * refusal of plans whose timed part holds more than collectives, and the bytes behind payload
 * and bus bandwidth; the report of made-up times, worked out by hand. The schedule is the
 * chapter's benchmark (schedules/seed/06) in small. */
#include "testutil.h"
#include "bench/bench.h"
#include "report/bench_report.h"

#include <jansson.h>
#include <math.h>

static const char bench_yaml[] =
    "name: b\n"                                                   /* line 1 */
    "world: 4\n"
    "let: {S: 1KiB, q: \"ceil_div(S / 4, world)\"}\n"
    "plans:\n"
    "  direct:\n"
    "    steps:\n"
    "      - alloc: {buf: x, count: world * q, init: rank_iota}\n"
    "      - region:\n"
    "          name: direct\n"
    "          steps:\n"
    "            - all_reduce: {buf: x, op: sum}\n"
    "      - sync: device\n"
    "      - free: x\n"
    "  decomposed:\n"
    "    steps:\n"
    "      - alloc: {buf: x, count: world * q, init: rank_iota}\n"
    "      - alloc: {buf: shard, count: q}\n"
    "      - alloc: {buf: gathered, count: world * q}\n"
    "      - region:\n"
    "          name: decomposed\n"
    "          steps:\n"
    "            - reduce_scatter: {send: x, recv: shard, op: sum}\n"
    "            - all_gather: {send: shard, recv: gathered}\n"
    "      - sync: device\n"
    "      - free: [x, shard, gathered]\n";

typedef struct {
    sched *s;
    rank_plan plan;
    ml_diags d;
} fixture;

static void expand(fixture *f, const char *yaml, int plan, int world) {
    memset(f, 0, sizeof *f);
    ml_diags_init(&f->d);
    f->s = tu_load(yaml, &f->d);
    assert_non_null(f->s);
    sched_params p = {.world = world};
    assert_int_equal(plan_expand(f->s, plan, &p, world, 0, NULL, &f->plan, &f->d), 0);
}

static void done(fixture *f) {
    plan_free(&f->plan);
    sched_free(f->s);
    ml_diags_free(&f->d);
}

/* direct: alloc, init, region begin, all_reduce, region end, sync, free: the part is ops 2..5. */
static void test_span_is_the_region(void **state) {
    fixture f;
    expand(&f, bench_yaml, 0, 4);
    size_t first, end;
    assert_int_equal(bench_span(&f.plan, &first, &end), 0);
    assert_int_equal(first, 2);
    assert_int_equal(end, 5);
    assert_int_equal(f.plan.ops[first].kind, OP_REGION_BEGIN);
    assert_int_equal(f.plan.ops[end - 1].kind, OP_REGION_END);
    assert_int_equal(bench_check_plan(&f.plan, &f.d), 0);
    done(&f);
}

/* Without regions: from the first collective to the last. */
static void test_span_without_regions(void **state) {
    fixture f;
    expand(&f,
           "world: 2\n"
           "steps:\n"
           "  - alloc: {buf: x, bytes: 1KiB}\n"
           "  - all_reduce: {buf: x}\n"
           "  - all_reduce: {buf: x}\n"
           "  - free: x\n", 0, 2);
    size_t first, end;
    assert_int_equal(bench_span(&f.plan, &first, &end), 0);
    assert_int_equal(first, 1);
    assert_int_equal(end, 3);
    done(&f);
}

/* Payload: the full tensor S = 1 KiB for both plans. Bus bytes (nccl-tests factors) at world 4:
 * AllReduce 1024 x 2(4-1)/4 = 1536; ReduceScatter 1024 x 3/4 + AllGather 1024 x 3/4 = 1536: the
 * same traffic, as the ring model says. At world 2 both are 1024. */
static void test_payload_and_bus_bytes(void **state) {
    for (int world = 2; world <= 4; world += 2) {
        for (int plan = 0; plan < 2; plan++) {
            fixture f;
            expand(&f, bench_yaml, plan, world);
            uint64_t payload;
            double bus;
            bench_plan_bytes(&f.plan, &payload, &bus);
            assert_int_equal(payload, 1024);
            assert_float_equal(bus, world == 4 ? 1536.0 : 1024.0, 1e-9);
            done(&f);
        }
    }
}

/* The chapter times the collective alone: an alloc (or init, sync, check) inside the region is
 * refused at its step, before anything runs. */
static void test_refuses_alloc_in_the_timed_part(void **state) {
    fixture f;
    expand(&f,
           "world: 2\n"
           "plans:\n"
           "  p:\n"
           "    steps:\n"
           "      - region:\n"
           "          name: r\n"
           "          steps:\n"
           "            - alloc: {buf: x, bytes: 1KiB}\n"
           "            - all_reduce: {buf: x}\n"
           "            - free: x\n", 0, 2);
    assert_int_equal(bench_check_plan(&f.plan, &f.d), -1);
    assert_string_equal(tu_first_error(&f.d),
                        "t.yaml:8:15: error: 'alloc' inside the timed part of plan 'p': bench "
                        "times only collectives, copies, record, wait and compute there; "
                        "allocate, initialize, sync and check outside the regions [rank 0]");
    done(&f);
}

static void test_refuses_nothing_to_time(void **state) {
    fixture f;
    expand(&f,
           "world: 2\n"
           "plans:\n"
           "  idle:\n"
           "    steps:\n"
           "      - alloc: {buf: x, bytes: 1KiB}\n"
           "      - free: x\n", 0, 2);
    size_t first, end;
    assert_int_equal(bench_span(&f.plan, &first, &end), -1);
    assert_int_equal(bench_check_plan(&f.plan, &f.d), -1);
    assert_string_equal(tu_first_error(&f.d), "t.yaml:3:3: error: plan 'idle' has no collective "
                                              "to time [rank 0]");
    done(&f);
}

/* Four cycles near DESIGN.md's H200 numbers at 256 MiB. direct 930 933 935 940 us: median
 * (933 + 935) / 2 = 934, P95 at 2.85: 935 + 0.85 x 5 = 939.25, mean 934.5, squared deviations
 * 20.25 + 2.25 + 0.25 + 30.25 = 53, stdev sqrt(53 / 3) = 4.2032, CV 0.45%. decomposed 1150 1148
 * 1152 1160: median 1151, CV sqrt(83 / 3) / 1152.5 = 0.46%: both stable, ratio 1151 / 934 =
 * 1.2323 ("1.232x"). bare direct 925 930 928 932: median 929, memlife / bare 934 / 929 = 1.005x,
 * +5 us. payload 256 MiB / 934 us = 268435456 / 934 / 1e3 = 287.404 GB/s. Kernels: 10 AllReduce
 * in region direct, 10 ReduceScatter + 10 AllGather in region decomposed. Host issue times of
 * direct: memlife 4.0 4.5 5.0 6.0 us (median 4.75), bare 3.0 3.2 3.4 3.6 us (median 3.3): the
 * cell "4.750 / 3.300", +1.450 us extra. Graph replays of direct (the same times) with 20 copies
 * per graph: "replays" 20. Aligned spans: the header says so. Per cycle, memlife / bare of
 * direct: 930/925 = 1.005405, 933/930 = 1.003226, 935/928 = 1.007543, 940/932 = 1.008584, median
 * (1.005405 + 1.007543) / 2 = 1.006474 ("1.006x"; 4 cycles are too few for a 95% interval); the
 * issue differences 1.0 1.3 1.6 2.4 us, median 1.45, per collective (1 call) 1.45. */
static void test_report_of_made_up_times(void **state) {
    double direct[] = {930e-6, 933e-6, 935e-6, 940e-6}, decomposed[] = {1150e-6, 1148e-6, 1152e-6,
                                                                         1160e-6};
    double bare[] = {925e-6, 930e-6, 928e-6, 932e-6};
    double issue_mine[] = {4.0e-6, 4.5e-6, 5.0e-6, 6.0e-6}, issue_bare[] = {3.0e-6, 3.2e-6, 3.4e-6,
                                                                           3.6e-6};
    bench_plan_result res[2];
    memset(res, 0, sizeof res);
    res[0].seconds[BENCH_MEMLIFE] = direct;
    res[0].seconds[BENCH_BARE] = bare;
    res[0].seconds[BENCH_GRAPH] = direct;
    res[0].issue[BENCH_MEMLIFE] = issue_mine;
    res[0].issue[BENCH_BARE] = issue_bare;
    res[0].graph_replays = res[1].graph_replays = 20;
    res[1].seconds[BENCH_MEMLIFE] = decomposed;
    bench_window wd = {.label = "direct"}, wc = {.label = "decomposed"};
    kn_tally_add(&wd.tally,
                 "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 10);
    kn_tally_add(&wc.tally, "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(x)", 10);
    kn_tally_add(&wc.tally, "ncclDevKernel_AllGather_RING_LL(x)", 10);
    bench_window whole[2] = {{.label = ""}, {.label = ""}};
    bench_window wins0[2] = {whole[0], wd}, wins1[2] = {whole[1], wc};
    res[0].windows = wins0;
    res[0].n_windows = 2;
    res[0].kernels_done = true;
    res[1].windows = wins1;
    res[1].n_windows = 2;
    res[1].kernels_done = true;
    uint64_t s256 = (uint64_t)256 << 20;
    bench_report_plan plans[2] = {
        {.name = "direct", .payload_bytes = s256, .bus_bytes = (double)s256, .collectives = 1,
         .res = &res[0]},
        {.name = "decomposed", .payload_bytes = s256, .bus_bytes = (double)s256,
         .collectives = 2, .res = &res[1]}};
    bench_report_size size = {.sweep_value = (int64_t)s256, .plans = plans, .n_plans = 2};
    bench_report r = {.schedule = "b", .file = "b.yaml", .sweep_let = "S", .backend = "cuda",
                      .launch = "single", .world = 2, .warmup = 3, .cycles = 4, .cv_max = 5,
                      .kernels_requested = true, .sizes = &size, .n_sizes = 1, .align = true};
    ml_str t = {0};
    assert_int_equal(bench_report_render(&r, FMT_TABLE, &t), 0);
    const char *want[] = {"934.000", "939.250", "0.45%", "0.46%", "287.404", "1.232x", "929.000",
                          "1.005x (+5.000 us)", "all_reduce 10",
                          "ncclDevKernel_AllReduce_Sum_f32_RING_LL(...) x10",
                          "reduce_scatter 10, all_gather 10", "issue us (memlife / bare)",
                          "4.750 / 3.300", "+1.450", "span start: aligned on the device",
                          "replays", "per cycle [95% CI]", "1.006x [too few cycles]"};
    for (size_t k = 0; k < ML_ARRAY_LEN(want); k++)
        if (!strstr(t.s, want[k]))
            fail_msg("table lacks '%s':\n%s", want[k], t.s);
    ml_str j = {0};
    assert_int_equal(bench_report_render(&r, FMT_JSON, &j), 0);
    json_error_t e;
    json_t *root = json_loads(j.s, 0, &e);
    assert_non_null(root);
    json_t *p1 = json_array_get(json_object_get(json_array_get(json_object_get(root, "sizes"), 0),
                                                "plans"), 1);
    json_t *m = json_object_get(p1, "memlife");
    assert_float_equal(json_real_value(json_object_get(m, "ratio")), 1.2323, 1e-9);
    assert_string_equal(json_string_value(json_object_get(m, "ratio_status")), "stable");
    assert_float_equal(json_real_value(json_object_get(m, "median_us")), 1151.0, 1e-9);
    json_t *p0 = json_array_get(json_object_get(json_array_get(json_object_get(root, "sizes"), 0),
                                                "plans"), 0);
    json_t *io = json_object_get(p0, "issue_overhead");
    assert_float_equal(json_real_value(json_object_get(io, "memlife_us")), 4.75, 1e-9);
    assert_float_equal(json_real_value(json_object_get(io, "bare_us")), 3.3, 1e-9);
    assert_float_equal(json_real_value(json_object_get(io, "extra_us")), 1.45, 1e-9);
    json_t *ipc = json_object_get(io, "per_cycle");
    assert_true(fabs(json_real_value(json_object_get(ipc, "extra_us")) - 1.45) < 1e-9);
    assert_true(fabs(json_real_value(json_object_get(ipc, "per_collective_us")) - 1.45) < 1e-9);
    assert_true(json_is_null(json_object_get(ipc, "ci95_low")));
    json_t *opc = json_object_get(json_object_get(p0, "overhead"), "per_cycle");
    assert_true(fabs(json_real_value(json_object_get(opc, "ratio")) - 1.0065) < 1e-9);
    assert_true(json_is_null(json_object_get(opc, "ci95_high")));
    assert_int_equal(json_integer_value(json_object_get(p0, "collectives")), 1);
    assert_int_equal(json_integer_value(json_object_get(p1, "collectives")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p0, "graph"), "replays")),
                     20);
    assert_true(json_is_true(json_object_get(root, "align")));
    json_t *k = json_array_get(json_object_get(p1, "kernels"), 1);
    assert_string_equal(json_string_value(json_object_get(k, "region")), "decomposed");
    assert_int_equal(json_integer_value(json_object_get(k, "total")), 20);
    json_decref(root);
    ml_str_free(&t);
    ml_str_free(&j);
    kn_tally_free(&wd.tally);
    kn_tally_free(&wc.tally);
}

/* 20 copies per graph below 16 MiB, 1 from 16 MiB on (bench.h). */
static void test_graph_replays_by_size(void **state) {
    (void)state;
    assert_int_equal(bench_graph_replays(1024), 20);
    assert_int_equal(bench_graph_replays(((uint64_t)16 << 20) - 1), 20);
    assert_int_equal(bench_graph_replays((uint64_t)16 << 20), 1);
    assert_int_equal(bench_graph_replays((uint64_t)256 << 20), 1);
}

/* bench_cycle_order on 2 plans x 2 modes (A_m = 0, A_b = 1, B_m = 2, B_b = 3), written out:
 * g = 0: A_m A_b B_m B_b; 1: B_m B_b A_m A_b; 2: A_b A_m B_b B_m; 3: B_b B_m A_b A_m; then again
 * (g = -4 .. -1 likewise): the switch of plan falls on B_m, A_m, B_b, A_b. */
static void test_cycle_order_phases(void **state) {
    (void)state;
    static const size_t want[4][4] = {{0, 1, 2, 3}, {2, 3, 0, 1}, {1, 0, 3, 2}, {3, 2, 1, 0}};
    size_t got[4];
    for (long g = -8; g < 8; g++) {
        bench_cycle_order(2, 2, g, got);
        long phase = ((g % 4) + 4) % 4;
        for (int k = 0; k < 4; k++)
            assert_int_equal(got[k], want[phase][k]);
    }
}

/* The properties, from the warm-ups (g < 0) on, for several shapes: plans in order on even g and
 * reversed on odd g; a plan's modes next to each other; no cycle starts with a switch of plan;
 * and in every window of 2 x n_modes cycles, every mode of a plan follows a switch equally often
 * (and at least once, where there are two plans or more). */
static void test_cycle_order_counterbalanced(void **state) {
    (void)state;
    static const size_t shapes[][2] = {{2, 2}, {2, 3}, {3, 3}, {4, 2}, {1, 3}};
    enum { CYCLES = 24 };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t np = shapes[s][0], nm = shapes[s][1], n = np * nm, prev_last = SIZE_MAX;
        size_t o[12];
        int after_switch[CYCLES][12] = {{0}};
        for (long g = -6; g < CYCLES - 6; g++) {
            bench_cycle_order(np, nm, g, o);
            for (size_t k = 0; k < n; k++) {
                assert_int_equal(o[k] / nm, g % 2 == 0 ? k / nm : np - 1 - k / nm);
                if (k % nm)
                    assert_int_equal(o[k] / nm, o[k - 1] / nm);   /* modes stay together */
                size_t before = k ? o[k - 1] : prev_last;
                if (k == 0 && before != SIZE_MAX)
                    assert_int_equal(before / nm, o[0] / nm);      /* no switch at a start */
                after_switch[g + 6][o[k]] = before != SIZE_MAX && before / nm != o[k] / nm;
            }
            prev_last = o[n - 1];
        }
        size_t win = 2 * nm;
        for (size_t w = 1; w + win <= CYCLES; w++)
            for (size_t p = 0; p < np; p++) {
                int first = -1;
                for (size_t m = 0; m < nm; m++) {
                    int count = 0;
                    for (size_t c = w; c < w + win; c++)
                        count += after_switch[c][p * nm + m];
                    if (first < 0)
                        first = count;
                    assert_int_equal(count, first);
                    assert_true(np == 1 ? count == 0 : count > 0);
                }
            }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_span_is_the_region),
        cmocka_unit_test(test_span_without_regions),
        cmocka_unit_test(test_payload_and_bus_bytes),
        cmocka_unit_test(test_refuses_alloc_in_the_timed_part),
        cmocka_unit_test(test_refuses_nothing_to_time),
        cmocka_unit_test(test_report_of_made_up_times),
        cmocka_unit_test(test_graph_replays_by_size),
        cmocka_unit_test(test_cycle_order_phases),
        cmocka_unit_test(test_cycle_order_counterbalanced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
