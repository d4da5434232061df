/* SPDX-License-Identifier: MIT */
/* place.h — where the ranks of `run`, `bench` and `equiv` come from, and the mpirun that memlife
 * starts itself when no launcher has (runtime/launch.h). */
#ifndef MEMLIFE_PLACE_H
#define MEMLIFE_PLACE_H

#include <stdbool.h>
#include "args.h"
#include "exec/job.h"

typedef struct {
    int world;       /* ranks in all; with launch, --ranks or --world (0: neither says) */
    int rank;        /* this process's (first) rank */
    int n_local;     /* ranks this process drives */
    bool mpi;        /* one process per rank, under an MPI launcher */
    bool launch;     /* no launcher: this process is to start mpirun itself (ml_launch_job) */
} ml_place;

/* --gpus N: this process drives N ranks (--ranks and --world must agree); else the MPI
 * launcher's environment (its size must agree with --ranks and --world); else, outside any
 * launcher, out->launch (--ranks and --world must agree, checked before anything starts). 0 for gpus, ranks or world means not given. Returns 0, or an exit code
 * after saying why (usage errors name cmd): "--ranks 4, but the MPI launcher started 2 ranks". */
int ml_place_ranks(const char *cmd, int gpus, int ranks, int world, ml_place *out);

/* ml_place_ranks at a's --gpus, --ranks and --world, written into the job's placement (mpi,
 * world, rank, n_local); *launch: out->launch. Returns 0 or an exit code, as ml_place_ranks. */
int ml_place_job(const char *cmd, const ml_args *a, rt_job *j, bool *launch);

/* The input check a command makes before our own mpirun starts its ranks: 0, or an exit code
 * after saying why. It sets j->world from the input where neither --ranks nor --world said it. */
typedef int ml_place_check(void *ctx, rt_job *j);

/* ml_place_job; without a launcher, check(ctx, j) once here (so that its errors print once and
 * bad input ends with exit 2 before any rank starts), then our own mpirun at j->world
 * (ml_launch_job): *launched is set and the return value is the job's exit code. Otherwise
 * returns 0 (this process is a rank of the job) or an exit code. */
int ml_place_or_launch(const char *cmd, ml_args *a, rt_job *j, int argc, char **argv,
                       ml_place_check *check, void *ctx, bool *launched);

/* Runs this command line again under `mpirun -np ranks` and waits for it (launch_self). Returns
 * memlife's exit code for the job: the ranks' verdict, 128 + N after passing signal N on, or 3
 * with what happened ("error: ...; every rank has ended", said once each one has been reaped)
 * when mpirun failed or a rank died; 2 when a's files include standard input ('-'), which the
 * ranks cannot all read. a->output (-o, NULL: none): rank 0 writes the result to a
 * hidden temp file beside it (MEMLIFE_RESULT_TMP), which this process renames into place only
 * when the job ended with 0 or 1 and no signal came; otherwise it is removed. */
int ml_launch_job(int ranks, int argc, char **argv, const ml_args *a);

#endif
