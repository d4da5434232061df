/* SPDX-License-Identifier: MIT */
/* backend_opts.c — the backend options, once, for every command with CMD_BACKEND
 * (backend_opts.h). */
#include "backend_opts.h"
#include "args.h"
#include "cmd.h"
#include "suggest.h"
#include "base/util.h"

#include <string.h>

const char *const ml_allocator_names[] = {"cuda", "async", "chunked", NULL};

void ml_backend_opts_default(ml_backend_opts *b) {
    memset(b, 0, sizeof *b);
    b->backend = "host";
    b->timeout = 60.0;
}

/* The backend table's names, for completion and "did you mean" (the table is runtime data). */
static const char *const *backend_names(void) {
    static const char *names[16];
    for (size_t k = 0; k < rt_backend_count && k + 1 < ML_ARRAY_LEN(names); k++)
        names[k] = rt_backends[k]->name;
    return names;
}

size_t ml_backend_opt_rows(ml_backend_opts *b, unsigned flags, ml_opt *rows) {
    if (!(flags & CMD_BACKEND))
        return 0;
    const ml_opt all[ML_BACKEND_OPT_ROWS] = {
        {"--backend", "-b", OPT_STRING, &b->backend, 0, 0, backend_names(), "NAME",
         "host (default; Open MPI, host memory), cuda (CUDA + NCCL) or torch (PyTorch)"},
        {"--ranks", "-n", OPT_INT, &b->ranks, 1, 4096, NULL, "N",
         "ranks, one process each; without an MPI launcher memlife starts 'mpirun -np N' "
         "itself (default: the files' world); under a launcher it must equal the launcher's "
         "size"},
        {"--gpus", NULL, OPT_INT, &b->gpus, 1, 1024, NULL, "N",
         "cuda: drive N GPUs from this one process"},
        {"--timeout", NULL, OPT_DOUBLE, &b->timeout, 1, 0, NULL, "S",
         "deadline in seconds for every wait on a peer (default 60); on expiry every rank "
         "ends with exit 3"},
        {"--allocator", NULL, OPT_CHOICE, &b->allocator, 0, 0, ml_allocator_names, "A",
         "cuda: cuda (cudaMalloc, default), async (cudaMallocAsync) or chunked (VMM chunks)"},
    };
    size_t n = flags & CMD_ALLOCATOR ? ML_BACKEND_OPT_ROWS : ML_BACKEND_OPT_ROWS - 1;
    memcpy(rows, all, n * sizeof *rows);
    return n;
}

int ml_backend_opts_check(const char *cmd, const ml_backend_opts *b, bool need_backend,
                          const rt_backend_ops **be) {
    *be = NULL;
    if (need_backend) {
        *be = rt_backend_find(b->backend);
        if (!*be) {
            const char *const *names = backend_names();
            size_t n = 0;
            while (names[n])
                n++;
            const char *s = ml_suggest(b->backend, names, n);
            if (s)
                return ml_usage_error(cmd, "unknown backend '%s' (host, cuda or torch); did you mean "
                                      "'%s'?", b->backend, s);
            return ml_usage_error(cmd, "unknown backend '%s' (host, cuda or torch)", b->backend);
        }
        if (!(*be)->available) {
            ml_report(ML_DIAG_ERROR, NULL, "backend '%s' is not available in this build: %s",
                      (*be)->name, (*be)->how_to_get);
            return ML_EXIT_RUNTIME;
        }
    }
    const rt_backend_ops *named = *be ? *be : rt_backend_find(b->backend);
    if (b->gpus && !(named && named->several_gpus))
        return ml_usage_error(cmd, "--gpus is for the cuda backend");
    return 0;
}

void ml_backend_opts_apply(const ml_backend_opts *b, const rt_backend_ops *be, rt_options *o) {
    o->backend = be->name;
    o->allocator = ml_allocator_names[b->allocator];
    o->timeout_s = b->timeout;
    o->gpus = b->gpus;
}
