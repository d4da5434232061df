/* SPDX-License-Identifier: MIT */
/* rt.h — the runtime: one executor, backends behind one interface, one place that counts.
 *
 * The executor (runtime/exec.c) walks a rank plan (plan.h) and drives a backend through
 * rt_backend_ops. Backends are registered in one table (runtime/backends.c); a backend that was
 * not compiled in keeps its row with available = false and a how_to_get text.
 *
 * One process may drive one rank (host backend, cuda under mpirun) or several (cuda --gpus N): the
 * executor is a cursor per rank (rt_rank) that runs ops until the next collective; a driver
 * (rt_run_local / rt_run_lockstep) advances the cursors and issues each collective for all local
 * ranks at once (inside ncclGroupStart/End on cuda), so one thread never blocks a peer.
 *
 * Requested bytes are counted in exactly one place, rt_account_* (runtime/account.c), from what
 * the executor asked the backend for; the predictor never sees these numbers.
 *
 * CHANGELOG for backend authors (every change is an addition; nothing existing moved):
 *  - rt_options.params: the run's sched_params (--set, --world), so data checks can evaluate
 *    let-values of other ranks (reduce-over-ranks closed forms). Backends may ignore it.
 *  - rt_backend_ops.gatherv_blob (optional, may be NULL): gathers variable-sized blobs to one
 *    rank (run results). NULL: the executor falls back to two allgather_blob rounds.
 *  - rt_backend_ops.abort (optional, may be NULL): ends every rank of the job now with an exit
 *    code (MPI_Abort); used when a failure is known to this rank only. NULL: exit(code).
 *  - runtime/mpi_util.h: rt_mpi_* helpers (init from the launcher's size and rank, deadline
 *    wait on an MPI_Request, allgather/gatherv of blobs, abort) that any MPI-based backend
 *    (host, cuda under mpirun) can use as its allgather_blob / gatherv_blob / abort.
 *  - rt_rank: failure_known_to_all, error_print_here, exec (executor-private state), at the end.
 *    Backends need not touch them.
 *  - A backend's collective() may read r->plan->ops[r->pc] (the op being issued) for messages:
 *    it names the step as file:line:col on a timeout.
 *  - collective(ranks, args, n): args points to n structs, args[k] for ranks[k] (buffers differ
 *    per rank). The executor has validated every args[k] (counts, dtypes, bounds, in-place
 *    offsets) and set in_place by NCCL's rule before the call.
 *  - runtime/backends.c names each backend's row `rt_backend_<name>`: backend_cuda.c defines
 *    `const rt_backend_ops rt_backend_cuda` in every build (available = false and how_to_get
 *    without CUDA), as backend_host.c defines rt_backend_host.
 *  - runtime/data.h: host-side patterns, identities, reductions and comparisons; the executor
 *    does inits and checks through write/read, so a backend does no data work itself.
 *  - rt_options.fail_alloc_rank, delay_s (fault injection, runtime/inject.h), at the end.
 *  - rt_failure_state: every rank's op and live bytes when a failure became known
 *    to all through the sequence exchange (its descriptor grew from 48 to 64 bytes).
 *  - rt_backend_ops: time_begin, time_end, collective_bare, graph_begin, graph_end, graph_launch,
 *    graph_drop at the end, all optional (NULL), for `memlife bench` (runtime/bench.h). The host
 *    backend has the timing pair (monotonic clock around MPI) and collective_bare; cuda has all
 *    (CUDA events per rank and stream, direct NCCL calls, CUDA graphs). `run` never calls them.
 *  - rt_backend_ops: record_stream, empty_cache at the end, optional (the torch backend).
 *  - rt_mem_reading.pool_caches at the end (the torch backend's caching allocator).
 *  - rt_sample: has_pool, pool_used, pool_reserved at the end (the reading's pool after each
 *    op); a backend fills them by setting has_pool in its mem_read.
 *  - rt_sample is ir/measure.h's ml_sample (same fields), rt_rank.comm_stages ml_comm_stage
 *    (same fields): the measurement record travels in one format (rt_measure_fill).
 *  - rt_coll_args: comm, comm_size, comm_rank at the end: a collective with `comm:` runs on the
 *    rank's group of that communicator (r->plan->comms), its count, root and peer in the
 *    group's terms; the executor validated them against the group. A backend that has no
 *    communicators of its own must refuse comm != 0 in refuse_op, not run it on the world. */
