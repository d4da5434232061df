/* SPDX-License-Identifier: MIT */
/* job.h — this process's part of a job, for every command that runs plans (run, equiv, bench):
 * the backend started, this process's ranks of a plan set up and run, their measurement records
 * gathered to rank 0, and the one policy for a failure.
 *
 * The failure policy: a failure every rank knows of (a collective that failed everywhere, the
 * sequence check, a deadline that every rank met) ends each rank with exit 3 after it has said
 * what it knows; a failure this rank may know alone ends the whole job from here (MPI_Abort),
 * since its peers could otherwise wait for it inside a collective until the deadline. */
#ifndef MEMLIFE_JOB_H
#define MEMLIFE_JOB_H

#include "exec/rt.h"

typedef struct {
    const rt_backend_ops *be;
    rt_options opt;
    bool mpi;                  /* one rank per process under an MPI launcher */
    int world, rank, n_local;  /* rank: this process's rank under MPI (0 otherwise) */
} rt_job;

/* Starts the backend (be->init). On failure prints "rank R: backend 'B' could not start: ..."
 * and, under MPI, ends the job (a peer may have started and would wait). Returns 0 or
 * ML_EXIT_RUNTIME. */
int rt_job_start(const rt_job *j);

/* Sets up ranks[n_local] (zeroed here) for plans[world], every rank's plan: local rank k runs
 * this process's rank under MPI, else rank k; ptrs[k] = &ranks[k]. be is j->be or a copy of it
 * with hooks of the caller's (equiv's kernel window). Returns 0, or -1 with the failure in the
 * ranks (rt_job_failed says it). The ranks are freed by rt_job_free_ranks either way. */
int rt_job_init_ranks(const rt_job *j, const rt_backend_ops *be, const rank_plan *plans,
                      rt_rank *ranks, rt_rank **ptrs);
/* rt_job_init_ranks on j->be, then rt_run. Returns 0 or -1, as rt_job_init_ranks. */
int rt_job_run(const rt_job *j, const rank_plan *plans, rt_rank *ranks);
void rt_job_free_ranks(const rt_job *j, rt_rank *ranks);

/* The failure policy after rt_job_run failed: each rank's error where it is to be printed, then
 * where the ranks stood (rank 0 for all when every rank knows, else each its own), then
 * "rank R: WHAT" when what is given. Ends the job from here when a peer may not know; else
 * returns ML_EXIT_RUNTIME. */
int rt_job_failed(const rt_job *j, rt_rank *ranks, const char *what);

/* A failure this rank alone knows of, already said: under MPI with peers, ends the job from
 * here; else returns ML_EXIT_RUNTIME. */
int rt_job_end_alone(const rt_job *j);

/* Every rank's record (ir/measure.h) after a run: under MPI it travels to rank 0 in the
 * record's one wire format; a process driving every rank (--gpus N) holds them all already.
 * On rank 0 recs[world] is filled (ml_measure_free each); other ranks get nothing. Returns 0, or
 * -1 with err. */
int rt_job_gather(const rt_job *j, rt_rank *ranks, ml_measure *recs, char *err, size_t len);

#endif
