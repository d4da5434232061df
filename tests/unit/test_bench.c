/* test_bench.c — what `memlife bench` times (runtime/bench.c): the timed part of a plan, the
 * refusal of plans whose timed part holds more than collectives, and the bytes behind payload
 * and bus bandwidth. The schedule is the chapter's benchmark (schedules/seed/06) in small. */
#include "testutil.h"
#include "bench.h"

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_span_is_the_region),
        cmocka_unit_test(test_span_without_regions),
        cmocka_unit_test(test_payload_and_bus_bytes),
        cmocka_unit_test(test_refuses_alloc_in_the_timed_part),
        cmocka_unit_test(test_refuses_nothing_to_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
