/* SPDX-License-Identifier: MIT */
/* job.c — this process's part of a job (job.h). */
#include "exec/job.h"
#include "exec/mpi_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rt_job_start(const rt_job *j) {
    char err[400] = "";
    if (j->be->init(&j->opt, j->world, j->mpi ? j->rank : 0, j->n_local, err, sizeof err) == 0)
        return 0;
    ml_report(ML_DIAG_ERROR, NULL, "rank %d: backend '%s' could not start: %s", j->rank,
              j->be->name, err);
    if (j->mpi && j->be->abort)
        j->be->abort(ML_EXIT_RUNTIME);
    return ML_EXIT_RUNTIME;
}

int rt_job_init_ranks(const rt_job *j, const rt_backend_ops *be, const rank_plan *plans,
                      rt_rank *ranks, rt_rank **ptrs) {
    int rc = 0;
    memset(ranks, 0, (size_t)j->n_local * sizeof *ranks);
    for (int k = 0; k < j->n_local; k++) {
        ptrs[k] = &ranks[k];
        if (rt_rank_init(&ranks[k], be, &j->opt, &plans[j->mpi ? j->rank : k], k) != 0)
            rc = -1;
    }
    return rc;
}

int rt_job_run(const rt_job *j, const rank_plan *plans, rt_rank *ranks) {
    rt_rank **ptrs = ml_xcalloc((size_t)j->n_local, sizeof *ptrs);
    int rc = rt_job_init_ranks(j, j->be, plans, ranks, ptrs);
    if (rc == 0)
        rc = rt_run(ptrs, j->n_local);
    free(ptrs);
    return rc;
}

void rt_job_free_ranks(const rt_job *j, rt_rank *ranks) {
    for (int k = 0; k < j->n_local; k++)
        rt_rank_free(&ranks[k]);
}

int rt_job_end_alone(const rt_job *j) {
    if (j->mpi && j->world > 1) {
        if (j->be->abort)
            j->be->abort(ML_EXIT_RUNTIME);
        exit(ML_EXIT_RUNTIME);
    }
    return ML_EXIT_RUNTIME;
}

int rt_job_failed(const rt_job *j, rt_rank *ranks, const char *what) {
    bool known = true;
    for (int k = 0; k < j->n_local; k++)
        known = known && (!ranks[k].failed || ranks[k].failure_known_to_all);
    for (int k = 0; k < j->n_local; k++) {
        if (!ranks[k].failed || !ranks[k].error_print_here)
            continue;
        fprintf(stderr, "%s\n", ranks[k].error);
        /* Known to all: rank 0 says where every rank stood (below); else each its own place. */
        char *own = known ? NULL : rt_failure_state(&ranks[k], 1);
        if (own)
            fputs(own, stderr);
        free(own);
    }
    char *state = known && ranks[0].rank == 0 ? rt_failure_state(&ranks[0], 16) : NULL;
    if (state) {
        fflush(stderr);
        fputs(state, stderr);
        free(state);
    }
    if (what)
        ml_report(ML_DIAG_ERROR, NULL, "rank %d: %s", j->rank, what);
    return known ? ML_EXIT_RUNTIME : rt_job_end_alone(j);
}

int rt_job_gather(const rt_job *j, rt_rank *ranks, ml_measure *recs, char *err, size_t len) {
    if (!j->mpi) {
        for (int r = 0; r < j->world; r++)
            rt_measure_fill(&ranks[r], &recs[r]);
        return 0;
    }
    ml_measure mine;
    rt_measure_fill(&ranks[0], &mine);
    int rc = rt_gather_measures(&ranks[0], &mine, 0, recs, err, len);
    ml_measure_free(&mine);
    return rc;
}
