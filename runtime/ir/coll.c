/* SPDX-License-Identifier: MIT */
/* coll.c — the shared tables: dtypes, reduction ops, collectives, and the name tables of the
 * IR enums (step kinds, plan op kinds, error codes, memory views).
 *
 * NCCL enum values are copied from nccl.h (2.28): they are what the cuda backend passes through,
 * so they must match exactly. Collective formulas: src/enqueue.cc (counts), src/graph/tuning.cc
 * (ring steps), nccl-tests getBw of each src file (bus-bandwidth factors). */
#include "ir/coll.h"
#include "ir/plan.h"
#include "ir/sched.h"

#include <stdio.h>
#include <string.h>

const ml_dtype_info ml_dtypes[DT_COUNT] = {
    [DT_INT8] = {"int8", 1, DTK_SIGNED, 0},
    [DT_UINT8] = {"uint8", 1, DTK_UNSIGNED, 1},
    [DT_INT32] = {"int32", 4, DTK_SIGNED, 2},
    [DT_UINT32] = {"uint32", 4, DTK_UNSIGNED, 3},
    [DT_INT64] = {"int64", 8, DTK_SIGNED, 4},
    [DT_UINT64] = {"uint64", 8, DTK_UNSIGNED, 5},
    [DT_FLOAT16] = {"float16", 2, DTK_FLOAT, 6},
    [DT_BFLOAT16] = {"bfloat16", 2, DTK_FLOAT, 9},
    [DT_FLOAT32] = {"float32", 4, DTK_FLOAT, 7},
    [DT_FLOAT64] = {"float64", 8, DTK_FLOAT, 8},
};

const ml_redop_info ml_redops[RED_COUNT] = {
    [RED_SUM] = {"sum", 0},
    [RED_PROD] = {"prod", 1},
    [RED_MAX] = {"max", 2},
    [RED_MIN] = {"min", 3},
    [RED_AVG] = {"avg", 4},
};

static bool name_is(const char *table_name, const char *name, size_t len) {
    return table_name[0] == (len ? name[0] : '\0') && strncmp(table_name, name, len) == 0 &&
           table_name[len] == '\0';
}

int ml_dtype_lookup(const char *name, size_t len) {
    for (int k = 0; k < DT_COUNT; k++)
        if (name_is(ml_dtypes[k].name, name, len))
            return k;
    return -1;
}

int ml_redop_lookup(const char *name, size_t len) {
    for (int k = 0; k < RED_COUNT; k++)
        if (name_is(ml_redops[k].name, name, len))
            return k;
    return -1;
}

