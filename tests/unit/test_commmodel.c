/* SPDX-License-Identifier: MIT */
/* test_commmodel.c — the predicted communicators against NCCL's memory as measured on H200 and
 * H100 (NCCL 2.28.3, driver 580.159.04, cudaMemGetInfo deltas through memlife's cuda backend and
 * tests/gpu/probe/nccl_mem.py):
 *   world 1, one process: 580 MiB at ncclCommInitAll, 0 more at the first AllReduce,
 *     ReduceScatter and AllGather (1 element and 16 Mi floats each); NCCL_MAX_NCHANNELS=2:
 *     208 MiB; NCCL_RUNTIME_CONNECT=0: 1092 MiB; NCCL_BUFFSIZE=1048576,
 *     NCCL_LL128_BUFFSIZE=1048576, NCCL_WORK_FIFO_BYTES=4194304, NCCL_MIN_NCHANNELS=32: 580 MiB;
 *   world 2, one process on 2 x H200: 388 MiB per GPU at ncclCommInitAll, +474 MiB at the first
 *     AllReduce, 0 at the ReduceScatter and AllGather after it (862 MiB);
 *   H100 80GB, world 1, the world and two splits of it (tests/gpu/fixtures/nccl_split_h100.jsonl,
 *     read here line by line: every stage's delta is a number the model must give exactly). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "predict/commmodel.h"
#include "testutil.h"

#define MiB ((uint64_t)1 << 20)

static const char *const *env_table;
static const char *from_table(const char *name) {
    size_t n = strlen(name);
    for (const char *const *e = env_table; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static commmodel_out predict_comms(int world, int gpu, const commmodel_comm *comms, int n_comms,
                                   const char *const *env, const plan_comm_use *uses, int n) {
    commmodel_in in = {.world = world, .gpus_per_node = world, .gpu = gpu, .comms = comms,
                       .n_comms = n_comms, .uses = uses, .n_uses = n};
    env_table = env;
    commmodel_env_read(&in.env, from_table);
    commmodel_out o;
    const char *why = NULL;
    if (commmodel_predict(&in, &o, &why) != 0)
        fail_msg("refused: %s", why);
    uint64_t sum = 0, per_comm = 0;
    for (int k = 0; k < o.n_terms; k++)
        sum += o.terms[k].bytes;
    for (int c = 0; c < o.n_comms; c++)
        per_comm += o.comms[c].total;
    assert_int_equal(sum, o.total);        /* every byte is a named term */
    assert_int_equal(per_comm, o.total);   /* and in one communicator's */
    return o;
}

/* The world alone on H200 (the kind these measurements are of): the world's output; its terms
 * in *held. */
static const commmodel_out *held;
static commmodel_comm_out predict(int world, const char *const *env, const ml_coll *order, int n) {
    plan_comm_use uses[COLL_COUNT];
    for (int k = 0; k < n; k++)
        uses[k] = (plan_comm_use){0, (uint8_t)order[k]};
    commmodel_comm world_comm = {"world", world, false};
    commmodel_out o = predict_comms(world, 1, &world_comm, 1, env, uses, n);
    assert_int_equal(o.n_comms, 1);
    assert_int_equal(o.comms[0].total, o.total);
    commmodel_comm_out w = o.comms[0];
    static commmodel_term terms[64];   /* the world's terms, for the tests that read them */
    static commmodel_out keep;
    assert_true(o.n_terms <= 64);
    memcpy(terms, o.terms, (size_t)o.n_terms * sizeof *terms);
    keep = (commmodel_out){.terms = terms, .n_terms = o.n_terms, .total = o.total};
    held = &keep;
    commmodel_out_free(&o);
    return w;
}

static const ml_coll ar_rs_ag[] = {COLL_ALL_REDUCE, COLL_REDUCE_SCATTER, COLL_ALL_GATHER};

