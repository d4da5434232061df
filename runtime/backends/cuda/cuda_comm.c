/* SPDX-License-Identifier: MIT */
/* backend_cuda_comm.c — the cuda backend's two launch modes, its collectives, blob exchange and
 * warm-up.
 *
 * Launch modes (docs/cuda.md):
 *   one process per GPU (mpirun -np N ... --backend cuda): the node-local rank
 *     (OMPI_COMM_WORLD_LOCAL_RANK) picks the GPU; rank 0's ncclGetUniqueId goes to every rank
 *     with MPI_Ibcast (bounded wait, mpi_util.c); ncclCommInitRank under the run's deadline
 *     (watchdog.h: NCCL's init has none). Blobs go through MPI.
 *   one process driving N GPUs (--gpus N): ncclCommInitAll over devices 0..N-1; every collective
 *     is issued for all ranks inside one ncclGroupStart/End, so no device waits for a peer whose
 *     kernel this thread has not launched yet; blobs are local copies.
 * Both modes read cudaMemGetInfo once per device after the CUDA context exists and before the
 * communicator does; after the warm-up the difference is the communicator's own memory, reported
 * apart from the schedule's (rt_rank.communicator_bytes).
 * A schedule's communicators (comm:) are split from the world before the warm-up, in the
 * schedule's order: ncclCommSplit(world, color = the rank's group or NCCL_SPLIT_NOCOLOR, key =
 * its rank in the group, splitShare = `share:`), every local rank's inside one group in the
 * single-process mode. NCCL shares a split's resources by the parent's splitShare, not the
 * split's: the world is made with it (ncclCommInitRankConfig) where every split asks to share
 * (rt_options.world_split_share); a schedule that mixes `share:` values shares nothing; each is a stage of the communicator's bytes ("split NAME"), its warm-up
 * collectives another ("NAME colls"); a collective runs on its op's communicator; teardown
 * destroys the splits before the world. */
#include "backends/cuda/cuda_int.h"

#ifdef MEMLIFE_HAVE_CUDA

#include "exec/inject.h"
#include "exec/mpi_util.h"
#include "base/watchdog.h"

#include <stdlib.h>
#include <string.h>

/* ---- Collectives: one launcher per row of coll.h's table ---------------------------------------
 * A NULL row is a collective NCCL cannot run here; rt_rank_init refuses it by name (cu_launches)
 * before running, so cu_launch_one never meets one. */

typedef ncclResult_t (*cu_launch_fn)(const void *send, void *recv, size_t count, ncclDataType_t dt,
                                     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t s);

static ncclResult_t launch_all_reduce(const void *send, void *recv, size_t count, ncclDataType_t dt,
                                      ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t s) {
    (void)root;
    return ncclAllReduce(send, recv, count, dt, op, comm, s);
}
static ncclResult_t launch_reduce_scatter(const void *send, void *recv, size_t count,
                                          ncclDataType_t dt, ncclRedOp_t op, int root,
                                          ncclComm_t comm, cudaStream_t s) {
    (void)root;
    return ncclReduceScatter(send, recv, count, dt, op, comm, s);
}
static ncclResult_t launch_all_gather(const void *send, void *recv, size_t count, ncclDataType_t dt,
                                      ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t s) {
    (void)op;
    (void)root;
    return ncclAllGather(send, recv, count, dt, comm, s);
}
static ncclResult_t launch_broadcast(const void *send, void *recv, size_t count, ncclDataType_t dt,
                                     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t s) {
    (void)op;
    return ncclBroadcast(send, recv, count, dt, root, comm, s);
}
static ncclResult_t launch_reduce(const void *send, void *recv, size_t count, ncclDataType_t dt,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t s) {
    return ncclReduce(send, recv, count, dt, op, root, comm, s);
}

/* Point-to-point: the peer travels in root; send and recv name one buffer (coll.h). */
static ncclResult_t launch_send(const void *send, void *recv, size_t count, ncclDataType_t dt,
                                ncclRedOp_t op, int peer, ncclComm_t comm, cudaStream_t s) {
    (void)recv;
    (void)op;
    return ncclSend(send, count, dt, peer, comm, s);
}
static ncclResult_t launch_recv(const void *send, void *recv, size_t count, ncclDataType_t dt,
                                ncclRedOp_t op, int peer, ncclComm_t comm, cudaStream_t s) {
    (void)send;
    (void)op;
    return ncclRecv(recv, count, dt, peer, comm, s);
}

/* All-to-all as PyTorch's all_to_all_single issues it on NCCL: one group of a send and a recv
 * of count/world elements per rank (itself included), one SendRecv kernel. The group is closed
 * even when a call inside it fails. */
static ncclResult_t launch_all_to_all(const void *send, void *recv, size_t count, ncclDataType_t dt,
                                      ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t s) {
    (void)op;
    (void)root;
    int world = 0;
    ncclResult_t res = ncclCommCount(comm, &world);
    if (res != ncclSuccess || world <= 0)
        return res != ncclSuccess ? res : ncclInternalError;
    size_t esize = 0;
    for (int k = 0; k < DT_COUNT; k++)
        if (ml_dtypes[k].nccl == (int)dt)
            esize = ml_dtypes[k].size;
    size_t block = count / (size_t)world;
    res = ncclGroupStart();
    for (int p = 0; p < world && res == ncclSuccess; p++) {
        res = ncclSend((const char *)send + (size_t)p * block * esize, block, dt, p, comm, s);
        if (res == ncclSuccess)
            res = ncclRecv((char *)recv + (size_t)p * block * esize, block, dt, p, comm, s);
    }
    ncclResult_t end = ncclGroupEnd();
    return res != ncclSuccess ? res : end;
}

