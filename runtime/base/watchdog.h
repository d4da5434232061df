/* SPDX-License-Identifier: MIT */
/* watchdog.h — a deadline for a blocking call that has none of its own.
 *
 * ncclCommInitRank waits for every rank of the communicator to join and has no timeout: a peer
 * that died between the unique-id broadcast (a bounded MPI wait) and its own init leaves every
 * other rank inside NCCL for good. NCCL's non-blocking init would give a way out, but it makes
 * every later NCCL call of the communicator asynchronous too; memlife only needs the wait not to
 * be endless. So the call is bracketed: rt_watchdog_arm starts a thread that, unless
 * rt_watchdog_disarm comes first, writes
 *   "error: rank R: WHAT did not return within S s (--timeout); ending the job"
 * to stderr after `seconds` and calls `expire(3)` (MPI_Abort under mpirun: every rank ends), or
 * _exit(3) without one. One watchdog at a time per process. */
#ifndef MEMLIFE_WATCHDOG_H
#define MEMLIFE_WATCHDOG_H

/* Starts the deadline. what: a static or long-lived string naming the wait. Returns 0, or -1
 * when the thread cannot be started (then nothing watches: the caller goes on unguarded). */
int rt_watchdog_arm(double seconds, int rank, const char *what, void (*expire)(int code));
/* The call returned in time: stops the thread and waits for it. A no-op when not armed. */
void rt_watchdog_disarm(void);

/* An exit that does not wait on anyone: a thread that, `seconds` from now, writes
 *   "error: rank R: WHAT had not ended this rank S s after it began; exiting"
 * to stderr and calls _exit(code). For MPI_Abort, which asks mpirun to end the job and waits for
 * it: across a network partition it never reaches mpirun, and the rank would stay alive after
 * its deadline. Without a thread it falls back to alarm(2), whose default action ends the rank
 * (exit status: SIGALRM, not code).
 * Called from the main line or a thread (it starts one), not from a signal handler. */
void rt_exit_after(double seconds, int rank, const char *what, int code);

#endif
