/* SPDX-License-Identifier: MIT */
/* cputime.c — runs a command and writes "CPU_SECONDS PEAK_RSS_KB EXIT" to OUTFILE: the
 * command's user + sys CPU time and peak resident set from wait4's rusage (microseconds; what
 * /usr/bin/time reads, at a resolution it rounds to 10 ms). CPU time rather than wall time:
 * the benchmark machines are shared and noisy, and the 2.0 target is about work, not waiting.
 * The command's stdout and stderr are passed through. Usage: cputime OUTFILE CMD [ARG...] */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: cputime OUTFILE CMD [ARG...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("wait4");
        return 2;
    }
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fprintf(f, "%.6f %ld %d\n", cpu, ru.ru_maxrss, rc);
    fclose(f);
    return rc;
}