static const cu_launch_fn cu_launch[COLL_COUNT] = {
    [COLL_ALL_REDUCE] = launch_all_reduce,
    [COLL_REDUCE_SCATTER] = launch_reduce_scatter,
    [COLL_ALL_GATHER] = launch_all_gather,
    [COLL_BROADCAST] = launch_broadcast,
    [COLL_REDUCE] = launch_reduce,
    [COLL_SEND] = launch_send,
    [COLL_RECV] = launch_recv,
    [COLL_ALL_TO_ALL] = launch_all_to_all,
};

bool cu_launches(ml_coll c) { return (unsigned)c < COLL_COUNT && cu_launch[c]; }

ncclResult_t cu_launch_one(const rt_coll_args *a, ncclComm_t comm, cudaStream_t s) {
    const rt_mem *send_mem = a->send ? a->send : a->recv;
    const rt_mem *recv_mem = a->recv ? a->recv : a->send;
    return cu_launch[a->coll]((const char *)send_mem->ptr + a->send_off_bytes,
                              (char *)recv_mem->ptr + a->recv_off_bytes, (size_t)a->count,
                              (ncclDataType_t)ml_dtypes[a->dtype].nccl,
                              (ncclRedOp_t)ml_redops[a->op].nccl, a->root, comm, s);
}

int cu_issue_group(cu_rank **crs, const rt_coll_args *args, int n, char *err, size_t len) {
    cudaStream_t fixed[64];
    cudaStream_t *streams = n <= 64 ? fixed : malloc((size_t)n * sizeof *streams);
    if (!streams) {
        snprintf(err, len, "out of host memory");
        return -1;
    }
    int rc = 0;
    /* Streams are created before the group: a failure then leaves no half-issued group. */
    for (int i = 0; i < n && rc == 0; i++) {
        if (!cu_comm_of(crs[i], args[i].comm)) {
            snprintf(err, len, "the communicator of rank %d was aborted after an earlier failure, "
                     "or the rank is in none of its groups", crs[i]->rank);
            rc = -1;
        } else if (args[i].stream < crs[i]->n_streams && crs[i]->streams[args[i].stream].stream) {
            /* The common case: no runtime call at all before NCCL's (a bare loop makes none). */
            streams[i] = crs[i]->streams[args[i].stream].stream;
        } else if (cu_set_device(crs[i], err, len) ||
                   cu_stream_get(crs[i], args[i].stream, &streams[i], err, len)) {
            rc = -1;
        }
    }
    if (rc == 0) {
        /* One rank (under mpirun): a lone NCCL call is a group of one already; the explicit
         * group would only add two calls to every collective memlife issues. */
        bool group = n > 1;
        ncclResult_t res = group ? ncclGroupStart() : ncclSuccess;
        int bad = -1;
        ncclResult_t bad_res = ncclSuccess;
        /* Stop at the first refusal: NCCL then cleans the group up at ncclGroupEnd without
         * launching it, so no rank's kernel waits for a peer that was never issued. */
        for (int i = 0; i < n && res == ncclSuccess && bad < 0; i++) {
            /* NCCL calls need no current device: each communicator knows its own. */
            ncclResult_t r = cu_launch_one(&args[i], cu_comm_of(crs[i], args[i].comm), streams[i]);
            if (r != ncclSuccess && bad < 0) {
                bad = i;
                bad_res = r;
            }
        }
        /* The group is always closed, even after a failed call inside it. */
        ncclResult_t end = !group ? ncclSuccess : res == ncclSuccess ? ncclGroupEnd() : res;
        if (bad >= 0)
            rc = cu_fail_nccl(err, len, cu_comm_of(crs[bad], args[bad].comm), bad_res,
                              "%s on rank %d failed", ml_colls[args[bad].coll].nccl_api,
                              crs[bad]->rank);
        else if (end != ncclSuccess)
            rc = cu_fail_nccl(err, len, crs[0]->comm, end, "%s on rank %d failed (group end)",
                              ml_colls[args[0].coll].nccl_api, crs[0]->rank);
    }
    for (int i = 0; i < n && rc == 0; i++)
        crs[i]->streams[args[i].stream].last_work = (int)args[i].coll;
    if (streams != fixed)
        free(streams);
    return rc;
}

/* ---- Communicators ------------------------------------------------------------------------------ */

/* Creates the device's primary context and reads its memory before NCCL touches it. */
static int context_and_baseline(cu_rank *cr, char *err, size_t len) {
    if (cu_set_device(cr, err, len))
        return -1;
    cudaError_t e = cudaFree(NULL);   /* forces context creation */
    if (e != cudaSuccess)
        return cu_fail_cuda(err, len, e, "creating the CUDA context on device %d failed",
                            cr->device);
    if (cu_device_used(cr, &cr->used_before_comm, NULL, NULL)) {
        snprintf(err, len, "cudaMemGetInfo on device %d failed", cr->device);
        return -1;
    }
    return 0;
}

/* ncclCommInitAll's communicators made with config.splitShare = 1: what ncclCommInitAll does
 * (one id, a group of ncclCommInitRank over the devices, the caller's device kept), with the
 * config that lets the splits of the world share its resources (rt_options.world_split_share). */
static ncclResult_t init_all_sharing(ncclComm_t *comms, int n, const int *devs) {
    ncclUniqueId id;
    ncclResult_t res = ncclGetUniqueId(&id);
    if (res != ncclSuccess)
        return res;
    ncclConfig_t *configs = ml_xcalloc((size_t)n, sizeof *configs);   /* alive past the group */
    int dev = 0;
    (void)cudaGetDevice(&dev);
    res = ncclGroupStart();
    for (int i = 0; i < n && res == ncclSuccess; i++) {
        configs[i] = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
        configs[i].splitShare = 1;
        if (cudaSetDevice(devs[i]) != cudaSuccess)
            res = ncclUnhandledCudaError;
        else
            res = ncclCommInitRankConfig(&comms[i], n, id, i, &configs[i]);
    }
    ncclResult_t end = ncclGroupEnd();   /* closed even after a failed call inside it */
    (void)cudaSetDevice(dev);
    free(configs);
    return res != ncclSuccess ? res : end;
}

