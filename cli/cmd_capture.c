/* SPDX-License-Identifier: MIT */
/* cmd_capture.c — `memlife capture FILE.py[:FUNC]`: a real PyTorch training step as a schedule.
 * The recording is Python's (python/memlife: torch's fake process group at the asked world, the
 * step on one GPU or on a virtual CUDA device under FakeTensorMode); it writes an annotated
 * snapshot, which the importer (analyzer/snapshot/import.h) turns into the schedule. The program
 * runs in a child process under a deadline; it dies with memlife. */
#include "cmd.h"
#include "args.h"
#include "base/human.h"
#include "base/locate.h"
#include "snapshot/import.h"
#include "snapshot/pickle.h"
#include "snapshot/vary.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char cmd_capture_usage[] =
    "usage: memlife capture FILE.py[:FUNC] --world N [--rank R] [--on fake|cuda]\n"
    "                       [--set NAME=VALUE]... [--vary NAME=V1,V2,...]...\n"
    "                       [--worlds W1,W2,W3,...] [--steps K] [-o OUT.yaml]\n"
    "\n"
    "Runs one training step of a PyTorch program as rank R of world N and writes it as a\n"
    "schedule. FUNC (default build) is called once, after torch's fake process group is up at\n"
    "world N, with the --set values as keyword arguments (build(MBS=4, S=2048)); it builds the\n"
    "model, applies its parallelism (FSDP2, activation checkpointing, mixed precision) and\n"
    "returns a function that runs one step (forward, backward, optimizer step). The step runs\n"
    "once to warm up and K more times recorded, all in one process: any world size fits on one\n"
    "machine. --on fake (the default) needs no GPU: the step runs under FakeTensorMode on a\n"
    "virtual CUDA device (--gpu names its kind). --on cuda records PyTorch's caching allocator\n"
    "on the GPU itself: the schedule then replays memory_allocated and memory_reserved at every\n"
    "event, and 'memlife check OUT.yaml' proves it. Buffers are named by module path and role\n"
    "(layers.3.fc1.weight/grad, adam.exp_avg/..., act/layers.3, temp/...); collectives, stream\n"
    "events and the warmup/step/optimizer regions are steps of their own. --vary MBS=1,2,4\n"
    "captures at each value (several --vary: every combination) and writes one schedule with\n"
    "'let: {MBS: 1}' whose sizes are expressions fitted to the captures (a + b*MBS, products\n"
    "for two lets): at a captured value 'predict --set MBS=2' gives that capture's numbers,\n"
    "and 'memlife fit OUT.yaml --vary MBS' answers how large MBS can be. The captures must make\n"
    "the same steps and names at every value; where they do not, or a size is of no such\n"
    "form, capture names the step and the sizes at each value and exits 2. --worlds 2,3,8\n"
    "captures rank R at each world and writes one schedule whose sizes are constants or\n"
    "FSDP2's padded forms, b*ceil_div(c, world) and b*ceil_div(c, world)*world: at a captured\n"
    "world 'predict --world 8' gives that capture's numbers.\n"
    "\n"
    "@options\n"
    "environment: MEMLIFE_PYTHON (the interpreter; else the first python3 on PATH with torch),\n"
    "MEMLIFE_PYTHONPATH (the memlife Python package's folder), MEMLIFE_CACHE.\n"
    "exit codes: 0 written, 2 bad input (no FILE or FUNC, a --set the program does not take,\n"
    "captures of --vary or --worlds that make no one schedule),\n"
    "3 the program failed, ran past --timeout, or no python3 with torch\n";

static const char *const ON_KINDS[] = {"fake", "cuda", NULL};
static const char *const GROUPS[] = {"fake", "nccl", "gloo", NULL};
static const char *const GPUS[] = {"h100-80gb", "h200", "a100-80gb", "a100-40gb", NULL};
/* --vary captures every combination of the values: each is a run of the program */
#define VARY_MAX_POINTS 64
/* --worlds: enough to tell the padded forms apart, few enough to run */
#define WORLDS_MIN 3
#define WORLDS_MAX 16

/* Runs argv with stdout sent to stderr (the schedule may go to stdout); waits at most
 * timeout_s. Returns the exit code, 124 past the deadline, -1 when it could not start. */
