/* SPDX-License-Identifier: MIT */
/* cuda.c — the cuda backend: cudaMalloc / cudaMallocAsync / CUDA VMM and NCCL on named
 * CUDA streams, measured with cudaMemGetInfo. docs/cuda.md has the notes.
 *
 * This file holds the rt_backend_ops table and the per-op calls, on top of the other files, which
 * call only downward: cuda_bench.c (bench hooks) over cuda_comm.c (communicators, blob exchange,
 * warm-up, launch) over cuda_alloc.c (allocators) over cuda_wait.c (deadline-bounded waits) over
 * cuda_core.c (the process's state, errors, ranks, streams, events). Built without CUDA (no MEMLIFE_HAVE_CUDA), the
 * backend keeps its row in the table with available = false and says how to get it. */
#include "exec/rt.h"

#ifndef MEMLIFE_HAVE_CUDA

const rt_backend_ops rt_backend_cuda = {
    .name = "cuda",
    .available = false,
    .several_gpus = true,
    .how_to_get = "build on a machine with the CUDA toolkit and NCCL (nvcc, cuda_runtime.h, nccl.h "
                  "under CUDA_HOME=/usr/local/cuda), then make",
};

#else

#include "backends/cuda/cuda_int.h"
#include "exec/mpi_util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* ---- Process set-up -------------------------------------------------------------------------- */

static int cuda_init(const rt_options *o, int world, int first_rank, int local_ranks, char *err,
                     size_t len) {
    memset(&cu_g, 0, sizeof cu_g);
    cu_g.opt = *o;
    cu_g.world = world;
    cu_g.first_rank = first_rank;
    cu_g.n_local = local_ranks;
    /* NVLink SHARP multicast buffers would change the communicator's footprint and are off on the
     * machines we measure on; the user's own setting wins (overwrite = 0). */
    setenv("NCCL_NVLS_ENABLE", "0", 0);

    cu_g.alloc = cu_allocator_find(o->allocator);
    if (!cu_g.alloc) {
        snprintf(err, len, "unknown allocator '%s' for the cuda backend (cuda, async, chunked)",
                 o->allocator);
        return -1;
    }
    if (world < 1 || local_ranks < 1 || local_ranks > world) {
        snprintf(err, len, "cuda backend: bad world %d with %d local ranks", world, local_ranks);
        return -1;
    }
    /* cudaGetDeviceCount creates no context, so it is safe before the device is chosen. */
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(err, len, "no CUDA device visible to this process (cudaGetDeviceCount: %s); "
                 "check nvidia-smi -L and CUDA_VISIBLE_DEVICES",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        (void)cudaGetLastError();
        return -1;
    }
    cu_g.ranks = calloc((size_t)local_ranks, sizeof(cu_rank));
    if (!cu_g.ranks) {
        snprintf(err, len, "out of host memory");
        return -1;
    }
    if (cu_comm_init(err, len)) {
        free(cu_g.ranks);
        cu_g.ranks = NULL;
        return -1;
    }
    cu_g.initialized = true;
    return 0;
}

static void cuda_finalize(void) {
    if (!cu_g.initialized)
        return;
    cu_comm_finalize();
    free(cu_g.ranks);
    free(cu_g.blobs);
    cu_g.ranks = NULL;
    cu_g.blobs = NULL;
    cu_g.initialized = false;
}

static int cuda_rank_init(rt_rank *r, char *err, size_t len) {
    if (r->local_index < 0 || r->local_index >= cu_g.n_local) {
        snprintf(err, len, "cuda backend: local rank %d outside 0..%d", r->local_index,
                 cu_g.n_local - 1);
        return -1;
    }
    cu_rank *cr = &cu_g.ranks[r->local_index];
    r->be_state = cr;
    cr->s = r->plan ? r->plan->s : NULL;
    if (cu_set_device(cr, err, len))
        return -1;
    cudaStream_t s;
    if (cu_stream_get(cr, SCHED_DEFAULT_STREAM, &s, err, len))
        return -1;
    return cu_g.alloc->rank_init ? cu_g.alloc->rank_init(cr, err, len) : 0;
}