static int init_single_process(int devices, char *err, size_t len) {
    int n = cu_g.n_local;
    if (n < 1 || n > 4096) {
        snprintf(err, len, "cuda backend: %d local ranks", n);
        return -1;
    }
    if (devices < n) {
        snprintf(err, len, "--gpus %d asks for %d GPUs, but this process sees %d CUDA device%s "
                 "(nvidia-smi -L, CUDA_VISIBLE_DEVICES)", n, n, devices, devices == 1 ? "" : "s");
        return -1;
    }
    int *devs = calloc((size_t)n, sizeof *devs);
    ncclComm_t *comms = calloc((size_t)n, sizeof *comms);
    int rc = devs && comms ? 0 : -1;
    if (rc)
        snprintf(err, len, "out of host memory");
    for (int i = 0; i < n && rc == 0; i++) {
        cu_rank *cr = &cu_g.ranks[i];
        cr->device = devs[i] = i;
        cr->rank = cu_g.first_rank + i;
        rc = context_and_baseline(cr, err, len);
    }
    if (rc == 0) {
        /* Every GPU is this process's, so no peer can be missing; the deadline is for a stuck
         * device or link, which would otherwise hold NCCL's init forever. */
        double deadline = cu_g.opt.timeout_s > 0 ? cu_g.opt.timeout_s : 60;
        int armed = rt_watchdog_arm(deadline, cu_g.first_rank, "ncclCommInitAll", NULL);
        ncclResult_t res = cu_g.opt.world_split_share ? init_all_sharing(comms, n, devs)
                                                      : ncclCommInitAll(comms, n, devs);
        if (armed == 0)
            rt_watchdog_disarm();
        if (res != ncclSuccess)
            rc = cu_fail_nccl(err, len, NULL, res, "ncclCommInitAll over %d GPUs failed", n);
        for (int i = 0; i < n && rc == 0; i++)
            cu_g.ranks[i].comm = comms[i];
    }
    free(devs);
    free(comms);
    return rc;
}

#ifdef MEMLIFE_HAVE_MPI
static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x < 0 || x > 1 << 20 ? fallback : (int)x;
}

#endif

static int init_mpi(int devices, char *err, size_t len) {
#ifndef MEMLIFE_HAVE_MPI
    (void)devices;
    snprintf(err, len, "the cuda backend with %d ranks in %d processes needs Open MPI, and memlife "
             "was built without it; use --gpus %d (one process driving every GPU) or rebuild with "
             "mpicc on the PATH", cu_g.world, cu_g.world / cu_g.n_local, cu_g.world);
    return -1;
#else
    if (cu_g.n_local != 1) {
        snprintf(err, len, "under mpirun the cuda backend drives one GPU per process, not %d",
                 cu_g.n_local);
        return -1;
    }
    cu_g.mpi = true;
    if (rt_mpi_init(cu_g.world, cu_g.first_rank, cu_g.opt.timeout_s, err, len))
        return -1;
    cu_rank *cr = &cu_g.ranks[0];
    cr->rank = cu_g.first_rank;
    int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", -1);
    int local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", -1);
    if (local_rank < 0 || local_size < 1) {
        /* Not Open MPI's launcher: ask MPI which ranks share this node. */
        MPI_Comm node;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, cu_g.first_rank, MPI_INFO_NULL,
                            &node);
        MPI_Comm_rank(node, &local_rank);
        MPI_Comm_size(node, &local_size);
        MPI_Comm_free(&node);
    }
    if (local_size > devices) {
        snprintf(err, len, "%d ranks run on this node but it has %d CUDA device%s: one GPU per "
                 "rank (nvidia-smi -L, CUDA_VISIBLE_DEVICES)", local_size, devices,
                 devices == 1 ? "" : "s");
        return -1;
    }
    cr->device = local_rank;
    if (context_and_baseline(cr, err, len))
        return -1;

    /* rank_init has not run yet: a stand-in rank carries the deadline for the bounded wait. */
    rt_rank who;
    memset(&who, 0, sizeof who);
    who.opt = &cu_g.opt;
    who.rank = cu_g.first_rank;
    who.world = cu_g.world;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (cu_g.first_rank == 0) {
        ncclResult_t res = ncclGetUniqueId(&id);
        if (res != ncclSuccess)
            return cu_fail_nccl(err, len, NULL, res, "ncclGetUniqueId on rank 0 failed");
    }
    MPI_Request req;
    if (MPI_Ibcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD, &req) != MPI_SUCCESS) {
        snprintf(err, len, "MPI_Ibcast of the NCCL unique id failed");
        return -1;
    }
    rt_mpi_wait(&who, &req, "the NCCL unique id broadcast");
    rt_inject_before_init(&cu_g.opt, cr->rank, "ncclCommInitRank");
    /* ncclCommInitRank waits for every rank to join, without a timeout: a peer that ended
     * after the broadcast would hold this one forever. The watchdog ends the job instead. */
    double deadline = cu_g.opt.timeout_s > 0 ? cu_g.opt.timeout_s : 60;
    int armed = rt_watchdog_arm(deadline, cr->rank, "ncclCommInitRank (every rank joins)",
                                rt_mpi_abort);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.splitShare = 1;   /* rt_options.world_split_share: the splits share the world's */
    ncclResult_t res = cu_g.opt.world_split_share
                           ? ncclCommInitRankConfig(&cr->comm, cu_g.world, id, cr->rank, &config)
                           : ncclCommInitRank(&cr->comm, cu_g.world, id, cr->rank);
    if (armed == 0)
        rt_watchdog_disarm();
    if (res != ncclSuccess) {
        cr->comm = NULL;
        return cu_fail_nccl(err, len, NULL, res, "ncclCommInitRank of rank %d of %d (device %d) "
                            "failed", cr->rank, cu_g.world, cr->device);
    }
    return 0;
