/* launch.c — self-exec under mpirun (launch.h). */
#include "launch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int launch_self(int ranks, int argc, char **argv, char *err, size_t len) {
    char mpirun[PATH_MAX], exe[PATH_MAX], np[16];
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
    char **args = calloc((size_t)argc + 8, sizeof *args);
    if (!args)
        abort();
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
    execv(mpirun, args);
    snprintf(err, len, "cannot start %s: %s", mpirun, strerror(errno));
    free(args);
    return -1;
}