static void cuda_rank_finalize(rt_rank *r) {
    cu_rank *cr = cu_rank_of(r);
    if (!cr)
        return;
    if (r->failed)
        cu_g.failed = true;
    (void)cudaSetDevice(cr->device);
    cu_bench_rank_finalize(cr);
    for (uint32_t k = 0; k < cr->n_streams; k++)
        if (cr->streams[k].stream)
            (void)cudaStreamDestroy(cr->streams[k].stream);
    for (uint32_t k = 0; k < cr->n_events; k++)
        if (cr->events[k].event)
            (void)cudaEventDestroy(cr->events[k].event);
    free(cr->streams);
    free(cr->events);
    cr->streams = NULL;
    cr->events = NULL;
    cr->n_streams = cr->n_events = 0;
    if (cu_g.alloc && cu_g.alloc->rank_finalize)
        cu_g.alloc->rank_finalize(cr);
    (void)cudaGetLastError();
    r->be_state = NULL;
}

/* ---- Memory ---------------------------------------------------------------------------------- */

static int cuda_alloc(rt_rank *r, uint64_t bytes, uint32_t chunks, rt_mem *out, char *err,
                      size_t len) {
    cu_rank *cr = cu_rank_of(r);
    memset(out, 0, sizeof *out);
    if (cu_set_device(cr, err, len))
        return -1;
    /* A schedule that asks for chunks wants them releasable one by one: only VMM can do that,
     * whichever allocator serves the other buffers. */
    if (chunks >= 2)
        return cu_vmm_alloc(cr, bytes, chunks, out, err, len);
    return cu_g.alloc->alloc(cr, bytes, out, err, len);
}

static int cuda_free(rt_rank *r, rt_mem *m, char *err, size_t len) {
    cu_rank *cr = cu_rank_of(r);
    if (cu_set_device(cr, err, len))
        return -1;
    /* cudaFree and cuMemUnmap wait for the device (cudaFree "may perform implicit
     * synchronization"); waiting first, against the deadline, turns a stuck collective into a
     * timeout message instead of a hang inside the free. */
    if (cu_wait_device(cr, err, len))
        return -1;
    int rc = m->impl ? cu_vmm_free(cr, m, err, len) : cu_g.alloc->free(cr, m, err, len);
    if (rc == 0) {
        /* bytes and chunks stay: the executor may still account them. */
        m->ptr = NULL;
        m->impl = NULL;
        m->live_chunks = 0;
    }
    return rc;
}

static int cuda_release(rt_rank *r, rt_mem *m, uint32_t keep_chunk, char *err, size_t len) {
    cu_rank *cr = cu_rank_of(r);
    if (!m->impl) {
        snprintf(err, len, "release of a buffer made as one allocation: give it chunks: N");
        return -1;
    }
    if (cu_set_device(cr, err, len) || cu_wait_device(cr, err, len))
        return -1;
    return cu_vmm_release(cr, m, keep_chunk, err, len);
}

static int cuda_mem_read(rt_rank *r, rt_mem_reading *out) {
    cu_rank *cr = cu_rank_of(r);
    memset(out, 0, sizeof *out);
    uint64_t used;
    if (cu_device_used(cr, &used, NULL, NULL))
        return -1;
    out->device_used = used;
    out->has_device = true;
    if (cu_g.alloc->read_pool)
        cu_g.alloc->read_pool(cr, out);
    return 0;
}

/* ---- Collectives, syncs, events ---------------------------------------------------------------- */

/* send/recv and groups of them: one process per GPU (under mpirun) only. One process driving
 * several GPUs runs its ranks one after another up to each collective, so a send would wait in
 * its ncclGroupEnd for a peer rank of the same process that has not issued its recv yet. The
 * multi-GPU send/recv path has not been run on GPUs (tests/gpu lists it). */
static int cuda_p2p_allowed(char *err, size_t len) {
    if (cu_g.n_local == 1)
        return 0;
    snprintf(err, len, "send and recv need one process per GPU (--ranks under mpirun), not --gpus");
    return -1;
}

static int cuda_group_begin(rt_rank *r, char *err, size_t len) {
    if (cuda_p2p_allowed(err, len))
        return -1;
    ncclResult_t res = ncclGroupStart();
    if (res != ncclSuccess) {
        snprintf(err, len, "ncclGroupStart: %s", ncclGetErrorString(res));
        return -1;
    }
    return 0;
}

static int cuda_group_end(rt_rank *r, char *err, size_t len) {
    ncclResult_t res = ncclGroupEnd();
    if (res != ncclSuccess) {
        snprintf(err, len, "ncclGroupEnd: %s", ncclGetErrorString(res));
        return -1;
    }
    return 0;
}