static int run_child(char *const argv[], const char *pythonpath, double timeout_s) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(3);
        setenv("PYTHONPATH", pythonpath, 1);
        dup2(2, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    struct timespec t0, now, nap = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int st, signalled = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        if (el > timeout_s && signalled == 0) {
            kill(pid, SIGTERM);
            signalled = 1;
        } else if (el > timeout_s + 5 && signalled == 1) {
            kill(pid, SIGKILL);
            signalled = 2;
        }
        nanosleep(&nap, NULL);
    }
    if (signalled)
        return 124;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* "gpt" from "dir/gpt.py:build": the schedule's name. */
static char *program_stem(const char *spec) {
    const char *b = strrchr(spec, '/');
    b = b ? b + 1 : spec;
    size_t n = strcspn(b, ".:");
    char *s = ml_xmalloc(n + 1);
    for (size_t k = 0; k < n; k++) {
        char c = b[k];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        s[k] = ok ? c : '_';
    }
    s[n] = 0;
    return s;
}

/* --vary NAME=V1,V2,...: a let-name and at least two distinct integers. */
static int parse_vary(const char *arg, ml_arena *arena, vary_let *out) {
    const char *eq = strchr(arg, '=');
    size_t nl = eq ? (size_t)(eq - arg) : 0;
    bool ident = nl > 0 && !(arg[0] >= '0' && arg[0] <= '9');
    for (size_t k = 0; k < nl && ident; k++)
        ident = (arg[k] >= 'a' && arg[k] <= 'z') || (arg[k] >= 'A' && arg[k] <= 'Z') ||
                (arg[k] >= '0' && arg[k] <= '9') || arg[k] == '_';
    if (!ident)
        return ml_usage_error("capture", "--vary takes NAME=V1,V2,... (a let-name), not '%s'", arg);
    size_t n = 1;
    for (const char *p = eq + 1; *p; p++)
        n += *p == ',';
    int64_t *v = ml_arena_alloc(arena, n * sizeof *v);
    const char *p = eq + 1;
    for (size_t k = 0; k < n; k++) {
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || (*end && *end != ','))
            return ml_usage_error("capture", "--vary %.*s: '%.*s' is not an integer", (int)nl,
                                  arg, (int)strcspn(p, ","), p);
        for (size_t j = 0; j < k; j++)
            if (v[j] == x)
                return ml_usage_error("capture", "--vary %.*s: %lld twice", (int)nl, arg, x);
        v[k] = x;
        p = *end ? end + 1 : end;
    }
    if (n < 2)
        return ml_usage_error("capture", "--vary %.*s: at least two values, to fit a size "
                              "through them", (int)nl, arg);
    *out = (vary_let){ml_arena_strndup(arena, arg, nl), v, n};
    return ML_EXIT_OK;
}

/* --worlds W1,W2,...: WORLDS_MIN to WORLDS_MAX distinct worlds of 1 to 2^20. */
static int parse_worlds(const char *arg, int64_t *w, size_t *n) {
    const char *p = arg;
    *n = 0;
    for (;;) {
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || (*end && *end != ',') || x < 1 || x > (1 << 20))
            return ml_usage_error("capture", "--worlds: '%.*s' is not a world of 1 to 1048576",
                                  (int)strcspn(p, ","), p);
        for (size_t j = 0; j < *n; j++)
            if (w[j] == x)
                return ml_usage_error("capture", "--worlds: %lld twice", x);
        if (*n == WORLDS_MAX)
            return ml_usage_error("capture", "--worlds: at most %d worlds", WORLDS_MAX);
        w[(*n)++] = x;
        if (!*end)
            break;
        p = end + 1;
    }
    if (*n < WORLDS_MIN)
        return ml_usage_error("capture", "--worlds: at least %d worlds, to tell FSDP2's padded "
                              "sizes from constants, not %zu", WORLDS_MIN, *n);
    return ML_EXIT_OK;
}

