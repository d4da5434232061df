/* SPDX-License-Identifier: MIT */
/* test_watchdog.c — the deadline around a blocking call that has none (runtime/watchdog.c):
 * it ends the process with exit 3 and one line naming the rank, the wait and the deadline; it
 * calls the expire hook first (MPI_Abort in the cuda backend); disarmed in time it does nothing.
 * Each case runs in a child process, since expiring ends the process. The deadlines are 0.2 s
 * and the child would otherwise sleep 20 s: a wrong watchdog fails by exit status, not by a
 * tight timing bound (the parent allows the child 10 s). */
#include "testutil.h"
#include "base/watchdog.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int status;          /* waitpid status; -1 when the child did not end within 10 s */
    char err[512];       /* what the child wrote to stderr */
} child_result;

static void hook(int code) {
    char line[32];
    int n = snprintf(line, sizeof line, "hook %d\n", code);
    (void)!write(STDERR_FILENO, line, (size_t)n);
    _exit(40 + code);
}

static child_result run_child(void (*body)(void)) {
    child_result res = {.status = -1};
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        body();
        _exit(0);
    }
    close(fds[1]);
    for (int waited = 0; waited < 1000; waited++) {   /* up to 10 s */
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            res.status = st;
            break;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (res.status == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    ssize_t n = read(fds[0], res.err, sizeof res.err - 1);
    res.err[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    return res;
}

static void expires_body(void) {
    if (rt_watchdog_arm(0.2, 5, "ncclCommInitRank of a test", NULL) != 0)
        _exit(9);
    sleep(20);
}

static void test_expires_with_exit_3_and_a_line(void **state) {
    (void)state;
    child_result r = run_child(expires_body);
    assert_true(r.status != -1 && WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 3);
    assert_string_equal(r.err, "error: rank 5: ncclCommInitRank of a test did not return within "
                               "0.2 s (--timeout); ending the job\n");
}

static void hook_body(void) {
    if (rt_watchdog_arm(0.2, 1, "a wait", hook) != 0)
        _exit(9);
    sleep(20);
}

/* The hook gets code 3 and ends the process itself (43 here), after the line. */
static void test_expire_calls_the_hook(void **state) {
    (void)state;
    child_result r = run_child(hook_body);
    assert_true(r.status != -1 && WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 43);
    assert_non_null(strstr(r.err, "error: rank 1: a wait did not return within 0.2 s"));
    assert_non_null(strstr(r.err, "\nhook 3\n"));
}

static void disarm_body(void) {
    if (rt_watchdog_arm(0.2, 0, "a wait", NULL) != 0)
        _exit(9);
    if (rt_watchdog_arm(0.2, 0, "a second one", NULL) != -1)   /* one at a time */
        _exit(10);
    rt_watchdog_disarm();
    if (rt_watchdog_arm(0.2, 0, "armed again", NULL) != 0)
        _exit(11);
    rt_watchdog_disarm();
    rt_watchdog_disarm();                                       /* not armed: a no-op */
    struct timespec ts = {0, 500 * 1000 * 1000};                /* past both deadlines */
    nanosleep(&ts, NULL);
}

static void test_disarmed_in_time_does_nothing(void **state) {
    (void)state;
    child_result r = run_child(disarm_body);
    assert_true(r.status != -1 && WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 0);
    assert_string_equal(r.err, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expires_with_exit_3_and_a_line),
        cmocka_unit_test(test_expire_calls_the_hook),
        cmocka_unit_test(test_disarmed_in_time_does_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