/* The names of a table joined by ", ", built once (the tables are constant). */
static const char *name_list(char *buf, size_t cap, const char *(*name)(int), int n) {
    if (buf[0])
        return buf;
    size_t at = 0;
    for (int k = 0; k < n && at < cap; k++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", k ? ", " : "", name(k));
    return buf;
}
static const char *redop_name(int k) { return ml_redops[k].name; }
static const char *dtype_name(int k) { return ml_dtypes[k].name; }
const char *ml_redop_list(void) {
    static char buf[64];
    return name_list(buf, sizeof buf, redop_name, RED_COUNT);
}
const char *ml_dtype_list(void) {
    static char buf[128];
    return name_list(buf, sizeof buf, dtype_name, DT_COUNT);
}

/* ---- Collectives ------------------------------------------------------------------------------ */

static int ring_steps_ar(int n) { return 2 * (n - 1); }
static int ring_steps_one_pass(int n) { return n - 1; }

static double busbw_ar(int n) { return 2.0 * (n - 1) / n; }
static double busbw_one_pass(int n) { return (double)(n - 1) / n; }
static double busbw_root(int n) { return 1.0; }

/* A ring AllReduce sends 2(N-1)/N of the tensor per rank; RS and AG (N-1)/N; broadcast and reduce
 * run as a pipelined chain, so every link carries the whole message once. */
static double link_ar(double m, int n) { return 2.0 * (n - 1) / n * m; }
static double link_one_pass(double m, int n) { return (double)(n - 1) / n * m; }
static double link_chain(double m, int n) { return m; }
static double link_none(double m, int n) { return 0; }
static int ring_steps_p2p(int n) { return 1; }

/* Designated fields: a row that forgets one leaves it at its zero value, which the table's unit
 * test refuses (every enum's zero is "undeclared", every function pointer required). */
const ml_coll_info ml_colls[COLL_COUNT] = {
    [COLL_ALL_REDUCE] = {.name = "all_reduce", .nccl_api = "ncclAllReduce",
                         .kernel_match = "ncclDevKernel_AllReduce", .has_op = true,
                         .send_n = CNT_COUNT, .recv_n = CNT_COUNT, .inplace = INPLACE_SAME,
                         .ring_steps = ring_steps_ar, .busbw_factor = busbw_ar,
                         .link_bytes = link_ar, .busbw_ref = BUSBW_ALL_REDUCE,
                         .flow = {FLOW_REDUCTION, false, false}},
    [COLL_REDUCE_SCATTER] = {.name = "reduce_scatter", .nccl_api = "ncclReduceScatter",
                             .kernel_match = "ncclDevKernel_ReduceScatter", .has_op = true,
                             .send_n = CNT_WORLD_X_COUNT, .recv_n = CNT_COUNT,
                             .inplace = INPLACE_RECV_IN_SEND, .ring_steps = ring_steps_one_pass,
                             .busbw_factor = busbw_one_pass, .link_bytes = link_one_pass,
                             .busbw_ref = BUSBW_REDUCE_SCATTER, .flow = {FLOW_REDUCTION, true, false}},
    [COLL_ALL_GATHER] = {.name = "all_gather", .nccl_api = "ncclAllGather",
                         .kernel_match = "ncclDevKernel_AllGather", .send_n = CNT_COUNT,
                         .recv_n = CNT_WORLD_X_COUNT, .inplace = INPLACE_SEND_IN_RECV,
                         .ring_steps = ring_steps_one_pass, .busbw_factor = busbw_one_pass,
                         .link_bytes = link_one_pass, .busbw_ref = BUSBW_ALL_GATHER,
                         .flow = {FLOW_GATHER, false, false}},
    /* Broadcast, reduce, send and recv were not measured: AllReduce's bus bandwidth. */
    [COLL_BROADCAST] = {.name = "broadcast", .nccl_api = "ncclBroadcast",
                        .kernel_match = "ncclDevKernel_Broadcast", .has_root = true,
                        .send_n = CNT_COUNT, .recv_n = CNT_COUNT, .inplace = INPLACE_SAME,
                        .ring_steps = ring_steps_one_pass, .busbw_factor = busbw_root,
                        .link_bytes = link_chain, .busbw_ref = BUSBW_ALL_REDUCE,
                        .flow = {FLOW_ROOT_SEND, false, false}},
    [COLL_REDUCE] = {.name = "reduce", .nccl_api = "ncclReduce",
                     .kernel_match = "ncclDevKernel_Reduce", .has_op = true, .has_root = true,
                     .send_n = CNT_COUNT, .recv_n = CNT_COUNT, .inplace = INPLACE_SAME,
                     .ring_steps = ring_steps_one_pass, .busbw_factor = busbw_root,
                     .link_bytes = link_chain, .busbw_ref = BUSBW_ALL_REDUCE,
                     .flow = {FLOW_REDUCTION, false, true}},
    /* One transfer to (from) one peer: one step, the whole message once over the link; NCCL
     * runs both in its SendRecv kernel. A recv sends nothing. */
    [COLL_SEND] = {.name = "send", .nccl_api = "ncclSend", .kernel_match = "ncclDevKernel_SendRecv",
                   .send_n = CNT_COUNT, .recv_n = CNT_COUNT, .inplace = INPLACE_SAME,
                   .ring_steps = ring_steps_p2p, .busbw_factor = busbw_root,
                   .link_bytes = link_chain, .busbw_ref = BUSBW_ALL_REDUCE,
                   .flow = {FLOW_PEER_SEND, false, false}, .p2p = P2P_SEND},
    [COLL_RECV] = {.name = "recv", .nccl_api = "ncclRecv", .kernel_match = "ncclDevKernel_SendRecv",
                   .send_n = CNT_COUNT, .recv_n = CNT_COUNT, .inplace = INPLACE_SAME,
                   .ring_steps = ring_steps_p2p, .busbw_factor = busbw_root,
                   .link_bytes = link_none, .busbw_ref = BUSBW_ALL_REDUCE,
                   .flow = {FLOW_PEER_SEND, false, false}, .p2p = P2P_RECV},
    /* count/world elements to each of the world peers (its own block a local copy): (N-1)/N of
     * the message crosses the links in N-1 transfers, nccl-tests' alltoall factor (N-1)/N. Not
     * measured: AllGather's bus bandwidth, the other collective whose every rank sends and
     * receives (N-1)/N of the message once. */
    [COLL_ALL_TO_ALL] = {.name = "all_to_all", .nccl_api = "ncclSend/ncclRecv",
                         .kernel_match = "ncclDevKernel_SendRecv", .send_n = CNT_COUNT,
                         .recv_n = CNT_COUNT, .count_per_rank = true, .inplace = INPLACE_NEVER,
                         .ring_steps = ring_steps_one_pass, .busbw_factor = busbw_one_pass,
                         .link_bytes = link_one_pass, .busbw_ref = BUSBW_ALL_GATHER,
                         .flow = {FLOW_TRANSPOSE, false, false}},
};

int ml_coll_lookup(const char *name, size_t len) {
    for (int k = 0; k < COLL_COUNT; k++)
        if (name_is(ml_colls[k].name, name, len))
            return k;
    return -1;
}

ml_coll ml_coll_kernel_family(ml_coll c) {
    for (int k = 0; k < (int)c; k++)
        if (!strcmp(ml_colls[k].kernel_match, ml_colls[c].kernel_match))
            return (ml_coll)k;
    return c;
}

/* ---- Enum names ------------------------------------------------------------------------------- */

const char *const sched_error_names[ERR_COUNT_] = {
    [ERR_NONE] = "none",
    [ERR_SIZE_MISMATCH] = "size_mismatch",
    [ERR_DTYPE_MISMATCH] = "dtype_mismatch",
    [ERR_BAD_OP] = "bad_op",
    [ERR_OUT_OF_BOUNDS] = "out_of_bounds",
    [ERR_BAD_INPLACE] = "bad_inplace",
};

/* ST_COLL has one key per collective (ml_colls[].name); "collective" names the kind. */
const char *const sched_step_names[ST_KIND_COUNT] = {
    [ST_ALLOC] = "alloc",     [ST_FREE] = "free",       [ST_RELEASE] = "release",
    [ST_COLL] = "collective", [ST_SYNC] = "sync",       [ST_RECORD] = "record",
    [ST_WAIT] = "wait",       [ST_REPEAT] = "repeat",   [ST_REGION] = "region",
    [ST_INIT] = "init",       [ST_COPY] = "copy",       [ST_SCALE] = "scale",
    [ST_COMPUTE] = "compute", [ST_CHECK] = "check",     [ST_EXPECT_ERROR] = "expect_error",
    [ST_RECORD_STREAM] = "record_stream", [ST_EMPTY_CACHE] = "empty_cache",
    [ST_GROUP] = "group",
};

const char *const plan_op_names[OP_KIND_COUNT] = {
    [OP_ALLOC] = "alloc",
    [OP_FREE] = "free",
    [OP_RELEASE] = "release",
    [OP_COLL] = "collective",
    [OP_SYNC] = "sync",
    [OP_RECORD] = "record",
    [OP_WAIT] = "wait",
    [OP_INIT] = "init",
    [OP_COPY] = "copy",
    [OP_SCALE] = "scale",
    [OP_COMPUTE] = "compute",
    [OP_CHECK] = "check",
    [OP_REGION_BEGIN] = "region_begin",
    [OP_REGION_END] = "region_end",
    [OP_EXPECT_BEGIN] = "expect_begin",
    [OP_RECORD_STREAM] = "record_stream",
    [OP_EMPTY_CACHE] = "empty_cache",
    [OP_GROUP_BEGIN] = "group_begin",
    [OP_GROUP_END] = "group_end",
    [OP_ABSENT] = "absent",
};

const char *plan_op_name(const plan_op *op) {
    return op->kind == OP_COLL ? ml_colls[op->u.coll.coll].name : plan_op_names[op->kind];
}