/* --worlds with the other options: what goes with it, its worlds, the rank in each. */
static int worlds_usage(const char *arg, size_t n_lets, int world, int on, const char *raw,
                        int rank, int64_t *worlds, size_t *n) {
    int rc;
    int64_t least = INT64_MAX;
    if (n_lets)
        return ml_usage_error("capture", "--worlds and --vary together are not supported yet");
    if (world)
        return ml_usage_error("capture", "--worlds names the worlds: no --world with it");
    if (on != 0)
        return ml_usage_error("capture", "--worlds captures on the virtual device (--on fake): "
                              "on a GPU each capture's segment addresses are its own");
    if (raw)
        return ml_usage_error("capture", "--raw keeps one recording, and --worlds makes several");
    if ((rc = parse_worlds(arg, worlds, n)) != ML_EXIT_OK)
        return rc;
    for (size_t k = 0; k < *n; k++)
        least = worlds[k] < least ? worlds[k] : least;
    if (rank >= least)
        return ml_usage_error("capture", "--rank %d is not a rank of world %" PRId64, rank, least);
    return ML_EXIT_OK;
}

/* One recording: the interpreters of list (n_py, NUL-separated) in turn until one has torch
 * (*py_at then skips those before it next time); the snapshot loaded from jpath. */
static int record(char **av, const char *spec, const char *pypath, const char *list,
                  size_t n_py, size_t *py_at, double timeout_s, const char *jpath, json_t **snap) {
    char err[1024], tried[1024] = "";
    int child = 9;
    const char *p = list;
    for (size_t k = 0; k < *py_at; k++)
        p += strlen(p) + 1;
    for (size_t k = *py_at; k < n_py && child == 9; k++, p += strlen(p) + 1) {
        av[0] = (char *)p;
        child = run_child(av, pypath, timeout_s);
        *py_at = k;
        size_t at = strlen(tried), room = sizeof tried - at;
        if (room > strlen(p) + 3)
            snprintf(tried + at, room, "%s%.*s", at ? ", " : "", (int)(room - 3), p);
    }
    *snap = NULL;
    if (child == 9 || child == 127 || child < 0) {
        ml_report(ML_DIAG_ERROR, NULL, "no python3 with torch (%s); set MEMLIFE_PYTHON, or "
                  "make deps", n_py ? tried : "none on PATH");
        return ML_EXIT_RUNTIME;
    }
    if (child == 124) {
        ml_report(ML_DIAG_ERROR, spec, "the program ran past --timeout %g s and was ended",
                  timeout_s);
        return ML_EXIT_RUNTIME;
    }
    if (child == 2)
        return ML_EXIT_INPUT;   /* the recorder said why, at the place in the program */
    if (child != 0) {
        if (child > 3)
            ml_report(ML_DIAG_ERROR, spec, "the capture's python ended with exit %d", child);
        return ML_EXIT_RUNTIME;
    }
    if (!(*snap = snapshot_load_file(jpath, err, sizeof err))) {
        ml_report(ML_DIAG_ERROR, NULL, "%s", err);
        return ML_EXIT_RUNTIME;
    }
    return ML_EXIT_OK;
}

