/* SPDX-License-Identifier: MIT */
/* coll.h — the tables every module shares: data types, reduction ops, collectives.
 *
 * One row per thing; the rest of memlife never switches on a collective's name. Count formulas
 * follow NCCL's src/enqueue.cc (ncclFuncSendCount / ncclFuncRecvCount), in-place rules NCCL's
 * documentation, ring steps src/graph/tuning.cc, bus-bandwidth factors nccl-tests. */
#ifndef MEMLIFE_COLL_H
#define MEMLIFE_COLL_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum {
    DT_INT8, DT_UINT8, DT_INT32, DT_UINT32, DT_INT64, DT_UINT64,
    DT_FLOAT16, DT_BFLOAT16, DT_FLOAT32, DT_FLOAT64,
    DT_COUNT
} ml_dtype;

typedef enum { DTK_SIGNED, DTK_UNSIGNED, DTK_FLOAT } ml_dtype_kind;

typedef struct {
    const char *name;      /* as written in schedules: "float32" */
    uint32_t size;         /* bytes per element */
    ml_dtype_kind kind;
    int nccl;              /* ncclDataType_t value (ncclInt8 = 0 ... ncclBfloat16 = 9) */
} ml_dtype_info;
extern const ml_dtype_info ml_dtypes[DT_COUNT];
int ml_dtype_lookup(const char *name, size_t len);    /* -1 when unknown */

/* RED_AVG is ncclAvg (NCCL 2.10+): integers sum (wrapping) then divide by the world, truncating
 * toward zero (FuncSumPostDiv); floats multiply each input by 1/world rounded to the dtype, then
 * sum (FuncPreMulSum); data.h computes both. */
typedef enum { RED_SUM, RED_PROD, RED_MAX, RED_MIN, RED_AVG, RED_COUNT } ml_redop;
typedef struct {
    const char *name;      /* "sum" */
    int nccl;              /* ncclRedOp_t: ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3, ncclAvg 4 */
} ml_redop_info;
extern const ml_redop_info ml_redops[RED_COUNT];
int ml_redop_lookup(const char *name, size_t len);    /* -1 when unknown */
/* "sum, prod, max, min, avg": the names of a table, for "expected one of ..." messages. */
const char *ml_redop_list(void);
const char *ml_dtype_list(void);

/* COLL_SEND / COLL_RECV are point-to-point (ncclSend / ncclRecv): rows of this table too (their
 * step keys are `send:` and `recv:` with `buf:` and `peer:`, the peer in the root field), but
 * only the two ranks of a pair take part, so what compares every rank's collectives (lint's
 * cross-rank check, the executor's sequence check, warm-up) skips rows with p2p set.
 * COLL_ALL_TO_ALL splits every rank's send into world blocks, block j going to rank j (PyTorch's
 * all_to_all_single); the cuda backend issues it as grouped ncclSend/ncclRecv, one SendRecv
 * kernel. */
typedef enum {
    COLL_ALL_REDUCE, COLL_REDUCE_SCATTER, COLL_ALL_GATHER, COLL_BROADCAST, COLL_REDUCE,
    COLL_SEND, COLL_RECV, COLL_ALL_TO_ALL,
    COLL_COUNT
} ml_coll;
typedef enum { P2P_NONE, P2P_SEND, P2P_RECV } ml_p2p;

/* The data flow of a collective: what each rank's recv holds afterwards, from whose send. A row
 * declares it; equiv's symbolic data flow and the floor analysis read it, so a new collective
 * is one row here (and a launcher per backend), not a branch in each of them. The zero value is
 * "undeclared", which they treat as an internal error, never as "recv unchanged". */
typedef enum {
    FLOW_UNDECLARED,
    FLOW_REDUCTION,            /* the reduction (op) over every rank's send */
    FLOW_GATHER,               /* slice s of recv (count elements at s*count) = rank s's send */
    FLOW_ROOT_SEND,            /* the root's send */
    FLOW_PEER_SEND,            /* send/recv: a recv holds its peer's matching send (the k-th send
                                  from that peer to this rank); a send changes nothing */
    FLOW_TRANSPOSE,            /* world blocks of count/world elements: rank r's recv block j =
                                  rank j's send block r (all_to_all) */
} ml_flow_source;

typedef struct {
    ml_flow_source source;
    /* recv holds slice `rank` of the source (count elements at rank*count), not all of it: a
     * reduce_scatter's shard. NCCL's in-place form then has recv at that slot of send. */
    bool shard_of_rank;
    bool root_only;            /* only the root's recv is written (reduce); the others keep theirs */
} ml_coll_flow;

/* How many elements one side holds, from NCCL's count argument. The zero value is undeclared
 * (a unit test walks the table): a forgotten "world x" would under-count a buffer. */
