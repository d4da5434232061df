/* SPDX-License-Identifier: MIT */
/* watchdog.c — a deadline for a blocking call that has none (watchdog.h). */
#include "base/watchdog.h"


#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t done;
    bool armed, disarmed;
    struct timespec deadline;    /* CLOCK_MONOTONIC */
    double seconds;
    int rank;
    const char *what;
    void (*expire)(int code);
} wd = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *watch(void *arg) {
    (void)arg;
    pthread_mutex_lock(&wd.lock);
    int e = 0;
    while (!wd.disarmed && e != ETIMEDOUT)
        e = pthread_cond_timedwait(&wd.done, &wd.lock, &wd.deadline);
    bool expired = !wd.disarmed;
    pthread_mutex_unlock(&wd.lock);
    if (!expired)
        return NULL;
    char line[512];
    int n = snprintf(line, sizeof line, "error: rank %d: %s did not return within %g s "
                     "(--timeout); ending the job\n", wd.rank, wd.what, wd.seconds);
    if (n > 0)
        (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    if (wd.expire)
        wd.expire(3);
    _exit(3);
}

int rt_watchdog_arm(double seconds, int rank, const char *what, void (*expire)(int code)) {
    if (wd.armed)
        return -1;
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -1;
    /* The monotonic clock: a wall-clock step (NTP) must not fire or stall the deadline. */
    int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
                     pthread_cond_init(&wd.done, &attr) == 0 ? 0 : -1;
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &wd.deadline);
    double whole = (double)(long)seconds;
    wd.deadline.tv_sec += (time_t)whole;
    wd.deadline.tv_nsec += (long)((seconds - whole) * 1e9);
    if (wd.deadline.tv_nsec >= 1000000000L) {
        wd.deadline.tv_sec++;
        wd.deadline.tv_nsec -= 1000000000L;
    }
    wd.seconds = seconds;
    wd.rank = rank;
    wd.what = what;
    wd.expire = expire;
    wd.disarmed = false;
    if (pthread_create(&wd.thread, NULL, watch, NULL) != 0) {
        pthread_cond_destroy(&wd.done);
        return -1;
    }
    wd.armed = true;
    return 0;
}

void rt_watchdog_disarm(void) {
    if (!wd.armed)
        return;
    pthread_mutex_lock(&wd.lock);
    wd.disarmed = true;
    pthread_cond_signal(&wd.done);
    pthread_mutex_unlock(&wd.lock);
    pthread_join(wd.thread, NULL);
    pthread_cond_destroy(&wd.done);
    wd.armed = false;
}

/* ---- An exit that does not wait ---------------------------------------------------------------- */

static struct {
    double seconds;
    int rank, code;
    const char *what;
} ex;

static void *exit_later(void *arg) {
    (void)arg;
    struct timespec ts = {(time_t)ex.seconds,
                          (long)((ex.seconds - (double)(time_t)ex.seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    char line[512];
    int n = snprintf(line, sizeof line, "error: rank %d: %s had not ended this rank %g s after it "
                     "began; exiting\n", ex.rank, ex.what, ex.seconds);
    if (n > 0)
        (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    _exit(ex.code);
}

void rt_exit_after(double seconds, int rank, const char *what, int code) {
    static bool started;
    if (started)
        return;   /* the first exit's clock stands */
    started = true;
    ex.seconds = seconds;
    ex.rank = rank;
    ex.code = code;
    ex.what = what;
    pthread_t t;
    if (pthread_create(&t, NULL, exit_later, NULL) == 0) {
        pthread_detach(t);
        return;
    }
    alarm((unsigned)seconds + 1);   /* SIGALRM's default action ends the process */
}
