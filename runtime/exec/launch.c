/* SPDX-License-Identifier: MIT */
/* launch.c — self-exec under mpirun (launch.h). */
#include "exec/launch.h"
#include "base/human.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
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

#define LAUNCH_SIGNAL_GRACE_S 5

static volatile pid_t launched;
static volatile sig_atomic_t forwarded_signal;

/* mpirun is in a process group of its own (so that a signal memlife did not get cannot reach
 * it, and so that memlife can end all of it), hence a terminal's Ctrl-C reaches only memlife:
 * every signal is passed on, once. */
static void forward(int sig, siginfo_t *info, void *ctx) {
    if (!forwarded_signal)
        forwarded_signal = sig;
    if (launched > 0)
        kill(launched, sig);
}

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};

/* A rank about to call MPI_Abort sends LAUNCH_ABORT_SIGNAL to memlife (launch_notify_abort):
 * mpirun is to end the job now. Under load mpirun took unbounded time to, and memlife
 * waited on it without a deadline; from the notice on it has LAUNCH_ABORT_GRACE_S. */
static volatile sig_atomic_t abort_notified;
static void on_abort_notice(int sig) { abort_notified = 1; }

static void child_exec(const char *mpirun, char **args, int report_fd, pid_t parent) {
    setpgid(0, 0);
    /* memlife killed outright (SIGKILL) cannot end mpirun itself: the kernel does, with the
     * SIGTERM by which mpirun ends its ranks. Set before the check that the parent still lives,
     * so that no death is missed in between. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(128 + SIGTERM);
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

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Children of this process other than mpirun: ranks that mpirun left behind when it died, which
 * the kernel hands to memlife (PR_SET_CHILD_SUBREAPER). Sends sig to each; returns how many. */
static int signal_orphans(int sig) {
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    pid_t me = getpid();
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = '\0';
        const char *paren = strrchr(buf, ')');
        int ppid = 0;
        char state = 0;
        if (!paren || sscanf(paren + 1, " %c %d", &state, &ppid) != 2 || ppid != me)
            continue;
        if (state != 'Z')
            kill((pid_t)pid, sig);
        n++;
    }
    closedir(d);
    return n;
}

bool launch_pid_ended(pid_t pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return true;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren && (paren[1] == '\0' || paren[2] == 'Z' || paren[2] == 'X');
}

/* ---- Ranks that end without a word (launch_rank_started) -------------------------------------- */

static char ranks_dir[PATH_MAX];   /* launcher: the directory; "" without one */

/* Makes the directory the ranks register in and names it in LAUNCH_RANKS_ENV. Without one (no
 * writable TMPDIR) a crashed rank has no deadline beyond mpirun's own; the run still works. */
static void ranks_dir_make(void) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    ranks_dir[0] = '\0';
    if ((size_t)snprintf(ranks_dir, sizeof ranks_dir, "%s/memlife-ranks-XXXXXX", tmp) >=
            sizeof ranks_dir || !mkdtemp(ranks_dir)) {
        ranks_dir[0] = '\0';
        unsetenv(LAUNCH_RANKS_ENV);
        return;
    }
    setenv(LAUNCH_RANKS_ENV, ranks_dir, 1);
}

/* Copies what rank 0 wrote to its stdout file (launch_rank_started) to this process's stdout.
 * Nothing when there is no file (no directory, or rank 0 never started). */
static void copy_rank_stdout(void) {
    char path[PATH_MAX];
    if (!ranks_dir[0] ||
        (size_t)snprintf(path, sizeof path, "%s/%s", ranks_dir, LAUNCH_STDOUT_FILE) >= sizeof path)
        return;
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        if (fwrite(buf, 1, got, stdout) != got)
            break;
    fclose(f);
    fflush(stdout);
}

/* Removes the directory and what crashed ranks left in it. */
static void ranks_dir_remove(void) {
    if (!ranks_dir[0])
        return;
    DIR *d = opendir(ranks_dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.')
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(ranks_dir);
    ranks_dir[0] = '\0';
}

/* The first registered rank that has ended without removing its file: true with its rank and
 * pid (its file is removed, so it is reported once). */
static bool rank_ended_unannounced(int *rank, int *pid) {
    DIR *d = ranks_dir[0] ? opendir(ranks_dir) : NULL;
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        char *end;
        long p = strtol(e->d_name, &end, 10);
        if (*end || p <= 1 || p > INT_MAX || !launch_pid_ended((pid_t)p))
            continue;
        char buf[16] = "";
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t got = read(fd, buf, sizeof buf - 1);
            buf[got > 0 ? got : 0] = '\0';
            close(fd);
        }
        /* Gone, and the file is still there: a rank that removed it between the readdir and
         * the check had finished; openat fails then. */
        if (fd < 0)
            continue;
        *rank = (int)strtol(buf, NULL, 10);
        *pid = (int)p;
        unlinkat(dirfd(d), e->d_name, 0);
        found = true;
    }
    closedir(d);
    return found;
}

