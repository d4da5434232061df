/* SPDX-License-Identifier: MIT */
/* backend_cuda_bench.c — the cuda backend's benchmark hooks (rt.h's optional bench entries):
 * CUDA events per rank and stream around a timed span, the bare NCCL call, CUDA graphs.
 *
 * Timing: time_begin records `start` on the rank's default stream and makes every other stream of
 * the rank wait for it, so no work on any stream can begin before the reference; time_end records
 * `stop` on every stream, waits (against the deadline: cu_wait_device) and takes the largest
 * start-to-stop time: a rank's span ends when its last stream does. With align, a one-element
 * AllReduce on the default stream, grouped over the local ranks, comes before `start`: each
 * rank's start then fires when the last rank's GPU has got there, and the work enqueued behind it
 * is already waiting, so neither host skew nor launch latency enters the span.
 * Bare: cu_launch_one on the rank's stream; for several local ranks inside one NCCL group, as a
 * hand-written single-process NCCL program does it.
 * Graphs: capture begins on the default stream in relaxed mode (NCCL may still allocate on a
 * first use) and every other stream of the rank is forked in through an event, so work on any
 * stream is captured; graph_end joins them back, ends the capture and instantiates. */
#include "backends/cuda/cuda_int.h"

#ifdef MEMLIFE_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

static int new_event(cudaEvent_t *ev, unsigned flags, char *err, size_t len) {
    if (*ev)
        return 0;
    cudaError_t e = cudaEventCreateWithFlags(ev, flags);
    if (e != cudaSuccess) {
        *ev = NULL;
        return cu_fail_cuda(err, len, e, "cudaEventCreate for the benchmark failed");
    }
    return 0;
}

/* The rank's default stream, on its device (it exists from rank_init on). */
static int default_stream(cu_rank *cr, cudaStream_t *s, char *err, size_t len) {
    return cu_set_device(cr, err, len) || cu_stream_get(cr, SCHED_DEFAULT_STREAM, s, err, len);
}

/* The aligning collective: every rank's default stream waits for every other rank's. */
static int align_ranks(rt_rank **ranks, int n, char *err, size_t len) {
    for (int i = 0; i < n; i++) {
        cu_rank *cr = cu_rank_of(ranks[i]);
        if (cr->align_buf)
            continue;
        cudaError_t e = cudaMalloc(&cr->align_buf, 256);
        if (e == cudaSuccess)
            e = cudaMemset(cr->align_buf, 0, 256);
        if (e != cudaSuccess)
            return cu_fail_cuda(err, len, e, "cudaMalloc of the alignment buffer on rank %d",
                                cr->rank);
    }
    ncclResult_t res = ncclGroupStart();
    int bad = -1;
    for (int i = 0; i < n && res == ncclSuccess && bad < 0; i++) {
        cu_rank *cr = cu_rank_of(ranks[i]);
        (void)cudaSetDevice(cr->device);
        res = ncclAllReduce(cr->align_buf, cr->align_buf, 1, ncclFloat32, ncclSum, cr->comm,
                            cr->streams[SCHED_DEFAULT_STREAM].stream);
        if (res != ncclSuccess)
            bad = i;
    }
    /* The group is closed even after a refused call, so no rank is left inside it. */
    ncclResult_t end = bad >= 0 || res == ncclSuccess ? ncclGroupEnd() : res;
    if (bad >= 0 || end != ncclSuccess)
        return cu_fail_nccl(err, len, cu_rank_of(ranks[bad >= 0 ? bad : 0])->comm,
                            bad >= 0 ? res : end,
                            "the aligning ncclAllReduce before a timed span failed");
    return 0;
}

int cu_time_begin(rt_rank **ranks, int n, bool align, char *err, size_t len) {
    for (int i = 0; i < n; i++) {
        cu_rank *cr = cu_rank_of(ranks[i]);
        cudaStream_t s0;
        if (default_stream(cr, &s0, err, len) || new_event(&cr->start, cudaEventDefault, err, len))
            return -1;
    }
    if (align && align_ranks(ranks, n, err, len))
        return -1;
    for (int i = 0; i < n; i++) {
        cu_rank *cr = cu_rank_of(ranks[i]);
        (void)cudaSetDevice(cr->device);
        cudaError_t e = cudaEventRecord(cr->start, cr->streams[SCHED_DEFAULT_STREAM].stream);
        for (uint32_t k = 1; k < cr->n_streams && e == cudaSuccess; k++)
            if (cr->streams[k].stream)
                e = cudaStreamWaitEvent(cr->streams[k].stream, cr->start, 0);
        if (e != cudaSuccess)
            return cu_fail_cuda(err, len, e, "recording the start of a timed span on rank %d",
                                cr->rank);
    }
    return 0;
}

