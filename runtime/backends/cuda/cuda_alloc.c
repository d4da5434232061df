/* SPDX-License-Identifier: MIT */
/* backend_cuda_alloc.c — the cuda backend's three allocators (--allocator), one table row each,
 * and the CUDA VMM chunks behind `chunks: N` buffers.
 *
 *   cuda     cudaMalloc / cudaFree: what PyTorch's caching allocator gets from the driver, one
 *            call per buffer; the device page model (analyzer/devmodel.c) describes it.
 *   async    cudaMallocFromPoolAsync / cudaFreeAsync on the rank's default stream, from a pool of
 *            our own with release threshold 0, so a free shows in cudaMemGetInfo at the next
 *            synchronization (which the free itself makes: see async_free). mem_read adds the
 *            pool's used and reserved bytes, current and high.
 *   chunked  every buffer is CUDA VMM: one reserved virtual range, one cuMemCreate physical
 *            allocation per chunk mapped at its offset (a buffer without chunks: is one chunk).
 *
 * Whatever the allocator, a buffer with chunks: N >= 2 is VMM: only separate physical chunks can be
 * released one by one. The driver API is reached through cudaGetDriverEntryPointByVersion, so the
 * binary links libcudart alone and starts on machines without libcuda. Chunked buffers are never
 * passed to ncclCommRegister: NCCL up to 2.30 registers only the first physical chunk of a range. */
#include "backends/cuda/cuda_int.h"
#include "base/human.h"

#ifdef MEMLIFE_HAVE_CUDA

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A stand-in address for 0-byte buffers: cudaMalloc(0) returns NULL, and NULL means "not live"
 * to the executor. Never dereferenced: every copy or collective on it has 0 bytes. */
static char cu_empty_buffer;

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* "cudaMalloc of N bytes (200 GiB) failed: out of memory (device 0 has ~137 GiB free of ~140
 * GiB)": the exact request, and all three sizes as people read them (base/human.h); with the
 * free memory the executor adds the step and the live bytes, and the user sees why at once. */
static int alloc_failed(cu_rank *cr, const char *api, uint64_t bytes, const char *why, char *err,
                        size_t len) {
    uint64_t free_bytes = 0, total = 0;
    char f[32] = "?", t[32] = "?", b[32];
    if (cu_device_used(cr, NULL, &free_bytes, &total) == 0) {
        ml_human_size(free_bytes, f, sizeof f);
        ml_human_size(total, t, sizeof t);
    }
    ml_human_size(bytes, b, sizeof b);
    snprintf(err, len, "%s of %llu bytes (%s) failed: %s (device %d has %s free of %s)", api,
             (unsigned long long)bytes, b, why, cr->device, f, t);
    cu_g.failed = true;
    return -1;
}

/* With one process driving every GPU, NCCL's P2P/direct path lets a peer write straight into a
 * rank's user buffer (same process: no copy through NCCL's FIFO). cudaMalloc memory is reachable
 * once NCCL enables peer access; pool and VMM memory are reachable only by devices granted
 * access, so both grant every other local device. Under mpirun peers go through NCCL's own
 * buffers and only the owner needs access. Returns how many devices it wrote to peers. */
static int peer_devices(const cu_rank *cr, int *peers, int max) {
    int n = 0;
    for (int i = 0; !cu_g.mpi && i < cu_g.n_local && n < max; i++)
        if (cu_g.ranks[i].device != cr->device)
            peers[n++] = cu_g.ranks[i].device;
    return n;
}

static void one_allocation(rt_mem *out, void *ptr, uint64_t bytes) {
    out->ptr = ptr;
    out->bytes = bytes;
    out->chunks = 0;
    out->chunk_bytes = 0;
    out->live_chunks = 1;
    out->impl = NULL;
}

/* ---- cuda: cudaMalloc / cudaFree --------------------------------------------------------------- */

static int plain_alloc(cu_rank *cr, uint64_t bytes, rt_mem *out, char *err, size_t len) {
    void *p = &cu_empty_buffer;
    if (bytes) {
        cudaError_t e = cudaMalloc(&p, bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return alloc_failed(cr, "cudaMalloc", bytes, cudaGetErrorString(e), err, len);
        }
    }
    one_allocation(out, p, bytes);
    return 0;
}

