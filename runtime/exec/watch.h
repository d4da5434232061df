/* SPDX-License-Identifier: MIT */
/* watch.h — a rank of memlife's own mpirun ends when memlife does.
 *
 * mpirun is the ranks' parent, so PR_SET_PDEATHSIG in a rank would watch mpirun, not memlife:
 * when memlife is killed (SIGKILL, a CI timeout) the job would run on and write its result. So
 * launch_self puts its own pid in MEMLIFE_PARENT_PID, and every rank checks that this process is
 * still there from the loops where it spends its time: the op loop (rt_rank_advance), every wait
 * on its peers (mpi_util.c, cuda_wait.c), the injected delays. A pidfd (Linux 5.3) tells a dead
 * memlife from a live one even while it is a zombie nobody has reaped; without pidfd_open,
 * kill(pid, 0) plus /proc/PID/stat's state. The check is rate-limited (one syscall per 50 ms),
 * so the op loop can call it every op. When memlife is gone the rank says so on stderr, removes
 * the result's temp file (MEMLIFE_RESULT_TMP, which only memlife would have renamed into place)
 * and exits 3 at once: its peers do the same within the same 50 ms, and mpirun sees them end. */
#ifndef MEMLIFE_WATCH_H
#define MEMLIFE_WATCH_H

#include <stdbool.h>

#define RT_WATCH_ENV "MEMLIFE_PARENT_PID"

/* True when this process watches a launching memlife and that memlife has ended. Rate-limited
 * unless force. */
bool rt_watch_parent_gone(bool force);

/* Ends this rank (exit 3, after the message) when the launching memlife has ended. */
void rt_watch_parent(void);

/* Sleeps s seconds in slices, calling rt_watch_parent between them. */
void rt_watch_sleep(double s);

#endif
