/* SPDX-License-Identifier: MIT */
/* watch.c — ranks end with the memlife that launched them (watch.h). */
#include "exec/watch.h"
#include "exec/launch.h"
#include "base/util.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WATCH_EVERY_S 0.05

static struct {
    int state;          /* 0 not read yet, 1 watching, -1 nothing to watch */
    pid_t pid;
    int pidfd;          /* -1: kill(pid, 0) and /proc */
    double next;        /* ml_now_seconds of the next check */
} w = {0, 0, -1, 0};

static void watch_init(void) {
    const char *v = getenv(RT_WATCH_ENV);
    char *end;
    long pid = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || pid <= 1 || !launch_is_child()) {
        w.state = -1;
        return;
    }
    w.pid = (pid_t)pid;
    w.state = 1;
#ifdef SYS_pidfd_open
    w.pidfd = (int)syscall(SYS_pidfd_open, w.pid, 0);
#endif
}

bool rt_watch_parent_gone(bool force) {
    if (w.state == 0)
        watch_init();
    if (w.state < 0)
        return false;
    double now = ml_now_seconds();
    if (!force && now < w.next)
        return false;
    w.next = now + WATCH_EVERY_S;
    if (w.pidfd >= 0) {
        struct pollfd p = {.fd = w.pidfd, .events = POLLIN};
        return poll(&p, 1, 0) > 0;   /* readable: the process has ended */
    }
    return launch_pid_ended(w.pid);   /* without a pidfd: kill and /proc */
}

void rt_watch_parent(void) {
    if (!rt_watch_parent_gone(false))
        return;
    int size, rank;
    launch_under_mpi(&size, &rank);
    fprintf(stderr, "error: rank %d: memlife (pid %d), which started this job, has ended; ending "
            "this rank\n", rank, (int)w.pid);
    const char *tmp = getenv("MEMLIFE_RESULT_TMP");
    if (tmp && *tmp)
        unlink(tmp);
    /* not a crash, and the directory goes with the last rank: memlife cannot remove it now */
    launch_rank_finished();
    const char *dir = getenv(LAUNCH_RANKS_ENV);
    if (dir && *dir)
        rmdir(dir);
    fflush(stdout);
    _exit(3);
}

void rt_watch_sleep(double s) {
    double until = ml_now_seconds() + s;
    for (;;) {
        rt_watch_parent();
        double left = until - ml_now_seconds();
        if (left <= 0)
            return;
        double slice = left < WATCH_EVERY_S ? left : WATCH_EVERY_S;
        struct timespec ts = {(time_t)slice, (long)((slice - (double)(time_t)slice) * 1e9)};
        nanosleep(&ts, NULL);
    }
}