#ifndef MEMLIFE_RT_H
#define MEMLIFE_RT_H

#include "ir/plan.h"
#include "ir/measure.h"

typedef struct rt_rank rt_rank;

/* Stages of the communicator's memory (rt_rank.comm_stages): init, streams, five collectives, copies. */
#define RT_COMM_STAGES ML_MEASURE_STAGES
typedef struct rt_backend_ops rt_backend_ops;

/* A live allocation as the backend made it. */
typedef struct {
    void *ptr;             /* host pointer (host) or device pointer (cuda); base of the range */
    uint64_t bytes;        /* as requested */
    uint32_t chunks;       /* 0 or 1: one allocation; N: chunked (VMM / mmap ranges) */
    uint64_t chunk_bytes;  /* bytes per chunk when chunked */
    uint32_t live_chunks;  /* chunks still mapped */
    void *impl;            /* backend's own bookkeeping */
} rt_mem;

/* What the backend reads of the memory system now (bytes; 0 when it has no such reading). */
typedef struct {
    uint64_t device_used;          /* cudaMemGetInfo total - free; host: 0 */
    uint64_t pool_used_current, pool_used_high;         /* async pool (cudaMemPoolAttr...) */
    uint64_t pool_reserved_current, pool_reserved_high;
    bool has_device, has_pool;
    /* The pool keeps freed blocks (PyTorch's caching allocator): cudaMemGetInfo then follows the
     * pool's reserved bytes, not the page model of cudaMalloc/cudaFree (the torch backend). */
    bool pool_caches;
} rt_mem_reading;

typedef struct {
    ml_coll coll;
    const rt_mem *send, *recv;
    uint64_t send_off_bytes, recv_off_bytes;
    uint64_t count;        /* NCCL's count */
    ml_dtype dtype;
    ml_redop op;
    int root;
    uint32_t stream;
    bool in_place;
    /* The communicator (sched.comms; 0: the world) and, for another, the size of this rank's
     * group of it and the rank's rank there: count, root (peer) and in_place are in those terms
     * (comms.h). For comm 0 they are the world's size and the rank (rt_coll_group_size). */
    uint16_t comm;
    int comm_size, comm_rank;
} rt_coll_args;
/* The group a collective runs in, whatever built its arguments: for the world, the world. */
static inline int rt_coll_group_size(const rt_coll_args *a, int world) {
    return a->comm ? a->comm_size : world;
}
static inline int rt_coll_group_rank(const rt_coll_args *a, int rank) {
    return a->comm ? a->comm_rank : rank;
}

typedef struct {
    const char *backend;       /* "host" | "cuda" */
    const char *allocator;     /* cuda: "cuda" (default) | "async" | "chunked" */
    double timeout_s;          /* deadline for every wait on a peer; default 60 */
    int gpus;                  /* cuda single-process mode: GPUs driven by this process; 0 = MPI */
    bool verify_sequence;      /* exchange collective descriptors before each collective */
    bool data;                 /* run inits and checks (default true) */
    /* Fault injection (exec/inject.h); -1 when off. */
    long fail_alloc_k;         /* alloc k (0-based, counted per rank) fails */
    int kill_rank, kill_step;  /* rank r dies (SIGKILL) before op k */
    int delay_rank, delay_step;  /* rank r sleeps delay_s before op k */
    const sched_params *params;  /* --set / --world of this run; NULL: the file's values */
    int fail_alloc_rank;       /* the rank whose alloc fail_alloc_k fails; -1: every rank */
    double delay_s;            /* <= 0: past the deadline (timeout_s + RT_INJECT_PAST_S) */
    bool delay_at_init;        /* delay=R@init: before the backend's communicator set-up */
    const char *stream_order;  /* host: NULL or "program", "reverse", "shuffle[:SEED]"
                                  (backends/host_streams.h) */
    /* cuda: the world communicator made with NCCL's splitShare. NCCL shares a split's resources
     * by its parent's setting, not the split's own, so `share:` on the communicators split from
     * the world is told to NCCL here (rt_sched_splits_share). */
    bool world_split_share;
} rt_options;