int cmd_capture(int argc, char **argv) {
    ml_args a;
    int rc, rank = 0, on = 0, steps = 1, group = 0, gpu = 0;
    double timeout_s = 3600;
    const char *raw = NULL, *worlds_arg = NULL;
    ml_vec vary_args;
    ml_vec_init(&vary_args, sizeof(const char *));
    const ml_opt extra[] = {
        {"--rank", NULL, OPT_INT, &rank, 0, (1 << 20) - 1, NULL, "R",
         "the rank to record (default 0); the others are taken to run the same steps, each on "
         "its own group of every communicator (a group that is no mesh dimension nor a partition "
         "of the world is written as this rank's list)"},
        {"--on", NULL, OPT_CHOICE, &on, 0, 0, ON_KINDS, "WHERE",
         "fake (no GPU: FakeTensorMode on a virtual CUDA device; the default) or cuda (one GPU: "
         "the caching allocator's own record, exact)"},
        {"--steps", NULL, OPT_INT, &steps, 1, 1000, NULL, "K",
         "recorded steps after the warm-up one (default 1)"},
        {"--gpu", NULL, OPT_CHOICE, &gpu, 0, 0, GPUS, "KIND",
         "the virtual device's kind with --on fake (default h100-80gb)"},
        {"--group", NULL, OPT_CHOICE, &group, 0, 0, GROUPS, "PG",
         "the process group: fake (default: torch's, no communication, any world) or, at world "
         "1 with --on cuda, a real nccl or gloo one (NCCL's own memory in the run)"},
        {"--vary", NULL, OPT_LIST, &vary_args, 0, 0, NULL, "NAME=V1,V2,...",
         "capture at each value (with several --vary, at every combination) and write one "
         "schedule whose sizes are expressions of the lets NAME, fitted to the captures; "
         "repeatable, --on fake only"},
        {"--worlds", NULL, OPT_STRING, &worlds_arg, 0, 0, NULL, "W1,W2,...",
         "capture at each world (at least 3; the same rank) and write one schedule whose sizes "
         "are expressions of world (FSDP2's padded shards), world: the first; --on fake only"},
        {"--timeout", NULL, OPT_DOUBLE, &timeout_s, 1, 0, NULL, "SECONDS",
         "the program's deadline (default 3600, for each capture): past it, it is ended and "
         "capture exits 3"},
        {"--raw", NULL, OPT_STRING, &raw, 0, 0, NULL, "FILE",
         "also keep the recording itself (the annotated snapshot, JSON) in FILE"},
        {"--output", "-o", OPT_STRING, NULL, 0, 0, NULL, "FILE",
         "write the schedule to FILE (atomically) and a summary to stdout; without -o the "
         "schedule goes to stdout"},
    };
    if (!ml_args_begin(&a, "capture", cmd_capture_usage, argc, argv, extra, ML_ARRAY_LEN(extra),
                       false, &rc)) {
        ml_vec_free(&vary_args);
        return rc;
    }
    ml_arena *arena = ml_arena_new();
    vary_let lets[VARY_MAX_LETS];
    size_t n_lets = vary_args.n, n_points = 1, n_worlds = 0;
    int64_t worlds[WORLDS_MAX];
    const char *spec = a.files.n == 1 ? ML_VEC_AT(&a.files, const char *, 0) : NULL;
    int world = a.world ? a.world : 1;
    rc = ML_EXIT_OK;
    if (a.files.n != 1)
        rc = ml_usage_error("capture", "'capture' takes one program, FILE.py[:FUNC], not %zu",
                            a.files.n);
    else if (worlds_arg)
        rc = worlds_usage(worlds_arg, n_lets, a.world, on, raw, rank, worlds, &n_worlds);
    else if (rank >= world)
        rc = ml_usage_error("capture", "--rank %d is not a rank of world %d", rank, world);
    else if (n_lets > VARY_MAX_LETS)
        rc = ml_usage_error("capture", "at most %d --vary, not %zu", VARY_MAX_LETS, n_lets);
    else if (n_lets && on != 0)
        rc = ml_usage_error("capture", "--vary captures on the virtual device (--on fake): on "
                            "a GPU each capture's segment addresses are its own");
    else if (n_lets && raw)
        rc = ml_usage_error("capture", "--raw keeps one recording, and --vary makes several");
    for (size_t k = 0; k < n_lets && rc == ML_EXIT_OK; k++) {
        rc = parse_vary(ML_VEC_AT(&vary_args, const char *, k), arena, &lets[k]);
        for (size_t j = 0; j < k && rc == ML_EXIT_OK; j++)
            if (!strcmp(lets[j].name, lets[k].name))
                rc = ml_usage_error("capture", "--vary %s twice", lets[k].name);
        for (size_t j = 0; j < a.set.n && rc == ML_EXIT_OK; j++) {
            const char *set = ML_VEC_AT(&a.set, const char *, j);
            if (!strncmp(set, lets[k].name, strlen(lets[k].name)) && set[strlen(lets[k].name)] == '=')
                rc = ml_usage_error("capture", "%s is both --set and --vary", lets[k].name);
        }
    }
    if (rc == ML_EXIT_OK && n_worlds) {   /* the first world is the schedule's */
        world = (int)worlds[0];
        n_points = n_worlds;
    }
    if (rc == ML_EXIT_OK && n_lets && !(n_points = vary_grid_points(lets, n_lets, VARY_MAX_POINTS)))
        rc = ml_usage_error("capture", "--vary makes more than %d captures", VARY_MAX_POINTS);
    if (rc != ML_EXIT_OK) {
        ml_arena_free(arena);
        ml_vec_free(&vary_args);
        ml_args_free(&a);
        return rc;
    }
    char err[1024], pkg[PATH_MAX], pypath[PATH_MAX + 16];
    static const char *const rel[] = {"/../python/memlife/__init__.py",
                                      "/python/memlife/__init__.py",
                                      "/../share/memlife/python/memlife/__init__.py"};
    const char *env_pkg = getenv("MEMLIFE_PYTHONPATH");
    if (env_pkg && *env_pkg) {
        snprintf(pypath, sizeof pypath, "%s", env_pkg);
    } else if (ml_find_beside_binary("MEMLIFE_PYTHONPATH", rel, ML_ARRAY_LEN(rel), pkg, sizeof pkg,
                                     err, sizeof err) != 0) {
        ml_report(ML_DIAG_ERROR, NULL, "%s", err);
        ml_arena_free(arena);
        ml_vec_free(&vary_args);
        ml_args_free(&a);
        return ML_EXIT_RUNTIME;
    } else {
        *strrchr(pkg, '/') = 0;   /* .../python/memlife */
        *strrchr(pkg, '/') = 0;   /* .../python */
        snprintf(pypath, sizeof pypath, "%s", pkg);
    }
    const char *old = getenv("PYTHONPATH");
    if (old && *old && strlen(pypath) + strlen(old) + 2 < sizeof pypath) {
        size_t at = strlen(pypath);
        snprintf(pypath + at, sizeof pypath - at, ":%s", old);
    }
    const char *tmpdir = getenv("TMPDIR");
    char jpath[PATH_MAX];
    snprintf(jpath, sizeof jpath, "%s/memlife-capture-XXXXXX.json", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemps(jpath, 5);
    if (fd < 0) {
        ml_report(ML_DIAG_ERROR, NULL, "cannot make a temporary file in %s", tmpdir ? tmpdir : "/tmp");
        ml_arena_free(arena);
        ml_vec_free(&vary_args);
        ml_args_free(&a);
        return ML_EXIT_RUNTIME;
    }
    close(fd);
    char s_world[16], s_rank[16], s_steps[16];
    snprintf(s_world, sizeof s_world, "%d", world);
    snprintf(s_rank, sizeof s_rank, "%d", rank);
    snprintf(s_steps, sizeof s_steps, "%d", steps);
    size_t nargs = 0, cap = 24 + 2 * (a.set.n + n_lets);
    char **av = ml_xcalloc(cap, sizeof *av);
    char list[8192];
    size_t n_py = ml_python_candidates(list, sizeof list), py_at = 0;
    av[nargs++] = NULL;   /* the interpreter, record() */
    const char *fixed[] = {"-m", "memlife", "capture", spec, "--world", s_world, "--rank", s_rank,
                           "--on", ON_KINDS[on], "--steps", s_steps, "--gpu", GPUS[gpu],
                           "--group", GROUPS[group], "-o", jpath};
    for (size_t k = 0; k < ML_ARRAY_LEN(fixed); k++)
        av[nargs++] = (char *)fixed[k];
    for (size_t k = 0; k < a.set.n; k++) {
        av[nargs++] = "--set";
        av[nargs++] = (char *)ML_VEC_AT(&a.set, const char *, k);
    }
    /* the varied lets' --set, rewritten for each point of the grid */
    char sets[VARY_MAX_LETS][160];
    for (size_t k = 0; k < n_lets; k++) {
        av[nargs++] = "--set";
        av[nargs++] = sets[k];
    }
    av[nargs] = NULL;
    json_t **snaps = ml_xcalloc(n_points, sizeof *snaps);
    import_stats *st = ml_xcalloc(n_points, sizeof *st);
    for (size_t g = 0; g < n_points && rc == ML_EXIT_OK; g++) {
        if (n_worlds)
            snprintf(s_world, sizeof s_world, "%" PRId64, worlds[g]);
        for (size_t k = 0; k < n_lets; k++)
            snprintf(sets[k], sizeof sets[k], "%s=%" PRId64, lets[k].name,
                     lets[k].values[vary_grid_index(lets, n_lets, g, k)]);
        rc = record(av, spec, pypath, list, n_py, &py_at, timeout_s, jpath, &snaps[g]);
    }
    char *name = program_stem(spec);
    import_opts o = {.device = 0, .names = IMPORT_NAMES_FRAMES, .name = name, .source = spec};
    char *yaml = NULL;
    size_t len;
    if (rc == ML_EXIT_OK && !n_lets && !n_worlds &&
        snapshot_import(snaps[0], &o, &yaml, &len, &st[0], err, sizeof err) != 0) {
        ml_report(ML_DIAG_ERROR, spec, "the recording does not import: %s", err);
        rc = ML_EXIT_RUNTIME;
    }
    bool bad = false;
    if (rc == ML_EXIT_OK && n_lets &&
        snapshot_vary(snaps, lets, n_lets, &o, &yaml, &len, st, &bad, err, sizeof err) != 0) {
        ml_report(ML_DIAG_ERROR, spec, "%s", err);
        rc = bad ? ML_EXIT_INPUT : ML_EXIT_RUNTIME;
    }
    if (rc == ML_EXIT_OK && n_worlds &&
        snapshot_worlds(snaps, worlds, n_worlds, &o, &yaml, &len, st, &bad, err, sizeof err) != 0) {
        ml_report(ML_DIAG_ERROR, spec, "%s", err);
        rc = bad ? ML_EXIT_INPUT : ML_EXIT_RUNTIME;
    }
    if (rc == ML_EXIT_OK) {
        if (!a.output) {
            fwrite(yaml, 1, len, stdout);
        } else if (ml_write_file_atomic(a.output, yaml, len) != 0) {
            ml_report(ML_DIAG_ERROR, NULL, "cannot write '%s'", a.output);
            rc = ML_EXIT_RUNTIME;
        } else if (!a.quiet) {
            char peak[32], last[32], p0[256], p1[256];
            ml_human_size(st[0].requested_peak > 0 ? (uint64_t)st[0].requested_peak : 0, peak,
                          sizeof peak);
            if (n_worlds) {
                ml_human_size(st[n_worlds - 1].requested_peak > 0 ?
                              (uint64_t)st[n_worlds - 1].requested_peak : 0, last, sizeof last);
                printf("%s: rank %d on the virtual device at %zu worlds: %zu steps in %s, sizes "
                       "fitted to world; requested peak %s at world %" PRId64 ", %s at world %"
                       PRId64 "\n", spec, rank, n_worlds, st[0].steps, a.output, peak, worlds[0],
                       last, worlds[n_worlds - 1]);
            } else if (!n_lets) {
                printf("%s: rank %d of world %d %s: %zu events -> %zu steps in %s; requested "
                       "peak %s\n", spec, rank, world, on ? "on the GPU" : "on the virtual device",
                       st[0].events, st[0].steps, a.output, peak);
            } else {
                const import_stats *sl = &st[n_points - 1];
                ml_human_size(sl->requested_peak > 0 ? (uint64_t)sl->requested_peak : 0, last,
                              sizeof last);
                vary_point_text(lets, n_lets, 0, p0, sizeof p0);
                vary_point_text(lets, n_lets, n_points - 1, p1, sizeof p1);
                printf("%s: rank %d of world %d on the virtual device at %zu points: %zu steps "
                       "in %s, sizes fitted to the lets; requested peak %s at %s, %s at %s\n",
                       spec, rank, world, n_points, st[0].steps, a.output, peak, p0, last, p1);
            }
        }
    }
    free(yaml);
    free(name);
    if (raw && rc == ML_EXIT_OK && rename(jpath, raw) != 0) {
        ml_report(ML_DIAG_ERROR, NULL, "cannot write '%s'", raw);
        rc = ML_EXIT_RUNTIME;
    }
    unlink(jpath);
    for (size_t g = 0; g < n_points; g++)
        json_decref(snaps[g]);
    free(snaps);
    free(st);
    free(av);
    ml_arena_free(arena);
    ml_vec_free(&vary_args);
    ml_args_free(&a);
    return rc;
}
