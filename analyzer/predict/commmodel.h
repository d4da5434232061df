/* SPDX-License-Identifier: MIT */
/* commmodel.h — NCCL's own device memory (the communicators) predicted from its rules, for a
 * rank's communicators (the world and the splits that hold it): a pure function of the world,
 * the GPUs per node, the GPU kind, each communicator's group size and splitShare, the
 * collectives in the order of their first use on each and NCCL's settings. Nothing here reads
 * a device.
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
 *  - a communicator split from the world (ncclCommSplit) makes its own device comm and channels
 *    by the same rules at its group's size; with splitShare (NCCL_COMM_SPLIT_SHARE_RESOURCES=1
 *    or the config's splitShare) its channels take the shared devPeers from the parent
 *    (channel.cc initChannel: sharedRes->devPeers[c] is allocated only where still NULL) and the
 *    proxy (with its shared p2p buffer) is the parent's: 2 granules per channel, not 3, and no
 *    NCCL_RUNTIME_CONNECT=0 buffer. The first split that does not share adds one granule once
 *    per process (measured on H100: 390 MiB, then 388 for the next; 18, then 16 at 2 channels;
 *    the granule stays after every communicator is destroyed). A split's rings at a group of 2
 *    or more follow the world's rules: not yet measured;
 *  - the library's constant depends on the GPU (commmodel_gpus: 198 MiB on H100 80GB, 192 on
 *    H200, each measured at world 1 as the world's init less its device comm and channels).
 * Measured: world 1, 580 MiB after init and nothing more at any collective; NCCL_MAX_NCHANNELS=2
 * 208 MiB; NCCL_RUNTIME_CONNECT=0 1092 MiB; NCCL_BUFFSIZE, NCCL_LL128_BUFFSIZE and
 * NCCL_WORK_FIFO_BYTES unchanged at world 1. World 2 (one process, 2 x H200): 388 MiB at init,
 * +474 MiB at the first AllReduce, nothing more for ReduceScatter and AllGather (862 MiB).
 * On one H100 80GB (tests/gpu/fixtures/nccl_split_h100.jsonl, docs/evidence/
 * 2026-12-07-h100-comms.md): world 586, splits 390 and 388 without sharing, 260 and 260 with
 * it; at 2 channels 214, 18, 16 / 12, 12; NCCL_RUNTIME_CONNECT=0 1098, 902, 900 / 260, 260. */
#ifndef MEMLIFE_COMMMODEL_H
#define MEMLIFE_COMMMODEL_H

#include "ir/plan.h"

#include <stdbool.h>
#include <stdint.h>

/* NCCL's settings the model reads; -1 where the environment leaves NCCL's default. */
typedef struct {
    int64_t buffsize;          /* NCCL_BUFFSIZE: Simple, default 4 MiB */
    int64_t ll_buffsize;       /* NCCL_LL_BUFFSIZE: default 512 KiB */
    int64_t ll128_buffsize;    /* NCCL_LL128_BUFFSIZE: default 4915200 B (about 4.69 MiB) */
    int min_nchannels;         /* NCCL_MIN_NCHANNELS */
    int max_nchannels;         /* NCCL_MAX_NCHANNELS */
    int runtime_connect;       /* NCCL_RUNTIME_CONNECT: default 1 */
    int p2p_read;              /* NCCL_P2P_READ_ENABLE: default on over NVLink */
    int64_t work_fifo_bytes;   /* NCCL_WORK_FIFO_BYTES: host memory either way */
    int split_share;           /* NCCL_COMM_SPLIT_SHARE_RESOURCES: every split's splitShare,
                                  whatever its config says (init.cc) */
} commmodel_env;

/* Reads the settings through getenv_fn (getenv, or a table in tests); malformed values are
 * treated as absent, as NCCL's own parser does. */
void commmodel_env_read(commmodel_env *e, const char *(*getenv_fn)(const char *name));

/* The GPU kinds, by the names of `memlife capture --gpu` (NULL-terminated), and what the model
 * knows of each (measured false: the model refuses the kind rather than guess). */