static void world1_default(void **state) {
    (void)state;
    commmodel_comm_out o = predict(1, NULL, ar_rs_ag, 3);
    assert_int_equal(o.channels, 64);
    assert_int_equal(o.n_stages, 4);
    assert_int_equal(o.stage_bytes[0], 580 * MiB);   /* 192 + 2 x 2 + 64 x 3 x 2 */
    assert_int_equal(o.stage_bytes[1], 0);
    assert_int_equal(o.stage_bytes[2], 0);
    assert_int_equal(o.stage_bytes[3], 0);
    assert_string_equal(o.stage_name[1], "all_reduce");
}

/* Settings at world 1, each within 2 MiB of its measurement (here: exactly). */
static void world1_settings(void **state) {
    (void)state;
    static const struct {
        const char *env[3];
        uint64_t mib;
    } cases[] = {
        {{"NCCL_MAX_NCHANNELS=2", NULL}, 208},          /* 192 + 4 + 2 x 6 */
        {{"NCCL_RUNTIME_CONNECT=0", NULL}, 1092},       /* + 64 p2p x 16 steps x 512 KiB */
        {{"NCCL_BUFFSIZE=1048576", NULL}, 580},         /* no connection at world 1 */
        {{"NCCL_LL128_BUFFSIZE=1048576", NULL}, 580},
        {{"NCCL_WORK_FIFO_BYTES=4194304", NULL}, 580},  /* pinned host memory */
        {{"NCCL_MIN_NCHANNELS=32", NULL}, 580},         /* 64 already */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        commmodel_comm_out o = predict(1, cases[k].env, ar_rs_ag, 3);
        uint64_t want = cases[k].mib * MiB;
        if (o.total + 2 * MiB < want || o.total > want + 2 * MiB)
            fail_msg("%s: predicted %llu MiB, measured %llu MiB", cases[k].env[0],
                     (unsigned long long)(o.total / MiB), (unsigned long long)cases[k].mib);
        assert_int_equal(o.total, want);
    }
}

/* World 2 (2 x H200, one process): 388 at init, 474 at the first AllReduce, 862 in all. */
static void world2_measured(void **state) {
    (void)state;
    commmodel_comm_out o = predict(2, NULL, ar_rs_ag, 3);
    assert_int_equal(o.channels, 32);
    assert_int_equal(o.stage_bytes[0], 388 * MiB);   /* 192 + 4 + 32 x 6 */
    assert_int_equal(o.stage_bytes[1], 474 * MiB);   /* 32 x (recv 6 + send 6) + 90 */
    assert_int_equal(o.stage_bytes[2], 0);
    assert_int_equal(o.stage_bytes[3], 0);
    assert_int_equal(o.total, 862 * MiB);
    /* The rings' term names its arithmetic: P2P read puts Simple on the sender. */
    bool found = false;
    for (int k = 0; k < held->n_terms; k++)
        if (strcmp(held->terms[k].name, "rings") == 0) {
            assert_string_equal(held->terms[k].detail, "32 channels x (recv 6 + send 6 MiB)");
            found = true;
        }
    assert_true(found);
    /* Without P2P read Simple moves to the receiver: recv 10 + send 2, the same 12 per channel. */
    static const char *const noread[] = {"NCCL_P2P_READ_ENABLE=0", NULL};
    o = predict(2, noread, ar_rs_ag, 3);
    assert_int_equal(o.total, 862 * MiB);
    /* NCCL_BUFFSIZE=1 MiB: recv granules(4 KiB + 512 KiB + 4.69 MiB) = 6, send granules(4 KiB +
     * 1 MiB) = 2: 8 MiB a channel, 256 + 90 at the first AllReduce. */
    static const char *const small[] = {"NCCL_BUFFSIZE=1048576", NULL};
    o = predict(2, small, ar_rs_ag, 3);
    assert_int_equal(o.stage_bytes[1], (32 * 8 + 90) * MiB);
}

/* The first collective of any kind connects the rings; a schedule of only ReduceScatter and
 * AllGather pays the AllReduce's 474 MiB at its ReduceScatter. */