#endif
}

int cu_comm_init(char *err, size_t len) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess)
        devices = 0;
    /* Every rank in this process: no launcher needed (also mpirun -np 1 at world 1). */
    if (cu_g.world == cu_g.n_local)
        return init_single_process(devices, err, len);
    return init_mpi(devices, err, len);
}

/* Under mpirun the ranks first agree whether any of them failed (a bounded allreduce, which also
 * keeps every rank from tearing its buffers down while a peer's last kernel may still read them
 * over NVLink): after a failure anywhere every rank aborts its communicator, since
 * ncclCommDestroy could wait for a peer that is gone; after a clean run every rank destroys it. */
void cu_comm_finalize(void) {
    int any_failed = cu_g.failed || cu_g.aborted;
#ifdef MEMLIFE_HAVE_MPI
    if (cu_g.mpi && rt_mpi_active()) {
        rt_rank who;
        memset(&who, 0, sizeof who);
        who.opt = &cu_g.opt;
        who.rank = cu_g.first_rank;
        int mine = any_failed;
        MPI_Request req;
        if (MPI_Iallreduce(&mine, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req) ==
            MPI_SUCCESS)
            rt_mpi_wait(&who, &req, "agreeing on how to close the NCCL communicator");
        else
            any_failed = 1;
    }
#endif
    if (any_failed) {
        cu_abort_all();
    } else {
        for (int i = 0; i < cu_g.n_local; i++) {
            cu_rank *cr = &cu_g.ranks[i];
            (void)cudaSetDevice(cr->device);
            for (uint32_t c = cr->n_splits; c-- > 1;)   /* in reverse: the splits, the world */
                if (cr->splits[c]) {
                    (void)ncclCommDestroy(cr->splits[c]);
                    cr->splits[c] = NULL;
                }
            if (cr->comm) {
                (void)ncclCommDestroy(cr->comm);
                cr->comm = NULL;
            }
        }
    }
    for (int i = 0; i < cu_g.n_local; i++) {
        free(cu_g.ranks[i].splits);
        cu_g.ranks[i].splits = NULL;
        cu_g.ranks[i].n_splits = 0;
    }
    if (cu_g.mpi)
        rt_mpi_finalize();
}

/* ---- Blobs ----------------------------------------------------------------------------------------- */

/* Under MPI: an allgather with a deadline. In one process every rank is local: each call stores the
 * caller's blob in its slot and returns every slot stored so far, so after the executor has called
 * it for each local rank in turn, `all` of the last call is complete. */
int cu_allgather_blob(rt_rank *r, const void *mine, size_t len, void *all, char *err, size_t elen) {
    if (cu_g.mpi)
        return rt_mpi_allgather_blob(r, mine, len, all, err, elen);
    if (len != cu_g.blob_len || !cu_g.blobs) {
        unsigned char *b = calloc((size_t)cu_g.n_local, len ? len : 1);
        if (!b) {
            snprintf(err, elen, "out of host memory");
            return -1;
        }
        free(cu_g.blobs);
        cu_g.blobs = b;
        cu_g.blob_len = len;
    }
    memcpy(cu_g.blobs + (size_t)r->local_index * len, mine, len);
    memcpy(all, cu_g.blobs, (size_t)cu_g.n_local * len);
    return 0;
}

/* ---- Warm-up --------------------------------------------------------------------------------------- */

/* NCCL connects lazily (NCCL_RUNTIME_CONNECT=1): on H200x2 the first AllReduce adds 474 MiB per
 * GPU on top of the 388 MiB of ncclCommInitAll, and the algorithm (hence the connections) depends
 * on the size. So before the baseline every rank runs, on every stream the plan uses for it, each
 * collective type at one element and at each distinct size the plan uses (up to WARM_SIZES of
 * them, each capped at WARM_CAP bytes per buffer). The list is agreed on by every rank first:
 * warm-up collectives must match across ranks exactly, or they would hang. */
enum { WARM_SIZES = 8 };
#define WARM_CAP ((uint64_t)1 << 30)

typedef struct {
    uint64_t count[COLL_COUNT][WARM_SIZES];   /* NCCL counts; 0: empty slot */
    uint8_t dtype[COLL_COUNT][WARM_SIZES];
    uint8_t op[COLL_COUNT][WARM_SIZES];
    uint64_t streams[COLL_COUNT];             /* bit s: runs on stream s (streams 0..63) */
} cu_warm_list;

static void warm_add(cu_warm_list *w, ml_coll c, uint64_t count, int dtype, int op,
                     uint64_t stream_bits) {
    w->streams[c] |= stream_bits;
    for (int k = 0; k < WARM_SIZES; k++) {
        if (w->count[c][k] == count && w->dtype[c][k] == dtype && w->op[c][k] == op)
            return;
        if (w->count[c][k] == 0) {
            w->count[c][k] = count;
            w->dtype[c][k] = (uint8_t)dtype;
            w->op[c][k] = (uint8_t)op;
            return;
        }
    }
    /* Full: the largest size matters most (it is the one that picks the ring / Simple path). */
    int smallest = 0;
    for (int k = 1; k < WARM_SIZES; k++)
        if (w->count[c][k] < w->count[c][smallest])
            smallest = k;
    if (count > w->count[c][smallest]) {
        w->count[c][smallest] = count;
        w->dtype[c][smallest] = (uint8_t)dtype;
        w->op[c][smallest] = (uint8_t)op;
    }
}

