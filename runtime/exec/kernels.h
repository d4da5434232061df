/* SPDX-License-Identifier: MIT */
/* kernels.h — kernel evidence: which GPU kernels ran inside a window of time, from CUPTI activity
 * records (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).
 *
 * The benchmark synchronizes every local GPU at each plan and region boundary of its kernel pass
 * and reads kn_now() there, so no kernel straddles a boundary: a kernel belongs to a window when
 * it started and ended inside it (CUPTI's record timestamps and kn_now() share one clock). Only
 * kernels inside a window count: warm-up, input resets and teardown fall outside every window.
 *
 * libcupti is loaded at run time (dlopen), so a binary built with CUPTI still starts, and does all
 * else, where the library is missing; built without CUPTI (no MEMLIFE_HAVE_CUPTI), kn_begin says
 * so. Kernel names come mangled (C++); kn_demangle uses the __cxa_demangle of the libstdc++ that
 * NCCL has loaded into the process (found with dlsym, so memlife stays C), else keeps the name.
 * The tally half of this module (windows, names, collectives) needs no CUPTI and is unit-tested. */
#ifndef MEMLIFE_KERNELS_H
#define MEMLIFE_KERNELS_H

#include "ir/coll.h"

typedef struct {
    char *name;          /* demangled when a demangler is loaded */
    uint32_t device;     /* CUDA device ordinal */
    uint64_t start, end; /* ns, CUPTI's clock */
} kn_kernel;

/* Starts collecting kernel records. Returns 0, or -1 with why: "kernel evidence needs CUPTI:
 * built without it (...)" or "kernel evidence needs CUPTI: libcupti could not be loaded (...)". */
int kn_begin(char *why, size_t len);
/* CUPTI's clock now, ns (0 without CUPTI). */
uint64_t kn_now(void);
/* Stops collecting, flushes, and hands over the kernels recorded since kn_begin (free with
 * kn_kernels_free); *dropped: records CUPTI had to drop (0 is expected). Returns 0 or -1. */
int kn_end(kn_kernel **kernels, size_t *n, uint64_t *dropped, char *err, size_t len);
void kn_kernels_free(kn_kernel *k, size_t n);

/* The demangled form of a C++ name into buf; the name itself when it is not mangled or no
 * demangler is loaded. */
void kn_demangle(const char *name, char *buf, size_t len);
/* The kernel family a kernel name belongs to (ml_coll_kernel_family: the first row with that
 * kernel_match, COLL_SEND for SendRecv): the longest kernel_match of coll.h's table found in it
 * ("ncclDevKernel_ReduceScatter" wins over "ncclDevKernel_Reduce"), or -1. */
int kn_coll_of(const char *name);

/* Kernels of one window, by name (in first-seen order) and by collective. */
typedef struct {
    char *name;
    uint64_t count;
} kn_name_count;

typedef struct {
    uint64_t total;
    uint64_t by_coll[COLL_COUNT];
    kn_name_count *names;
    size_t n_names, cap_names;
} kn_tally;

/* Adds count kernels called name (merging tallies of several ranks goes through here too). */
void kn_tally_add(kn_tally *t, const char *name, uint64_t count);
/* Adds every kernel of k[0..n) that started at or after t0 and ended at or before t1. */
void kn_tally_window(kn_tally *t, const kn_kernel *k, size_t n, uint64_t t0, uint64_t t1);
/* The same for the kernels of one CUDA device only (device < 0: every device): one process that
 * drives several GPUs (cuda --gpus N) counts each GPU's rank apart. */
void kn_tally_window_on(kn_tally *t, const kn_kernel *k, size_t n, uint64_t t0, uint64_t t1,
                        int device);
void kn_tally_free(kn_tally *t);

#endif