static void first_use_order(void **state) {
    (void)state;
    static const ml_coll rs_ag[] = {COLL_REDUCE_SCATTER, COLL_ALL_GATHER};
    commmodel_comm_out o = predict(2, NULL, rs_ag, 2);
    assert_string_equal(o.stage_name[1], "reduce_scatter");
    assert_int_equal(o.stage_bytes[1], 474 * MiB);
    assert_int_equal(o.stage_bytes[2], 0);
    o = predict(2, NULL, NULL, 0);        /* no collective: the init alone */
    assert_int_equal(o.total, 388 * MiB);
}

static void refusals(void **state) {
    (void)state;
    commmodel_comm w4 = {"world", 4, false};
    commmodel_in in = {.world = 4, .gpus_per_node = 2, .gpu = 1, .comms = &w4, .n_comms = 1};
    commmodel_out o;
    const char *why = NULL;
    assert_int_equal(commmodel_predict(&in, &o, &why), -1);
    assert_string_equal(why, "only one node (every rank's GPU over NVLink) is modelled");
    commmodel_out_free(&o);
    in = (commmodel_in){.world = 0, .gpus_per_node = 0, .gpu = 1};
    assert_int_equal(commmodel_predict(&in, &o, &why), -1);
    commmodel_out_free(&o);
    /* The A100s are not measured: refused, not guessed. */
    in = (commmodel_in){.world = 4, .gpus_per_node = 4, .gpu = commmodel_gpu_find("a100-80gb"),
                        .comms = &w4, .n_comms = 1};
    assert_int_equal(commmodel_predict(&in, &o, &why), -1);
    assert_string_equal(why, "NCCL's memory on this GPU kind is not measured (measured: "
                             "h100-80gb, h200)");
    commmodel_out_free(&o);
    assert_int_equal(commmodel_gpu_find("a100-40gb"), 3);
    assert_int_equal(commmodel_gpu_find("v100"), -1);
    /* A use of a communicator not in the list; a group larger than the world. */
    plan_comm_use bad_use = {1, COLL_ALL_REDUCE};
    in = (commmodel_in){.world = 4, .gpus_per_node = 4, .gpu = 1, .comms = &w4, .n_comms = 1,
                        .uses = &bad_use, .n_uses = 1};
    assert_int_equal(commmodel_predict(&in, &o, &why), -1);
    commmodel_out_free(&o);
    commmodel_comm big[2] = {{"world", 4, false}, {"x", 8, false}};
    in = (commmodel_in){.world = 4, .gpus_per_node = 4, .gpu = 1, .comms = big, .n_comms = 2};
    assert_int_equal(commmodel_predict(&in, &o, &why), -1);
    commmodel_out_free(&o);
    /* Malformed settings are ignored, as NCCL's own parser does. */
    static const char *const bad[] = {"NCCL_MAX_NCHANNELS=two", "NCCL_BUFFSIZE=-5", NULL};
    commmodel_comm_out w = predict(1, bad, ar_rs_ag, 3);
    assert_int_equal(w.total, 580 * MiB);
}

/* Every line of the H100 fixture: the world, then two splits (share as the line's
 * NCCL_COMM_SPLIT_SHARE_RESOURCES), each then used for AllReduce, ReduceScatter, AllGather.
 * Each stage's measured delta (cudaMemGetInfo's used, this stage less the one before) is the
 * model's number for it, to the byte: init world, split 1, split 2, and 0 at each first use. */
#define FIXTURE "tests/gpu/fixtures/nccl_split_h100.jsonl"

static uint64_t stage_used(json_t *stages, const char *name) {
    size_t k;
    json_t *row;
    json_array_foreach(stages, k, row) {
        if (!strcmp(json_string_value(json_array_get(row, 0)), name))
            return (uint64_t)json_integer_value(json_array_get(row, 1));
    }
    fail_msg("%s: no stage '%s'", FIXTURE, name);
    return 0;
}

