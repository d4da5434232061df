/* SPDX-License-Identifier: MIT */
/* mpi_util.h — what every MPI-based backend (host; cuda under mpirun) needs from MPI: start-up
 * checked against the launcher, waits with a deadline, blob exchanges, abort.
 *
 * Every wait on a peer here is a nonblocking MPI call completed by an MPI_Test loop against the
 * run's deadline (rt_options.timeout_s). A wait that expires cannot be recovered (the request is
 * still posted and a peer is gone or elsewhere), so it prints which rank waited, for what, at
 * which step and for how long, and ends the whole job with MPI_Abort(MPI_COMM_WORLD, 3): all
 * ranks end, none hangs. Without Open MPI at build time the functions exist and fail cleanly. */
#ifndef MEMLIFE_MPI_UTIL_H
#define MEMLIFE_MPI_UTIL_H

#include "exec/rt.h"

/* MPI_Init, then checks that the launcher started `world` ranks and this one is `rank`.
 * timeout_s (the run's --timeout; <= 0: 60 s) bounds the waits that have no rank to take it from
 * (r == NULL below). Returns 0 or -1 with err. Idempotent; rt_mpi_finalize ends MPI once. */
int rt_mpi_init(int world, int rank, double timeout_s, char *err, size_t len);
void rt_mpi_finalize(void);
bool rt_mpi_active(void);

/* The rt_backend_ops entries allgather_blob, gatherv_blob and abort, over MPI_COMM_WORLD. */
int rt_mpi_allgather_blob(rt_rank *r, const void *mine, size_t len, void *all, char *err,
                          size_t elen);
int rt_mpi_gatherv_blob(rt_rank *r, const void *mine, size_t len, int root, void **all,
                        size_t *lens, char *err, size_t elen);
/* MPI_Abort(code), after starting RT_ABORT_GRACE_S for it: a rank whose abort does not end it
 * by then (mpirun unreachable across a network partition) ends itself with _exit(code). */
#define RT_ABORT_GRACE_S 5.0
void rt_mpi_abort(int code);

/* Gathers every rank's measurement record (ir/measure.h) to root in its one wire format:
 * ml_measure_encode of mine (r->plan names the ops), rt_gather_blobs, ml_measure_decode on root
 * into out[r->world] (each checked to be from the rank it came from). Other ranks get nothing.
 * Bounded by the run's deadline as the gather is. Returns 0, or -1 with err (out then freed). */
int rt_gather_measures(rt_rank *r, const ml_measure *mine, int root, ml_measure *out, char *err,
                       size_t elen);

/* From a signal handler (async-signal-safe): when this process is inside a wait on its peers,
 * writes "FILE:L:C: note: rank R had waited S s at OP (L:C), op K, for ranks [..] (WHAT) when the
 * job was ended; live requested bytes X" to fd; else nothing. For ranks that the launcher ends
 * because a peer crashed: they say where they stood. */
void rt_mpi_wait_report(int fd);

/* "Open MPI v4.1.4, ..." first line of MPI_Get_library_version, or "" without MPI. */
void rt_mpi_library_version(char *buf, size_t len);

#ifdef MEMLIFE_HAVE_MPI
#include <mpi.h>
/* Completes req by polling MPI_Test until the deadline r->opt->timeout_s; on expiry prints
 * "FILE:L:C: error: rank R waited S s at OP (L:C), op K, for its peers (WHAT; deadline T s,
 * --timeout); live requested bytes X; ending every rank" and aborts the job with exit 3 (an
 * exchange, rt_mpi_allgather_blob, names the ranks that never sent: "for ranks [1]"). Returns only
 * when the request completed. */
void rt_mpi_wait(rt_rank *r, MPI_Request *req, const char *what);
/* The same deadline for a blocking MPI call, for calls where the nonblocking form costs more
 * (Open MPI's MPI_Iallreduce copies an in-place buffer into a temporary of its full size; the
 * blocking one does not): rt_mpi_call_begin before the call, rt_mpi_call_end with its return
 * code after.  A watchdog thread ends the job at the deadline with rt_mpi_wait's message
 * ("for its peers"); a failed call (rc) ends it with the message of a failed wait.  One call at
 * a time per process. */
void rt_mpi_call_begin(const rt_rank *r, const char *what);
void rt_mpi_call_end(const rt_rank *r, int rc, const char *what);
#endif

#endif
