/* SPDX-License-Identifier: MIT */
/* place.c — where the ranks come from (place.h). */
#include "place.h"
#include "cmd.h"
#include "exec/launch.h"
#include "base/input.h"
#include "base/util.h"
#include "args.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
            ml_report(ML_DIAG_ERROR, NULL,
                      "the MPI launcher does not say how many ranks it started");
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
        ml_report(ML_DIAG_ERROR, NULL,
                  "started by memlife's mpirun but no MPI environment is visible");
        return ML_EXIT_RUNTIME;
    }
    /* said here, once, before mpirun starts ranks that would each say it */
    if (ranks && world && ranks != world)
        return ml_usage_error(cmd, "--ranks %d and --world %d disagree (one process per rank)",
                              ranks, world);
    out->mpi = true;
    out->launch = true;
    out->world = ranks ? ranks : world;
    return 0;
}

int ml_place_job(const char *cmd, const ml_args *a, rt_job *j, bool *launch) {
    ml_place pl;
    int rc = ml_place_ranks(cmd, a->backend.gpus, a->backend.ranks, a->world, &pl);
    if (rc != 0)
        return rc;
    j->mpi = pl.mpi;
    j->world = pl.world;
    j->rank = pl.rank;
    j->n_local = pl.n_local;
    *launch = pl.launch;
    return 0;
}

int ml_place_or_launch(const char *cmd, ml_args *a, rt_job *j, int argc, char **argv,
                       ml_place_check *check, void *ctx, bool *launched) {
    bool launch;
    int rc = ml_place_job(cmd, a, j, &launch);
    if (rc != 0 || !launch)
        return rc;
    rc = check(ctx, j);
    if (rc != 0)
        return rc;
    *launched = true;
    return ml_launch_job(j->world, argc, argv, a);
}

/* The temp file rank 0 writes the result to, beside where it goes (ml_output_place: `output`,
 * or the file a link named `output` points to; so that the rename stays on one file system):
 * ".NAME.memlife-PID", hidden, unique to this memlife. Rank 0 creates it only when it writes
 * the result, so a job that is killed earlier leaves nothing behind. *target: the name renamed
 * onto. Returns 0, 1 when no staging applies (stdout, a descriptor by name, or a device or FIFO
 * that is written in place), -1 when the name does not fit or a link dangles. */
static int stage_result(const char *output, char *target, char *tmp, size_t len) {
    int fd;
    if (!output || !strcmp(output, "-"))
        return 1;
    int kind = ml_output_place(output, &fd, target, len);
    if (kind < 0)
        return -1;
    if (kind != ML_OUT_REPLACE)
        return 1;
    const char *slash = strrchr(target, '/');
    int dir_len = slash ? (int)(slash - target + 1) : 0;
    if ((size_t)snprintf(tmp, len, "%.*s.%s.memlife-%d", dir_len, target,
                         slash ? slash + 1 : target, (int)getpid()) >= len)
        return -1;
    unlink(tmp);   /* a stale one of a dead memlife that had this pid */
    return 0;
}

/* Removes what rank 0's atomic write of tmp left beside it, "TMP.tmp.XXXXXX" (base/util.h): a
 * rank removes its own when a signal ends it, but not when one kills it (SIGKILL: mpirun's
 * after its SIGTERM, the OOM killer). */
static void remove_rank_temps(const char *tmp) {
    const char *slash = strrchr(tmp, '/');
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - tmp) : 1, slash ? tmp : ".");
    if (slash == tmp)
        snprintf(dir, sizeof dir, "/");
    const char *base = slash ? slash + 1 : tmp;
    size_t n = strlen(base);
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, base, n) && !strncmp(e->d_name + n, ".tmp.", 5))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

int ml_launch_job(int ranks, int argc, char **argv, const ml_args *a) {
    char err[400], tmp[4096], target[4096];
    int status, forwarded;
    const char *output = a->output;
    /* Each rank reads the files itself; mpirun hands standard input to rank 0 alone (and
     * memlife has read it already to check it). */
    for (size_t k = 0; k < a->files.n; k++) {
        const char *f = ML_VEC_AT(&a->files, const char *, k);
        if (ml_input_once(f)) {
            ml_report(ML_DIAG_ERROR, f, "%s cannot be read by every rank: give the schedule as "
                      "a file", strcmp(f, "-") ? "a FIFO (named pipe)" : "standard input");
            return ML_EXIT_INPUT;
        }
    }
    int staged = stage_result(output, target, tmp, sizeof tmp);
    if (staged < 0) {
        ml_report(ML_DIAG_ERROR, output, "%s", errno == ELOOP ? strerror(errno)
                                                : "the path is too long for a temp file beside it");
        return ML_EXIT_RUNTIME;
    }
    if (staged == 0)
        setenv("MEMLIFE_RESULT_TMP", tmp, 1);
    int launched = launch_self(ranks, argc, argv, &status, &forwarded, err, sizeof err);
    int rc = ML_EXIT_RUNTIME;
    if (launched != 0)
        ml_report(ML_DIAG_ERROR, NULL, "%s", err);
    else if (forwarded)
        rc = 128 + forwarded;     /* interrupted: no result */
    else {
        rc = launch_exit_code(status, err, sizeof err);
        if (err[0])
            ml_report(ML_DIAG_ERROR, NULL, "%s; every rank has ended", err);
    }
    if (staged != 0)
        return rc;
    /* Every rank done (0, or 1: an expectation failed, the result says which) and no signal:
     * only then the result goes into place, with the signals held off in between so that a
     * signal either comes first (no result) or after (the run is complete). */
    struct stat st;
    launch_block_signals(true);
    /* A signal that came after mpirun ended but before the block above was not forwarded (no
     * job to forward it to) and did not end memlife (the handler only notes it): the run is
     * interrupted all the same, so it exits as one, 128 + the signal, with no result. Exiting
     * with mpirun's 0 there left exit 0 without a result file (tests/mpi/kill.sh, under the
     * sanitizers' slower run). */
    int late = launch_forwarded_signal();
    if (launched == 0 && late && (rc == 0 || rc == 1))
        rc = 128 + late;
    bool done = launched == 0 && !late && (rc == 0 || rc == 1);
    bool keep = done && stat(tmp, &st) == 0 && st.st_size > 0;
    if (done && !keep) {   /* every rank ended well and rank 0 wrote nothing: never exit 0 */
        ml_report(ML_DIAG_ERROR, output, "the job ended with exit %d but wrote no result", rc);
        rc = ML_EXIT_RUNTIME;
    }
    if (keep && rename(tmp, target) != 0) {
        ml_report(ML_DIAG_ERROR, output, "cannot rename the result into place: %s",
                  strerror(errno));
        rc = ML_EXIT_RUNTIME;
        keep = false;
    }
    if (!keep) {
        unlink(tmp);
        remove_rank_temps(tmp);
    }
    launch_block_signals(false);
    return rc;
}