static void warm_scan(const rank_plan *p, cu_warm_list *w) {
    if (!p)
        return;
    for (size_t k = 0; k < p->n_ops; k++) {
        const plan_op *op = &p->ops[k];
        /* A collective under expect_error is refused before it reaches NCCL. */
        if (op->kind == OP_EXPECT_BEGIN) {
            k++;
            continue;
        }
        /* the splits' collectives warm their own communicators (warm_splits) */
        if (op->kind != OP_COLL || plan_coll_count(op) == 0 || op->u.coll.comm != 0)
            continue;
        uint32_t s = op->u.coll.stream;
        warm_add(w, op->u.coll.coll, plan_coll_count(op), (int)op->u.coll.send.dtype,
                 (int)op->u.coll.op, s < 64 ? (uint64_t)1 << s : 1);
    }
}

/* Streams and events the plan names are created now: creating them later could move device memory
 * inside the measured window. */
static int create_named(cu_rank *cr, const rank_plan *p, char *err, size_t len) {
    if (!p)
        return 0;
    cudaStream_t s;
    cudaEvent_t e;
    for (size_t k = 0; k < p->n_ops; k++) {
        const plan_op *op = &p->ops[k];
        uint32_t stream = SCHED_NO_SYM, event = SCHED_NO_SYM;
        switch (op->kind) {
        case OP_COLL: stream = op->u.coll.stream; break;
        case OP_COPY: stream = op->u.copy.stream; break;
        case OP_SCALE: stream = op->u.scale.stream; break;
        case OP_COMPUTE: stream = op->u.compute.stream; break;
        case OP_SYNC: stream = op->u.sync.stream; event = op->u.sync.event; break;
        case OP_RECORD:
        case OP_WAIT: stream = op->u.event.stream; event = op->u.event.event; break;
        default: break;
        }
        if (stream < p->s->syms[SYM_STREAM].n && cu_stream_get(cr, stream, &s, err, len))
            return -1;
        if (event < p->s->syms[SYM_EVENT].n && cu_event_get(cr, event, &e, err, len))
            return -1;
    }
    return 0;
}

/* One warm-up collective, in place in each rank's scratch buffer, for all local ranks at once. */
static int warm_one(cu_rank **crs, rt_mem *scratch, int n, ml_coll c, uint64_t count, int dtype,
                    int op, uint32_t stream, char *err, size_t len) {
    rt_coll_args *args = n > 0 ? calloc((size_t)n, sizeof *args) : NULL;
    if (!args) {
        snprintf(err, len, "out of host memory");
        return -1;
    }
    uint64_t esize = ml_dtypes[dtype].size;
    for (int i = 0; i < n; i++) {
        rt_coll_args *a = &args[i];
        memset(a, 0, sizeof *a);
        a->coll = c;
        a->send = a->recv = &scratch[i];
        /* NCCL's in-place offsets (coll.h): recv - send = delta elements; a collective that is
         * never in place gets recv right after send (warm_bytes counts both). */
        int64_t delta;
        bool in_place = ml_coll_inplace_at(c, count, crs[i]->rank, &delta);
        if (!in_place)
            delta = (int64_t)ml_coll_send_count(c, count, cu_g.world);
        a->send_off_bytes = delta < 0 ? (uint64_t)(-delta) * esize : 0;
        a->recv_off_bytes = delta > 0 ? (uint64_t)delta * esize : 0;
        a->count = count;
        a->dtype = (ml_dtype)dtype;
        a->op = (ml_redop)op;
        a->root = 0;
        a->stream = stream;
        a->in_place = in_place;
    }
    /* The first collective of a kind sets NCCL's connections up inside this call, waiting for
     * the peers' side without a timeout of its own: the same watchdog as the init. */
    double deadline = cu_g.opt.timeout_s > 0 ? cu_g.opt.timeout_s : 60;
    int armed = rt_watchdog_arm(deadline, crs[0]->rank, "the NCCL warm-up (connection set-up)",
                                cu_g.mpi ? rt_mpi_abort : NULL);
    int rc = cu_issue_group(crs, args, n, err, len);
    if (armed == 0)
        rt_watchdog_disarm();
    for (int i = 0; i < n && rc == 0; i++)
        rc = cu_wait_stream(crs[i], stream, err, len);
    free(args);
    return rc;
}

/* Appends a stage to every local rank: what its device holds now beyond the last stage. The
 * per-collective stages show NCCL's lazy connection (NCCL_RUNTIME_CONNECT=1): on 2 x H200 the
 * first AllReduce added 474 MiB to the 388 MiB of ncclCommInitAll. */
static int comm_stage(rt_rank **ranks, cu_rank **crs, int n, const char *name,
                      const uint64_t *held, char *err, size_t len) {
    for (int i = 0; i < n; i++) {
        rt_rank *r = ranks[i];
        uint64_t now = 0;
        if (cu_device_used(crs[i], &now, NULL, NULL)) {
            snprintf(err, len, "cudaMemGetInfo on device %d failed", crs[i]->device);
            return -1;
        }
        if (held)   /* the warm-up's scratch buffer is memlife's, not NCCL's */
            now = now > held[i] ? now - held[i] : 0;
        uint64_t before = crs[i]->used_before_comm;
        for (uint32_t k = 0; k < r->n_comm_stages; k++)
            before += r->comm_stages[k].bytes;
        if (r->n_comm_stages >= RT_COMM_STAGES)
            continue;
        snprintf(r->comm_stages[r->n_comm_stages].name, sizeof r->comm_stages[0].name, "%s", name);
        /* A stage that gave memory back (a freed cache) counts 0; the total below stays exact. */
        r->comm_stages[r->n_comm_stages++].bytes = now > before ? now - before : 0;
    }
    return 0;
}

/* Bytes of the scratch a warm-up collective of `count` needs: the larger side in place, both
 * sides where the collective never runs in place. */
static uint64_t warm_bytes_in(ml_coll c, uint64_t count, int dtype, int size) {
    uint64_t send = ml_coll_send_count(c, count, size);
    uint64_t recv = ml_coll_recv_count(c, count, size);
    uint64_t n = ml_colls[c].inplace == INPLACE_NEVER ? send + recv : send > recv ? send : recv;
    return n * ml_dtypes[dtype].size;
}
static uint64_t warm_bytes(ml_coll c, uint64_t count, int dtype) {
    return warm_bytes_in(c, count, dtype, cu_g.world);
}