extern const char *const commmodel_gpu_names[];
typedef struct {
    bool measured;
    uint64_t library;          /* NCCL's per-process constant at init */
    uint64_t cuda_context;     /* cudaMemGetInfo's used after cudaSetDevice + cudaFree(0) */
    const char *label;         /* for the report: "H100 80GB" */
} commmodel_gpu;
extern const commmodel_gpu commmodel_gpus[];
/* The kind predict and check assume without --gpu: H200, where the model was first measured. */
#define COMMMODEL_GPU_DEFAULT 1
/* The index of name in commmodel_gpu_names, or -1. */
int commmodel_gpu_find(const char *name);

/* One communicator of a rank: the world first, then the splits in their order of creation. */
typedef struct {
    const char *name;          /* "world", "tp" */
    int size;                  /* ranks in this rank's group (>= 1) */
    bool share;                /* split with splitShare: the world's resources shared (unless
                                  NCCL_COMM_SPLIT_SHARE_RESOURCES says otherwise) */
} commmodel_comm;

typedef struct {
    int world;                 /* ranks of the job */
    int gpus_per_node;         /* ranks sharing a node (all over NVLink) */
    int gpu;                   /* index into commmodel_gpus */
    const commmodel_comm *comms;   /* [n_comms], comms[0] the world */
    int n_comms;
    /* The collectives in the order of their first use on each communicator (comm: an index into
     * comms), the communicators interleaved as the rank issues them. */
    const plan_comm_use *uses;
    int n_uses;
    commmodel_env env;
} commmodel_in;

/* The CUDA context of a fresh process on H200 (driver 580.159.04, CUDA 13.0): cudaSetDevice +
 * cudaFree(0) raised NVML's used by 552402944 B (526.8125 MiB), and cudaMemGetInfo's used read
 * the same right after (its zero is the idle GPU; tests/gpu/probe/nccl_mem.py, stage context).
 * What one GPU then shows is context + communicator + the schedule's device view: measured
 * 526.8125 + 580 + 256 = 1362.8125 MiB for a 256 MiB buffer at world 1. commmodel_gpus holds
 * it per kind. */
#define COMMMODEL_CUDA_CONTEXT_BYTES ((uint64_t)552402944)

#define COMMMODEL_MAX_STAGES (1 + COLL_COUNT)

typedef struct {
    const char *name;          /* "channels", ... */
    int comm;                  /* the communicator it belongs to (its index in the input) */
    int stage;                 /* 0: init; k: that communicator's k-th first use */
    uint64_t bytes;
    char detail[120];          /* how the bytes come about: "64 channels x 3 x 2 MiB" */
} commmodel_term;

typedef struct {
    const char *name;
    int size;
    bool share;
    int channels;              /* collective channels */
    int n_stages;              /* 1 + its first uses */
    const char *stage_name[COMMMODEL_MAX_STAGES];   /* "init", then ml_colls[].name */
    uint64_t stage_bytes[COMMMODEL_MAX_STAGES];     /* added at that stage */
    uint64_t total;
} commmodel_comm_out;

typedef struct {
    int gpu;
    commmodel_comm_out *comms; /* [n_comms], as the input's */
    int n_comms;
    commmodel_term *terms;     /* every byte in one term; the per-process ones with the
                                  communicator and stage they come at */
    int n_terms, cap_terms;
    uint64_t total;            /* every communicator's, the per-process terms once */
} commmodel_out;

/* 0, or -1 with *why set for inputs outside the model (world < 1, no world first, a group
 * larger than the world, a use of a communicator not in the list, several nodes: only one node
 * over NVLink is modelled, a GPU kind not measured). out is to be freed with commmodel_out_free
 * either way. */
int commmodel_predict(const commmodel_in *in, commmodel_out *out, const char **why);
void commmodel_out_free(commmodel_out *out);

/* Rank p->rank's communicators as a run makes them: the world and each communicator with a
 * group that holds the rank, in the schedule's order, the world's ranks on one node, p's plan
 * giving the order of first use (a collective under expect_error is never issued), NCCL's
 * settings from the environment (getenv: the predictor's only read of the environment, since
 * NCCL reads the same variables), gpu an index into commmodel_gpus. Returns commmodel_predict's
 * result. */
int commmodel_for_plan(const rank_plan *p, int gpu, commmodel_out *out, const char **why);

#endif
