/* SPDX-License-Identifier: MIT */
/* locate.c — see locate.h. */
#include "base/locate.h"
#include "base/util.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t ml_python_candidates(char *list, size_t cap) {
    size_t at = 0, count = 0;
    const char *env = getenv("MEMLIFE_PYTHON");
    if (env && *env) {
        snprintf(list, cap, "%s", env);
        return 1;
    }
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s:/usr/bin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char cand[PATH_MAX];
        snprintf(cand, sizeof cand, "%s/python3", *d ? d : ".");
        if (access(cand, X_OK) != 0)
            continue;
        bool seen = false;   /* /usr/bin twice (PATH and the fallback) is tried once */
        for (size_t k = 0, p = 0; k < count; k++, p += strlen(list + p) + 1)
            seen = seen || !strcmp(list + p, cand);
        if (seen || at + strlen(cand) + 1 > cap)
            continue;
        memcpy(list + at, cand, strlen(cand) + 1);
        at += strlen(cand) + 1;
        count++;
    }
    return count;
}

int ml_find_beside_binary(const char *env_name, const char *const rel[], size_t n, char *out,
                          size_t len, char *err, size_t errlen) {
    const char *env = getenv(env_name);
    if (env && *env) {
        if (access(env, R_OK) != 0) {
            ml_put(err, errlen, "%s=%s cannot be read", env_name, env);
            return -1;
        }
        snprintf(out, len, "%s", env);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t got = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (got <= 0) {
        ml_put(err, errlen, "cannot find the memlife binary's folder (set %s)", env_name);
        return -1;
    }
    exe[got] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    for (size_t k = 0; k < n; k++) {
        snprintf(out, len, "%s%s", exe, rel[k]);
        if (access(out, R_OK) == 0)
            return 0;
    }
    ml_put(err, errlen, "%s is not next to %s (looked for %s%s); set %s", rel[0] + 1, exe,
           rel[0] + 1, n > 1 ? " and its installed place" : "", env_name);
    return -1;
}