static int plain_free(cu_rank *cr, rt_mem *m, char *err, size_t len) {
    if (m->ptr == &cu_empty_buffer)
        return 0;
    cudaError_t e = cudaFree(m->ptr);
    return e == cudaSuccess ? 0 : cu_fail_cuda(err, len, e, "cudaFree on rank %d failed", cr->rank);
}

/* ---- async: a pool of our own, release threshold 0 ---------------------------------------------- */

static int async_rank_init(cu_rank *cr, char *err, size_t len) {
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = cr->device;
    cudaError_t e = cudaMemPoolCreate(&cr->pool, &props);
    if (e != cudaSuccess)
        return cu_fail_cuda(err, len, e, "cudaMemPoolCreate on device %d failed", cr->device);
    /* 0: the pool keeps nothing it does not use past a synchronization, so cudaMemGetInfo follows
     * the live buffers instead of the pool's high-water mark. */
    cuuint64_t threshold = 0;
    e = cudaMemPoolSetAttribute(cr->pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    if (e != cudaSuccess)
        return cu_fail_cuda(err, len, e, "setting the pool's release threshold failed");
    int peers[64];
    int n = peer_devices(cr, peers, (int)ML_ARRAY_LEN(peers));
    for (int k = 0; k < n; k++) {
        struct cudaMemAccessDesc access;
        memset(&access, 0, sizeof access);
        access.location.type = cudaMemLocationTypeDevice;
        access.location.id = peers[k];
        access.flags = cudaMemAccessFlagsProtReadWrite;
        /* Without peer access between the GPUs NCCL does not take the direct path either. */
        if (cudaMemPoolSetAccess(cr->pool, &access, 1) != cudaSuccess)
            (void)cudaGetLastError();
    }
    return 0;
}

static void async_rank_finalize(cu_rank *cr) {
    if (cr->pool)
        (void)cudaMemPoolDestroy(cr->pool);
    cr->pool = NULL;
}

static int async_alloc(cu_rank *cr, uint64_t bytes, rt_mem *out, char *err, size_t len) {
    void *p = &cu_empty_buffer;
    cudaStream_t s;
    if (cu_stream_get(cr, SCHED_DEFAULT_STREAM, &s, err, len))
        return -1;
    if (bytes) {
        cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, cr->pool, s);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return alloc_failed(cr, "cudaMallocAsync", bytes, cudaGetErrorString(e), err, len);
        }
    }
    one_allocation(out, p, bytes);
    return 0;
}

/* The free is stream-ordered; synchronizing the stream right after it is what lets the pool
 * (threshold 0) hand the memory back, so the sample after this step shows the free. The executor
 * frees only where the schedule synchronized, so this wait costs nothing a real program would not
 * pay at its next synchronization. */
static int async_free(cu_rank *cr, rt_mem *m, char *err, size_t len) {
    if (m->ptr == &cu_empty_buffer)
        return 0;
    cudaStream_t s;
    if (cu_stream_get(cr, SCHED_DEFAULT_STREAM, &s, err, len))
        return -1;
    cudaError_t e = cudaFreeAsync(m->ptr, s);
    if (e != cudaSuccess)
        return cu_fail_cuda(err, len, e, "cudaFreeAsync on rank %d failed", cr->rank);
    return cu_wait_stream(cr, SCHED_DEFAULT_STREAM, err, len);
}

/* The pool's high-water marks count from its creation; the warm-up's own buffer must not be the
 * "high" of a schedule whose buffers are smaller, so they restart at the baseline (setting a high
 * attribute to 0 resets it to the current value). */
void cu_pool_reset_high(cu_rank *cr) {
    if (!cr->pool)
        return;
    cuuint64_t zero = 0;
    if (cudaMemPoolSetAttribute(cr->pool, cudaMemPoolAttrUsedMemHigh, &zero) != cudaSuccess ||
        cudaMemPoolSetAttribute(cr->pool, cudaMemPoolAttrReservedMemHigh, &zero) != cudaSuccess)
        (void)cudaGetLastError();
}

