/* SPDX-License-Identifier: MIT */
/* cuda_core.c — the bottom of the cuda backend (cuda_int.h): the process's state, error
 * messages, ranks' devices, streams and events created on first use, device memory in use.
 * Every other cuda_*.c calls down into it; it calls none of them. */
#ifdef MEMLIFE_HAVE_CUDA

#include "backends/cuda/cuda_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

cu_state cu_g;

/* ---- Errors --------------------------------------------------------------------------------- */

static void vformat(char *err, size_t len, const char *fmt, va_list ap) {
    if (len)
        vsnprintf(err, len, fmt, ap);
}

void cu_append(char *err, size_t len, const char *fmt, ...) {
    size_t used = strnlen(err, len);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + used, len - used, fmt, ap);
    va_end(ap);
}

int cu_fail_cuda(char *err, size_t len, cudaError_t e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vformat(err, len, fmt, ap);
    va_end(ap);
    cu_append(err, len, ": %s", cudaGetErrorString(e));
    (void)cudaGetLastError();   /* non-sticky errors must not leak into the next call */
    cu_g.failed = true;
    return -1;
}

int cu_fail_nccl(char *err, size_t len, ncclComm_t comm, ncclResult_t res, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vformat(err, len, fmt, ap);
    va_end(ap);
    cu_append(err, len, ": %s", ncclGetErrorString(res));
    const char *last = ncclGetLastError(comm);
    if (last && *last)
        cu_append(err, len, ": %s", last);
    cu_g.failed = true;
    return -1;
}

/* ---- Ranks, streams, events ---------------------------------------------------------------- */

cu_rank *cu_rank_of(const rt_rank *r) { return (cu_rank *)r->be_state; }

int cu_set_device(cu_rank *cr, char *err, size_t len) {
    /* A process that drives one GPU (under mpirun) selects it once: cudaSetDevice is a runtime
     * call on every collective's path otherwise (measured on H200: memlife's issue time per
     * collective ~2 us over a bare NCCL loop). With several local GPUs the current device
     * must follow the rank, every time. */
    static int selected = -1;
    if (cu_g.n_local == 1 && selected == cr->device)
        return 0;
    cudaError_t e = cudaSetDevice(cr->device);
    if (e == cudaSuccess && cu_g.n_local == 1)
        selected = cr->device;
    return e == cudaSuccess ? 0 : cu_fail_cuda(err, len, e, "cudaSetDevice(%d) failed", cr->device);
}

const char *cu_stream_name(const cu_rank *cr, uint32_t stream) {
    if (cr->s && stream < cr->s->syms[SYM_STREAM].n)
        return sched_sym_name(cr->s, SYM_STREAM, stream);
    return stream == SCHED_DEFAULT_STREAM ? "default" : "?";
}

/* Grows a zeroed table of `size`-byte items to hold index i. */
static int grow(void **items, uint32_t *n, size_t size, uint32_t i, char *err, size_t len) {
    if (i < *n)
        return 0;
    uint32_t want = i + 1 > *n * 2 ? i + 1 : *n * 2;
    void *p = realloc(*items, (size_t)want * size);
    if (!p) {
        snprintf(err, len, "out of host memory for %u stream/event slots", want);
        return -1;
    }
    memset((char *)p + (size_t)*n * size, 0, (size_t)(want - *n) * size);
    *items = p;
    *n = want;
    return 0;
}

int cu_stream_get(cu_rank *cr, uint32_t stream, cudaStream_t *out, char *err, size_t len) {
    uint32_t old = cr->n_streams;
    if (grow((void **)&cr->streams, &cr->n_streams, sizeof(cu_stream), stream, err, len))
        return -1;
    for (uint32_t k = old; k < cr->n_streams; k++)
        cr->streams[k].last_work = CU_WORK_NONE;
    cu_stream *st = &cr->streams[stream];
    if (!st->stream) {
        /* Non-blocking: the legacy null stream (synchronous cudaMemcpy of inits and checks)
         * must not serialize with the schedule's streams behind our back. */
        cudaError_t e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking);
        if (e != cudaSuccess)
            return cu_fail_cuda(err, len, e, "cudaStreamCreate for stream '%s' failed",
                                cu_stream_name(cr, stream));
    }
    *out = st->stream;
    return 0;
}

int cu_event_get(cu_rank *cr, uint32_t event, cudaEvent_t *out, char *err, size_t len) {
    uint32_t old = cr->n_events;
    if (grow((void **)&cr->events, &cr->n_events, sizeof(cu_event), event, err, len))
        return -1;
    for (uint32_t k = old; k < cr->n_events; k++) {
        cr->events[k].stream = SCHED_NO_SYM;
        cr->events[k].last_work = CU_WORK_NONE;
    }
    cu_event *ev = &cr->events[event];
    if (!ev->event) {
        cudaError_t e = cudaEventCreateWithFlags(&ev->event, cudaEventDisableTiming);
        if (e != cudaSuccess)
            return cu_fail_cuda(err, len, e, "cudaEventCreate failed");
    }
    *out = ev->event;
    return 0;
}

int cu_device_used(cu_rank *cr, uint64_t *used, uint64_t *free_bytes, uint64_t *total) {
    size_t f = 0, t = 0;
    if (cudaSetDevice(cr->device) != cudaSuccess || cudaMemGetInfo(&f, &t) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    if (used)
        *used = (uint64_t)(t - f);
    if (free_bytes)
        *free_bytes = f;
    if (total)
        *total = t;
    return 0;
}

#endif /* MEMLIFE_HAVE_CUDA */
