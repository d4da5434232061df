/* SPDX-License-Identifier: MIT */
/* equiv_run.c — both plans of `memlife equiv` on a backend, results compared (equiv_run.h). */
#include "equiv_run.h"
#include "exec/kernels.h"
#include "exec/provenance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    void *data;
    uint64_t count;
    ml_dtype dtype;
} host_copy;

/* Reads buffer buf of every local rank into host memory after its plan ran. */
static int read_results(const equiv_run_ctx *c, rt_rank *ranks, const series *s, uint32_t buf,
                        host_copy *out) {
    for (int k = 0; k < c->job.n_local; k++) {
        rt_rank *r = &ranks[k];
        equiv_result_shape(r->plan, buf, &out[k].count, &out[k].dtype);
        const rt_mem *m = buf < r->n_mems ? &r->mems[buf] : NULL;
        uint64_t bytes = out[k].count * ml_dtypes[out[k].dtype].size;
        char err[400] = "";
        out[k].data = ml_xmalloc(bytes ? bytes : 1);
        if (!m || !m->ptr || m->bytes < bytes) {
            ml_report(ML_DIAG_ERROR, s->s->file, "rank %d: result '%s' is not live after the run",
                      r->rank, sched_sym_name(s->s, SYM_BUFFER, buf));
            return -1;
        }
        if (bytes && c->job.be->read(r, m, 0, out[k].data, bytes, err, sizeof err) != 0) {
            ml_report(ML_DIAG_ERROR, s->s->file, "rank %d: reading result '%s': %s", r->rank,
                      sched_sym_name(s->s, SYM_BUFFER, buf), err);
            return -1;
        }
    }
    return 0;
}

/* ---- Kernels (--kernels) ----------------------------------------------------------------------*/

/* One rank's kernels of both plans, as it travels to every rank; ok false: why says why not. */
typedef struct {
    equiv_kernels_rank plan[2];
    bool ok;
    char why[300];
} kernels_blob;

/* The plan running now: rt_run warms the backend up (NCCL kernels too) through this copy of its
 * ops, which opens the window once the warm-up has ended on every local GPU. */
static struct {
    const rt_backend_ops *real;
    rt_backend_ops ops;
    uint64_t t0;
} win;

static int gpus_idle(rt_rank **ranks, int n, char *err, size_t len) {
    for (int k = 0; k < n; k++)
        if (win.real->sync(ranks[k], SYNC_DEVICE, 0, 0, err, len) != 0)
            return -1;
    return 0;
}

static int warm_then_open(rt_rank **ranks, int n, const bool used[COLL_COUNT], char *err,
                          size_t len) {
    if (win.real->warmup && win.real->warmup(ranks, n, used, err, len) != 0)
        return -1;
    if (gpus_idle(ranks, n, err, len) != 0)
        return -1;
    win.t0 = kn_now();
    return 0;
}

/* The kernels of [t0, t1] on one device (-1: all) into the fixed-size row. */
static void keep_window(const kn_kernel *ks, size_t n, uint64_t t0, uint64_t t1, int device,
                        equiv_kernels_rank *out) {
    kn_tally t = {0};
    kn_tally_window_on(&t, ks, n, t0, t1, device);
    memset(out, 0, sizeof *out);
    out->total = t.total;
    memcpy(out->by_coll, t.by_coll, sizeof out->by_coll);
    for (size_t j = 0; j < t.n_names && j < EQUIV_KERNEL_NAMES; j++) {
        snprintf(out->names[j].name, sizeof out->names[j].name, "%s", t.names[j].name);
        out->names[j].count = t.names[j].count;
        out->n_names++;
    }
    kn_tally_free(&t);
}

/* Runs plan s on the local ranks; with *measure, under CUPTI, its kernels into blobs[k].plan[s]
 * (a rank that cannot collect them says why in blobs[k] and clears *measure). */
static int run_plan(const equiv_run_ctx *c, const series *sd, int s, rt_rank *ranks, rt_rank **ptrs,
                    bool *measure, kernels_blob *blobs) {
    const rt_backend_ops *be = c->job.be;
    if (*measure) {
        win.real = c->job.be;
        win.ops = *c->job.be;
        win.ops.warmup = warm_then_open;
        win.t0 = UINT64_MAX;   /* no window until the warm-up has ended */
        be = &win.ops;
    }
    if (rt_job_init_ranks(&c->job, be, sd->plans, ranks, ptrs) != 0)
        return -1;
    char why[400] = "";
    bool began = *measure && kn_begin(why, sizeof why) == 0, ok = began;
    int rc = rt_run(ptrs, c->job.n_local);
    if (!*measure)
        return rc;
    if (ok && rc == 0)
        ok = gpus_idle(ptrs, c->job.n_local, why, sizeof why) == 0;
    uint64_t t1 = kn_now(), dropped = 0;
    kn_kernel *ks = NULL;
    size_t nk = 0;
    if (began && kn_end(&ks, &nk, &dropped, why, sizeof why) != 0)
        ok = false;
    if (ok && dropped) {
        snprintf(why, sizeof why, "kernel evidence incomplete: CUPTI dropped %llu kernel records", (unsigned long long)dropped);
        ok = false;
    }
    for (int k = 0; ok && k < c->job.n_local; k++)
        keep_window(ks, nk, win.t0, t1, c->job.mpi ? -1 : k, &blobs[k].plan[s]);
    kn_kernels_free(ks, nk);
    if (!ok) {
        *measure = false;
        for (int k = 0; k < c->job.n_local; k++)
            snprintf(blobs[k].why, sizeof blobs[k].why, "%s", why);
    }
    return rc;
}