int cu_time_end(rt_rank **ranks, int n, double *seconds, char *err, size_t len) {
    for (int i = 0; i < n; i++) {
        cu_rank *cr = cu_rank_of(ranks[i]);
        if (cu_set_device(cr, err, len))
            return -1;
        for (uint32_t k = 0; k < cr->n_streams; k++) {
            cu_stream *st = &cr->streams[k];
            /* Streams the span left idle (last_work is reset by every wait) would end at the
             * host's time of this call, not at the GPU's: only the default stream and those the
             * span used count. */
            st->stopped = st->stream &&
                          (k == SCHED_DEFAULT_STREAM || st->last_work != CU_WORK_NONE);
            if (!st->stopped)
                continue;
            if (new_event(&st->stop, cudaEventDefault, err, len))
                return -1;
            cudaError_t e = cudaEventRecord(st->stop, st->stream);
            if (e != cudaSuccess)
                return cu_fail_cuda(err, len, e, "recording the end of a timed span on rank %d",
                                    cr->rank);
        }
    }
    for (int i = 0; i < n; i++) {
        cu_rank *cr = cu_rank_of(ranks[i]);
        if (cu_wait_device(cr, err, len))
            return -1;
        float longest = 0;
        for (uint32_t k = 0; k < cr->n_streams; k++) {
            if (!cr->streams[k].stopped)
                continue;
            float ms = 0;
            cudaError_t e = cudaEventElapsedTime(&ms, cr->start, cr->streams[k].stop);
            if (e != cudaSuccess)
                return cu_fail_cuda(err, len, e, "cudaEventElapsedTime on rank %d", cr->rank);
            longest = ms > longest ? ms : longest;
        }
        seconds[i] = longest / 1e3;
    }
    return 0;
}

/* The stream of a collective, which the warm-up created; a bare call creates nothing. */
static cudaStream_t stream_of(cu_rank *cr, uint32_t stream) {
    return stream < cr->n_streams ? cr->streams[stream].stream : NULL;
}

int cu_collective_bare(rt_rank **ranks, const rt_coll_args *args, int n, char *err, size_t len) {
    if (n == 1) {
        cu_rank *cr = cu_rank_of(ranks[0]);
        cudaStream_t s = stream_of(cr, args[0].stream);
        ncclComm_t comm = cu_comm_of(cr, args[0].comm);
        if (!s || !comm) {
            snprintf(err, len, "bare %s on rank %d: stream or communicator missing",
                     ml_colls[args[0].coll].nccl_api, cr->rank);
            return -1;
        }
        ncclResult_t r = cu_launch_one(&args[0], comm, s);
        if (r != ncclSuccess)
            return cu_fail_nccl(err, len, comm, r, "bare %s on rank %d failed",
                                ml_colls[args[0].coll].nccl_api, cr->rank);
        cr->streams[args[0].stream].last_work = (int)args[0].coll;
        return 0;
    }
    ncclResult_t res = ncclGroupStart();
    int bad = -1;
    ncclResult_t bad_res = ncclSuccess;
    for (int i = 0; i < n && res == ncclSuccess && bad < 0; i++) {
        cu_rank *cr = cu_rank_of(ranks[i]);
        cudaStream_t s = stream_of(cr, args[i].stream);
        ncclComm_t comm = cu_comm_of(cr, args[i].comm);
        bad_res = s && comm ? cu_launch_one(&args[i], comm, s) : ncclInvalidArgument;
        if (bad_res != ncclSuccess)
            bad = i;
    }
    ncclResult_t end = res == ncclSuccess ? ncclGroupEnd() : res;
    if (bad >= 0 || end != ncclSuccess) {
        int at = bad >= 0 ? bad : 0;
        return cu_fail_nccl(err, len, cu_rank_of(ranks[at])->comm, bad >= 0 ? bad_res : end,
                            "bare %s on rank %d failed", ml_colls[args[at].coll].nccl_api,
                            cu_rank_of(ranks[at])->rank);
    }
    for (int i = 0; i < n; i++)
        cu_rank_of(ranks[i])->streams[args[i].stream].last_work = (int)args[i].coll;
    return 0;
}

/* Ends a capture that cannot be completed, so the stream is usable again. */
static void drop_capture(cu_rank *cr) {
    cudaGraph_t g = NULL;
    (void)cudaSetDevice(cr->device);
    if (cudaStreamEndCapture(cr->streams[SCHED_DEFAULT_STREAM].stream, &g) == cudaSuccess && g)
        (void)cudaGraphDestroy(g);
    (void)cudaGetLastError();
}