static char rank_file[PATH_MAX];   /* rank: its registration; "" when none */

void launch_rank_started(int rank) {
    const char *dir = getenv(LAUNCH_RANKS_ENV);
    if (!launch_is_child() || !dir || !*dir || rank_file[0])
        return;
    if ((size_t)snprintf(rank_file, sizeof rank_file, "%s/%d", dir, (int)getpid()) >=
        sizeof rank_file) {
        rank_file[0] = '\0';
        return;
    }
    int fd = open(rank_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        rank_file[0] = '\0';
        return;
    }
    char buf[16];
    int n = snprintf(buf, sizeof buf, "%d", rank);
    ssize_t ignored = write(fd, buf, (size_t)n);
    (void)ignored;
    close(fd);
    /* Rank 0's reports go to a file the launcher copies to its own stdout after the job: through
     * mpirun's forwarding a failed write (a full disk, /dev/full) would be dropped and memlife
     * would exit 0 without its output. */
    char out[PATH_MAX];
    if (rank == 0 && (size_t)snprintf(out, sizeof out, "%s/%s", dir, LAUNCH_STDOUT_FILE) <
                         sizeof out) {
        fflush(stdout);
        int ofd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (ofd >= 0) {
            dup2(ofd, STDOUT_FILENO);
            close(ofd);
        }
    }
}

void launch_rank_finished(void) {
    if (!rank_file[0])
        return;
    unlink(rank_file);
    rank_file[0] = '\0';
}

/* After mpirun has been reaped: ends what is left of the job and reaps it. mpirun's own group
 * first (its helpers), then the orphaned ranks: SIGTERM (a rank says where it waited), SIGKILL
 * after 2 s. Returns the number of processes still there after LAUNCH_REAP_S (0: all ended). */
#define LAUNCH_REAP_S 10
static int end_job(pid_t group) {
    kill(-group, SIGKILL);
    double t0 = ml_now_seconds();
    bool killed = false;
    for (;;) {
        int status;
        while (waitpid(-1, &status, WNOHANG) > 0) {
        }
        int left = signal_orphans(killed ? SIGKILL : SIGTERM);
        if (left == 0)
            return 0;
        double waited = ml_now_seconds() - t0;
        if (waited > LAUNCH_REAP_S)
            return left;
        killed = waited > 2;
        sleep_ms(20);
    }
}

