/* equiv_run.c — both plans of `memlife equiv` on a backend, results compared (equiv_run.h). */
#include "equiv_run.h"
#include "../runtime/provenance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    void *data;
    uint64_t count;
    ml_dtype dtype;
} host_copy;

/* Prints the failure and, when a peer may not know of it, ends the whole job from here. */
static int failed(const equiv_run_ctx *c, rt_rank *ranks, const char *what) {
    bool known = true;
    for (int k = 0; k < c->n_local; k++) {
        if (ranks[k].failed && ranks[k].error_print_here)
            fprintf(stderr, "%s\n", ranks[k].error);
        known = known && (!ranks[k].failed || ranks[k].failure_known_to_all);
    }
    fprintf(stderr, "error: rank %d: equiv could not %s\n", c->rank, what);
    if (!known && c->mpi && c->world > 1) {
        if (c->be->abort)
            c->be->abort(ML_EXIT_RUNTIME);
        exit(ML_EXIT_RUNTIME);
    }
    return ML_EXIT_RUNTIME;
}

/* Reads buffer buf of every local rank into host memory after its plan ran. */
static int read_results(const equiv_run_ctx *c, rt_rank *ranks, const series *s, uint32_t buf,
                        host_copy *out) {
    for (int k = 0; k < c->n_local; k++) {
        rt_rank *r = &ranks[k];
        equiv_result_shape(r->plan, buf, &out[k].count, &out[k].dtype);
        const rt_mem *m = buf < r->n_mems ? &r->mems[buf] : NULL;
        uint64_t bytes = out[k].count * ml_dtypes[out[k].dtype].size;
        char err[400] = "";
        out[k].data = malloc(bytes ? bytes : 1);
        if (!out[k].data)
            abort();
        if (!m || !m->ptr || m->bytes < bytes) {
            fprintf(stderr, "%s: error: rank %d: result '%s' is not live after the run\n",
                    s->s->file, r->rank, sched_sym_name(s->s, SYM_BUFFER, buf));
            return -1;
        }
        if (bytes && c->be->read(r, m, 0, out[k].data, bytes, err, sizeof err) != 0) {
            fprintf(stderr, "%s: error: rank %d: reading result '%s': %s\n", s->s->file, r->rank,
                    sched_sym_name(s->s, SYM_BUFFER, buf), err);
            return -1;
        }
    }
    return 0;
}

static int init_ranks(const equiv_run_ctx *c, const series *s, rt_rank *ranks, rt_rank **ptrs) {
    int rc = 0;
    memset(ranks, 0, (size_t)c->n_local * sizeof *ranks);
    for (int k = 0; k < c->n_local; k++) {
        ptrs[k] = &ranks[k];
        if (rt_rank_init(&ranks[k], c->be, &c->opt, &s->plans[c->mpi ? c->rank : k], k) != 0)
            rc = -1;
    }
    return rc;
}

static void free_ranks(const equiv_run_ctx *c, rt_rank *ranks) {
    for (int k = 0; k < c->n_local; k++)
        rt_rank_free(&ranks[k]);
}

/* Plan A runs to its end and its results are copied out; then plan B, compared while its
 * buffers are live, and the rows exchanged over B's ranks (the blob exchange needs a rank). */
static int run_both(const equiv_run_ctx *c, const series *const side[2], const uint32_t result[2],
                    double rtol, double atol, equiv_data_rank *data) {
    rt_rank *ranks = calloc((size_t)c->n_local, sizeof *ranks);
    rt_rank **ptrs = calloc((size_t)c->n_local, sizeof *ptrs);
    host_copy *copies[2] = {calloc((size_t)c->n_local, sizeof(host_copy)),
                            calloc((size_t)c->n_local, sizeof(host_copy))};
    equiv_data_rank *mine = calloc((size_t)c->n_local, sizeof *mine);
    if (!ranks || !ptrs || !copies[0] || !copies[1] || !mine)
        abort();
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        if (init_ranks(c, side[s], ranks, ptrs) != 0 || rt_run(ptrs, c->n_local) != 0) {
            rc = failed(c, ranks, s ? "run plan B" : "run plan A");
        } else if (read_results(c, ranks, side[s], result[s], copies[s]) != 0) {
            rc = ML_EXIT_RUNTIME;
            if (c->mpi && c->world > 1 && c->be->abort)
                c->be->abort(ML_EXIT_RUNTIME);   /* the peers would wait for this rank's row */
        } else if (s == 1) {
            for (int k = 0; k < c->n_local; k++)
                equiv_compare_data(copies[0][k].data, copies[0][k].dtype, copies[0][k].count,
                                   copies[1][k].data, copies[1][k].dtype, copies[1][k].count, rtol,
                                   atol, &mine[k]);
            char err[400] = "";
            if (!c->mpi)
                memcpy(data, mine, (size_t)c->n_local * sizeof *mine);
            else if (c->be->allgather_blob(&ranks[0], mine, sizeof *mine, data, err, sizeof err))
                rc = failed(c, ranks, "exchange the compared results");
        }
        free_ranks(c, ranks);
    }
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < c->n_local; k++)
            free(copies[s][k].data);
        free(copies[s]);
    }
    free(mine);
    free(ranks);
    free(ptrs);
    return rc;
}

int equiv_run_data(const equiv_run_ctx *c, const series *const side[2], const uint32_t result[2],
                   double rtol, double atol, equiv_data_rank **data, char **prov) {
    char err[400] = "";
    *data = NULL;
    *prov = NULL;
    if (c->be->init(&c->opt, c->world, c->mpi ? c->rank : 0, c->n_local, err, sizeof err) != 0) {
        fprintf(stderr, "error: rank %d: backend '%s' could not start: %s\n", c->rank,
                c->be->name, err);
        if (c->mpi && c->be->abort)
            c->be->abort(ML_EXIT_RUNTIME);
        return ML_EXIT_RUNTIME;
    }
    *prov = ml_provenance_collect(c->be, c->world);
    *data = calloc((size_t)c->world, sizeof **data);
    if (!*data)
        abort();
    int rc = run_both(c, side, result, rtol, atol, *data);
    c->be->finalize();
    if (rc != 0) {
        free(*data);
        *data = NULL;
    }
    return rc;
}
