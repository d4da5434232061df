/* SPDX-License-Identifier: MIT */
/* launch.c — self-exec under mpirun (launch.h). */
#include "exec/launch.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static bool env_int(const char *name, int *out) {
    const char *v = getenv(name);
    if (!v || !*v)
        return false;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > INT_MAX)
        return false;
    *out = (int)x;
    return true;
}

bool launch_under_mpi(int *size, int *rank) {
    *size = 0;
    *rank = 0;
    if (env_int("OMPI_COMM_WORLD_SIZE", size)) {
        env_int("OMPI_COMM_WORLD_RANK", rank);
        return true;
    }
    if (env_int("PMI_SIZE", size)) {
        env_int("PMI_RANK", rank);
        return true;
    }
    if (env_int("PMIX_RANK", rank)) {
        env_int("SLURM_NTASKS", size);
        return true;
    }
    return false;
}

bool launch_is_child(void) { return getenv("MEMLIFE_LAUNCHED") != NULL; }

int launch_find_mpirun(char *buf, size_t len) {
    const char *forced = getenv("MEMLIFE_MPIRUN");
    if (forced && *forced) {
        snprintf(buf, len, "%s", forced);
        return access(buf, X_OK) == 0 ? 0 : -1;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        if (n && (size_t)snprintf(buf, len, "%.*s/mpirun", (int)n, path) < len &&
            access(buf, X_OK) == 0)
            return 0;
        path += n + (colon ? 1 : 0);
    }
    return -1;
}

static volatile pid_t launched;
static volatile sig_atomic_t forwarded_signal;

/* A signal from the terminal (SI_KERNEL) reached mpirun too, in the same process group; passing it
 * on again would be a second Ctrl-C, which makes mpirun kill its ranks without cleaning up. */
static void forward(int sig, siginfo_t *info, void *ctx) {
    forwarded_signal = sig;
    if (launched > 0 && (!info || info->si_code != SI_KERNEL))
        kill(launched, sig);
}

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void child_exec(const char *mpirun, char **args, int report_fd) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (size_t k = 0; k < sizeof forwarded_signals / sizeof *forwarded_signals; k++)
        sigaction(forwarded_signals[k], &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execv(mpirun, args);
    int e = errno;
    ssize_t ignored = write(report_fd, &e, sizeof e);
    (void)ignored;
    _exit(127);
}

int launch_self(int ranks, int argc, char **argv, int *wstatus, int *forwarded, char *err,
                size_t len) {
    char mpirun[PATH_MAX], exe[PATH_MAX], np[16];
    *wstatus = 0;
    *forwarded = 0;
    if (launch_find_mpirun(mpirun, sizeof mpirun) != 0) {
        snprintf(err, len, "no mpirun on PATH: install openmpi-bin (apt-get install openmpi-bin "
                           "libopenmpi-dev), or start memlife under your MPI launcher");
        return -1;
    }
    /* The binary itself, not "/proc/self/exe": mpirun would resolve that to mpirun. */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(err, len, "cannot find this program's path: %s", strerror(errno));
        return -1;
    }
    exe[n] = '\0';
    snprintf(np, sizeof np, "%d", ranks);
    char **args = ml_xcalloc((size_t)argc + 8, sizeof *args);
    int k = 0;
    args[k++] = mpirun;
    if (geteuid() == 0)
        args[k++] = "--allow-run-as-root";
    args[k++] = "-q";                /* the ranks print their own errors; mpirun's banners repeat them */
    args[k++] = "--oversubscribe";
    args[k++] = "-np";
    args[k++] = np;
    args[k++] = exe;
    for (int i = 0; i < argc; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    setenv("MEMLIFE_LAUNCHED", "1", 1);
    fflush(stdout);
    fflush(stderr);
    /* exec failure comes back through a close-on-exec pipe: nothing read means mpirun started. */
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        snprintf(err, len, "cannot start %s: pipe: %s", mpirun, strerror(errno));
        free(args);
        return -1;
    }
    /* Signals wait until the handler knows the child, so none is lost or left unforwarded. */
    sigset_t block, old;
    sigemptyset(&block);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    for (size_t s = 0; s < sizeof forwarded_signals / sizeof *forwarded_signals; s++) {
        sigaddset(&block, forwarded_signals[s]);
        sigaction(forwarded_signals[s], &sa, NULL);
    }
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        child_exec(mpirun, args, pipefd[1]);
    }
    int rc = 0;
    if (pid < 0) {
        snprintf(err, len, "cannot start %s: fork: %s", mpirun, strerror(errno));
        rc = -1;
    } else {
        launched = pid;
        close(pipefd[1]);
        pipefd[1] = -1;
        int child_errno = 0;
        ssize_t got;
        do
            got = read(pipefd[0], &child_errno, sizeof child_errno);
        while (got < 0 && errno == EINTR);
        sigprocmask(SIG_SETMASK, &old, NULL);
        while (waitpid(pid, wstatus, 0) < 0 && errno == EINTR) {
        }
        launched = 0;
        *forwarded = forwarded_signal;
        if (got == (ssize_t)sizeof child_errno) {
            snprintf(err, len, "cannot start %s: %s", mpirun, strerror(child_errno));
            rc = -1;
        }
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    free(args);
    return rc;
}

int launch_exit_code(int wstatus, char *what, size_t len) {
    what[0] = '\0';
    if (WIFEXITED(wstatus)) {
        int code = WEXITSTATUS(wstatus);
        if (code <= 3)
            return code;
        if (code > 128 && code < 128 + NSIG)
            snprintf(what, len,
                     "a rank was ended by signal %d (%s); mpirun ended the other ranks (mpirun "
                     "exit %d)",
                     code - 128, strsignal(code - 128), code);
        else
            snprintf(what, len, "a rank, or mpirun itself, failed with exit %d; mpirun ended the "
                     "job", code);
    } else if (WIFSIGNALED(wstatus)) {
        snprintf(what, len, "mpirun was ended by signal %d (%s)", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)));
    } else {
        snprintf(what, len, "mpirun ended with wait status %d", wstatus);
    }
    return 3;
}
