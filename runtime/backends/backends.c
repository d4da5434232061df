/* SPDX-License-Identifier: MIT */
/* backends.c — the backend table (rt.h). Adding a backend is one row here plus its own file.
 *
 * Every backend file defines `const rt_backend_ops rt_backend_<name>` whether or not its
 * libraries were found at build time: without them the row says available = false and how to
 * get it, so `memlife run --backend cuda` on a CPU-only build explains itself. */
#include "exec/rt.h"

#include <stdio.h>
#include <string.h>

extern const rt_backend_ops rt_backend_host;
extern const rt_backend_ops rt_backend_cuda;
extern const rt_backend_ops rt_backend_torch;

const rt_backend_ops *const rt_backends[] = {&rt_backend_host, &rt_backend_cuda,
                                                &rt_backend_torch};
const size_t rt_backend_count = ML_ARRAY_LEN(rt_backends);

const rt_backend_ops *rt_backend_find(const char *name) {
    for (size_t k = 0; k < rt_backend_count; k++)
        if (!strcmp(rt_backends[k]->name, name))
            return rt_backends[k];
    return NULL;
}

int rt_backend_check(const rt_backend_ops *be, const rank_plan *p, ml_diags *d) {
    if (!be || !be->refuse_op)
        return 0;
    char err[300];
    for (size_t k = 0; k < p->n_ops; k++) {
        err[0] = '\0';
        if (be->refuse_op(&p->ops[k], p->world, err, sizeof err) != 0) {
            ml_error(d, p->s->file, plan_op_mark(&p->ops[k]), "the %s backend cannot run this: %s",
                     be->name, err);
            return -1;
        }
    }
    return 0;
}