/* Whether every communicator split from s's world asks to share its resources (`share: true`,
 * at least one such communicator). */
bool rt_sched_splits_share(const sched *s);
void rt_options_default(rt_options *o);

/* Backend interface. Every call returns 0 or -1 with a message in err (lowercase, specific:
 * "cudaMalloc of 268435456 bytes failed: out of memory"). r identifies the local rank. */
struct rt_backend_ops {
    const char *name;
    bool available;
    const char *how_to_get;    /* for unavailable backends: what to install / how to build */
    bool several_gpus;         /* one process may drive several GPUs (--gpus N, init's
                                  local_ranks > 1 without MPI) */
    /* Process-wide set-up: world is the total ranks, local_ranks those driven here. */
    int (*init)(const rt_options *o, int world, int first_rank, int local_ranks, char *err, size_t len);
    void (*finalize)(void);
    int (*rank_init)(rt_rank *r, char *err, size_t len);
    void (*rank_finalize)(rt_rank *r);
    int (*alloc)(rt_rank *r, uint64_t bytes, uint32_t chunks, rt_mem *out, char *err, size_t len);
    int (*free)(rt_rank *r, rt_mem *m, char *err, size_t len);
    int (*release)(rt_rank *r, rt_mem *m, uint32_t keep_chunk, char *err, size_t len);
    /* Collectives for several local ranks at once (group semantics); n = 1 under MPI. args[k] is
     * ranks[k]'s (an array of n). */
    int (*collective)(rt_rank **ranks, const rt_coll_args *args, int n, char *err, size_t len);
    /* Whether `collective` has a launcher for c: each backend keeps a table indexed by the
     * collective, a NULL row for one it cannot run. A plan naming such a collective is refused
     * by name when its rank is set up (rt_rank_init), before anything runs; a NULL launches
     * means no collective at all. */
    bool (*launches)(ml_coll c);
    int (*sync)(rt_rank *r, sched_sync_kind kind, uint32_t stream, uint32_t event, char *err, size_t len);
    int (*record)(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len);
    int (*wait)(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len);
    /* Data movement between host and a buffer (inits and checks), and buffer to buffer. */
    int (*write)(rt_rank *r, rt_mem *m, uint64_t off, const void *src, uint64_t bytes, char *err, size_t len);
    int (*read)(rt_rank *r, const rt_mem *m, uint64_t off, void *dst, uint64_t bytes, char *err, size_t len);
    int (*copy)(rt_rank *r, rt_mem *dst, uint64_t dst_off, const rt_mem *src, uint64_t src_off,
                uint64_t bytes, uint32_t stream, char *err, size_t len);
    int (*mem_read)(rt_rank *r, rt_mem_reading *out);
    /* Exchanges a small blob with every rank of the world (results, descriptors): all[k*len] gets
     * rank k's. Bounded by o->timeout_s; on expiry returns -1 naming the wait. */
    int (*allgather_blob)(rt_rank *r, const void *mine, size_t len, void *all, char *err, size_t elen);
    /* Warm-up of every collective type the plan uses, before the baseline (NCCL connects lazily). */
    int (*warmup)(rt_rank **ranks, int n, const bool used[COLL_COUNT], char *err, size_t len);
    /* Provenance facts (versions, devices, env) as "key=value\n" lines appended to buf. */
    void (*provenance)(char *buf, size_t len);
    /* Optional (NULL: the executor uses two allgather_blob rounds). Gathers len bytes from every
     * rank to root: on root *all gets a malloc'd concatenation and lens[world] each rank's
     * length; other ranks get *all = NULL. Bounded by o->timeout_s. */
    int (*gatherv_blob)(rt_rank *r, const void *mine, size_t len, int root, void **all,
                        size_t *lens, char *err, size_t elen);
    /* Optional (NULL: exit(code)). Ends every rank of the job now (MPI_Abort). */
    void (*abort)(int code);
    /* Optional, for the benchmark (NULL: the backend cannot be benchmarked). Times one span of
     * work on ranks[0..n). time_begin marks the start on every stream of each rank; with align,
     * it first lines the ranks up on the device (a one-element collective before the mark), so
     * that host skew and launch latency stay out of the span. time_end marks the end on every
     * stream, waits for it against the deadline and gives seconds[k], rank k's time from its start
     * to its last stream's end. cuda: CUDA events; host: the monotonic clock around the MPI calls. */
    int (*time_begin)(rt_rank **ranks, int n, bool align, char *err, size_t len);
    int (*time_end)(rt_rank **ranks, int n, double *seconds, char *err, size_t len);
    /* Optional (bench): the same call as `collective` with nothing around it (no stream creation,
     * no bookkeeping; one rank: no group): the yardstick of memlife's own overhead. */
    int (*collective_bare)(rt_rank **ranks, const rt_coll_args *args, int n, char *err, size_t len);
    /* Optional (bench --graph). graph_begin starts capturing every stream of each rank: what is
     * issued until graph_end is recorded, not run. graph_end gives graphs[k], rank k's graph;
     * graph_launch replays them on each rank's default stream; graph_drop frees one. */
    int (*graph_begin)(rt_rank **ranks, int n, char *err, size_t len);
    int (*graph_end)(rt_rank **ranks, int n, void **graphs, char *err, size_t len);
    int (*graph_launch)(rt_rank **ranks, int n, void *const *graphs, char *err, size_t len);
    void (*graph_drop)(rt_rank *r, void *graph);
    /* Optional (NULL: "has none"): why graph_begin is NULL, where the reason is the backend's
     * own (bench --graph's refusal says it). */
    const char *no_graphs_why;
    /* Why this backend gives no kernel evidence (bench and equiv --kernels), NULL where it counts
     * its kernels with CUPTI. */
    const char *no_kernels_why;
    /* time_begin cannot line the ranks up on a device: spans start after the host barrier, and
     * the bench report says they are not aligned. */
    bool spans_unaligned;
    /* Runs the streams' collectives and copies in an order memlife picks (--stream-order); a GPU
     * runs its streams in its own order. */
    bool orders_streams;
    /* Optional (NULL: the backend runs every op). What this backend cannot run, asked of every
     * op of every rank's plan before anything starts (rt_backend_check): -1 with the reason. */
    int (*refuse_op)(const plan_op *op, int world, char *err, size_t len);
    /* Optional (NULL: schedules with `group:` fail there). The rank's send/recv between them are
     * one group (ncclGroupStart/End): `collective` only posts them; group_end completes them. */
    int (*group_begin)(rt_rank *r, char *err, size_t len);
    int (*group_end)(rt_rank *r, char *err, size_t len);
    /* Optional (NULL: nothing to do; the executor still synchronizes a recorded stream before
     * the free). The caching allocator's own calls, for a backend that has PyTorch's allocator
     * (torch): tensor.record_stream(stream) and torch.cuda.empty_cache(). */
    int (*record_stream)(rt_rank *r, rt_mem *m, uint32_t stream, char *err, size_t len);
    int (*empty_cache)(rt_rank *r, char *err, size_t len);
};