/* Every rank's kernels to every rank (the run's ranks are live: the exchange needs one). */
static int share_kernels(const equiv_run_ctx *c, rt_rank *ranks, bool measure, kernels_blob *mine,
                         equiv_run_kernels *out) {
    kernels_blob *all = ml_xcalloc((size_t)c->job.world, sizeof *all);
    for (int k = 0; k < c->job.n_local; k++)
        mine[k].ok = measure;
    char err[400] = "";
    int rc = 0;
    if (!c->job.mpi)
        memcpy(all, mine, (size_t)c->job.n_local * sizeof *mine);
    else
        rc = c->job.be->allgather_blob(&ranks[0], mine, sizeof *mine, all, err, sizeof err);
    int missing = -1;
    for (int r = 0; rc == 0 && r < c->job.world && missing < 0; r++)
        if (!all[r].ok)
            missing = r;
    if (rc == 0 && missing >= 0 && c->job.mpi && c->job.world > 1) {
        snprintf(out->why, sizeof out->why, "rank %d: %s", missing, all[missing].why);
    } else if (rc == 0 && missing >= 0) {
        snprintf(out->why, sizeof out->why, "%s", all[missing].why);
    } else if (rc == 0) {
        for (int s = 0; s < 2; s++) {
            out->per[s] = ml_xcalloc((size_t)c->job.world, sizeof *out->per[s]);
            for (int r = 0; r < c->job.world; r++)
                out->per[s][r] = all[r].plan[s];
        }
    }
    free(all);
    return rc == 0 ? 0
                   : rt_job_failed(&c->job, ranks, "equiv could not exchange the measured kernels");
}

/* Plan A runs to its end and its results are copied out; then plan B, compared while its
 * buffers are live, and the rows exchanged over B's ranks (the blob exchange needs a rank). */
static int run_both(const equiv_run_ctx *c, const series *const side[2], const uint32_t result[2],
                    double rtol, double atol, equiv_data_rank *data, equiv_run_kernels *kernels) {
    rt_rank *ranks = ml_xcalloc((size_t)c->job.n_local, sizeof *ranks);
    rt_rank **ptrs = ml_xcalloc((size_t)c->job.n_local, sizeof *ptrs);
    host_copy *copies[2] = {ml_xcalloc((size_t)c->job.n_local, sizeof(host_copy)),
                            ml_xcalloc((size_t)c->job.n_local, sizeof(host_copy))};
    equiv_data_rank *mine = ml_xcalloc((size_t)c->job.n_local, sizeof *mine);
    kernels_blob *blobs = ml_xcalloc((size_t)c->job.n_local, sizeof *blobs);
    bool measure = c->kernels;
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        if (run_plan(c, side[s], s, ranks, ptrs, &measure, blobs) != 0) {
            rc = rt_job_failed(&c->job, ranks, s ? "equiv could not run plan B"
                                                : "equiv could not run plan A");
        } else if (read_results(c, ranks, side[s], result[s], copies[s]) != 0) {
            rc = rt_job_end_alone(&c->job);   /* the peers would wait for this rank's row */
        } else if (s == 1) {
            for (int k = 0; k < c->job.n_local; k++)
                equiv_compare_data(copies[0][k].data, copies[0][k].dtype, copies[0][k].count,
                                   copies[1][k].data, copies[1][k].dtype, copies[1][k].count, rtol,
                                   atol, &mine[k]);
            char err[400] = "";
            if (!c->job.mpi)
                memcpy(data, mine, (size_t)c->job.n_local * sizeof *mine);
            else if (c->job.be->allgather_blob(&ranks[0], mine, sizeof *mine, data, err, sizeof err))
                rc = rt_job_failed(&c->job, ranks,
                                   "equiv could not exchange the compared results");
            if (rc == 0 && c->kernels)
                rc = share_kernels(c, ranks, measure, blobs, kernels);
        }
        rt_job_free_ranks(&c->job, ranks);
    }
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < c->job.n_local; k++)
            free(copies[s][k].data);
        free(copies[s]);
    }
    free(mine);
    free(blobs);
    free(ranks);
    free(ptrs);
    return rc;
}

int equiv_run_data(const equiv_run_ctx *c, const series *const side[2], const uint32_t result[2],
                   double rtol, double atol, equiv_data_rank **data, equiv_run_kernels *kernels,
                   char **prov) {
    *data = NULL;
    *prov = NULL;
    memset(kernels, 0, sizeof *kernels);
    if (rt_job_start(&c->job) != 0)
        return ML_EXIT_RUNTIME;
    *prov = ml_provenance_collect(c->job.be, c->job.world);
    *data = ml_xcalloc((size_t)c->job.world, sizeof **data);
    int rc = run_both(c, side, result, rtol, atol, *data, kernels);
    c->job.be->finalize();
    if (rc != 0) {
        free(*data);
        *data = NULL;
        free(kernels->per[0]);
        free(kernels->per[1]);
        kernels->per[0] = kernels->per[1] = NULL;
    }
    return rc;
}
