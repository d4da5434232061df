/* SPDX-License-Identifier: MIT */
/* test_cuda_stub.c — the cuda backend's row and its behaviour where it cannot run.
 *
 * CI machines carry the CUDA toolkit but no GPU and no driver: the backend must be compiled in,
 * say who it is, and refuse to start with a message that names the cause instead of crashing.
 * On a machine with a GPU the same binary checks one allocation of each kind against
 * cudaMemGetInfo (page rules from DESIGN.md, measured on H200). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "exec/rt.h"

extern const rt_backend_ops rt_backend_cuda;   /* its row in runtime/backends.c */

#ifdef MEMLIFE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define MiB ((uint64_t)1 << 20)

static void row_is_cuda(void **state) {
    assert_string_equal(rt_backend_cuda.name, "cuda");
    assert_ptr_equal(rt_backend_find("cuda"), &rt_backend_cuda);
#ifdef MEMLIFE_HAVE_CUDA
    assert_true(rt_backend_cuda.available);
    assert_non_null(rt_backend_cuda.init);
    assert_non_null(rt_backend_cuda.warmup);
#else
    /* Built without the toolkit: the row stays and says how to get the backend. */
    assert_false(rt_backend_cuda.available);
    assert_non_null(strstr(rt_backend_cuda.how_to_get, "CUDA toolkit and NCCL"));
#endif
}

#ifdef MEMLIFE_HAVE_CUDA
static void options(rt_options *o, const char *allocator) {
    memset(o, 0, sizeof *o);
    o->backend = "cuda";
    o->allocator = allocator;
    o->timeout_s = 60;
    o->gpus = 1;
    o->data = true;
    o->fail_alloc_k = -1;
    o->kill_rank = o->kill_step = o->delay_rank = o->delay_step = -1;
}

static bool have_gpu(void) {
    int n = 0;
    bool yes = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    (void)cudaGetLastError();
    return yes;
}

static void unknown_allocator_refused(void **state) {
    rt_options o;
    options(&o, "bogus");
    char err[512] = "";
    assert_int_equal(rt_backend_cuda.init(&o, 1, 0, 1, err, sizeof err), -1);
    assert_string_equal(err, "unknown allocator 'bogus' for the cuda backend (cuda, async, chunked)");
    rt_backend_cuda.finalize();   /* after a failed init: must be harmless */
}

static void no_gpu_refused_with_cause(void **state) {
    if (have_gpu())
        skip();
    rt_options o;
    options(&o, "cuda");
    char err[512] = "";
    assert_int_equal(rt_backend_cuda.init(&o, 2, 0, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "no CUDA device visible to this process (cudaGetDeviceCount: "));
    assert_non_null(strstr(err, "nvidia-smi -L"));
    rt_backend_cuda.finalize();
    /* Provenance still works without a device: it is how a report says where it ran. */
    char prov[4096] = "";
    rt_backend_cuda.provenance(prov, sizeof prov);
    assert_non_null(strstr(prov, "nccl_build_version=2."));
    assert_non_null(strstr(prov, "gpu_count=0\n"));
}

/* On a GPU: one rank, one device; device bytes follow the page rules. */
static int64_t used_now(rt_rank *r) {
    rt_mem_reading m;
    assert_int_equal(rt_backend_cuda.mem_read(r, &m), 0);
    assert_true(m.has_device);
    return (int64_t)m.device_used;
}

static void one_gpu_allocations(void **state) {
    if (!have_gpu())
        skip();
    rt_options o;
    options(&o, "cuda");
    char err[512] = "";
    assert_int_equal(rt_backend_cuda.init(&o, 1, 0, 1, err, sizeof err), 0);
    rt_rank r;
    memset(&r, 0, sizeof r);
    r.be = &rt_backend_cuda;
    r.opt = &o;
    r.world = 1;
    assert_int_equal(rt_backend_cuda.rank_init(&r, err, sizeof err), 0);
    rt_rank *ranks[1] = {&r};
    bool used[COLL_COUNT] = {true};
    assert_int_equal(rt_backend_cuda.warmup(ranks, 1, used, err, sizeof err), 0);

    int64_t base = used_now(&r);
    rt_mem m;
    /* DESIGN.md: 2 MiB + 1 -> 4 MiB (requests of 2 MiB or more get whole pages) */
    assert_int_equal(rt_backend_cuda.alloc(&r, 2 * MiB + 1, 0, &m, err, sizeof err), 0);
    assert_int_equal(used_now(&r) - base, 4 * MiB);
    assert_int_equal(rt_backend_cuda.free(&r, &m, err, sizeof err), 0);
    assert_int_equal(used_now(&r) - base, 0);

    /* VMM: 2 chunks of 2 MiB; releasing one leaves 2 MiB (DESIGN.md: 256 -> 128 MiB at 2 chunks) */
    assert_int_equal(rt_backend_cuda.alloc(&r, 4 * MiB, 2, &m, err, sizeof err), 0);
    assert_int_equal(m.chunks, 2);
    assert_int_equal(m.chunk_bytes, 2 * MiB);
    assert_int_equal(used_now(&r) - base, 4 * MiB);
    assert_int_equal(rt_backend_cuda.release(&r, &m, 0, err, sizeof err), 0);
    assert_int_equal(m.live_chunks, 1);
    assert_int_equal(used_now(&r) - base, 2 * MiB);
    assert_int_equal(rt_backend_cuda.free(&r, &m, err, sizeof err), 0);
    assert_int_equal(used_now(&r) - base, 0);

    /* Far more than any GPU has: refused with the size and the free memory, no hang. */
    assert_int_equal(rt_backend_cuda.alloc(&r, (uint64_t)200 << 30, 0, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "cudaMalloc of 214748364800 bytes failed: "));
    assert_non_null(strstr(err, "MiB free of "));

    rt_backend_cuda.rank_finalize(&r);
    rt_backend_cuda.finalize();
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(row_is_cuda),
#ifdef MEMLIFE_HAVE_CUDA
        cmocka_unit_test(unknown_allocator_refused),
        cmocka_unit_test(no_gpu_refused_with_cause),
        cmocka_unit_test(one_gpu_allocations),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