/* A count the collective takes in a group of size ranks: a multiple of it where it sends
 * count/size to each. */
static uint64_t warm_fit_in(ml_coll c, uint64_t count, int size) {
    uint64_t w = (uint64_t)size;
    if (!ml_colls[c].count_per_rank || w == 0)
        return count;
    return count < w ? w : count - count % w;
}
static uint64_t warm_fit(ml_coll c, uint64_t count) { return warm_fit_in(c, count, cu_g.world); }

/* Halving keeps the result the same on every rank (it depends on count, dtype and world only). */
static uint64_t warm_capped_count(ml_coll c, uint64_t count, int dtype) {
    while (count > 1 && warm_bytes(c, count, dtype) > WARM_CAP)
        count /= 2;
    return warm_fit(c, count);
}

/* One warm-up buffer of need bytes per rank, plain cudaMalloc (freed before the baseline
 * whichever allocator the run uses), zeroed; held[i]: the device bytes it took on rank i. */
static int scratch_alloc(cu_rank **crs, int n, uint64_t need, rt_mem *scratch, uint64_t *held,
                         char *err, size_t len) {
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        uint64_t before = 0, after = 0;
        if (cu_set_device(crs[i], err, len)) {
            rc = -1;
        } else if (cu_device_used(crs[i], &before, NULL, NULL)) {
            snprintf(err, len, "cudaMemGetInfo on device %d failed", crs[i]->device);
            rc = -1;
        } else if (cudaMalloc(&scratch[i].ptr, need) != cudaSuccess) {
            scratch[i].ptr = NULL;
            (void)cudaGetLastError();
            uint64_t free_bytes = 0;
            cu_device_used(crs[i], NULL, &free_bytes, NULL);
            snprintf(err, len, "cudaMalloc of %llu bytes for the nccl warm-up failed on device %d "
                     "(%llu bytes free)", (unsigned long long)need, crs[i]->device,
                     (unsigned long long)free_bytes);
            rc = -1;
        } else {
            scratch[i].bytes = need;
            if (cu_device_used(crs[i], &after, NULL, NULL) == 0 && after > before)
                held[i] = after - before;
            if (cudaMemset(scratch[i].ptr, 0, need) != cudaSuccess)
                rc = cu_fail_cuda(err, len, cudaGetLastError(), "cudaMemset of the warm-up buffer");
        }
    }
    return rc;
}

static void scratch_free(cu_rank **crs, int n, rt_mem *scratch, uint64_t *held) {
    for (int i = 0; i < n; i++)
        if (scratch[i].ptr) {
            (void)cudaSetDevice(crs[i]->device);
            (void)cudaFree(scratch[i].ptr);
        }
    free(scratch);
    free(held);
}

static int warm_run(rt_rank **ranks, cu_rank **crs, int n, const cu_warm_list *w, char *err,
                    size_t len) {
    /* Scratch: the largest capped buffer any warm-up needs, one per rank, plain cudaMalloc (it is
     * freed before the baseline whichever allocator the run uses). */
    uint64_t need = 4096;
    for (int c = 0; c < COLL_COUNT; c++) {
        uint64_t tiny = warm_bytes((ml_coll)c, warm_fit((ml_coll)c, 1), DT_FLOAT64);
        need = tiny > need ? tiny : need;
        for (int k = 0; k < WARM_SIZES && w->count[c][k]; k++) {
            uint64_t b = warm_bytes((ml_coll)c, warm_capped_count((ml_coll)c, w->count[c][k],
                                                                  w->dtype[c][k]), w->dtype[c][k]);
            need = b > need ? b : need;
        }
    }
    rt_mem *scratch = ml_xcalloc((size_t)n, sizeof *scratch);
    uint64_t *held = ml_xcalloc((size_t)n, sizeof *held);   /* device bytes the scratch takes */
    int rc = scratch_alloc(crs, n, need, scratch, held, err, len);
    for (int c = 0; c < COLL_COUNT && rc == 0; c++) {
        if (!w->count[c][0])
            continue;
        uint64_t bits = w->streams[c] ? w->streams[c] : 1;
        int dtype0 = w->dtype[c][0], op0 = w->op[c][0];
        for (uint32_t s = 0; s < 64 && rc == 0; s++) {
            if (!(bits >> s & 1))
                continue;
            rc = warm_one(crs, scratch, n, (ml_coll)c, warm_fit((ml_coll)c, 1), dtype0, op0, s,
                          err, len);
            for (int k = 0; k < WARM_SIZES && w->count[c][k] && rc == 0; k++)
                rc = warm_one(crs, scratch, n, (ml_coll)c,
                              warm_capped_count((ml_coll)c, w->count[c][k], w->dtype[c][k]),
                              w->dtype[c][k], w->op[c][k], s, err, len);
        }
        if (rc == 0)   /* warm_one waited for each launch */
            rc = comm_stage(ranks, crs, n, ml_colls[c].name, held, err, len);
    }
    /* Copies too: inits, checks and copy steps must not set anything up inside the window. */
    for (int i = 0; i < n && rc == 0; i++) {
        unsigned char host[4096] = {0};
        cudaStream_t st;
        if (cu_set_device(crs[i], err, len) ||
            cu_stream_get(crs[i], SCHED_DEFAULT_STREAM, &st, err, len))
            rc = -1;
        else if (cudaMemcpy(scratch[i].ptr, host, sizeof host, cudaMemcpyHostToDevice) ||
                 cudaMemcpy(host, scratch[i].ptr, sizeof host, cudaMemcpyDeviceToHost) ||
                 cudaMemcpyAsync((char *)scratch[i].ptr + 2048, scratch[i].ptr, 2048,
                                 cudaMemcpyDeviceToDevice, st))
            rc = cu_fail_cuda(err, len, cudaGetLastError(), "warm-up copies on rank %d",
                              crs[i]->rank);
        else
            rc = cu_wait_device(crs[i], err, len);
    }
    scratch_free(crs, n, scratch, held);
    if (rc == 0)
        rc = comm_stage(ranks, crs, n, "copies", NULL, err, len);
    return rc;
}