static void h100_splits(void **state) {
    (void)state;
    FILE *f = fopen(FIXTURE, "r");
    assert_non_null(f);
    char line[8192];
    int lines = 0;
    int h100 = commmodel_gpu_find("h100-80gb");
    while (fgets(line, sizeof line, f)) {
        json_error_t err;
        json_t *d = json_loads(line, 0, &err);
        if (!d)
            fail_msg("%s:%d: %s", FIXTURE, lines + 1, err.text);
        lines++;
        json_t *envj = json_object_get(d, "env"), *stages = json_object_get(d, "stages");
        const char *env[8] = {NULL};
        char kv[8][96];
        int ne = 0;
        const char *key;
        json_t *val;
        bool share = false;   /* the line's setting, for the message */
        json_object_foreach(envj, key, val) {
            snprintf(kv[ne], sizeof kv[ne], "%s=%s", key, json_string_value(val));
            env[ne] = kv[ne];
            ne++;
            if (!strcmp(key, "NCCL_COMM_SPLIT_SHARE_RESOURCES"))
                share = !strcmp(json_string_value(val), "1");
        }
        /* The probe splits with config NULL (splitShare unset, 0) and the line's
         * NCCL_COMM_SPLIT_SHARE_RESOURCES, which NCCL lets win (init.cc): the model reads it. */
        commmodel_comm comms[3] = {{"world", 1, false}, {"split1", 1, false}, {"split2", 1, false}};
        plan_comm_use uses[9];
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++)
                uses[3 * c + k] = (plan_comm_use){(uint16_t)c, (uint8_t)ar_rs_ag[k]};
        commmodel_out o = predict_comms(1, h100, comms, 3, env, uses, 9);
        static const char *const names[] = {"context", "init world", "split 1", "split 2"};
        for (int c = 0; c < 3; c++) {
            uint64_t measured = stage_used(stages, names[c + 1]) - stage_used(stages, names[c]);
            if (o.comms[c].stage_bytes[0] != measured)
                fail_msg("%s:%d %s (share %d): predicted %llu B, measured %llu B", FIXTURE, lines,
                         names[c + 1], share, (unsigned long long)o.comms[c].stage_bytes[0],
                         (unsigned long long)measured);
            assert_int_equal(o.comms[c].share, c > 0 && share);
            assert_int_equal(o.comms[c].n_stages, 4);
            for (int k = 1; k < 4; k++)   /* every first use at world 1: nothing */
                assert_int_equal(o.comms[c].stage_bytes[k], 0);
        }
        uint64_t after = stage_used(stages, "split2 all_gather");
        assert_int_equal(o.total, after - stage_used(stages, "context"));
        commmodel_out_free(&o);
        json_decref(d);
    }
    fclose(f);
    assert_int_equal(lines, 8);   /* 4 settings x share 0, 1 */
}

/* The rows the brief gives, as numbers (MiB), so that a fixture read wrong cannot pass: the
 * world, split 1, split 2 on H100 at world 1. */
static void h100_split_rows(void **state) {
    (void)state;
    static const struct {
        const char *env;
        bool share;
        uint64_t world, s1, s2;
    } rows[] = {
        {NULL, false, 586, 390, 388},                     /* 198 + 4 + 64 x 6; + 2 once */
        {NULL, true, 586, 260, 260},                      /* 4 + 64 x (devPeers + userRanks) */
        {"NCCL_MAX_NCHANNELS=2", false, 214, 18, 16},
        {"NCCL_MAX_NCHANNELS=2", true, 214, 12, 12},
        {"NCCL_RUNTIME_CONNECT=0", false, 1098, 902, 900},   /* + 64 x 16 x 512 KiB each */
        {"NCCL_RUNTIME_CONNECT=0", true, 1098, 260, 260},    /* the world's proxy buffer */
        {"NCCL_BUFFSIZE=1048576", false, 586, 390, 388},
        {"NCCL_BUFFSIZE=1048576", true, 586, 260, 260},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        const char *env[] = {rows[k].env, NULL};
        commmodel_comm comms[3] = {{"world", 1, false}, {"a", 1, rows[k].share},
                                   {"b", 1, rows[k].share}};
        commmodel_out o = predict_comms(1, commmodel_gpu_find("h100-80gb"), comms, 3, env, NULL, 0);
        assert_int_equal(o.comms[0].total, rows[k].world * MiB);
        assert_int_equal(o.comms[1].total, rows[k].s1 * MiB);
        assert_int_equal(o.comms[2].total, rows[k].s2 * MiB);
        commmodel_out_free(&o);
    }
}