/* The backend table. */
const rt_backend_ops *rt_backend_find(const char *name);
/* The capability check before a launch: the first op of p that be refuses, as an error at the
 * op's step in d ("the host backend cannot run ..."). Returns 0 or -1. */
int rt_backend_check(const rt_backend_ops *be, const rank_plan *p, ml_diags *d);
extern const rt_backend_ops *const rt_backends[];
extern const size_t rt_backend_count;

/* ---- Accounting: the one place that counts requested bytes (runtime/account.c) --------------*/
/* A sample after an op: the measurement record's (ir/measure.h); SIZE_MAX op for the baseline,
 * requested and device as deltas to the baseline, the pool absolute. */
typedef ml_sample rt_sample;

typedef struct {
    uint64_t live, peak;       /* requested */
    int64_t device_base, device_live, device_peak;
    bool has_device;
    size_t peak_op, device_peak_op;
    rt_mem_reading base_reading, last_reading;
    ml_vec samples;            /* rt_sample after every op */
    double t0;
} rt_account;

void rt_account_init(rt_account *a, const rt_mem_reading *baseline);
void rt_account_alloc(rt_account *a, uint64_t bytes);
void rt_account_free(rt_account *a, uint64_t bytes);
void rt_account_sample(rt_account *a, size_t op, const rt_mem_reading *now);
void rt_account_free_all(rt_account *a);
/* The measurement record of r after rt_run (ir/measure.h): its account's peaks, steady bytes and
 * samples, the communicator's stages, the pool at the end and the data checks' rows. m is
 * overwritten; free it with ml_measure_free. */
