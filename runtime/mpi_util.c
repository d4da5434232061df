/* mpi_util.c — MPI start-up, deadline waits, blob exchanges and abort (mpi_util.h). */
#include "mpi_util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef MEMLIFE_HAVE_MPI

static bool mpi_started, mpi_ended;

int rt_mpi_init(int world, int rank, char *err, size_t len) {
    if (mpi_started)
        return 0;
    int provided, size = 0, me = -1;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        snprintf(err, len, "MPI_Init failed");
        return -1;
    }
    mpi_started = true;
    /* Errors come back as codes (and become messages here) rather than killing the job. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (size != world || me != rank) {
        snprintf(err, len, "the MPI launcher says rank %d of %d, the environment said rank %d of %d",
                 me, size, rank, world);
        return -1;
    }
    return 0;
}

void rt_mpi_finalize(void) {
    if (mpi_started && !mpi_ended) {
        mpi_ended = true;
        MPI_Finalize();
    }
}

bool rt_mpi_active(void) { return mpi_started && !mpi_ended; }

void rt_mpi_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    if (rt_mpi_active())
        MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

/* Where the rank stands, for a timeout message: the op at pc, or the end of its plan. */
static void where(const rt_rank *r, char *buf, size_t len) {
    const rank_plan *p = r ? r->plan : NULL;
    if (p && r->pc < p->n_ops) {
        ml_mark m = plan_op_mark(&p->ops[r->pc]);
        snprintf(buf, len, "%s:%u:%u", p->s->file, m.line, m.col);
    } else {
        snprintf(buf, len, "%s", p ? p->s->file : "memlife");
    }
}

/* Tests often at first (a collective between ranks on one host completes in microseconds), then
 * sleeps between tests so that oversubscribed ranks (more ranks than cores) leave the CPU to the
 * peers they are waiting for. MPI progresses inside MPI_Test, so the sleep stays short. */
void rt_mpi_wait(rt_rank *r, MPI_Request *req, const char *what) {
    double timeout = r && r->opt && r->opt->timeout_s > 0 ? r->opt->timeout_s : 60.0;
    double t0 = ml_now_seconds();
    long sleep_ns = 0;
    for (unsigned spins = 0;; spins++) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        char loc[300];
        if (rc != MPI_SUCCESS) {
            /* E.g. ranks in different collectives (a divergence let through): the data is
             * wrong and peers may wait forever, so this ends the job as a timeout would. */
            char text[MPI_MAX_ERROR_STRING] = "";
            int n = 0;
            MPI_Error_string(rc, text, &n);
            where(r, loc, sizeof loc);
            fprintf(stderr, "%s: error: rank %d: %s failed in MPI: %s; ending every rank\n", loc,
                    r ? r->rank : -1, what, text);
            rt_mpi_abort(ML_EXIT_RUNTIME);
        }
        if (done)
            return;
        double waited = ml_now_seconds() - t0;
        if (waited > timeout) {
            where(r, loc, sizeof loc);
            fprintf(stderr,
                    "%s: error: rank %d: %s waited %.1f s for its peers (deadline %g s, "
                    "--timeout); ending every rank\n",
                    loc, r ? r->rank : -1, what, waited, timeout);
            rt_mpi_abort(ML_EXIT_RUNTIME);
        }
        if (spins < 200)
            continue;
        sleep_ns = sleep_ns < 200000 ? sleep_ns + 2000 : 200000;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
    }
}

int rt_mpi_allgather_blob(rt_rank *r, const void *mine, size_t len, void *all, char *err,
                          size_t elen) {
    if (len > (size_t)INT32_MAX) {
        snprintf(err, elen, "allgather of %zu bytes exceeds MPI's int count", len);
        return -1;
    }
    MPI_Request req;
    if (MPI_Iallgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, MPI_COMM_WORLD, &req) !=
        MPI_SUCCESS) {
        snprintf(err, elen, "MPI_Iallgather of %zu bytes failed", len);
        return -1;
    }
    rt_mpi_wait(r, &req, "an exchange with every rank (allgather)");
    return 0;
}

int rt_mpi_gatherv_blob(rt_rank *r, const void *mine, size_t len, int root, void **all,
                        size_t *lens, char *err, size_t elen) {
    int world = 0, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    *all = NULL;
    if (len > (size_t)INT32_MAX) {
        snprintf(err, elen, "gather of %zu bytes exceeds MPI's int count", len);
        return -1;
    }
    /* Sizes first, so the root can place every rank's blob. */
    int my_len = (int)len;
    int *counts = NULL, *displs = NULL;
    if (me == root) {
        counts = calloc((size_t)world, sizeof *counts);
        displs = calloc((size_t)world, sizeof *displs);
        if (!counts || !displs)
            abort();
    }
    MPI_Request req;
    MPI_Igather(&my_len, 1, MPI_INT, counts, 1, MPI_INT, root, MPI_COMM_WORLD, &req);
    rt_mpi_wait(r, &req, "gathering result sizes");
    size_t total = 0;
    if (me == root) {
        for (int k = 0; k < world; k++) {
            displs[k] = (int)total;
            lens[k] = (size_t)counts[k];
            total += (size_t)counts[k];
        }
        if (total > (size_t)INT32_MAX) {
            /* Every rank must still take part in the gather it is waiting in; refuse after. */
            snprintf(err, elen, "gathered results of %zu bytes exceed MPI's int count", total);
        }
        *all = malloc(total ? total : 1);
        if (!*all)
            abort();
    }
    MPI_Igatherv(mine, my_len, MPI_BYTE, *all, counts, displs, MPI_BYTE, root, MPI_COMM_WORLD,
                 &req);
    rt_mpi_wait(r, &req, "gathering results");
    free(counts);
    free(displs);
    if (me == root && total > (size_t)INT32_MAX) {
        free(*all);
        *all = NULL;
        return -1;
    }
    return 0;
}

void rt_mpi_library_version(char *buf, size_t len) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(v, &n);
    v[n < (int)sizeof v ? n : (int)sizeof v - 1] = '\0';
    char *nl = strpbrk(v, "\r\n,");
    if (nl)
        *nl = '\0';
    snprintf(buf, len, "%s", v);
}

#else /* no MPI at build time */

int rt_mpi_init(int world, int rank, char *err, size_t len) {
    snprintf(err, len, "memlife was built without Open MPI");
    return -1;
}
void rt_mpi_finalize(void) {}
bool rt_mpi_active(void) { return false; }
void rt_mpi_abort(int code) { exit(code); }
int rt_mpi_allgather_blob(rt_rank *r, const void *mine, size_t len, void *all, char *err,
                          size_t elen) {
    snprintf(err, elen, "memlife was built without Open MPI");
    return -1;
}
int rt_mpi_gatherv_blob(rt_rank *r, const void *mine, size_t len, int root, void **all,
                        size_t *lens, char *err, size_t elen) {
    snprintf(err, elen, "memlife was built without Open MPI");
    return -1;
}
void rt_mpi_library_version(char *buf, size_t len) { snprintf(buf, len, "%s", ""); }

#endif
