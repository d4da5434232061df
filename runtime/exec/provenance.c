/* SPDX-License-Identifier: MIT */
/* provenance.c — where a result came from (provenance.h). */
#include "exec/provenance.h"
#include "exec/mpi_util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#ifndef MEMLIFE_VERSION
#define MEMLIFE_VERSION "unknown"
#endif
#ifndef MEMLIFE_COMMIT
#define MEMLIFE_COMMIT "unknown"
#endif

/* Host names are short; a fixed slot per rank keeps the exchange one allgather. */
enum { HOST_SLOT = 64 };

static bool has_key(const char *prov, const char *key) {
    size_t k = strlen(key);
    for (const char *line = prov; line && *line;) {
        if (!strncmp(line, key, k) && line[k] == '=')
            return true;
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    return false;
}

static void add(ml_str *o, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(ml_str *o, const char *key, const char *fmt, ...) {
    if (o->s && has_key(o->s, key))
        return;       /* the backend said it already */
    char v[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    for (char *p = v; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    ml_str_printf(o, "%s=%s\n", key, v);
}

/* "h1 (ranks 0-1), h2 (ranks 2-3)": consecutive ranks on one host are one range. */
static void hosts_text(const char *all, int n, ml_str *o) {
    for (int r = 0; r < n;) {
        int e = r;
        while (e + 1 < n && !strncmp(all + (size_t)(e + 1) * HOST_SLOT, all + (size_t)r * HOST_SLOT,
                                     HOST_SLOT))
            e++;
        ml_str_printf(o, "%s%.*s (rank%s %d", r ? ", " : "", HOST_SLOT, all + (size_t)r * HOST_SLOT,
                      e > r ? "s" : "", r);
        if (e > r)
            ml_str_printf(o, "-%d", e);
        ml_str_append(o, ")", 1);
        r = e + 1;
    }
}

char *ml_provenance_collect(const rt_backend_ops *be, int world) {
    ml_str o = {0};
    add(&o, "memlife", "%s", MEMLIFE_VERSION);
    add(&o, "commit", "%s", MEMLIFE_COMMIT);
    if (be) {
        char facts[8192] = "";
        if (be->provenance)
            be->provenance(facts, sizeof facts);
        if (!has_key(facts, "backend"))
            ml_str_printf(&o, "backend=%s\n", be->name);
        ml_str_append(&o, facts, strlen(facts));
    }
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!strncmp(*e, "NCCL_", 5) && eq) {
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)(eq - *e), *e);
            add(&o, key, "%s", eq + 1);
        }
    }
    char mpi[256] = "";
    rt_mpi_library_version(mpi, sizeof mpi);
    if (*mpi && !has_key(o.s, "mpi"))
        add(&o, "mpi", "%s", mpi);
    add(&o, "world", "%d", world);

    char me[HOST_SLOT] = "";
    if (gethostname(me, sizeof me - 1) != 0)
        snprintf(me, sizeof me, "unknown");
    me[HOST_SLOT - 1] = '\0';
    ml_str hosts = {0};
    char *all = NULL, err[300] = "";
    if (rt_mpi_active() && world > 1 && (all = calloc((size_t)world, HOST_SLOT)) &&
        rt_mpi_allgather_blob(NULL, me, HOST_SLOT, all, err, sizeof err) == 0) {
        for (int r = 0; r < world; r++)
            all[(size_t)r * HOST_SLOT + HOST_SLOT - 1] = '\0';
        hosts_text(all, world, &hosts);
    } else {
        ml_str_printf(&hosts, "%s", me);
    }
    free(all);
    add(&o, "hosts", "%s", hosts.s);
    ml_str_free(&hosts);

    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    add(&o, "date", "%s", date);
    if (!o.s)
        ml_str_printf(&o, "%s", "");
    return o.s;
}
