/* SPDX-License-Identifier: MIT */
/* test_kernels.c — the CUPTI-free half of the kernel evidence (runtime/kernels.c): which
 * collective a kernel name belongs to, windows, tallies, demangling. The chapter's probe is
 * replayed on made-up records: 5 iterations on 2 GPUs give 10 AllReduce kernels for direct and
 * 10 ReduceScatter + 10 AllGather for decomposed (4 GPUs: 20 vs 40, the chapter's Nsight count). */
#include "testutil.h"
#include "exec/kernels.h"

#include <dlfcn.h>
#include <stdlib.h>

static const char ar_mangled[] =
    "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";
static const char ar_name[] =
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
static const char rs_name[] =
    "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
static const char ag_name[] = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

static void test_collective_of_a_name(void **state) {
    assert_int_equal(kn_coll_of(ar_name), COLL_ALL_REDUCE);
    assert_int_equal(kn_coll_of(ar_mangled), COLL_ALL_REDUCE);   /* the fragment survives */
    assert_int_equal(kn_coll_of(rs_name), COLL_REDUCE_SCATTER);   /* not Reduce, its prefix */
    assert_int_equal(kn_coll_of("ncclDevKernel_Reduce_Sum_f32_RING_LL"), COLL_REDUCE);
    assert_int_equal(kn_coll_of(ag_name), COLL_ALL_GATHER);
    assert_int_equal(kn_coll_of("ncclDevKernel_Broadcast_RING_LL"), COLL_BROADCAST);
    assert_int_equal(kn_coll_of("ncclDevKernel_Generic_1"), -1);
    assert_int_equal(kn_coll_of("vectorAdd"), -1);
}

/* With libstdc++ in the process (NCCL brings it; here we load it), names come demangled; a name
 * that is not mangled stays as it is. */
static void test_demangle(void **state) {
    char buf[256];
    kn_demangle("vectorAdd", buf, sizeof buf);
    assert_string_equal(buf, "vectorAdd");
    if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL))
        skip();
    kn_demangle(ar_mangled, buf, sizeof buf);
    assert_string_equal(buf, ar_name);
    kn_demangle("_Znot a name", buf, sizeof buf);
    assert_string_equal(buf, "_Znot a name");
}

/* One kernel per GPU per collective, 10 ns long, 100 ns apart; the probe's windows hold 5
 * iterations each; warm-up kernels before the first window and a teardown kernel after the last
 * must not count, nor one that straddles a window's end. */
static void test_the_chapters_probe(void **state) {
    kn_kernel k[64];
    size_t n = 0;
    uint64_t t = 1000;
    const char *warm[] = {ar_name, rs_name, ag_name};
    for (int w = 0; w < 3; w++)
        for (uint32_t g = 0; g < 2; g++)
            k[n++] = (kn_kernel){(char *)warm[w], g, t, t + 10}, t += 100;
    uint64_t direct0 = t;
    for (int i = 0; i < 5; i++, t += 100)
        for (uint32_t g = 0; g < 2; g++)
            k[n++] = (kn_kernel){(char *)ar_name, g, t, t + 10};
    uint64_t direct1 = t, decomposed0 = t + 50;
    t = decomposed0;
    for (int i = 0; i < 5; i++, t += 200)
        for (uint32_t g = 0; g < 2; g++) {
            k[n++] = (kn_kernel){(char *)rs_name, g, t, t + 10};
            k[n++] = (kn_kernel){(char *)ag_name, g, t + 100, t + 110};
        }
    uint64_t decomposed1 = t;
    k[n++] = (kn_kernel){(char *)ar_name, 0, decomposed1 - 5, decomposed1 + 5};  /* straddles */
    k[n++] = (kn_kernel){(char *)ar_name, 1, decomposed1 + 100, decomposed1 + 110};

    kn_tally direct = {0}, decomposed = {0};
    kn_tally_window(&direct, k, n, direct0, direct1);
    kn_tally_window(&decomposed, k, n, decomposed0, decomposed1);
    assert_int_equal(direct.total, 10);                       /* 5 iterations x 2 GPUs */
    assert_int_equal(direct.by_coll[COLL_ALL_REDUCE], 10);
    assert_int_equal(direct.n_names, 1);
    assert_string_equal(direct.names[0].name, ar_name);
    assert_int_equal(decomposed.total, 20);                   /* 5 x 2 collectives x 2 GPUs */
    assert_int_equal(decomposed.by_coll[COLL_REDUCE_SCATTER], 10);
    assert_int_equal(decomposed.by_coll[COLL_ALL_GATHER], 10);
    assert_int_equal(decomposed.by_coll[COLL_ALL_REDUCE], 0);
    assert_int_equal(decomposed.n_names, 2);
    assert_string_equal(decomposed.names[0].name, rs_name);   /* first seen first */
    assert_int_equal(decomposed.names[1].count, 10);
    kn_tally_free(&direct);
    kn_tally_free(&decomposed);

    /* One process driving both GPUs (cuda --gpus 2): each GPU's rank counts its own. */
    kn_tally gpu1 = {0};
    kn_tally_window_on(&gpu1, k, n, decomposed0, decomposed1, 1);
    assert_int_equal(gpu1.total, 10);                          /* 5 x 2 collectives, one GPU */
    assert_int_equal(gpu1.by_coll[COLL_ALL_GATHER], 5);
    kn_tally_free(&gpu1);
}

/* Under mpirun each rank counts its own GPU; rank 0 adds the others' tallies by name. */
static void test_merging_ranks(void **state) {
    kn_tally t = {0};
    kn_tally_add(&t, rs_name, 5);
    kn_tally_add(&t, ag_name, 5);
    kn_tally_add(&t, rs_name, 5);
    kn_tally_add(&t, ag_name, 5);
    kn_tally_add(&t, "cleanup_kernel", 1);
    assert_int_equal(t.total, 21);
    assert_int_equal(t.n_names, 3);
    assert_int_equal(t.names[0].count, 10);
    assert_int_equal(t.by_coll[COLL_ALL_GATHER], 10);
    kn_tally_free(&t);
    assert_int_equal(t.total, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collective_of_a_name),
        cmocka_unit_test(test_demangle),
        cmocka_unit_test(test_the_chapters_probe),
        cmocka_unit_test(test_merging_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