/* ---- Communicators split from the world ------------------------------------------------------- */

/* Every schedule communicator past the world, in the schedule's order, for every local rank:
 * ncclCommSplit is collective over the world (one NCCL group for the local ranks in the
 * single-process mode), a rank in no group passing NCCL_SPLIT_NOCOLOR (it gets none). Each is a
 * stage of the communicator's bytes. */
static int split_all(rt_rank **ranks, cu_rank **crs, int n, char *err, size_t len) {
    const ml_comms *c = ranks[0]->plan ? ranks[0]->plan->comms : NULL;
    if (!c)
        return 0;
    uint32_t n_comms = ml_comms_count(c);
    for (int i = 0; i < n; i++) {
        crs[i]->splits = ml_xcalloc(n_comms, sizeof *crs[i]->splits);
        crs[i]->n_splits = n_comms;
    }
    ncclConfig_t *configs = ml_xcalloc((size_t)n, sizeof *configs);   /* alive past the group */
    double deadline = cu_g.opt.timeout_s > 0 ? cu_g.opt.timeout_s : 60;
    int rc = 0;
    for (uint32_t comm = 1; comm < n_comms && rc == 0; comm++) {
        const char *name = ml_comms_name(c, comm);
        int armed = rt_watchdog_arm(deadline, crs[0]->rank, "ncclCommSplit (every rank joins)",
                                    cu_g.mpi ? rt_mpi_abort : NULL);
        ncclResult_t res = n > 1 ? ncclGroupStart() : ncclSuccess, bad_res = ncclSuccess;
        int bad = -1;
        for (int i = 0; i < n && res == ncclSuccess && bad < 0; i++) {
            int group = ml_comms_group(c, comm, crs[i]->rank);
            configs[i] = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
            configs[i].splitShare = ml_comms_def(c, comm)->share ? 1 : 0;
            bad_res = ncclCommSplit(crs[i]->comm, group < 0 ? NCCL_SPLIT_NOCOLOR : group,
                                    group < 0 ? 0 : ml_comms_local(c, comm, crs[i]->rank),
                                    &crs[i]->splits[comm], &configs[i]);
            if (bad_res != ncclSuccess)
                bad = i;
        }
        /* The group is always closed, even after a failed call inside it. */
        ncclResult_t end = n > 1 ? (res == ncclSuccess ? ncclGroupEnd() : res) : ncclSuccess;
        if (armed == 0)
            rt_watchdog_disarm();
        if (bad >= 0 || end != ncclSuccess) {
            int at = bad >= 0 ? bad : 0;
            rc = cu_fail_nccl(err, len, crs[at]->comm, bad >= 0 ? bad_res : end,
                              "ncclCommSplit of communicator '%s' on rank %d failed", name,
                              crs[at]->rank);
        } else {
            char stage[40];
            snprintf(stage, sizeof stage, "split %s", name);
            rc = comm_stage(ranks, crs, n, stage, NULL, err, len);
        }
    }
    free(configs);
    return rc;
}

/* The collectives a rank's plan issues on comm (bit c: ml_coll c), the point-to-point ones
 * left out (a send needs its peer at the same time) and the refused ones under expect_error. */
static unsigned split_kinds(const rank_plan *p, uint32_t comm) {
    unsigned kinds = 0;
    for (size_t k = 0; p && k < p->n_ops; k++) {
        const plan_op *op = &p->ops[k];
        if (op->kind == OP_EXPECT_BEGIN)
            k++;
        else if (op->kind == OP_COLL && op->u.coll.comm == comm && !ml_colls[op->u.coll.coll].p2p)
            kinds |= 1u << op->u.coll.coll;
    }
    return kinds;
}

/* Each split's collectives once, at the smallest count its group takes, on the default stream,
 * so that NCCL connects them before the baseline as it does the world's; a stage per split. The
 * members of a group issue the same kinds on it (lint holds a group to one sequence). */
