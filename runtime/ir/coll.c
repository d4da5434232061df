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

static int64_t inplace_same(uint64_t count, int rank) { return 0; }
/* ReduceScatter: recvbuff == sendbuff + rank*recvcount. */
static int64_t inplace_rs(uint64_t count, int rank) { return (int64_t)count * rank; }
/* AllGather: sendbuff == recvbuff + rank*sendcount, so recv - send = -rank*sendcount. */
static int64_t inplace_ag(uint64_t count, int rank) { return -(int64_t)count * rank; }

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

const ml_coll_info ml_colls[COLL_COUNT] = {
    [COLL_ALL_REDUCE] = {"all_reduce", "ncclAllReduce", "ncclDevKernel_AllReduce", true, false, 0, 0,
                         inplace_same, ring_steps_ar, busbw_ar, link_ar,
                         {FLOW_REDUCTION, false, false}},
    [COLL_REDUCE_SCATTER] = {"reduce_scatter", "ncclReduceScatter", "ncclDevKernel_ReduceScatter",
                             true, false, 1, 0, inplace_rs, ring_steps_one_pass, busbw_one_pass,
                             link_one_pass, {FLOW_REDUCTION, true, false}},
    [COLL_ALL_GATHER] = {"all_gather", "ncclAllGather", "ncclDevKernel_AllGather", false, false, 0,
                         1, inplace_ag, ring_steps_one_pass, busbw_one_pass, link_one_pass,
                         {FLOW_GATHER, false, false}},
    [COLL_BROADCAST] = {"broadcast", "ncclBroadcast", "ncclDevKernel_Broadcast", false, true, 0, 0,
                        inplace_same, ring_steps_one_pass, busbw_root, link_chain,
                        {FLOW_ROOT_SEND, false, false}},
    [COLL_REDUCE] = {"reduce", "ncclReduce", "ncclDevKernel_Reduce", true, true, 0, 0, inplace_same,
                     ring_steps_one_pass, busbw_root, link_chain, {FLOW_REDUCTION, false, true}},
    /* One transfer to (from) one peer: one step, the whole message once over the link; NCCL
     * runs both in its SendRecv kernel. A recv sends nothing. */
    [COLL_SEND] = {"send", "ncclSend", "ncclDevKernel_SendRecv", false, false, 0, 0, inplace_same,
                   ring_steps_p2p, busbw_root, link_chain, {FLOW_PEER_SEND, false, false}, P2P_SEND},
    [COLL_RECV] = {"recv", "ncclRecv", "ncclDevKernel_SendRecv", false, false, 0, 0, inplace_same,
                   ring_steps_p2p, busbw_root, link_none, {FLOW_PEER_SEND, false, false}, P2P_RECV},
};

int ml_coll_lookup(const char *name, size_t len) {
    for (int k = 0; k < COLL_COUNT; k++)
        if (name_is(ml_colls[k].name, name, len))
            return k;
    return -1;
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
