/* SPDX-License-Identifier: MIT */
/* test_inject.c — the fault-injection syntax (runtime/inject.c): every form of `--inject` /
 * MEMLIFE_INJECT, its refusals, the text it prints back, and the check of targets against plans
 * (a fault that names a rank outside the world, or an op or alloc no rank reaches, is refused
 * before anything runs). The executor's side (what fails and what is reported) is test_exec.c;
 * real ranks under mpirun are tests/mpi/faults.sh. */
#include "testutil.h"
#include "exec/inject.h"

static rt_options parsed(const char *spec) {
    rt_options o;
    rt_options_default(&o);
    char err[200] = "";
    if (rt_inject_parse(spec, &o, err, sizeof err) != 0)
        fail_msg("'%s': %s", spec, err);
    return o;
}

static void test_defaults_off(void **state) {
    rt_options o;
    rt_options_default(&o);
    assert_false(rt_inject_any(&o));
    assert_int_equal(o.fail_alloc_k, -1);
    assert_int_equal(o.fail_alloc_rank, -1);
    assert_int_equal(o.kill_step, -1);
    assert_int_equal(o.delay_step, -1);
    char text[80];
    rt_inject_text(&o, text, sizeof text);
    assert_string_equal(text, "");
}

static void test_forms(void **state) {
    rt_options o = parsed("fail-alloc=3");
    assert_int_equal(o.fail_alloc_k, 3);
    assert_int_equal(o.fail_alloc_rank, -1);        /* every rank */
    o = parsed("fail-alloc=1@0");
    assert_int_equal(o.fail_alloc_rank, 1);
    assert_int_equal(o.fail_alloc_k, 0);
    o = parsed("kill=2@3");
    assert_int_equal(o.kill_rank, 2);
    assert_int_equal(o.kill_step, 3);
    assert_int_equal(o.fail_alloc_k, -1);
    o = parsed("delay=3@4");
    assert_int_equal(o.delay_rank, 3);
    assert_int_equal(o.delay_step, 4);
    assert_true(o.delay_s <= 0);                    /* past the deadline, whatever --timeout is */
    o = parsed("delay=3@4:2.5");
    assert_true(o.delay_s == 2.5);
    o = parsed("kill=2@3,fail-alloc=1@1,delay=0@0:7");
    assert_true(rt_inject_any(&o));
    char text[120];
    rt_inject_text(&o, text, sizeof text);
    assert_string_equal(text, "fail-alloc=1@1,kill=2@3,delay=0@0:7");
    /* Before the communicator set-up: no op index (the executor's hooks never see it). */
    o = parsed("delay=1@init:30");
    assert_true(o.delay_at_init);
    assert_int_equal(o.delay_rank, 1);
    assert_int_equal(o.delay_step, -1);
    assert_true(o.delay_s == 30);
    assert_true(rt_inject_any(&o));
    rt_inject_text(&o, text, sizeof text);
    assert_string_equal(text, "delay=1@init:30");
    o = parsed("delay=0@init");
    rt_inject_text(&o, text, sizeof text);
    assert_string_equal(text, "delay=0@init");
}