void rt_measure_fill(const rt_rank *r, ml_measure *m);

/* ---- Per-rank executor state ------------------------------------------------------------------*/
typedef struct {
    const char *name;
    int rank;
    bool pass;
    char detail[240];
    const sched_step *step;
} rt_check_row;

struct rt_rank {
    const rt_backend_ops *be;
    const rt_options *opt;
    const rank_plan *plan;
    int rank, world, local_index;
    size_t pc;                 /* next op */
    rt_mem *mems;              /* by buffer symbol; ptr NULL when not live */
    uint32_t n_mems;
    rt_account acct;
    ml_vec checks;             /* rt_check_row */
    void *be_state;            /* the backend's per-rank state (device, comm, streams...) */
    int failed;                /* 0, or ML_EXIT_* of the failure */
    char error[512];           /* "file:line:col: error: ..." of the failure */
    uint64_t communicator_bytes; /* device bytes taken by NCCL before the baseline, reported apart */
    /* communicator_bytes in the order it grew: "init" (the communicator made), "streams" (the
     * plan's streams, events and the allocator's first buffer), one per collective at its first
     * use in the warm-up ("all_reduce", ...: NCCL connects lazily), "copies". Their sum is
     * communicator_bytes; a backend without a communicator leaves n_comm_stages 0. */
    ml_comm_stage comm_stages[RT_COMM_STAGES];
    uint32_t n_comm_stages;
    size_t n_collectives;
    /* Set by the executor. failure_known_to_all: every rank learned of the failure through the
     * sequence exchange, so all can end cleanly with the same code; else the caller must end the
     * job (be->abort). error_print_here: this rank prints r->error (a divergence found by every
     * rank prints once, on rank 0; a peer's failure prints on that peer). */
    bool failure_known_to_all;
    bool error_print_here;
    void *exec;                /* executor-private state (exec.c) */
    /* Set by the benchmark around a timed span: the samples after each op keep the requested
     * bytes but skip the backend's memory reading (cudaMemGetInfo is a driver call of several
     * microseconds that would sit between two timed collectives). */
    bool skip_device_reading;
};

int rt_rank_init(rt_rank *r, const rt_backend_ops *be, const rt_options *o, const rank_plan *p,
                 int local_index);
void rt_rank_free(rt_rank *r);
/* Runs ops until the next collective (left at r->pc, not executed) or the end. Returns 1 when
 * stopped at a collective, 0 at the end, -1 on failure (r->error set). */
int rt_rank_advance(rt_rank *r);
/* Validates and issues the collective at pc for ranks[0..n) together, then samples each. */
int rt_issue_collective(rt_rank **ranks, int n);

/* Runs whole plans for the ranks driven by this process (1 under MPI, N with --gpus N): takes
 * the baseline after the warm-up, then advances every rank, exchanging collective descriptors
 * (sequence verification) before each collective and at the end. Returns 0, or -1 when any rank
 * failed (each rank's failed/error set). */
int rt_run(rt_rank **ranks, int n);

/* After rt_run failed: where the ranks stood, as "FILE:L:C: note: rank R ..." lines (op index
 * and name, whether it failed, waited or had ended, live requested bytes). With
 * failure_known_to_all, one line per rank of the table every rank judged (at most `max_lines`,
 * then a line for the rest); else r's own line when r failed. malloc'd; NULL when r has nothing
 * to say (it did not fail and holds no table). */
char *rt_failure_state(const rt_rank *r, int max_lines);

/* Gathers each rank's blob to root (run results): be->gatherv_blob, or two allgather_blob rounds.
 * For n local ranks (single process) the caller has every blob already and needs no gather. */
int rt_gather_blobs(rt_rank *r, const void *mine, size_t len, int root, void **all, size_t *lens,
                    char *err, size_t elen);

/* Bytes of chunk k of an allocation of `bytes` split in `chunks`: equal chunks of
 * ceil(bytes/chunks), the last one takes the remainder. The executor's accounting and the host
 * backend use this one rule. */
uint64_t rt_chunk_bytes(uint64_t bytes, uint32_t chunks, uint32_t k);

#endif
