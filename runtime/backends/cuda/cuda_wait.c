/* SPDX-License-Identifier: MIT */
/* backend_cuda_wait.c — every host wait of the cuda backend, bounded by the run's deadline.
 *
 * NCCL has no per-operation timeout, and cudaStreamSynchronize / cudaEventSynchronize /
 * cudaDeviceSynchronize block for as long as a collective waits for a peer that never comes (a
 * divergent schedule, a dead rank). So a wait polls cudaStreamQuery / cudaEventQuery, and between
 * polls asks ncclCommGetAsyncError; past opt.timeout_s it aborts the communicators
 * (ncclCommAbort makes the stuck kernels exit) and fails with a message naming the work, the
 * rank and the stream. When the query says done, the real synchronize call follows: it returns at
 * once, and it is the synchronization point at which an async pool with release threshold 0 gives
 * freed memory back (cudaMemGetInfo shows frees only after one). */
#include "exec/watch.h"
#include "backends/cuda/cuda_int.h"

#ifdef MEMLIFE_HAVE_CUDA

#include <string.h>
#include <time.h>

typedef cudaError_t (*cu_query_fn)(void *obj);
static cudaError_t query_stream(void *obj) { return cudaStreamQuery((cudaStream_t)obj); }
static cudaError_t query_event(void *obj) { return cudaEventQuery((cudaEvent_t)obj); }

static void work_text(int work, char *buf, size_t len) {
    if (work >= 0 && work < COLL_COUNT)
        snprintf(buf, len, "nccl %s", ml_colls[work].name);
    else if (work == CU_WORK_COPY)
        snprintf(buf, len, "copy");
    else if (work == CU_WORK_WARMUP)
        snprintf(buf, len, "nccl warm-up");
    else if (work == CU_WORK_GRAPH)
        snprintf(buf, len, "cuda graph replay");
    else
        snprintf(buf, len, "device work");
}

void cu_abort_all(void) {
    for (int i = 0; i < cu_g.n_local; i++) {
        cu_rank *cr = &cu_g.ranks[i];
        (void)cudaSetDevice(cr->device);
        for (uint32_t c = cr->n_splits; c-- > 1;)   /* the splits first: they hang off the world */
            if (cr->splits[c]) {
                (void)ncclCommAbort(cr->splits[c]);
                cr->splits[c] = NULL;
            }
        if (cr->comm) {
            (void)ncclCommAbort(cr->comm);
            cr->comm = NULL;
        }
    }
    cu_g.aborted = true;
    cu_g.failed = true;
}

static int poll_until_done(cu_rank *cr, cu_query_fn query, void *obj, int work, uint32_t stream,
                           char *err, size_t len) {
    double timeout = cu_g.opt.timeout_s > 0 ? cu_g.opt.timeout_s : 60;
    double start = ml_now_seconds(), deadline = start + timeout, spin_until = start + 1e-3;
    char what[64];
    work_text(work, what, sizeof what);
    const char *sname = cu_stream_name(cr, stream);
    for (;;) {
        cudaError_t e = query(obj);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady)
            return cu_fail_cuda(err, len, e, "%s on rank %d (stream '%s') failed", what, cr->rank,
                                sname);
        for (uint32_t c = 0; c < (cr->n_splits ? cr->n_splits : 1); c++) {
            ncclComm_t comm = cu_comm_of(cr, c);   /* the failure may be on any of them */
            ncclResult_t async = ncclSuccess;
            if (comm && ncclCommGetAsyncError(comm, &async) == ncclSuccess &&
                async != ncclSuccess && async != ncclInProgress) {
                cu_fail_nccl(err, len, comm, async, "%s on rank %d (stream '%s') failed",
                             what, cr->rank, sname);
                cu_abort_all();
                size_t used = strnlen(err, len);
                if (used + 1 < len)
                    snprintf(err + used, len - used, "; communicator aborted");
                return -1;
            }
        }
        if (ml_now_seconds() >= deadline) {
            cu_abort_all();
            snprintf(err, len, "%s did not complete within %g s on rank %d (stream '%s'); "
                     "communicator aborted", what, timeout, cr->rank, sname);
            return -1;
        }
        /* Spin for the first millisecond, as CUDA's own synchronize does by default: a sleep
         * of "2 us" lasts ~60 (timer slack), lets the core idle and leaves the host path cold
         * for whatever the thread does next. Measured on 2 x H200 (bench, 16 MiB, the call
         * right after such a wait; docs/evidence/2026-11-30-h200x2-reset-probe.log): the
         * ncclAllReduce call took 11.3-11.5 us to issue after sleeping waits and 7.5-8.1 us
         * after spinning ones. Past the first millisecond, back off, so that a long wait does
         * not burn a core the proxy thread needs. */
        if (ml_now_seconds() < spin_until)
            continue;
        rt_watch_parent();   /* a long wait ends with the memlife that launched it (watch.h) */
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

int cu_wait_stream(cu_rank *cr, uint32_t stream, char *err, size_t len) {
    if (stream >= cr->n_streams || !cr->streams[stream].stream)
        return 0;   /* never used: nothing to wait for */
    cu_stream *st = &cr->streams[stream];
    if (poll_until_done(cr, query_stream, st->stream, st->last_work, stream, err, len))
        return -1;
    cudaError_t e = cudaStreamSynchronize(st->stream);
    if (e != cudaSuccess)
        return cu_fail_cuda(err, len, e, "cudaStreamSynchronize of stream '%s' on rank %d failed",
                            cu_stream_name(cr, stream), cr->rank);
    st->last_work = CU_WORK_NONE;
    return 0;
}

int cu_wait_event(cu_rank *cr, uint32_t event, char *err, size_t len) {
    if (event >= cr->n_events || !cr->events[event].event)
        return 0;   /* never recorded: CUDA treats it as complete */
    cu_event *ev = &cr->events[event];
    uint32_t stream = ev->stream == SCHED_NO_SYM ? SCHED_DEFAULT_STREAM : ev->stream;
    if (poll_until_done(cr, query_event, ev->event, ev->last_work, stream, err, len))
        return -1;
    cudaError_t e = cudaEventSynchronize(ev->event);
    return e == cudaSuccess ? 0 : cu_fail_cuda(err, len, e, "cudaEventSynchronize on rank %d "
                                               "failed", cr->rank);
}

int cu_wait_device(cu_rank *cr, char *err, size_t len) {
    if (cu_set_device(cr, err, len))
        return -1;
    for (uint32_t k = 0; k < cr->n_streams; k++)
        if (cu_wait_stream(cr, k, err, len))
            return -1;
    cudaError_t e = cudaDeviceSynchronize();
    return e == cudaSuccess ? 0 : cu_fail_cuda(err, len, e, "cudaDeviceSynchronize on rank %d "
                                               "failed", cr->rank);
}

#endif /* MEMLIFE_HAVE_CUDA */
