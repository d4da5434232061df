/* SPDX-License-Identifier: MIT */
/* kernels.c — kernel evidence from CUPTI activity records (kernels.h). */
#include "exec/kernels.h"

#ifdef MEMLIFE_HAVE_CUPTI
#include <cupti.h>
#include <pthread.h>
#endif

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* ---- Names and tallies (no CUPTI needed) ----------------------------------------------------- */

typedef char *(*demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

void kn_demangle(const char *name, char *buf, size_t len) {
    static demangle_fn demangle;
    if (!demangle) {    /* looked up until found: libstdc++ may be loaded later (dlopen) */
        void *sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        memcpy(&demangle, &sym, sizeof demangle);
    }
    int status = -1;
    char *plain = demangle && strncmp(name, "_Z", 2) == 0 ? demangle(name, NULL, NULL, &status)
                                                          : NULL;
    snprintf(buf, len, "%s", status == 0 && plain ? plain : name);
    free(plain);
}

int kn_coll_of(const char *name) {
    int best = -1;
    size_t best_len = 0;
    for (int c = 0; c < COLL_COUNT; c++) {
        const char *m = ml_colls[c].kernel_match;
        size_t n = m ? strlen(m) : 0;
        if (n > best_len && strstr(name, m)) {
            best = c;
            best_len = n;
        }
    }
    return best < 0 ? best : (int)ml_coll_kernel_family((ml_coll)best);
}

void kn_tally_add(kn_tally *t, const char *name, uint64_t count) {
    t->total += count;
    int c = kn_coll_of(name);
    if (c >= 0)
        t->by_coll[c] += count;
    for (size_t k = 0; k < t->n_names; k++)
        if (!strcmp(t->names[k].name, name)) {
            t->names[k].count += count;
            return;
        }
    if (t->n_names == t->cap_names) {
        t->cap_names = t->cap_names ? 2 * t->cap_names : 4;
        t->names = ml_xrealloc(t->names, t->cap_names * sizeof *t->names);
    }
    t->names[t->n_names].name = ml_xstrdup(name);
    t->names[t->n_names++].count = count;
}

void kn_tally_window_on(kn_tally *t, const kn_kernel *k, size_t n, uint64_t t0, uint64_t t1,
                        int device) {
    for (size_t i = 0; i < n; i++)
        if (k[i].start >= t0 && k[i].end <= t1 && (device < 0 || k[i].device == (uint32_t)device))
            kn_tally_add(t, k[i].name, 1);
}

void kn_tally_window(kn_tally *t, const kn_kernel *k, size_t n, uint64_t t0, uint64_t t1) {
    kn_tally_window_on(t, k, n, t0, t1, -1);
}

void kn_tally_free(kn_tally *t) {
    for (size_t k = 0; k < t->n_names; k++)
        free(t->names[k].name);
    free(t->names);
    memset(t, 0, sizeof *t);
}

void kn_kernels_free(kn_kernel *k, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(k[i].name);
    free(k);
}

#ifndef MEMLIFE_HAVE_CUPTI

int kn_begin(char *why, size_t len) {
    snprintf(why, len, "kernel evidence needs CUPTI: built without it (build on a machine with "
             "the CUDA toolkit's cupti.h under CUDA_HOME; make CUPTI=1)");
    return -1;
}

uint64_t kn_now(void) { return 0; }

int kn_end(kn_kernel **kernels, size_t *n, uint64_t *dropped, char *err, size_t len) {
    *kernels = NULL;
    *n = 0;
    *dropped = 0;
    return 0;
}

#else

/* ---- CUPTI, loaded at run time --------------------------------------------------------------- */

#define KN_BUFFER_BYTES ((size_t)4 << 20)

static struct {
    void *lib;
    __typeof__(cuptiActivityRegisterCallbacks) *register_callbacks;
    __typeof__(cuptiActivityEnable) *enable;
    __typeof__(cuptiActivityDisable) *disable;
    __typeof__(cuptiActivityFlushAll) *flush_all;
    __typeof__(cuptiActivityGetNextRecord) *next_record;
    __typeof__(cuptiActivityGetNumDroppedRecords) *dropped;
    __typeof__(cuptiGetTimestamp) *timestamp;
    __typeof__(cuptiGetResultString) *result_string;
    bool registered;
    /* Filled by buffer_completed, which CUPTI may call from a thread of its own. */
    pthread_mutex_t lock;
    ml_vec kernels;             /* kn_kernel */
    uint64_t dropped_records;
} cu = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const struct {
    const char *name;
    size_t offset;
} cu_symbols[] = {
#define SYM(field, fn) {#fn, offsetof(__typeof__(cu), field)}
    SYM(register_callbacks, cuptiActivityRegisterCallbacks),
    SYM(enable, cuptiActivityEnable),
    SYM(disable, cuptiActivityDisable),
    SYM(flush_all, cuptiActivityFlushAll),
    SYM(next_record, cuptiActivityGetNextRecord),
    SYM(dropped, cuptiActivityGetNumDroppedRecords),
    SYM(timestamp, cuptiGetTimestamp),
    SYM(result_string, cuptiGetResultString),
#undef SYM
};

static const char *result_text(CUptiResult r) {
    const char *s = NULL;
    if (cu.result_string && cu.result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

/* The toolkit's library by its soname first (found through memlife's RUNPATH), then by path. */
static int load_cupti(char *why, size_t len) {
    if (cu.lib)
        return 0;
    static const char *const names[] = {
        "libcupti.so.13", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
    };
    char last[300] = "";
    for (size_t k = 0; k < ML_ARRAY_LEN(names) && !cu.lib; k++) {
        cu.lib = dlopen(names[k], RTLD_NOW | RTLD_LOCAL);
        const char *e = cu.lib ? NULL : dlerror();
        if (e)
            snprintf(last, sizeof last, "%s", e);
    }
    if (!cu.lib) {
        snprintf(why, len, "kernel evidence needs CUPTI: libcupti could not be loaded (%s); put "
                 "the CUDA toolkit's lib64 on LD_LIBRARY_PATH", last);
        return -1;
    }
    for (size_t k = 0; k < ML_ARRAY_LEN(cu_symbols); k++) {
        void *sym = dlsym(cu.lib, cu_symbols[k].name);
        if (!sym) {
            snprintf(why, len, "kernel evidence needs CUPTI: libcupti has no %s",
                     cu_symbols[k].name);
            dlclose(cu.lib);
            cu.lib = NULL;
            return -1;
        }
        memcpy((char *)&cu + cu_symbols[k].offset, &sym, sizeof sym);
    }
    return 0;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, KN_BUFFER_BYTES);
    *size = *buffer ? KN_BUFFER_BYTES : 0;
    *max_records = 0;
}

/* Keeps the kernel records. CUpti_ActivityKernel10 is the layout of the toolkit we build with;
 * the fields read here (start, end, deviceId, name) sit at the same place in every kernel
 * record version since the fourth. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
    CUpti_Activity *rec = NULL;
    pthread_mutex_lock(&cu.lock);
    while (buffer && cu.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
            rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)(const void *)rec;
        char name[1024];
        kn_demangle(k->name ? k->name : "?", name, sizeof name);
        kn_kernel *out = ml_vec_push(&cu.kernels);
        out->name = ml_xstrdup(name);
        out->device = k->deviceId;
        out->start = k->start;
        out->end = k->end;
    }
    size_t dropped = 0;
    if (cu.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS)
        cu.dropped_records += dropped;
    pthread_mutex_unlock(&cu.lock);
    free(buffer);
}

int kn_begin(char *why, size_t len) {
    if (load_cupti(why, len))
        return -1;
    char probe[8];
    kn_demangle("", probe, sizeof probe);   /* looks the demangler up now, not in CUPTI's thread */
    CUptiResult r = CUPTI_SUCCESS;
    if (!cu.registered) {
        r = cu.register_callbacks(buffer_requested, buffer_completed);
        cu.registered = r == CUPTI_SUCCESS;
    }
    pthread_mutex_lock(&cu.lock);
    ml_vec_init(&cu.kernels, sizeof(kn_kernel));
    cu.dropped_records = 0;
    pthread_mutex_unlock(&cu.lock);
    if (r == CUPTI_SUCCESS)
        r = cu.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        snprintf(why, len, "kernel evidence needs CUPTI: %s", result_text(r));
        return -1;
    }
    return 0;
}

uint64_t kn_now(void) {
    uint64_t t = 0;
    if (cu.timestamp)
        cu.timestamp(&t);
    return t;
}

int kn_end(kn_kernel **kernels, size_t *n, uint64_t *dropped, char *err, size_t len) {
    *kernels = NULL;
    *n = 0;
    *dropped = 0;
    if (!cu.lib)
        return 0;
    CUptiResult r = cu.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    CUptiResult f = cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&cu.lock);
    *kernels = cu.kernels.items;
    *n = cu.kernels.n;
    *dropped = cu.dropped_records;
    memset(&cu.kernels, 0, sizeof cu.kernels);
    pthread_mutex_unlock(&cu.lock);
    if (r != CUPTI_SUCCESS || f != CUPTI_SUCCESS) {
        snprintf(err, len, "collecting CUPTI kernel records failed: %s",
                 result_text(r != CUPTI_SUCCESS ? r : f));
        return -1;
    }
    return 0;
}

#endif /* MEMLIFE_HAVE_CUPTI */
