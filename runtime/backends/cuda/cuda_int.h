/* SPDX-License-Identifier: MIT */
/* cuda_int.h — state shared by the cuda backend's files (cuda*.c); not a public
 * header: the rest of memlife sees only rt_backend_cuda (rt.h).
 *
 * One process drives either one rank (under mpirun, one process per GPU) or every rank (--gpus N,
 * one thread, all GPUs). Per local rank we keep its device, its NCCL communicators (the world's,
 * and one split from it per schedule communicator that has a group holding the rank), one CUDA stream
 * per stream symbol and one CUDA event per event symbol (both created on first use), and the
 * async allocator's pool. Every host wait goes through cu_wait_* (cuda_wait.c), which
 * polls against the run's deadline and aborts the communicator on expiry: NCCL has no
 * per-operation timeout of its own. */
#ifndef MEMLIFE_BACKEND_CUDA_INT_H
#define MEMLIFE_BACKEND_CUDA_INT_H

#ifdef MEMLIFE_HAVE_CUDA

#include "exec/rt.h"

#include <cuda_runtime.h>
#include <nccl.h>

/* What a wait on a stream is waiting for, for the timeout message ("nccl all_reduce"). Values
 * below COLL_COUNT are collectives. */
enum {
    CU_WORK_NONE = -1, CU_WORK_COPY = COLL_COUNT, CU_WORK_WARMUP = COLL_COUNT + 1,
    CU_WORK_GRAPH = COLL_COUNT + 2   /* bench: a CUDA graph replay */
};

typedef struct {
    cudaStream_t stream;       /* NULL until first use */
    int last_work;             /* CU_WORK_* or an ml_coll: the latest thing issued on it */
    cudaEvent_t stop;          /* bench: end of a timed span on this stream (timing event) */
    bool stopped;              /* bench: `stop` recorded for the span being timed */
    cudaEvent_t join;          /* bench --graph: joins this stream back into the capture */
} cu_stream;

typedef struct {
    cudaEvent_t event;         /* NULL until first use */
    uint32_t stream;           /* stream of the latest record; SCHED_NO_SYM before any */
    int last_work;             /* that stream's last_work when recorded */
} cu_event;

typedef struct {
    int device;                /* CUDA ordinal */
    int rank;                  /* global rank */
    ncclComm_t comm;           /* the world's; NULL once aborted or destroyed */
    ncclComm_t *splits;        /* [n_splits]: communicator c's (ncclCommSplit), [0] unused; NULL
                                  where the rank is in no group of c, or once aborted */
    uint32_t n_splits;
    cu_stream *streams;
    uint32_t n_streams;
    cu_event *events;
    uint32_t n_events;
    cudaMemPool_t pool;        /* async allocator's own pool; NULL for the others */
    size_t vmm_granularity;    /* cuMemGetAllocationGranularity(MINIMUM); 0 until first asked */
    uint64_t used_before_comm; /* cudaMemGetInfo used after context creation, before NCCL */
    const sched *s;            /* for stream names in messages; NULL without a plan */
    /* Bench (cuda_bench.c), created on first use: */
    cudaEvent_t start;         /* start of a timed span, on the default stream (timing event) */
    cudaEvent_t fork;          /* forks the other streams into a graph capture */
    void *align_buf;           /* one float for the aligning AllReduce before a graph replay */
} cu_rank;

typedef struct cu_allocator cu_allocator;

typedef struct {
    rt_options opt;
    int world, first_rank, n_local;
    bool mpi;                  /* one process per GPU under mpirun */
    bool initialized;
    bool failed;               /* a call failed or a rank failed: finalize aborts, not destroys */
    bool aborted;              /* the communicators were aborted (a timeout or an NCCL error) */
    const cu_allocator *alloc;
    cu_rank *ranks;            /* [n_local] */
    unsigned char *blobs;      /* allgather_blob of local ranks: [n_local * blob_len] */
    size_t blob_len;
} cu_state;

extern cu_state cu_g;

