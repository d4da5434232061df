/* SPDX-License-Identifier: MIT */
/* place.c — where the ranks come from (place.h). */
#include "place.h"
#include "cmd.h"
#include "exec/launch.h"
#include "base/util.h"

#include <stdio.h>
#include <string.h>

int ml_place_ranks(const char *cmd, int gpus, int ranks, int world, ml_place *out) {
    memset(out, 0, sizeof *out);
    if (gpus) {
        if (ranks && ranks != gpus)
            return ml_usage_error(cmd, "--ranks %d and --gpus %d disagree", ranks, gpus);
        if (world && world != gpus)
            return ml_usage_error(cmd, "--world %d and --gpus %d disagree", world, gpus);
        out->world = out->n_local = gpus;
        return 0;
    }
    int size, me;
    out->n_local = 1;
    if (launch_under_mpi(&size, &me)) {
        if (size <= 0) {
            fprintf(stderr, "error: the MPI launcher does not say how many ranks it started\n");
            return ML_EXIT_RUNTIME;
        }
        if (ranks && ranks != size)
            return ml_usage_error(cmd, "--ranks %d, but the MPI launcher started %d ranks", ranks,
                                  size);
        if (world && world != size)
            return ml_usage_error(cmd, "--world %d, but the MPI launcher started %d ranks", world,
                                  size);
        out->mpi = true;
        out->world = size;
        out->rank = me;
        return 0;
    }
    if (launch_is_child()) {
        fprintf(stderr, "error: started by memlife's mpirun but no MPI environment is visible\n");
        return ML_EXIT_RUNTIME;
    }
    out->mpi = true;
    out->launch = true;
    out->world = ranks ? ranks : world;
    return 0;
}

int ml_launch_job(int ranks, int argc, char **argv) {
    char err[400];
    int status, forwarded;
    if (launch_self(ranks, argc, argv, &status, &forwarded, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return ML_EXIT_RUNTIME;
    }
    if (forwarded)
        return 128 + forwarded;     /* interrupted: the ranks wrote nothing */
    int rc = launch_exit_code(status, err, sizeof err);
    if (err[0])
        fprintf(stderr, "error: %s; every rank has ended\n", err);
    return rc;
}
