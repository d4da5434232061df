/* SPDX-License-Identifier: MIT */
/* env.c — the table of environment variables memlife reads, and their checks (env.h). */
#include "exec/env.h"
#include "exec/inject.h"
#include "exec/rt.h"
#include "base/input.h"
#include "ir/expr.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ml_env_host_mem_limit(uint64_t *out, char *err, size_t len) {
    const char *text = getenv("MEMLIFE_HOST_MEM_LIMIT");
    *out = 0;
    if (!text || !*text)
        return 0;   /* empty: no limit, as unset */
    ml_arena *a = ml_arena_new();
    expr_error ee;
    int64_t v = -1;
    expr *e = expr_parse(a, text, strlen(text), NULL, NULL, &ee);
    int rc = e && expr_eval(e, NULL, &v, &ee) == 0 && v >= 0 ? 0 : -1;
    ml_arena_free(a);
    if (rc)
        snprintf(err, len, "MEMLIFE_HOST_MEM_LIMIT='%s' is not a byte count (an expression such "
                 "as 2GiB)", text);
    else
        *out = (uint64_t)v;
    return rc;
}

/* Each check gets the value of a set variable; returns 0 or -1 with err (without the prefix). */
typedef int (*env_check_fn)(const char *name, const char *value, char *err, size_t len);

static int check_max_input(const char *name, const char *value, char *err, size_t len) {
    uint64_t v;
    return ml_input_max(&v, err, len);
}

static int check_host_limit(const char *name, const char *value, char *err, size_t len) {
    uint64_t v;
    return ml_env_host_mem_limit(&v, err, len);
}

static int check_inject(const char *name, const char *value, char *err, size_t len) {
    if (!*value)
        return 0;   /* empty: no faults, as cmd_run reads it */
    rt_options o;
    rt_options_default(&o);
    char why[300];
    if (rt_inject_parse(value, &o, why, sizeof why) == 0)
        return 0;
    snprintf(err, len, "%s='%s' is not a fault list: %s", name, value, why);
    return -1;
}

/* A decimal integer in [lo, hi], the whole value. */
static int check_int(const char *name, const char *value, long lo, long hi, char *err,
                     size_t len) {
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < lo || v > hi) {
        snprintf(err, len, "%s='%s' is not an integer in [%ld, %ld]", name, value, lo, hi);
        return -1;
    }
    return 0;
}

/* NCCL's own variables that the communicator model reads (predict/commmodel.c): an integer
 * >= 0 as strtoll(base 0) reads it; the model would otherwise ignore a bad value that NCCL may
 * read differently. */
static int check_nccl_int(const char *name, const char *value, char *err, size_t len) {
    if (!*value)
        return 0;   /* empty: unset, as the model reads it */
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 0);
    if (errno || *end || v < 0) {
        snprintf(err, len, "%s='%s' is not an integer >= 0", name, value);
        return -1;
    }
    return 0;
}

/* What the MPI launchers set: a rank or a size, which memlife trusts for its world. */
static int check_rank(const char *name, const char *value, char *err, size_t len) {
    return check_int(name, value, 0, INT_MAX - 1, err, len);
}
static int check_size(const char *name, const char *value, char *err, size_t len) {
    return check_int(name, value, 1, INT_MAX, err, len);
}
static int check_pid(const char *name, const char *value, char *err, size_t len) {
    return check_int(name, value, 1, INT_MAX, err, len);
}

static int check_launched(const char *name, const char *value, char *err, size_t len) {
    if (!strcmp(value, "1"))
        return 0;
    snprintf(err, len, "%s='%s' is not '1' (memlife sets it for the ranks it starts)", name,
             value);
    return -1;
}

static int check_mpirun(const char *name, const char *value, char *err, size_t len) {
    if (!*value)
        return 0;   /* empty: mpirun from PATH, as launch.c reads it */
    if (access(value, X_OK) == 0)
        return 0;
    snprintf(err, len, "%s='%s' is not an executable file: %s", name, value, strerror(errno));
    return -1;
}

