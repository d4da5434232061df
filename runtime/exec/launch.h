/* SPDX-License-Identifier: MIT */
/* launch.h — one command for the user: `memlife run ... --ranks N` starts mpirun itself.
 *
 * Without an MPI launcher in the environment, memlife runs, and waits for,
 *   mpirun [--allow-run-as-root] -q --oversubscribe -np N <this binary> run <the same arguments>
 * so each rank is memlife again, now under mpirun. memlife stays the parent so that its exit code
 * stays memlife's (and the job's lifetime is bounded by memlife's: launch_self): a rank that crashed makes mpirun end the job with its own status (137 for
 * SIGKILL), which memlife reports and turns into 3. Under a launcher the world size is the
 * launcher's. --allow-run-as-root is passed only when running as root (Open MPI refuses root
 * otherwise); --oversubscribe lets N exceed the cores (the tests run 8 ranks on 2 cores). */
#ifndef MEMLIFE_LAUNCH_H
#define MEMLIFE_LAUNCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* True when this process was started by an MPI launcher; size and rank from its environment
 * (Open MPI's OMPI_COMM_WORLD_SIZE/RANK, PMI_SIZE/PMI_RANK of Hydra, Slurm's PMIX_RANK with
 * SLURM_NTASKS). *size is 0 when the launcher does not say. */
bool launch_under_mpi(int *size, int *rank);

/* Finds the launcher: $MEMLIFE_MPIRUN, else `mpirun` on PATH. Returns 0 with the path in buf, or
 * -1 when there is none. */
int launch_find_mpirun(char *buf, size_t len);

/* Runs mpirun on `argv` (argv[0] is the memlife command word, e.g. "run") on `ranks` ranks and
 * waits for it. Sets MEMLIFE_LAUNCHED=1 for the children so a launcher that hides its environment
 * cannot make memlife start mpirun again.
 *
 * The job never outlives memlife, and is over when this returns:
 * - mpirun runs in a process group of its own; SIGINT, SIGTERM and SIGHUP sent to memlife go on
 *   to mpirun (which ends its ranks), and a group that has not ended 5 s after is SIGKILLed;
 * - memlife killed outright: mpirun gets SIGTERM from the kernel (PR_SET_PDEATHSIG), and every
 *   rank, which watches memlife's pid (MEMLIFE_PARENT_PID, exec/watch.h), exits;
 * - mpirun killed outright: its ranks come to memlife (PR_SET_CHILD_SUBREAPER), which ends them
 *   (SIGTERM, SIGKILL after 2 s) and reaps each one before returning;
 * - a rank's MPI_Abort (launch_notify_abort): mpirun that has not ended the job
 *   LAUNCH_ABORT_GRACE_S after it is SIGKILLed with its group, and the ranks as above; -1 with
 *   err saying so (under load mpirun took unbounded time after an abort);
 * - a rank that ends before MPI_Finalize without MPI_Abort (SIGSEGV, SIGKILL, an exit on an
 *   error path): the same deadline from when memlife sees it gone (launch_rank_started), the
 *   same end of the job, and err naming the rank.
 * Returns 0 with *wstatus (waitpid's) and *forwarded (the first signal passed on, 0 when none),
 * or -1 with err when mpirun could not start ("no mpirun on PATH: install openmpi-bin, or run
 * under your MPI launcher") or processes of the job could not be ended within 10 s. */
int launch_self(int ranks, int argc, char **argv, int *wstatus, int *forwarded, char *err,
                size_t len);

/* The first signal launch_self has passed on since it started (0: none), and a way to hold them
 * off while memlife renames the result into place, so that a run never ends by a signal with a
 * complete result on disk. */
int launch_forwarded_signal(void);

/* In a rank of launch_self's job about to call MPI_Abort: tells the launching memlife (its pid
 * is MEMLIFE_PARENT_PID) with LAUNCH_ABORT_SIGNAL, which starts its deadline on mpirun. A no-op
 * in any other process. */
#define LAUNCH_ABORT_SIGNAL SIGUSR1
#define LAUNCH_ABORT_GRACE_S 10
void launch_notify_abort(void);

/* A rank of launch_self's job that ends without saying so (a crash: no MPI_Abort, no notice)
 * starts the deadline too. Every rank registers once MPI_Init has succeeded: a file named by its
 * pid, holding its rank, in the directory LAUNCH_RANKS_ENV names (launch_self makes it and
 * removes it); it removes the file after MPI_Finalize (launch_rank_finished). memlife looks every
 * 100 ms: a registered pid that has ended (gone, or a zombie mpirun has not reaped) ended before
 * MPI_Finalize. A pid reused within those 100 ms would be missed: the deadline is a backstop,
 * mpirun itself still ends the job in the usual case. No-ops in any other process. */
#define LAUNCH_RANKS_ENV "MEMLIFE_RANKS_DIR"
/* The file in LAUNCH_RANKS_ENV's directory holding rank 0's stdout until the job ends. */
#define LAUNCH_STDOUT_FILE "stdout"
void launch_rank_started(int rank);
void launch_rank_finished(void);

/* True when process pid has ended: kill says it is gone, or /proc says it is a zombie (dead,
 * not reaped yet by its parent) or cannot be read. */
bool launch_pid_ended(pid_t pid);
void launch_block_signals(bool block);

/* memlife's exit code for a run whose mpirun ended with wstatus: mpirun's exit status when it is
 * one of memlife's (0..3: the ranks' own verdict, MPI_Abort's 3); else 3, and what happened in
 * what ("a rank was ended by signal 9 (Killed); mpirun ended the other ranks (mpirun exit 137)"),
 * "" otherwise. Open MPI's mpirun exits 128 + N when a rank dies of signal N. */
int launch_exit_code(int wstatus, char *what, size_t len);

/* True when this process is a child of launch_self (MEMLIFE_LAUNCHED set). */
bool launch_is_child(void);

#endif