typedef enum { CNT_UNDECLARED, CNT_COUNT, CNT_WORLD_X_COUNT } ml_count_side;

/* Where NCCL runs a collective in place (send and recv in one buffer). The zero value is
 * undeclared: "recv == send" is a rule, never a default. */
typedef enum {
    INPLACE_UNDECLARED,
    INPLACE_SAME,              /* recv == send (AllReduce, Broadcast, Reduce; send/recv: one view) */
    INPLACE_RECV_IN_SEND,      /* recv == send + rank*count (ReduceScatter: this rank's slot) */
    INPLACE_SEND_IN_RECV,      /* send == recv + rank*count (AllGather) */
    INPLACE_NEVER,             /* no in-place form: any overlap of send and recv is an error */
} ml_inplace;

/* Whose nccl-tests measurement (analyzer/predict/timemodel.c, 2 x H200) gives a collective's
 * default bus bandwidth in the time model: its own where one was measured, else the one named
 * (the row's comment says why). Undeclared is a unit-test failure, never AllReduce's. */
typedef enum {
    BUSBW_UNDECLARED,
    BUSBW_ALL_REDUCE, BUSBW_REDUCE_SCATTER, BUSBW_ALL_GATHER,
    BUSBW_COUNT
} ml_busbw_ref;

/* "count" is NCCL's count argument: AllReduce/Broadcast/Reduce the element count of both
 * buffers, ReduceScatter the recvcount, AllGather the sendcount, AllToAll the element count of
 * both buffers (count/world to each rank). Every field is required: the table's unit test
 * (tests/unit/test_util.c) fails on a row that leaves one at its zero value, except the bools. */
typedef struct {
    const char *name;            /* schedule key: "reduce_scatter" */
    const char *nccl_api;        /* "ncclReduceScatter" (for messages) */
    /* CUPTI name fragment: "ncclDevKernel_ReduceScatter". Rows with the same fragment launch the
     * same kernel (send, recv and all_to_all: SendRecv) and are counted as one kernel family. */
    const char *kernel_match;
    bool has_op, has_root;
    ml_count_side send_n, recv_n;   /* send count, recv count: count or world x count */
    bool count_per_rank;         /* count must divide by world (count/world to each rank) */
    ml_inplace inplace;
    /* Ring steps per rank (tuning.cc) and bus-bandwidth factor (nccl-tests) at world n. */
    int (*ring_steps)(int world);
    double (*busbw_factor)(int world);
    /* Logical bytes a rank sends over its ring link for a full payload of `bytes`
     * (the full tensor: AR/RS the send size, AG the recv size). */
    double (*link_bytes)(double full_bytes, int world);
    ml_busbw_ref busbw_ref;
    ml_coll_flow flow;
    ml_p2p p2p;                  /* send or recv: one view (`buf:`), a peer instead of a root */
} ml_coll_info;
extern const ml_coll_info ml_colls[COLL_COUNT];
int ml_coll_lookup(const char *name, size_t len);     /* -1 when unknown */
/* The first row whose kernel_match is c's: one kernel family (kernels.c, equiv_kernels.c). */
ml_coll ml_coll_kernel_family(ml_coll c);

static inline uint64_t ml_coll_send_count(ml_coll c, uint64_t count, int world) {
    return ml_colls[c].send_n == CNT_WORLD_X_COUNT ? count * (uint64_t)world : count;
}
static inline uint64_t ml_coll_recv_count(ml_coll c, uint64_t count, int world) {
    return ml_colls[c].recv_n == CNT_WORLD_X_COUNT ? count * (uint64_t)world : count;
}
/* NCCL's count from the element counts of the two views: the side that is not world x count. */
static inline uint64_t ml_coll_count_of(ml_coll c, uint64_t send_count, uint64_t recv_count) {
    return ml_colls[c].send_n == CNT_WORLD_X_COUNT ? recv_count : send_count;
}
/* Element offset of recv relative to send (one buffer) at which NCCL runs c in place on rank;
 * false where it never does. ReduceScatter recv == send + rank*count; AllGather send == recv +
 * rank*count (so recv - send = -rank*count); the others 0. */
static inline bool ml_coll_inplace_at(ml_coll c, uint64_t count, int rank, int64_t *recv_minus_send) {
    switch (ml_colls[c].inplace) {
    case INPLACE_SAME: *recv_minus_send = 0; return true;
    case INPLACE_RECV_IN_SEND: *recv_minus_send = (int64_t)count * rank; return true;
    case INPLACE_SEND_IN_RECV: *recv_minus_send = -(int64_t)count * rank; return true;
    default: *recv_minus_send = 0; return false;
    }
}

#endif
