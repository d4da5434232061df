/* SPDX-License-Identifier: MIT */
/* test_commmodel.c — the predicted communicator against NCCL's memory as measured on H200
 * (NCCL 2.28.3, driver 580.159.04, cudaMemGetInfo deltas through memlife's cuda backend and
 * tests/gpu/probe/nccl_mem.py; issue 22):
 *   world 1, one process: 580 MiB at ncclCommInitAll, 0 more at the first AllReduce,
 *     ReduceScatter and AllGather (1 element and 16 Mi floats each); NCCL_MAX_NCHANNELS=2:
 *     208 MiB; NCCL_RUNTIME_CONNECT=0: 1092 MiB; NCCL_BUFFSIZE=1048576,
 *     NCCL_LL128_BUFFSIZE=1048576, NCCL_WORK_FIFO_BYTES=4194304, NCCL_MIN_NCHANNELS=32: 580 MiB;
 *   world 2, one process on 2 x H200: 388 MiB per GPU at ncclCommInitAll, +474 MiB at the first
 *     AllReduce, 0 at the ReduceScatter and AllGather after it (862 MiB). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "predict/commmodel.h"

#define MiB ((uint64_t)1 << 20)

static const char *const *env_table;
static const char *from_table(const char *name) {
    size_t n = strlen(name);
    for (const char *const *e = env_table; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static commmodel_out predict(int world, const char *const *env, const ml_coll *order, int n) {
    commmodel_in in = {.world = world, .gpus_per_node = world, .first_use = order,
                       .n_first_use = n};
    env_table = env;
    commmodel_env_read(&in.env, from_table);
    commmodel_out o;
    const char *why = NULL;
    assert_int_equal(commmodel_predict(&in, &o, &why), 0);
    uint64_t sum = 0;
    for (int k = 0; k < o.n_terms; k++)
        sum += o.terms[k].bytes;
    assert_int_equal(sum, o.total);   /* every byte is a named term */
    return o;
}

static const ml_coll ar_rs_ag[] = {COLL_ALL_REDUCE, COLL_REDUCE_SCATTER, COLL_ALL_GATHER};

static void world1_default(void **state) {
    (void)state;
    commmodel_out o = predict(1, NULL, ar_rs_ag, 3);
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
        commmodel_out o = predict(1, cases[k].env, ar_rs_ag, 3);
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
    commmodel_out o = predict(2, NULL, ar_rs_ag, 3);
    assert_int_equal(o.channels, 32);
    assert_int_equal(o.stage_bytes[0], 388 * MiB);   /* 192 + 4 + 32 x 6 */
    assert_int_equal(o.stage_bytes[1], 474 * MiB);   /* 32 x (recv 6 + send 6) + 90 */
    assert_int_equal(o.stage_bytes[2], 0);
    assert_int_equal(o.stage_bytes[3], 0);
    assert_int_equal(o.total, 862 * MiB);
    /* The rings' term names its arithmetic: P2P read puts Simple on the sender. */
    bool found = false;
    for (int k = 0; k < o.n_terms; k++)
        if (strcmp(o.terms[k].name, "rings") == 0) {
            assert_string_equal(o.terms[k].detail, "32 channels x (recv 6 + send 6 MiB)");
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
    commmodel_out o = predict(2, NULL, rs_ag, 2);
    assert_string_equal(o.stage_name[1], "reduce_scatter");
    assert_int_equal(o.stage_bytes[1], 474 * MiB);
    assert_int_equal(o.stage_bytes[2], 0);
    o = predict(2, NULL, NULL, 0);        /* no collective: the init alone */
    assert_int_equal(o.total, 388 * MiB);
}

static void refusals(void **state) {
    (void)state;
    commmodel_in in = {.world = 4, .gpus_per_node = 2};
    commmodel_out o;
    const char *why = NULL;
    assert_int_equal(commmodel_predict(&in, &o, &why), -1);
    assert_string_equal(why, "only one node (every rank's GPU over NVLink) is modelled");
    in = (commmodel_in){.world = 0, .gpus_per_node = 0};
    assert_int_equal(commmodel_predict(&in, &o, &why), -1);
    /* Malformed settings are ignored, as NCCL's own parser does. */
    static const char *const bad[] = {"NCCL_MAX_NCHANNELS=two", "NCCL_BUFFSIZE=-5", NULL};
    o = predict(1, bad, ar_rs_ag, 3);
    assert_int_equal(o.total, 580 * MiB);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(world1_default),
        cmocka_unit_test(world1_settings),
        cmocka_unit_test(world2_measured),
        cmocka_unit_test(first_use_order),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