static void async_read_pool(cu_rank *cr, rt_mem_reading *out) {
    static const struct {
        enum cudaMemPoolAttr attr;
        size_t offset;
    } attrs[] = {
        {cudaMemPoolAttrUsedMemCurrent, offsetof(rt_mem_reading, pool_used_current)},
        {cudaMemPoolAttrUsedMemHigh, offsetof(rt_mem_reading, pool_used_high)},
        {cudaMemPoolAttrReservedMemCurrent, offsetof(rt_mem_reading, pool_reserved_current)},
        {cudaMemPoolAttrReservedMemHigh, offsetof(rt_mem_reading, pool_reserved_high)},
    };
    if (!cr->pool)
        return;
    for (size_t k = 0; k < ML_ARRAY_LEN(attrs); k++) {
        cuuint64_t v = 0;
        if (cudaMemPoolGetAttribute(cr->pool, attrs[k].attr, &v) != cudaSuccess) {
            (void)cudaGetLastError();
            return;
        }
        *(uint64_t *)((char *)out + attrs[k].offset) = v;
    }
    out->has_pool = true;
}

/* ---- chunked: every buffer is VMM ------------------------------------------------------------------ */

static int chunked_alloc(cu_rank *cr, uint64_t bytes, rt_mem *out, char *err, size_t len) {
    return cu_vmm_alloc(cr, bytes, 1, out, err, len);
}

static int chunked_free(cu_rank *cr, rt_mem *m, char *err, size_t len) {
    return cu_vmm_free(cr, m, err, len);
}

const cu_allocator cu_allocators[] = {
    {"cuda", NULL, NULL, plain_alloc, plain_free, NULL},
    {"async", async_rank_init, async_rank_finalize, async_alloc, async_free, async_read_pool},
    {"chunked", NULL, NULL, chunked_alloc, chunked_free, NULL},
};
const size_t cu_allocator_count = ML_ARRAY_LEN(cu_allocators);

const cu_allocator *cu_allocator_find(const char *name) {
    if (!name || !*name)
        return &cu_allocators[0];
    for (size_t k = 0; k < cu_allocator_count; k++)
        if (strcmp(cu_allocators[k].name, name) == 0)
            return &cu_allocators[k];
    return NULL;
}

/* ---- VMM through the driver API ------------------------------------------------------------------- */

static struct {
    bool loaded;
    PFN_cuMemGetAllocationGranularity_v10020 granularity;
    PFN_cuMemAddressReserve_v10020 reserve;
    PFN_cuMemAddressFree_v10020 address_free;
    PFN_cuMemCreate_v10020 create;
    PFN_cuMemRelease_v10020 release;
    PFN_cuMemMap_v10020 map;
    PFN_cuMemUnmap_v10020 unmap;
    PFN_cuMemSetAccess_v10020 set_access;
    PFN_cuGetErrorString_v6000 error_string;
} drv;

static int load_driver(char *err, size_t len) {
    /* The ABI versions above are those of CUDA 10.2 / 6.0; asking for them "as of 12.0" gets
     * exactly these signatures from any driver since. */
    static const struct {
        const char *symbol;
        void **slot;
    } table[] = {
        {"cuMemGetAllocationGranularity", (void **)&drv.granularity},
        {"cuMemAddressReserve", (void **)&drv.reserve},
        {"cuMemAddressFree", (void **)&drv.address_free},
        {"cuMemCreate", (void **)&drv.create},
        {"cuMemRelease", (void **)&drv.release},
        {"cuMemMap", (void **)&drv.map},
        {"cuMemUnmap", (void **)&drv.unmap},
        {"cuMemSetAccess", (void **)&drv.set_access},
        {"cuGetErrorString", (void **)&drv.error_string},
    };
    if (drv.loaded)
        return 0;
    for (size_t k = 0; k < ML_ARRAY_LEN(table); k++) {
        enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
        cudaError_t e = cudaGetDriverEntryPointByVersion(table[k].symbol, table[k].slot, 12000,
                                                         cudaEnableDefault, &found);
        if (e != cudaSuccess)
            return cu_fail_cuda(err, len, e, "driver entry point '%s' not available",
                                table[k].symbol);
        if (found != cudaDriverEntryPointSuccess || !*table[k].slot) {
            snprintf(err, len, "driver entry point '%s' not available (driver older than CUDA "
                     "12.0?)", table[k].symbol);
            return -1;
        }
    }
    drv.loaded = true;
    return 0;
}