/* At world 2 the process's first kernel comes once, at the first collective of a group of 2 or
 * more, whichever communicator it is on; each communicator connects its own rings. */
static void first_kernel_once(void **state) {
    (void)state;
    commmodel_comm comms[2] = {{"world", 2, false}, {"tp", 2, false}};
    const plan_comm_use uses[] = {{1, COLL_ALL_GATHER}, {0, COLL_ALL_REDUCE}, {1, COLL_ALL_REDUCE}};
    commmodel_out o = predict_comms(2, 1, comms, 2, NULL, uses, 3);
    assert_string_equal(o.comms[1].stage_name[1], "all_gather");
    assert_int_equal(o.comms[1].stage_bytes[1], (32 * 12 + 90) * MiB);   /* rings + kernel */
    assert_int_equal(o.comms[0].stage_bytes[1], 32 * 12 * MiB);          /* rings only */
    assert_int_equal(o.comms[1].stage_bytes[2], 0);
    assert_int_equal(o.comms[0].stage_bytes[0], 388 * MiB);              /* H200's 192 */
    assert_int_equal(o.comms[1].stage_bytes[0], (196 + 2) * MiB);        /* + the once granule */
    commmodel_out_free(&o);
}

/* A schedule's plan as the report reads it: rank 0's communicators from its plan, a collective
 * refused under expect_error no first use (NCCL never sees it), and the same answer after
 * plan_compact took its summary (the ops gone). World 2 on h200 (MiB): the world 192 + 4 +
 * 32 x 6 = 388, 384 of rings at its all_reduce; tp 4 + 192 + 2 = 198, 384 + 90 at its
 * all_reduce, the process's first collective. */
static void for_plan_and_compact(void **state) {
    (void)state;
    static const char yaml[] =
        "world: 2\n"
        "comms:\n"
        "  tp: {ranks: [0, 1]}\n"
        "steps:\n"
        "  - alloc: {buf: x, count: 8}\n"
        "  - alloc: {buf: y, count: 3}\n"
        "  - expect_error:\n"
        "      name: rs-nondivisible\n"
        "      error: size_mismatch\n"
        "      step:\n"
        "        reduce_scatter: {send: x, recv: y, op: sum, comm: tp}\n"
        "  - all_reduce: {buf: x, comm: tp}\n"
        "  - all_reduce: {buf: x}\n";
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    assert_non_null(s);
    sched_params params = {0};
    rank_plan p;
    assert_int_equal(plan_expand(s, 0, &params, 2, 0, NULL, &p, &d), 0);
    for (int round = 0; round < 2; round++) {
        commmodel_out o;
        const char *why = NULL;
        assert_int_equal(commmodel_for_plan(&p, 1, &o, &why), 0);
        assert_int_equal(o.n_comms, 2);
        assert_string_equal(o.comms[1].name, "tp");
        assert_int_equal(o.comms[0].n_stages, 2);
        assert_int_equal(o.comms[1].n_stages, 2);   /* the refused reduce_scatter is none */
        assert_string_equal(o.comms[1].stage_name[1], "all_reduce");
        assert_int_equal(o.comms[0].stage_bytes[0], 388 * MiB);
        assert_int_equal(o.comms[0].stage_bytes[1], 384 * MiB);
        assert_int_equal(o.comms[1].stage_bytes[0], 198 * MiB);
        assert_int_equal(o.comms[1].stage_bytes[1], 474 * MiB);
        commmodel_out_free(&o);
        if (round == 0)
            plan_compact(&p, NULL, 0, true, NULL);   /* the report's plans are compact */
    }
    plan_free(&p);
    sched_free(s);
    ml_diags_free(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(world1_default),
        cmocka_unit_test(world1_settings),
        cmocka_unit_test(world2_measured),
        cmocka_unit_test(first_use_order),
        cmocka_unit_test(refusals),
        cmocka_unit_test(h100_splits),
        cmocka_unit_test(h100_split_rows),
        cmocka_unit_test(first_kernel_once),
        cmocka_unit_test(for_plan_and_compact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