static int check_readable(const char *name, const char *value, char *err, size_t len) {
    if (!*value || access(value, R_OK) == 0)
        return 0;   /* empty: the default, as backends/torch.c reads it */
    snprintf(err, len, "%s='%s' cannot be read: %s", name, value, strerror(errno));
    return -1;
}

/* A program: a name without '/' is looked up on PATH when it is run; a path must be executable. */
static int check_program(const char *name, const char *value, char *err, size_t len) {
    return strchr(value, '/') ? check_mpirun(name, value, err, len) : 0;
}

static int check_path_value(const char *name, const char *value, char *err, size_t len) {
    if (*value)
        return 0;
    snprintf(err, len, "%s is set but empty", name);
    return -1;
}

/* COLUMNS: the width text tables fit (base/human.c), a positive integer; empty: unset. */
static int check_columns(const char *name, const char *value, char *err, size_t len) {
    if (!*value)
        return 0;
    char *end;
    errno = 0;
    unsigned long v = strtoul(value, &end, 10);
    if (*value >= '0' && *value <= '9' && !*end && !errno && v > 0 && v < 100000)
        return 0;
    snprintf(err, len, "%s='%s' is not a terminal width (a positive integer of columns)", name,
             value);
    return -1;
}

/* MEMLIFE_TERM: memlife's terminal as its launcher passes it to the ranks (base/human.c). */
static int check_term(const char *name, const char *value, char *err, size_t len) {
    unsigned out, errs;
    size_t width;
    char extra;
    if (!*value)
        return 0;
    if (sscanf(value, "%1u%1u:%zu%c", &out, &errs, &width, &extra) == 3 && out <= 1 && errs <= 1)
        return 0;
    snprintf(err, len, "%s='%s' is not OE:WIDTH (memlife sets it for the ranks it starts)", name,
             value);
    return -1;
}

static int check_any(const char *name, const char *value, char *err, size_t len) { return 0; }

/* Every variable memlife reads (grep getenv): the reader, then the check, then what the man
 * page's ENVIRONMENT says of it (troff; NULL for those memlife or the MPI launcher sets for the
 * ranks, which a user does not set). PATH is read to find mpirun and needs none. */