static int cuda_collective(rt_rank **ranks, const rt_coll_args *args, int n, char *err, size_t len) {
    if (ml_colls[args[0].coll].p2p && cuda_p2p_allowed(err, len))
        return -1;
    cu_rank *crs[64];
    cu_rank **list = n <= 64 ? crs : malloc((size_t)n * sizeof *list);
    if (!list) {
        snprintf(err, len, "out of host memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        list[i] = cu_rank_of(ranks[i]);
    int rc = cu_issue_group(list, args, n, err, len);
    if (list != crs)
        free(list);
    return rc;
}

static int cuda_sync(rt_rank *r, sched_sync_kind kind, uint32_t stream, uint32_t event, char *err,
                     size_t len) {
    cu_rank *cr = cu_rank_of(r);
    if (cu_set_device(cr, err, len))
        return -1;
    switch (kind) {
    case SYNC_DEVICE: return cu_wait_device(cr, err, len);
    case SYNC_STREAM: return cu_wait_stream(cr, stream, err, len);
    case SYNC_EVENT: return cu_wait_event(cr, event, err, len);
    }
    snprintf(err, len, "unknown sync kind %d", (int)kind);
    return -1;
}

/* The rank's stream and event for a record or wait, created on first use. */
static cu_rank *stream_and_event(rt_rank *r, uint32_t stream, uint32_t event, cudaStream_t *s,
                                 cudaEvent_t *ev, char *err, size_t len) {
    cu_rank *cr = cu_rank_of(r);
    if (cu_set_device(cr, err, len) || cu_stream_get(cr, stream, s, err, len) ||
        cu_event_get(cr, event, ev, err, len))
        return NULL;
    return cr;
}

static int cuda_record(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len) {
    cudaStream_t s;
    cudaEvent_t ev;
    cu_rank *cr = stream_and_event(r, stream, event, &s, &ev, err, len);
    if (!cr)
        return -1;
    cudaError_t e = cudaEventRecord(ev, s);
    if (e != cudaSuccess)
        return cu_fail_cuda(err, len, e, "cudaEventRecord on stream '%s' failed",
                            cu_stream_name(cr, stream));
    cr->events[event].stream = stream;
    cr->events[event].last_work = cr->streams[stream].last_work;
    return 0;
}

static int cuda_wait(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len) {
    cudaStream_t s;
    cudaEvent_t ev;
    cu_rank *cr = stream_and_event(r, stream, event, &s, &ev, err, len);
    if (!cr)
        return -1;
    cudaError_t e = cudaStreamWaitEvent(s, ev, 0);
    if (e != cudaSuccess)
        return cu_fail_cuda(err, len, e, "cudaStreamWaitEvent on stream '%s' failed",
                            cu_stream_name(cr, stream));
    /* The stream now waits on the event's work: a stuck wait there is that work's fault. */
    if (cr->events[event].last_work != CU_WORK_NONE)
        cr->streams[stream].last_work = cr->events[event].last_work;
    return 0;
}

/* ---- Data movement ------------------------------------------------------------------------------ */

/* Inits and checks copy synchronously on the legacy null stream, outside timed regions. The
 * schedule's streams are non-blocking, so we first wait (against the deadline) for everything this
 * rank issued: a check reads what the collectives wrote, as tensor.cpu() would after a sync. */
static int cuda_write(rt_rank *r, rt_mem *m, uint64_t off, const void *src, uint64_t bytes,
                      char *err, size_t len) {
    cu_rank *cr = cu_rank_of(r);
    if (cu_set_device(cr, err, len) || cu_wait_device(cr, err, len))
        return -1;
    if (bytes == 0)
        return 0;
    cudaError_t e = cudaMemcpy((char *)m->ptr + off, src, bytes, cudaMemcpyHostToDevice);
    return e == cudaSuccess ? 0 : cu_fail_cuda(err, len, e, "cudaMemcpy of %llu bytes to the "
                                               "device failed", (unsigned long long)bytes);
}

static int cuda_read(rt_rank *r, const rt_mem *m, uint64_t off, void *dst, uint64_t bytes,
                     char *err, size_t len) {
    cu_rank *cr = cu_rank_of(r);
    if (cu_set_device(cr, err, len) || cu_wait_device(cr, err, len))
        return -1;
    if (bytes == 0)
        return 0;
    cudaError_t e = cudaMemcpy(dst, (const char *)m->ptr + off, bytes, cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? 0 : cu_fail_cuda(err, len, e, "cudaMemcpy of %llu bytes from the "
                                               "device failed", (unsigned long long)bytes);
}

static int cuda_copy(rt_rank *r, rt_mem *dst, uint64_t dst_off, const rt_mem *src,
                     uint64_t src_off, uint64_t bytes, uint32_t stream, char *err, size_t len) {
    cu_rank *cr = cu_rank_of(r);
    cudaStream_t s;
    if (cu_set_device(cr, err, len) || cu_stream_get(cr, stream, &s, err, len))
        return -1;
    if (bytes == 0)
        return 0;
    cudaError_t e = cudaMemcpyAsync((char *)dst->ptr + dst_off, (const char *)src->ptr + src_off,
                                    bytes, cudaMemcpyDeviceToDevice, s);
    if (e != cudaSuccess)
        return cu_fail_cuda(err, len, e, "cudaMemcpyAsync of %llu bytes on stream '%s' failed",
                            (unsigned long long)bytes, cu_stream_name(cr, stream));
    cr->streams[stream].last_work = CU_WORK_COPY;
    return 0;
}

/* ---- Provenance --------------------------------------------------------------------------------- */

static void version_text(int v, char *buf, size_t len) {
    /* CUDA encodes 1000*major + 10*minor. */
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

static void cuda_provenance(char *buf, size_t len) {
    int nv = 0;
    if (ncclGetVersion(&nv) == ncclSuccess)
        cu_append(buf, len, "nccl_version=%d.%d.%d\n", nv / 10000, (nv % 10000) / 100, nv % 100);
    cu_append(buf, len, "nccl_build_version=%d.%d.%d\n", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
    int v = 0;
    char text[32];
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) {
        version_text(v, text, sizeof text);
        cu_append(buf, len, "cuda_runtime_version=%s\n", text);
    }
    if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) {
        version_text(v, text, sizeof text);
        cu_append(buf, len, "cuda_driver_version=%s\n", text);
    }
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess)
        count = 0;
    (void)cudaGetLastError();
    cu_append(buf, len, "gpu_count=%d\n", count);
    for (int d = 0; d < count; d++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) == cudaSuccess)
            cu_append(buf, len, "gpu%d=%s (%llu bytes)\n", d, p.name,
                   (unsigned long long)p.totalGlobalMem);
    }
    if (cu_g.initialized) {
        cu_append(buf, len, "cuda_launch=%s\n", cu_g.mpi ? "mpi, one process per GPU"
                                                      : "one process driving every GPU");
        cu_append(buf, len, "cuda_allocator=%s\n", cu_g.alloc->name);
        for (int i = 0; i < cu_g.n_local; i++)
            cu_append(buf, len, "rank%d_device=%d\n", cu_g.ranks[i].rank, cu_g.ranks[i].device);
    }
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "NCCL_", 5) == 0)
            cu_append(buf, len, "%s\n", *e);
}