static int warm_splits(rt_rank **ranks, cu_rank **crs, int n, char *err, size_t len) {
    const ml_comms *c = ranks[0]->plan ? ranks[0]->plan->comms : NULL;
    if (!c)
        return 0;
    uint64_t need = 4096;   /* a group is no larger than the world */
    for (int k = 0; k < COLL_COUNT; k++) {
        uint64_t b = warm_bytes((ml_coll)k, warm_fit((ml_coll)k, 1), DT_FLOAT32);
        need = b > need ? b : need;
    }
    rt_mem *scratch = ml_xcalloc((size_t)n, sizeof *scratch);
    uint64_t *held = ml_xcalloc((size_t)n, sizeof *held);
    rt_coll_args *args = ml_xcalloc((size_t)n, sizeof *args);
    cu_rank **sub = ml_xcalloc((size_t)n, sizeof *sub);
    unsigned *kinds = ml_xcalloc((size_t)n, sizeof *kinds);
    int rc = scratch_alloc(crs, n, need, scratch, held, err, len);
    double deadline = cu_g.opt.timeout_s > 0 ? cu_g.opt.timeout_s : 60;
    for (uint32_t comm = 1; comm < ml_comms_count(c) && rc == 0; comm++) {
        unsigned any = 0;
        for (int i = 0; i < n; i++)
            any |= kinds[i] = cu_comm_of(crs[i], comm) ? split_kinds(ranks[i]->plan, comm) : 0;
        for (int k = 0; k < COLL_COUNT && rc == 0; k++) {
            int m = 0;
            for (int i = 0; i < n; i++) {
                if (!(kinds[i] >> k & 1))
                    continue;
                int size = ml_comms_size(c, comm, crs[i]->rank);
                int local = ml_comms_local(c, comm, crs[i]->rank);
                uint64_t count = warm_fit_in((ml_coll)k, 1, size);
                int64_t delta;
                bool in_place = ml_coll_inplace_at((ml_coll)k, count, local, &delta);
                if (!in_place)
                    delta = (int64_t)ml_coll_send_count((ml_coll)k, count, size);
                uint64_t esize = ml_dtypes[DT_FLOAT32].size;
                args[m] = (rt_coll_args){
                    .coll = (ml_coll)k, .send = &scratch[i], .recv = &scratch[i],
                    .send_off_bytes = delta < 0 ? (uint64_t)(-delta) * esize : 0,
                    .recv_off_bytes = delta > 0 ? (uint64_t)delta * esize : 0,
                    .count = count, .dtype = DT_FLOAT32, .op = RED_SUM, .root = 0,
                    .stream = SCHED_DEFAULT_STREAM, .in_place = in_place, .comm = (uint16_t)comm,
                    .comm_size = size, .comm_rank = local};
                sub[m++] = crs[i];
            }
            if (m == 0)
                continue;
            int armed = rt_watchdog_arm(deadline, sub[0]->rank, "the NCCL warm-up of a split",
                                        cu_g.mpi ? rt_mpi_abort : NULL);
            rc = cu_issue_group(sub, args, m, err, len);
            if (armed == 0)
                rt_watchdog_disarm();
            for (int i = 0; i < m && rc == 0; i++)
                rc = cu_wait_stream(sub[i], SCHED_DEFAULT_STREAM, err, len);
        }
        if (rc == 0 && any) {
            char stage[40];
            snprintf(stage, sizeof stage, "%s colls", ml_comms_name(c, comm));
            rc = comm_stage(ranks, crs, n, stage, held, err, len);
        }
    }
    scratch_free(crs, n, scratch, held);
    free(args);
    free(sub);
    free(kinds);
    return rc;
}

/* The allocator's own first use (pool machinery, VMM entry points) also happens before the
 * baseline: one small buffer made and freed through it. */
static int warm_allocator(cu_rank *cr, char *err, size_t len) {
    rt_mem m;
    memset(&m, 0, sizeof m);
    if (cu_g.alloc->alloc(cr, (uint64_t)2 << 20, &m, err, len))
        return -1;
    int rc = m.impl ? cu_vmm_free(cr, &m, err, len) : cu_g.alloc->free(cr, &m, err, len);
    if (rc == 0)
        rc = cu_wait_device(cr, err, len);
    cu_pool_reset_high(cr);
    return rc;
}

/* `used` is not consulted: under mpirun it is this rank's view, and a warm-up list that differed
 * between ranks would hang. The list comes from every rank's plan, merged identically everywhere. */
int cu_warmup(rt_rank **ranks, int n, const bool used[COLL_COUNT], char *err, size_t len) {
    (void)used;
    cu_rank *fixed[64];
    cu_rank **crs = n <= 64 ? fixed : malloc((size_t)n * sizeof *crs);
    cu_warm_list *lists = calloc((size_t)cu_g.world, sizeof *lists);
    cu_warm_list merged;
    memset(&merged, 0, sizeof merged);
    int rc = crs && lists ? 0 : -1;
    if (rc)
        snprintf(err, len, "out of host memory");
    for (int i = 0; i < n && rc == 0; i++) {
        crs[i] = cu_rank_of(ranks[i]);
        ranks[i]->n_comm_stages = 0;
    }
    if (rc == 0)
        rc = comm_stage(ranks, crs, n, "init", NULL, err, len);
    if (rc == 0)
        rc = split_all(ranks, crs, n, err, len);
    for (int i = 0; i < n && rc == 0; i++) {
        rc = create_named(crs[i], ranks[i]->plan, err, len);
        if (rc == 0)
            rc = warm_allocator(crs[i], err, len);
    }
    if (rc == 0 && cu_g.mpi) {
        cu_warm_list mine;
        memset(&mine, 0, sizeof mine);
        warm_scan(ranks[0]->plan, &mine);
        rc = rt_mpi_allgather_blob(ranks[0], &mine, sizeof mine, lists, err, len);
    } else if (rc == 0) {
        for (int i = 0; i < n; i++)
            warm_scan(ranks[i]->plan, &lists[ranks[i]->rank - cu_g.first_rank]);
    }
    /* Merged in rank order, so every rank computes the same list. */
    for (int k = 0; k < cu_g.world && rc == 0; k++)
        for (int c = 0; c < COLL_COUNT; c++)
            for (int j = 0; j < WARM_SIZES && lists[k].count[c][j]; j++)
                warm_add(&merged, (ml_coll)c, lists[k].count[c][j], lists[k].dtype[c][j],
                         lists[k].op[c][j], lists[k].streams[c]);
    if (rc == 0)
        rc = comm_stage(ranks, crs, n, "streams", NULL, err, len);
    if (rc == 0)
        rc = warm_run(ranks, crs, n, &merged, err, len);
    if (rc == 0)
        rc = warm_splits(ranks, crs, n, err, len);
    for (int i = 0; i < n && rc == 0; i++) {
        uint64_t now = 0;
        if (cu_device_used(crs[i], &now, NULL, NULL)) {
            snprintf(err, len, "cudaMemGetInfo on device %d failed", crs[i]->device);
            rc = -1;
        } else {
            ranks[i]->communicator_bytes =
                now > crs[i]->used_before_comm ? now - crs[i]->used_before_comm : 0;
        }
    }
    free(lists);
    if (crs != fixed)
        free(crs);
    return rc;
}

#endif /* MEMLIFE_HAVE_CUDA */
