/* SPDX-License-Identifier: MIT */
/* commmodel.h — NCCL's own device memory (the communicator) predicted from its rules, for a
 * schedule's collectives at its world: a pure function of the world, the GPUs per node, the
 * collectives in the order of their first use and NCCL's settings. Nothing here reads a device.
 *
 * Rules from NCCL 2.28.3's source (src/init.cc, src/channel.cc, src/transport/p2p.cc,
 * src/transport/net.cc, src/include/alloc.h) and constants measured on H200 with memlife's cuda
 * backend and tests/gpu/probe/nccl_mem.py (cudaMemGetInfo deltas; NCCL_DEBUG_SUBSYS=ALLOC):
 *  - every device allocation NCCL makes goes through cuMem and is rounded up to the minimum
 *    granularity, 2 MiB on H200 (alloc.h: ALIGN_SIZE(size, granularity)): a 4-byte array costs
 *    2 MiB;
 *  - init: a constant of the library (its kernels' code loaded by ncclInitKernelsForDevice and the
 *    runtime state around them: 192 MiB, measured at world 1 with 64 and with 2 channels), the
 *    device comm with its channel table and rankToLocalRank (a granule each), and per channel
 *    three granules (channel.cc: the shared devPeers, the channel's devPeers, ring userRanks);
 *  - with NCCL_RUNTIME_CONNECT=0, init also allocates the net proxy's shared p2p buffer
 *    (net.cc sharedNetBuffersInit: p2p channels x NCCL_SHARED_STEPS (16) x the p2p chunk,
 *    512 KiB over NVLink, capped at NCCL_BUFFSIZE / 8) and connects every ring at once;
 *  - a connection (p2p.cc): the receiver allocates its header (4 KiB) + the LL, LL128 and, without
 *    P2P read, Simple buffers; the sender its header + Simple with P2P read (the default over
 *    NVLink on sm80+); each rounded up to 2 MiB (CUDA_IPC_MIN). Rings connect at the first
 *    collective that needs them (NCCL_RUNTIME_CONNECT=1, the default): one send and one receive
 *    per channel; at world 1 NCCL connects nothing and launches no kernel;
 *  - the first kernel NCCL launches adds the driver's local memory for it (90 MiB on 2 x H200:
 *    474 MiB at the first AllReduce less 32 rings of 12 MiB; to be measured again when two GPUs
 *    are lent);
 *  - the work FIFO (NCCL_WORK_FIFO_BYTES) is pinned host memory: no device bytes.
 * Measured: world 1, 580 MiB after init and nothing more at any collective; NCCL_MAX_NCHANNELS=2
 * 208 MiB; NCCL_RUNTIME_CONNECT=0 1092 MiB; NCCL_BUFFSIZE, NCCL_LL128_BUFFSIZE and
 * NCCL_WORK_FIFO_BYTES unchanged at world 1. World 2 (one process, 2 x H200): 388 MiB at init,
 * +474 MiB at the first AllReduce, nothing more for ReduceScatter and AllGather (862 MiB). */
#ifndef MEMLIFE_COMMMODEL_H
#define MEMLIFE_COMMMODEL_H

#include "ir/plan.h"

#include <stdbool.h>
#include <stdint.h>

/* NCCL's settings the model reads; -1 (or COMMMODEL_UNSET) where the environment leaves NCCL's
 * default. */
typedef struct {
    int64_t buffsize;          /* NCCL_BUFFSIZE: Simple, default 4 MiB */
    int64_t ll_buffsize;       /* NCCL_LL_BUFFSIZE: default 512 KiB */
    int64_t ll128_buffsize;    /* NCCL_LL128_BUFFSIZE: default 4915200 B (about 4.69 MiB) */
    int min_nchannels;         /* NCCL_MIN_NCHANNELS */
    int max_nchannels;         /* NCCL_MAX_NCHANNELS */
    int runtime_connect;       /* NCCL_RUNTIME_CONNECT: default 1 */
    int p2p_read;              /* NCCL_P2P_READ_ENABLE: default on over NVLink */
    int64_t work_fifo_bytes;   /* NCCL_WORK_FIFO_BYTES: host memory either way */
} commmodel_env;

/* Reads the settings through getenv_fn (getenv, or a table in tests); malformed values are
 * treated as absent, as NCCL's own parser does. */
void commmodel_env_read(commmodel_env *e, const char *(*getenv_fn)(const char *name));

typedef struct {
    int world;                 /* ranks in the communicator */
    int gpus_per_node;         /* ranks sharing a node (all over NVLink on H200) */
    const ml_coll *first_use;  /* collectives in the order of their first use */
    int n_first_use;
    commmodel_env env;
} commmodel_in;

/* The CUDA context of a fresh process on H200 (driver 580.159.04, CUDA 13.0): cudaSetDevice +
 * cudaFree(0) raised NVML's used by 552402944 B (526.8125 MiB), and cudaMemGetInfo's used read
 * the same right after (its zero is the idle GPU; tests/gpu/probe/nccl_mem.py, stage context).
 * What one GPU then shows is context + communicator + the schedule's device view: measured
 * 526.8125 + 580 + 256 = 1362.8125 MiB for a 256 MiB buffer at world 1. */
#define COMMMODEL_CUDA_CONTEXT_BYTES ((uint64_t)552402944)

#define COMMMODEL_MAX_TERMS 24
#define COMMMODEL_MAX_STAGES (1 + COLL_COUNT)

typedef struct {
    const char *name;          /* "channels: 3 granules each", ... */
    int stage;                 /* 0: init; k: the k-th first use */
    uint64_t bytes;
    char detail[120];          /* how the bytes come about: "64 channels x 3 x 2 MiB" */
} commmodel_term;

typedef struct {
    int n_stages;              /* 1 + n_first_use */
    const char *stage_name[COMMMODEL_MAX_STAGES];   /* "init", then ml_colls[].name */
    uint64_t stage_bytes[COMMMODEL_MAX_STAGES];     /* added at that stage */
    uint64_t total;
    int channels;              /* collective channels */
    commmodel_term terms[COMMMODEL_MAX_TERMS];
    int n_terms;
} commmodel_out;

/* 0, or -1 with *why set for inputs outside the model (world < 1, more than COLL_COUNT first
 * uses, several nodes: only one node over NVLink is modelled). */
int commmodel_predict(const commmodel_in *in, commmodel_out *out, const char **why);

#endif

/* The communicator of a schedule as a run would make it: world ranks on one node, rank 0's plan
 * giving the order of first use (a collective under expect_error is never issued), NCCL's
 * settings from the environment (getenv: the predictor's only read of the environment, since
 * NCCL reads the same variables). Returns commmodel_predict's result. */
int commmodel_for_plan(const rank_plan *p, commmodel_out *out, const char **why);