static int fail_drv(char *err, size_t len, CUresult res, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_drv(char *err, size_t len, CUresult res, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    const char *text = NULL;
    if (drv.error_string(res, &text) != CUDA_SUCCESS || !text)
        text = "unknown driver error";
    size_t used = strnlen(err, len);
    if (used + 1 < len)
        snprintf(err + used, len - used, ": %s (CUresult %d)", text, (int)res);
    cu_g.failed = true;
    return -1;
}

typedef struct {
    CUdeviceptr base;
    size_t reserved;           /* bytes of the virtual range */
    size_t stride;             /* chunk k is mapped at base + k*stride */
    uint32_t n;
    struct {
        CUmemGenericAllocationHandle handle;
        size_t physical;       /* multiple of the granularity */
        bool mapped;
    } chunk[];
} cu_vmm;

static void vmm_prop(const cu_rank *cr, CUmemAllocationProp *prop) {
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = cr->device;
}

static int vmm_granularity(cu_rank *cr, char *err, size_t len) {
    if (cr->vmm_granularity)
        return 0;
    if (load_driver(err, len))
        return -1;
    CUmemAllocationProp prop;
    vmm_prop(cr, &prop);
    size_t g = 0;
    CUresult res = drv.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (res != CUDA_SUCCESS || g == 0)
        return fail_drv(err, len, res, "cuMemGetAllocationGranularity on device %d failed",
                        cr->device);
    cr->vmm_granularity = g;
    return 0;
}

/* Unmaps and releases every chunk still mapped, then the range. Errors are reported, but the
 * teardown goes on so one bad chunk does not leak the others. */
static int vmm_destroy(cu_vmm *t, char *err, size_t len) {
    int rc = 0;
    for (uint32_t k = 0; k < t->n; k++) {
        if (!t->chunk[k].mapped)
            continue;
        CUresult res = drv.unmap(t->base + (CUdeviceptr)k * t->stride, t->chunk[k].physical);
        if (res != CUDA_SUCCESS && rc == 0)
            rc = fail_drv(err, len, res, "cuMemUnmap of chunk %u failed", k);
        res = drv.release(t->chunk[k].handle);
        if (res != CUDA_SUCCESS && rc == 0)
            rc = fail_drv(err, len, res, "cuMemRelease of chunk %u failed", k);
        t->chunk[k].mapped = false;
    }
    if (t->base) {
        CUresult res = drv.address_free(t->base, t->reserved);
        if (res != CUDA_SUCCESS && rc == 0)
            rc = fail_drv(err, len, res, "cuMemAddressFree failed");
    }
    free(t);
    return rc;
}

int cu_vmm_alloc(cu_rank *cr, uint64_t bytes, uint32_t chunks, rt_mem *out, char *err, size_t len) {
    if (vmm_granularity(cr, err, len))
        return -1;
    uint64_t g = cr->vmm_granularity;
    uint32_t n = chunks < 1 ? 1 : chunks;
    /* Chunk k holds logical bytes [k*stride, k*stride + rt_chunk_bytes(k)): the executor's rule.
     * Mapping offsets must be multiples of the granularity, so the logical chunk size must be one
     * too; otherwise a shard would straddle two physical chunks and release would tear it. */
    uint64_t stride = n == 1 ? align_up(bytes ? bytes : 1, g) : rt_chunk_bytes(bytes, n, 0);
    if (n > 1 && stride % g) {
        snprintf(err, len, "chunked buffer of %llu bytes in %u chunks: the chunk size %llu bytes is "
                 "not a multiple of the VMM granularity %llu bytes of device %d",
                 (unsigned long long)bytes, n, (unsigned long long)stride, (unsigned long long)g,
                 cr->device);
        return -1;
    }
    cu_vmm *t = calloc(1, sizeof *t + n * sizeof t->chunk[0]);
    if (!t) {
        snprintf(err, len, "out of host memory");
        return -1;
    }
    t->n = n;
    t->stride = stride;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t logical = n == 1 ? bytes : rt_chunk_bytes(bytes, n, k);
        t->chunk[k].physical = align_up(logical ? logical : 1, g);
    }
    t->reserved = (size_t)stride * (n - 1) + t->chunk[n - 1].physical;

    CUresult res = drv.reserve(&t->base, t->reserved, g, 0, 0);
    if (res != CUDA_SUCCESS) {
        size_t reserved = t->reserved;
        free(t);
        return fail_drv(err, len, res, "cuMemAddressReserve of %zu bytes failed", reserved);
    }
    CUmemAllocationProp prop;
    vmm_prop(cr, &prop);
    for (uint32_t k = 0; k < n; k++) {
        size_t phys = t->chunk[k].physical;
        res = drv.create(&t->chunk[k].handle, phys, &prop, 0);
        if (res != CUDA_SUCCESS) {
            char why[96];
            const char *text = NULL;
            if (drv.error_string(res, &text) != CUDA_SUCCESS || !text)
                text = "unknown driver error";
            snprintf(why, sizeof why, "%s (chunk %u of %u)", text, k, n);
            vmm_destroy(t, err, len);
            return alloc_failed(cr, "cuMemCreate", phys, why, err, len);
        }
        res = drv.map(t->base + (CUdeviceptr)k * stride, phys, 0, t->chunk[k].handle, 0);
        if (res != CUDA_SUCCESS) {
            (void)drv.release(t->chunk[k].handle);
            vmm_destroy(t, err, len);
            return fail_drv(err, len, res, "cuMemMap of chunk %u (%zu bytes) failed", k, phys);
        }
        t->chunk[k].mapped = true;
    }
    /* The owner first, then the local peers (see peer_devices); if the GPUs cannot reach each
     * other, the owner alone (NCCL then copies through its own buffers). */
    CUmemAccessDesc access[65];
    int devices[65];
    devices[0] = cr->device;
    int n_access = 1 + peer_devices(cr, devices + 1, 64);
    memset(access, 0, sizeof access);
    for (int k = 0; k < n_access; k++) {
        access[k].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        access[k].location.id = devices[k];
        access[k].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    res = drv.set_access(t->base, t->reserved, access, (size_t)n_access);
    if (res != CUDA_SUCCESS && n_access > 1)
        res = drv.set_access(t->base, t->reserved, access, 1);
    if (res != CUDA_SUCCESS) {
        vmm_destroy(t, err, len);
        return fail_drv(err, len, res, "cuMemSetAccess of %zu bytes failed", t->reserved);
    }
    out->ptr = (void *)(uintptr_t)t->base;
    out->bytes = bytes;
    out->chunks = n;
    out->chunk_bytes = n == 1 ? bytes : stride;
    out->live_chunks = n;
    out->impl = t;
    return 0;
}

int cu_vmm_release(cu_rank *cr, rt_mem *m, uint32_t keep, char *err, size_t len) {
    cu_vmm *t = m->impl;
    uint32_t live = 0;
    for (uint32_t k = 0; k < t->n; k++) {
        if (k == keep) {
            live += t->chunk[k].mapped;
            continue;
        }
        if (!t->chunk[k].mapped)
            continue;
        /* Unmap takes whole mappings only: each chunk was mapped on its own for this. */
        CUresult res = drv.unmap(t->base + (CUdeviceptr)k * t->stride, t->chunk[k].physical);
        if (res != CUDA_SUCCESS)
            return fail_drv(err, len, res, "cuMemUnmap of chunk %u on rank %d failed", k, cr->rank);
        res = drv.release(t->chunk[k].handle);
        t->chunk[k].mapped = false;
        if (res != CUDA_SUCCESS)
            return fail_drv(err, len, res, "cuMemRelease of chunk %u on rank %d failed", k,
                            cr->rank);
    }
    m->live_chunks = live;
    return 0;
}

int cu_vmm_free(cu_rank *cr, rt_mem *m, char *err, size_t len) {
    (void)cr;
    cu_vmm *t = m->impl;
    m->impl = NULL;
    return t ? vmm_destroy(t, err, len) : 0;
}

#endif /* MEMLIFE_HAVE_CUDA */