/* ---- Errors (cuda_core.c) -------------------------------------------------------------- */
/* Appends printf output to the text in err[0..len), truncating at len. */
void cu_append(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "what failed: cuda error text" (and resets CUDA's last error). Returns -1. */
int cu_fail_cuda(char *err, size_t len, cudaError_t e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "what failed: nccl error text: ncclGetLastError text". Returns -1. */
int cu_fail_nccl(char *err, size_t len, ncclComm_t comm, ncclResult_t res, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
cu_rank *cu_rank_of(const rt_rank *r);
int cu_set_device(cu_rank *cr, char *err, size_t len);
/* The stream / event of a symbol, created on first use. */
int cu_stream_get(cu_rank *cr, uint32_t stream, cudaStream_t *out, char *err, size_t len);
int cu_event_get(cu_rank *cr, uint32_t event, cudaEvent_t *out, char *err, size_t len);
const char *cu_stream_name(const cu_rank *cr, uint32_t stream);
/* Device bytes in use: cudaMemGetInfo total - free, on cr's device. */
int cu_device_used(cu_rank *cr, uint64_t *used, uint64_t *free_bytes, uint64_t *total);

/* ---- Waiting against the deadline (cuda_wait.c) ----------------------------------- */
int cu_wait_stream(cu_rank *cr, uint32_t stream, char *err, size_t len);
int cu_wait_event(cu_rank *cr, uint32_t event, char *err, size_t len);
/* Every stream of the rank, then cudaDeviceSynchronize (returns at once by then). */
int cu_wait_device(cu_rank *cr, char *err, size_t len);
/* Aborts the communicators this process holds (all local ranks: in single-process mode the
 * peers of a stuck rank are stuck too). */
void cu_abort_all(void);

/* ---- Allocators (cuda_alloc.c) ------------------------------------------------------ */
struct cu_allocator {
    const char *name;          /* --allocator NAME */
    int (*rank_init)(cu_rank *cr, char *err, size_t len);     /* NULL: nothing to set up */
    void (*rank_finalize)(cu_rank *cr);
    int (*alloc)(cu_rank *cr, uint64_t bytes, rt_mem *out, char *err, size_t len);
    int (*free)(cu_rank *cr, rt_mem *m, char *err, size_t len);
    void (*read_pool)(cu_rank *cr, rt_mem_reading *out);      /* NULL: no pool */
};
extern const cu_allocator cu_allocators[];
extern const size_t cu_allocator_count;
const cu_allocator *cu_allocator_find(const char *name);
/* Restarts the async pool's used/reserved high-water marks at their current values. */
void cu_pool_reset_high(cu_rank *cr);

/* VMM (chunked) allocations: used for every `chunks: N >= 2` buffer whatever the allocator, and
 * for every buffer under --allocator chunked. m->impl points to the mapping table. */
int cu_vmm_alloc(cu_rank *cr, uint64_t bytes, uint32_t chunks, rt_mem *out, char *err, size_t len);
int cu_vmm_release(cu_rank *cr, rt_mem *m, uint32_t keep, char *err, size_t len);
int cu_vmm_free(cu_rank *cr, rt_mem *m, char *err, size_t len);

/* ---- Launch, communicators, blobs, warm-up (cuda_comm.c) --------------------------- */
int cu_comm_init(char *err, size_t len);
/* The NCCL communicator of schedule communicator comm for cr (0: the world); NULL where cr's
 * rank is in no group of it, or it was aborted. */
static inline ncclComm_t cu_comm_of(const cu_rank *cr, uint32_t comm) {
    return comm == 0 ? cr->comm : comm < cr->n_splits ? cr->splits[comm] : NULL;
}
void cu_comm_finalize(void);
int cu_allgather_blob(rt_rank *r, const void *mine, size_t len, void *all, char *err, size_t elen);
int cu_warmup(rt_rank **ranks, int n, const bool used[COLL_COUNT], char *err, size_t len);
/* Issues one collective per rank inside one NCCL group (args[i] for ranks' cr[i]). */
int cu_issue_group(cu_rank **crs, const rt_coll_args *args, int n, char *err, size_t len);
/* Whether the launcher table has a row for c (rt_backend_ops.launches). */
bool cu_launches(ml_coll c);
/* The NCCL call of one rank's collective on stream s, nothing around it (pointers from args). */
ncclResult_t cu_launch_one(const rt_coll_args *a, ncclComm_t comm, cudaStream_t s);

/* ---- Benchmark hooks (cuda_bench.c): rt_backend_ops' optional bench entries -------- */
int cu_time_begin(rt_rank **ranks, int n, bool align, char *err, size_t len);
int cu_time_end(rt_rank **ranks, int n, double *seconds, char *err, size_t len);
int cu_collective_bare(rt_rank **ranks, const rt_coll_args *args, int n, char *err, size_t len);
int cu_graph_begin(rt_rank **ranks, int n, char *err, size_t len);
int cu_graph_end(rt_rank **ranks, int n, void **graphs, char *err, size_t len);
int cu_graph_launch(rt_rank **ranks, int n, void *const *graphs, char *err, size_t len);
void cu_graph_drop(rt_rank *r, void *graph);
/* Destroys the rank's bench events and alignment buffer (before its streams go). */
void cu_bench_rank_finalize(cu_rank *cr);

#endif /* MEMLIFE_HAVE_CUDA */
#endif