#define NCCL_DOC "NCCL's own setting, which the communicator model of predict reads as NCCL does"
static const struct {
    const char *name;
    env_check_fn check;
    const char *doc;
} vars[] = {
    /* base/input.c */
    {"MEMLIFE_MAX_INPUT", check_max_input,
     "the largest schedule, result or snapshot read, in bytes (an expression such as 64MiB; "
     "default 1 GiB)"},
    /* backends/host.c */
    {"MEMLIFE_HOST_MEM_LIMIT", check_host_limit,
     "the host backend's allocations fail beyond these bytes (an expression such as 2GiB)"},
    /* cli/cmd_run.c */
    {"MEMLIFE_INJECT", check_inject, "faults for \\fBrun\\fR when \\fB\\-\\-inject\\fR is absent"},
    /* exec/launch.c */
    {"MEMLIFE_MPIRUN", check_mpirun,
     "the MPI launcher that starts the ranks (an executable; default: mpirun from PATH)"},
    /* backends/torch.c */
    {"MEMLIFE_TORCH_DRIVER", check_readable,
     "the torch backend's Python driver (default: the one installed with memlife)"},
    {"MEMLIFE_PYTHON", check_program,
     "the Python of the torch backend and of \\fBcapture\\fR (default: the first python3 on PATH "
     "that imports torch)"},
    /* cli/cmd_capture.c, and python/memlife for the last two */
    {"MEMLIFE_PYTHONPATH", check_any,
     "the folder holding memlife's Python package for \\fBcapture\\fR (default: the one "
     "installed with memlife)"},
    {"PYTHONPATH", check_any, "kept after memlife's own package for \\fBcapture\\fR's Python"},
    {"MEMLIFE_CACHE", check_any,
     "where \\fBcapture\\fR keeps the virtual CUDA device's compiled hooks (default: "
     "~/.cache/memlife)"},
    {"MEMLIFE_CAPTURE_TRACEBACK", check_any,
     "set: \\fBcapture\\fR prints Python's whole traceback when the program fails"},
    /* exec/launch.c, exec/watch.c, cli/args.c: set by launch_self for the ranks */
    {"MEMLIFE_LAUNCHED", check_launched, NULL},
    {"MEMLIFE_PARENT_PID", check_pid, NULL},
    {"MEMLIFE_RESULT_TMP", check_path_value, NULL},
    {"MEMLIFE_RANKS_DIR", check_path_value, NULL},
    /* pipeline/rankshare.c */
    {"MEMLIFE_NO_SHARE", check_any,
     "set (any value but the empty one): every rank is expanded, linted and predicted on its "
     "own, even where ranks are alike (the reference the shared ways are tested against: the "
     "same output, slower)"},
    /* exec/launch.c: where that goes */
    {"TMPDIR", check_any, "where a run keeps its ranks' results until it merges them"},
    /* base/human.c */
    {"MEMLIFE_TERM", check_term, NULL},   /* set by launch_self */
    {"COLUMNS", check_columns, "the terminal width tables fit"},
    {"NO_COLOR", check_any, "no colour, even on a terminal (any value but the empty one)"},
    /* cli/args.c: read for --torch-conf env, and checked there as the option is */
    {"PYTORCH_CUDA_ALLOC_CONF", check_any,
     "the torch view's allocator configuration under \\fB\\-\\-torch\\-conf env\\fR"},
    /* exec/launch.c, backends/cuda/cuda_comm.c: the launcher's */
    {"OMPI_COMM_WORLD_SIZE", check_size, NULL},
    {"OMPI_COMM_WORLD_RANK", check_rank, NULL},
    {"OMPI_COMM_WORLD_LOCAL_SIZE", check_size, NULL},
    {"OMPI_COMM_WORLD_LOCAL_RANK", check_rank, NULL},
    {"PMI_SIZE", check_size, NULL},
    {"PMI_RANK", check_rank, NULL},
    {"PMIX_RANK", check_rank, NULL},
    {"SLURM_NTASKS", check_size, NULL},
    /* predict/commmodel.c */
    {"NCCL_BUFFSIZE", check_nccl_int, NCCL_DOC},
    {"NCCL_LL_BUFFSIZE", check_nccl_int, NCCL_DOC},
    {"NCCL_LL128_BUFFSIZE", check_nccl_int, NCCL_DOC},
    {"NCCL_MIN_NCHANNELS", check_nccl_int, NCCL_DOC},
    {"NCCL_MAX_NCHANNELS", check_nccl_int, NCCL_DOC},
    {"NCCL_RUNTIME_CONNECT", check_nccl_int, NCCL_DOC},
    {"NCCL_COMM_SPLIT_SHARE_RESOURCES", check_nccl_int, NCCL_DOC},
    {"NCCL_P2P_READ_ENABLE", check_nccl_int, NCCL_DOC},
    {"NCCL_WORK_FIFO_BYTES", check_nccl_int, NCCL_DOC},
};

int ml_env_check(char *err, size_t len) {
    for (size_t k = 0; k < sizeof vars / sizeof *vars; k++) {
        const char *v = getenv(vars[k].name);
        if (!v)
            continue;
        char why[600];
        if (vars[k].check(vars[k].name, v, why, sizeof why) != 0) {
            snprintf(err, len, "environment variable %s", why);
            return -1;
        }
    }
    return 0;
}

const char *ml_env_doc(size_t k, const char **name) {
    for (size_t j = 0; j < sizeof vars / sizeof *vars; j++)
        if (vars[j].doc && k-- == 0) {
            *name = vars[j].name;
            return vars[j].doc;
        }
    return NULL;
}