int launch_self(int ranks, int argc, char **argv, int *wstatus, int *forwarded, char *err,
                size_t len) {
    char mpirun[PATH_MAX], exe[PATH_MAX], np[16], me[16];
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
    ml_term_export();   /* the ranks' stdout is mpirun's pseudo-terminal, not this terminal */
    /* The ranks watch this process (exec/watch.h); orphans of a dead mpirun come to it. */
    pid_t parent = getpid();
    snprintf(me, sizeof me, "%d", (int)parent);
    setenv("MEMLIFE_PARENT_PID", me, 1);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    fflush(stdout);
    fflush(stderr);
    /* exec failure comes back through a close-on-exec pipe: nothing read means mpirun started. */
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        snprintf(err, len, "cannot start %s: pipe: %s", mpirun, strerror(errno));
        free(args);
        return -1;
    }
    ranks_dir_make();
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
    struct sigaction notice;
    memset(&notice, 0, sizeof notice);
    notice.sa_handler = on_abort_notice;
    notice.sa_flags = SA_RESTART;
    sigaddset(&block, LAUNCH_ABORT_SIGNAL);
    sigaction(LAUNCH_ABORT_SIGNAL, &notice, NULL);
    forwarded_signal = 0;
    abort_notified = 0;
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        child_exec(mpirun, args, pipefd[1], parent);
    }
    int rc = 0;
    if (pid < 0) {
        snprintf(err, len, "cannot start %s: fork: %s", mpirun, strerror(errno));
        rc = -1;
    } else {
        setpgid(pid, pid);   /* also here: whichever of parent and child runs first */
        launched = pid;
        close(pipefd[1]);
        pipefd[1] = -1;
        int child_errno = 0;
        ssize_t got;
        do
            got = read(pipefd[0], &child_errno, sizeof child_errno);
        while (got < 0 && errno == EINTR);
        sigprocmask(SIG_SETMASK, &old, NULL);
        /* mpirun ends its ranks on a forwarded signal, and the job after a rank's MPI_Abort; one
         * that has not within LAUNCH_SIGNAL_GRACE_S / LAUNCH_ABORT_GRACE_S is ended with its
         * group (end_job then ends and reaps the ranks outside it). */
        double signalled_at = 0, aborted_at = 0, crashed_at = 0, looked_at = 0;
        bool abort_killed = false, crash_killed = false;
        int crashed_rank = -1, crashed_pid = 0;
        for (;;) {
            pid_t w = waitpid(pid, wstatus, WNOHANG);
            if (w == pid || (w < 0 && errno != EINTR))
                break;
            double now = ml_now_seconds();
            if (forwarded_signal && signalled_at == 0)
                signalled_at = now;
            if (abort_notified && aborted_at == 0)
                aborted_at = now;
            if (crashed_at == 0 && now - looked_at >= 0.1) {   /* a directory scan: not every 10 ms */
                looked_at = now;
                if (rank_ended_unannounced(&crashed_rank, &crashed_pid))
                    crashed_at = now;
            }
            if (signalled_at > 0 && now - signalled_at > LAUNCH_SIGNAL_GRACE_S)
                kill(-pid, SIGKILL);
            if (!signalled_at && !abort_killed && !crash_killed) {
                if (aborted_at > 0 && now - aborted_at > LAUNCH_ABORT_GRACE_S) {
                    kill(-pid, SIGKILL);
                    abort_killed = true;
                } else if (crashed_at > 0 && now - crashed_at > LAUNCH_ABORT_GRACE_S) {
                    kill(-pid, SIGKILL);
                    crash_killed = true;
                }
            }
            sleep_ms(10);
        }
        launched = 0;
        int left = end_job(pid);
        *forwarded = forwarded_signal;
        if (got == (ssize_t)sizeof child_errno) {
            snprintf(err, len, "cannot start %s: %s", mpirun, strerror(child_errno));
            rc = -1;
        } else if (left) {
            snprintf(err, len, "%d process%s of the job still running %d s after mpirun ended",
                     left, left == 1 ? "" : "es", LAUNCH_REAP_S);
            rc = -1;
        } else if (abort_killed) {
            snprintf(err, len, "mpirun had not ended the job %d s after a rank's MPI_Abort: "
                     "memlife killed its process group and every rank left",
                     LAUNCH_ABORT_GRACE_S);
            rc = -1;
        } else if (crash_killed) {
            snprintf(err, len, "mpirun had not ended the job %d s after rank %d (pid %d) ended "
                     "without MPI_Finalize or MPI_Abort (a crash or a kill): memlife killed its "
                     "process group and every rank left", LAUNCH_ABORT_GRACE_S, crashed_rank,
                     crashed_pid);
            rc = -1;
        }
    }
    /* A failed write leaves stdout's error flag set: main's last check reports it (exit 3). */
    copy_rank_stdout();
    ranks_dir_remove();
    sigprocmask(SIG_SETMASK, &old, NULL);
    /* a late notice must not end memlife (SIGUSR1's default action) */
    signal(LAUNCH_ABORT_SIGNAL, SIG_IGN);
    close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    free(args);
    return rc;
}

int launch_forwarded_signal(void) { return forwarded_signal; }

void launch_notify_abort(void) {
    if (!launch_is_child())
        return;
    const char *v = getenv("MEMLIFE_PARENT_PID");
    char *end;
    long pid = v && *v ? strtol(v, &end, 10) : 0;
    if (pid > 1 && !*end && pid <= INT_MAX)
        kill((pid_t)pid, LAUNCH_ABORT_SIGNAL);
}

void launch_block_signals(bool block) {
    sigset_t s;
    sigemptyset(&s);
    for (size_t k = 0; k < sizeof forwarded_signals / sizeof *forwarded_signals; k++)
        sigaddset(&s, forwarded_signals[k]);
    sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
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