int cu_graph_begin(rt_rank **ranks, int n, char *err, size_t len) {
    for (int i = 0; i < n; i++) {
        cu_rank *cr = cu_rank_of(ranks[i]);
        cudaStream_t s0;
        bool began = false;
        int rc = default_stream(cr, &s0, err, len) ||
                 new_event(&cr->fork, cudaEventDisableTiming, err, len) ? -1 : 0;
        if (rc == 0) {
            cudaError_t e = cudaStreamBeginCapture(s0, cudaStreamCaptureModeRelaxed);
            began = e == cudaSuccess;
            if (e == cudaSuccess)
                e = cudaEventRecord(cr->fork, s0);
            for (uint32_t k = 1; k < cr->n_streams && e == cudaSuccess; k++)
                if (cr->streams[k].stream)
                    e = cudaStreamWaitEvent(cr->streams[k].stream, cr->fork, 0);
            if (e != cudaSuccess)
                rc = cu_fail_cuda(err, len, e, "starting a CUDA graph capture on rank %d",
                                  cr->rank);
        }
        if (rc != 0) {
            for (int j = 0; j < i + began; j++)
                drop_capture(cu_rank_of(ranks[j]));
            return -1;
        }
    }
    return 0;
}

int cu_graph_end(rt_rank **ranks, int n, void **graphs, char *err, size_t len) {
    int rc = 0;
    for (int i = 0; i < n; i++) {
        cu_rank *cr = cu_rank_of(ranks[i]);
        graphs[i] = NULL;
        (void)cudaSetDevice(cr->device);
        cudaStream_t s0 = cr->streams[SCHED_DEFAULT_STREAM].stream;
        cudaError_t e = cudaSuccess;
        for (uint32_t k = 1; k < cr->n_streams && e == cudaSuccess && rc == 0; k++) {
            cu_stream *st = &cr->streams[k];
            if (!st->stream)
                continue;
            if (new_event(&st->join, cudaEventDisableTiming, err, len))
                rc = -1;
            else if ((e = cudaEventRecord(st->join, st->stream)) == cudaSuccess)
                e = cudaStreamWaitEvent(s0, st->join, 0);
        }
        cudaGraph_t g = NULL;
        cudaError_t end = cudaStreamEndCapture(s0, &g);
        if (rc == 0 && e == cudaSuccess)
            e = end;
        cudaGraphExec_t x = NULL;
        if (rc == 0 && e == cudaSuccess)
            e = cudaGraphInstantiate(&x, g, 0);
        if (g)
            (void)cudaGraphDestroy(g);
        if (rc == 0 && e != cudaSuccess)
            rc = cu_fail_cuda(err, len, e, "capturing the timed span as a CUDA graph on rank %d",
                              cr->rank);
        graphs[i] = rc == 0 ? (void *)x : NULL;
    }
    if (rc != 0)
        for (int i = 0; i < n; i++)
            if (graphs[i]) {
                cu_graph_drop(ranks[i], graphs[i]);
                graphs[i] = NULL;
            }
    return rc;
}

int cu_graph_launch(rt_rank **ranks, int n, void *const *graphs, char *err, size_t len) {
    for (int i = 0; i < n; i++) {
        cu_rank *cr = cu_rank_of(ranks[i]);
        cudaStream_t s0;
        if (default_stream(cr, &s0, err, len))
            return -1;
        cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)graphs[i], s0);
        if (e != cudaSuccess)
            return cu_fail_cuda(err, len, e, "cudaGraphLaunch on rank %d", cr->rank);
        cr->streams[SCHED_DEFAULT_STREAM].last_work = CU_WORK_GRAPH;
    }
    return 0;
}

void cu_graph_drop(rt_rank *r, void *graph) {
    cu_rank *cr = cu_rank_of(r);
    if (!graph)
        return;
    if (cr)
        (void)cudaSetDevice(cr->device);
    (void)cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

void cu_bench_rank_finalize(cu_rank *cr) {
    cudaEvent_t *events[] = {&cr->start, &cr->fork};
    for (size_t k = 0; k < ML_ARRAY_LEN(events); k++)
        if (*events[k]) {
            (void)cudaEventDestroy(*events[k]);
            *events[k] = NULL;
        }
    for (uint32_t k = 0; k < cr->n_streams; k++) {
        cu_stream *st = &cr->streams[k];
        if (st->stop)
            (void)cudaEventDestroy(st->stop);
        if (st->join)
            (void)cudaEventDestroy(st->join);
        st->stop = st->join = NULL;
    }
    if (cr->align_buf)
        (void)cudaFree(cr->align_buf);
    cr->align_buf = NULL;
}

#endif /* MEMLIFE_HAVE_CUDA */