/* Results go to rank 0 through MPI; in one process the executor holds every rank's blob already. */
static int cuda_gatherv_blob(rt_rank *r, const void *mine, size_t len, int root, void **all,
                             size_t *lens, char *err, size_t elen) {
    if (cu_g.mpi)
        return rt_mpi_gatherv_blob(r, mine, len, root, all, lens, err, elen);
    snprintf(err, elen, "gatherv_blob is not used with one process driving every GPU");
    return -1;
}

/* Ends the job now: the communicators first (so no kernel keeps a GPU spinning on a peer that is
 * gone), then every process of the job. */
static void cuda_abort(int code) {
    if (cu_g.initialized && !cu_g.aborted)
        cu_abort_all();
    rt_mpi_abort(code);
}

const rt_backend_ops rt_backend_cuda = {
    .name = "cuda",
    .available = true,
    .how_to_get = NULL,
    .several_gpus = true,
    .init = cuda_init,
    .finalize = cuda_finalize,
    .rank_init = cuda_rank_init,
    .rank_finalize = cuda_rank_finalize,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .release = cuda_release,
    .collective = cuda_collective,
    .launches = cu_launches,
    .sync = cuda_sync,
    .record = cuda_record,
    .wait = cuda_wait,
    .write = cuda_write,
    .read = cuda_read,
    .copy = cuda_copy,
    .mem_read = cuda_mem_read,
    .allgather_blob = cu_allgather_blob,
    .warmup = cu_warmup,
    .provenance = cuda_provenance,
    .gatherv_blob = cuda_gatherv_blob,
    .abort = cuda_abort,
    .time_begin = cu_time_begin,
    .time_end = cu_time_end,
    .collective_bare = cu_collective_bare,
    .graph_begin = cu_graph_begin,
    .graph_end = cu_graph_end,
    .graph_launch = cu_graph_launch,
    .graph_drop = cu_graph_drop,
    .group_begin = cuda_group_begin,
    .group_end = cuda_group_end,
};

#endif /* MEMLIFE_HAVE_CUDA */