/* Each refusal names the item and the form it should have. */
static void test_refusals(void **state) {
    static const struct { const char *spec, *want; } cases[] = {
        {"kill=2", "'kill=2' is not kill=RANK@OP (e.g. kill=2@3)"},
        {"kill=@3", "'kill=@3' is not kill=RANK@OP (e.g. kill=2@3)"},
        {"kill=2@-1", "'kill=2@-1' is not kill=RANK@OP (e.g. kill=2@3)"},
        {"kill=2@3:5", "'kill=2@3:5' is not kill=RANK@OP (e.g. kill=2@3)"},
        {"fail-alloc=x", "'fail-alloc=x' is not fail-alloc=[RANK@]K (e.g. fail-alloc=1@0)"},
        {"fail-alloc=99999999999", "'fail-alloc=99999999999' is not fail-alloc=[RANK@]K (e.g. "
                                   "fail-alloc=1@0)"},
        {"delay=1@2:0", "'delay=1@2:0' is not delay=RANK@OP[:SECONDS] (e.g. delay=3@3:20)"},
        {"delay=1@2:", "'delay=1@2:' is not delay=RANK@OP[:SECONDS] (e.g. delay=3@3:20)"},
        {"delay=1@2:inf", "'delay=1@2:inf' is not delay=RANK@OP[:SECONDS] (e.g. delay=3@3:20)"},
        {"kill=1@init", "'kill=1@init': only delay takes @init (delay=RANK@init[:SECONDS])"},
        {"fail-alloc=1@init", "'fail-alloc=1@init': only delay takes @init "
                              "(delay=RANK@init[:SECONDS])"},
        {"delay=@init", "'delay=@init' is not delay=RANK@OP[:SECONDS] (e.g. delay=3@3:20)"},
        {"delay=1@initx", "'delay=1@initx' is not delay=RANK@OP[:SECONDS] (e.g. delay=3@3:20)"},
        {"boom=1", "unknown fault 'boom=1' (fail-alloc=[RANK@]K, kill=RANK@OP or "
                   "delay=RANK@OP|init[:SECONDS])"},
        {"kill", "unknown fault 'kill' (fail-alloc=[RANK@]K, kill=RANK@OP or "
                 "delay=RANK@OP|init[:SECONDS])"},
        {"kill=1@1,kill=2@2", "'kill' is given twice"},
        {"kill=1@1,", "empty item in 'kill=1@1,'"},
        {"", "empty item in ''"},
    };
    for (size_t k = 0; k < ML_ARRAY_LEN(cases); k++) {
        rt_options o;
        rt_options_default(&o);
        char err[200] = "";
        assert_int_equal(rt_inject_parse(cases[k].spec, &o, err, sizeof err), -1);
        assert_string_equal(err, cases[k].want);
    }
}

/* Targets against plans: 2 ranks; rank 1 alone runs a second alloc (ops: rank 0 has 3, rank 1
 * has 4; allocs: rank 0 one, rank 1 two). */
static void test_check_targets(void **state) {
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load("world: 2\n"
                       "steps:\n"
                       "  - alloc: {buf: a, bytes: 8}\n"
                       "  - alloc: {buf: b, bytes: 8}\n"
                       "    when: rank == 1\n"
                       "  - all_reduce: {buf: a}\n"
                       "  - free: a\n",
                       &d);
    assert_non_null(s);
    sched_params p = {.world = 2};
    rank_plan plans[2];
    for (int r = 0; r < 2; r++)
        assert_int_equal(plan_expand(s, 0, &p, 2, r, NULL, &plans[r], &d), 0);
    const rank_plan *items[] = {plans};
    const int worlds[] = {2};
    static const struct { const char *spec, *want; } cases[] = {
        {"kill=1@3", ""},
        {"kill=0@2", ""},
        {"fail-alloc=1", ""},                        /* rank 1 makes alloc 1 */
        {"fail-alloc=1@1", ""},
        {"kill=0@3", "kill=0@3 is never reached: rank 0 has 3 ops (0 to 2)"},
        {"fail-alloc=0@1", "fail-alloc=0@1 is never reached: rank 0 has 1 alloc (only 0)"},
        {"fail-alloc=2", "fail-alloc=2 is never reached: no rank has more than 2 allocs (0 to 1)"},
        {"delay=2@0", "delay=2@0: rank 2 is outside the world of 2 ranks"},
        {"delay=1@init:5", ""},
        {"delay=2@init", "delay=2@init: rank 2 is outside the world of 2 ranks"},
    };
    for (size_t k = 0; k < ML_ARRAY_LEN(cases); k++) {
        rt_options o = parsed(cases[k].spec);
        char err[200] = "";
        int rc = rt_inject_check(&o, items, worlds, 1, err, sizeof err);
        assert_int_equal(rc, cases[k].want[0] ? -1 : 0);
        assert_string_equal(err, cases[k].want);
    }
    for (int r = 0; r < 2; r++)
        plan_free(&plans[r]);
    sched_free(s);
    ml_diags_free(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_off),
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_check_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
