/* SPDX-License-Identifier: MIT */
/* backend_opts.h — the backend options of run, bench and equiv (the commands whose row in
 * commands.def has CMD_BACKEND), defined once: their table rows, defaults and checks.
 *
 *   -b, --backend NAME   host (default) or cuda (runtime/backends/backends.c's table)
 *   -n, --ranks N        ranks in all, 1..4096
 *       --gpus N         cuda: this one process drives N GPUs, 1..1024
 *       --timeout S      deadline in seconds for every wait on a peer, > 0 (default 60)
 *       --allocator A    cuda, async or chunked (only with CMD_ALLOCATOR: run)
 *
 * The rows are plain ml_opt data (args.h), so another parser can take them as they are. */
#ifndef MEMLIFE_BACKEND_OPTS_H
#define MEMLIFE_BACKEND_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "exec/rt.h"

typedef struct {
    const char *backend;       /* --backend; default "host" */
    int ranks, gpus;           /* 0: not given */
    int allocator;             /* index into ml_allocator_names; default 0 ("cuda") */
    double timeout;            /* seconds; default 60 */
} ml_backend_opts;

/* NULL-terminated: --allocator's choices, the cuda backend's allocators. */
extern const char *const ml_allocator_names[];

#define ML_BACKEND_OPT_ROWS 5

void ml_backend_opts_default(ml_backend_opts *b);

/* The backend, checked for cmd: a known name (else a usage error, exit 2), built in (else exit
 * 3 with how to get it), --gpus only with cuda (exit 2). need_backend false (equiv --no-data,
 * which runs nothing) checks --gpus alone. Returns 0 with *be set (NULL when not needed), or
 * the exit code after saying why. */
int ml_backend_opts_check(const char *cmd, const ml_backend_opts *b, bool need_backend,
                          const rt_backend_ops **be);

/* The run options the backend options set: backend, allocator, timeout, gpus. */
void ml_backend_opts_apply(const ml_backend_opts *b, const rt_backend_ops *be, rt_options *o);

#endif
