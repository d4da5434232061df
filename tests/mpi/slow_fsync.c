/* SPDX-License-Identifier: MIT */
/* slow_fsync.c — an LD_PRELOAD shim for tests/mpi/kill.sh: fsync(2) first writes this process's
 * pid to the file SLOW_FSYNC_NOTE names, then sleeps SLOW_FSYNC_S seconds, so that a test can
 * signal a process in the middle of an atomic write (base/util.h ml_write_file_atomic), whose
 * temp file exists from before the fsync until the rename after it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int fsync(int fd) {
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    const char *note = getenv("SLOW_FSYNC_NOTE"), *secs = getenv("SLOW_FSYNC_S");
    if (note && *note) {
        int out = open(note, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out >= 0) {
            char pid[32];
            int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
            if (write(out, pid, (size_t)n) != n)
                n = 0;
            close(out);
        }
    }
    if (secs && *secs)
        sleep((unsigned)atoi(secs));
    return real(fd);
}
