/* SPDX-License-Identifier: MIT */
/* args.c — the one argv loop of memlife: common options plus a command's own table (args.h),
 * parsed by getopt_long. The rows are data: help.c renders the same rows as --help, the man page
 * and the bash completion. */
#include "args.h"
#include "base/human.h"
#include "cmd.h"
#include "help.h"
#include "predict/commmodel.h"
#include "predict/view_model.h"
#include "suggest.h"
#include "base/input.h"
#include "exec/launch.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --format's values and help from the format table (report/format.h), in its order. */
static const char *format_names[FMT_COUNT + 1];
static char format_help[128];
static const char *dtype_names[DT_COUNT + 1];   /* --dtype's values, for completion */

/* The common options' values from their tables (formats, dtypes). */
static void fill_choices(void) {
    for (int k = 0; k < DT_COUNT; k++)
        dtype_names[k] = ml_dtypes[k].name;
    dtype_names[DT_COUNT] = NULL;
    for (int k = 0; k < FMT_COUNT; k++)
        format_names[k] = report_formats[k].name;
    format_names[FMT_COUNT] = NULL;
    char rest[96];
    report_format_names(((1u << FMT_COUNT) - 1) & ~(1u << FMT_TABLE), ", ", " or ", rest, sizeof rest);
    snprintf(format_help, sizeof format_help, "%s (default), %s", report_formats[FMT_TABLE].name, rest);
}

static int no_names(void *ctx, const char *name, size_t len) { return -1; }

/* --torch-limit, --torch-capacity: a constant size expression ("80GiB", "1024 * MiB"), checked
 * for overflow. */
static int parse_torch_size(const char *cmd, const char *opt, const char *v, uint64_t *out) {
    ml_arena *ar = ml_arena_new();
    expr_error err;
    expr *e = expr_parse(ar, v, strlen(v), no_names, NULL, &err);
    int64_t slots[EXPR_SLOT_FIRST_LET] = {0}, value = 0;
    int rc = 0;
    if (!e || expr_eval(e, slots, &value, &err) < 0)
        rc = ml_usage_error(cmd, "option '%s': %s in '%s'", opt, err.msg, v);
    else if (value <= 0)
        rc = ml_usage_error(cmd, "option '%s' needs a positive size, not '%s'", opt, v);
    else
        *out = (uint64_t)value;
    ml_arena_free(ar);
    return rc;
}

/* --torch-conf: the text as PyTorch reads it; "env" takes PYTORCH_CUDA_ALLOC_CONF (unset: ""). */
static int check_torch_conf(const char *cmd, const char **conf) {
    if (!strcmp(*conf, "env")) {
        const char *env = getenv("PYTORCH_CUDA_ALLOC_CONF");
        *conf = env ? env : "";
    }
    size_t at = 0;
    char msg[256];
    if (pred_torch_conf_check(*conf, &at, msg, sizeof msg) != 0)
        return ml_usage_error(cmd, "option '--torch-conf' at byte %zu of '%s': %s", at + 1, *conf,
                              msg);
    return 0;
}

/* Strict decimal parse of the whole word; false on junk, overflow or out of [min, max]. */
static bool parse_long(const char *s, long min, long max, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static size_t count_choices(const char *const *c) {
    size_t n = 0;
    while (c && c[n])
        n++;
    return n;
}

/* "; did you mean 'X'?" for value among choices, or "" (buf holds it). */
static const char *did_you_mean(const char *value, const char *const *choices, char *buf,
                                size_t size) {
    const char *s = ml_suggest(value, choices, count_choices(choices));
    if (!s)
        return "";
    snprintf(buf, size, "; did you mean '%s'?", s);
    return buf;
}

/* Stores one option's value. Returns 0 or ML_EXIT_INPUT with the error printed. */
static int store(const char *cmd, const ml_opt *o, const char *value) {
    switch (o->kind) {
    case OPT_FLAG:
        *(bool *)o->dest = true;
        return 0;
    case OPT_STRING:
        if (!*value)
            return ml_usage_error(cmd, "option '%s' needs a non-empty value", o->name);
        *(const char **)o->dest = value;
        return 0;
    case OPT_INT: {
        long v;
        if (!parse_long(value, o->min, o->max, &v))
            return ml_usage_error(cmd, "option '%s' needs an integer in [%ld, %ld], not '%s'",
                                  o->name, o->min, o->max, value);
        *(int *)o->dest = (int)v;
        return 0;
    }
    case OPT_DOUBLE: {
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end || v != v || (o->min > 0 && !(v > 0)))
            return ml_usage_error(cmd, "option '%s' needs a %snumber, not '%s'", o->name,
                                  o->min > 0 ? "positive " : "", value);
        *(double *)o->dest = v;
        return 0;
    }
    case OPT_LIST:
        *(const char **)ml_vec_push((ml_vec *)o->dest) = value;
        return 0;
    case OPT_CHOICE:
        for (int k = 0; o->choices[k]; k++)
            if (!strcmp(o->choices[k], value)) {
                *(int *)o->dest = k;
                return 0;
            }
        {
            char list[256] = "", hint[128];
            for (int k = 0; o->choices[k]; k++) {
                if (k)
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
                strncat(list, o->choices[k], sizeof list - strlen(list) - 1);
            }
            return ml_usage_error(cmd, "option '%s' must be one of %s, not '%s'%s", o->name, list,
                                  value, did_you_mean(value, o->choices, hint, sizeof hint));
        }
    }
    return ML_EXIT_INPUT;
}

/* `--set` takes NAME=VALUE; the expression itself is checked later by the loader, which knows
 * the let-names, but a missing '=' or empty name is a usage error here. */
static int check_set(const char *cmd, const char *v) {
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1])
        return ml_usage_error(cmd, "option '--set' needs NAME=VALUE, not '%s'", v);
    return 0;
}

const char ml_opt_not_applicable[] = "(does not apply to this command)";

size_t ml_args_rows(ml_args *a, const char *cmd, const ml_opt *extra, size_t n_extra,
                    ml_opt *rows) {
    const ml_opt common[] = {
        {"--world", "-w", OPT_INT, &a->world, 1, SCHED_WORLD_MAX, NULL, "N",
         "world size (default: the file's 'world:')"},
        {"--set", NULL, OPT_LIST, &a->set, 0, 0, NULL, "NAME=VALUE",
         "override a 'let:' value (an expression); repeatable"},
        {"--plan", NULL, OPT_STRING, &a->plan, 0, 0, NULL, "NAME",
         "only this plan of files with 'plans:'"},
        {"--dtype", NULL, OPT_STRING, &a->dtype_name, 0, 0, dtype_names, "T",
         "default dtype of buffers without their own (replaces 'dtype:')"},
        {"--format", "-f", OPT_CHOICE, &a->format_choice, 0, 0, format_names, "FMT", format_help},
        {"--output", "-o", OPT_STRING, &a->output, 0, 0, NULL, "FILE",
         "write the report to FILE (atomically) instead of stdout"},
        {"--quiet", "-q", OPT_FLAG, &a->quiet, 0, 0, NULL, NULL, "print nothing on stdout"},
        {"--wide", NULL, OPT_FLAG, &a->wide, 0, 0, NULL, NULL,
         "tables at full width (default: fit the terminal or COLUMNS)"},
        {"--bytes", NULL, OPT_FLAG, &a->bytes, 0, 0, NULL, NULL,
         "sizes as exact bytes (default: 4 KiB, ~1.5 MiB: '~' rounded)"},
        {"--color", NULL, OPT_CHOICE, &a->color, 0, 0, ml_color_mode_names, "WHEN",
         "colour: auto (on a terminal), always or never; NO_COLOR: never"},
        {"--max-errors", NULL, OPT_INT, &a->max_errors, 0, INT_MAX, NULL, "N",
         "print at most N errors per file, then how many more there were (default 100; 0: all)"},
        {"--torch-conf", NULL, OPT_STRING, &a->torch_conf, 0, 0, NULL, "STR",
         "predict the torch view (PyTorch's caching allocator) with this PYTORCH_CUDA_ALLOC_CONF "
         "('env': the environment's)"},
        {"--torch-limit", NULL, OPT_STRING, &a->torch_limit_text, 0, 0, NULL, "BYTES",
         "the torch view's memory limit (units allowed: 80GiB)"},
        {"--torch-capacity", NULL, OPT_STRING, &a->torch_capacity_text, 0, 0, NULL, "BYTES",
         "the device memory cudaMalloc can give the torch view's allocator (no garbage collection)"},
        {"--gpu", NULL, OPT_STRING, &a->gpu_name, 0, 0, commmodel_gpu_names, "KIND",
         "the GPU kind of the communicator view (NCCL's memory): h100-80gb, h200 (default) "
         "or an A100, which the view declines as not measured"},
        {"--help", "-h", OPT_FLAG, &a->help, 0, 0, NULL, NULL, "this text"},
    };
    _Static_assert(ML_ARRAY_LEN(common) + ML_BACKEND_OPT_ROWS <= ML_ARGS_MAX_FIXED,
                   "ML_ARGS_MAX_FIXED too small");
    size_t n = 0;
    for (size_t k = 0; k < n_extra; k++)
        if (extra[k].dest)
            rows[n++] = extra[k];
    n += ml_backend_opt_rows(&a->backend, ml_command_flags(cmd), rows + n);
    for (size_t k = 0; k < ML_ARRAY_LEN(common); k++) {
        bool own = false;   /* a command's own option of the name replaces it (capture's --gpu) */
        for (size_t j = 0; j < n_extra; j++)
            own |= extra[j].dest && !strcmp(extra[j].name, common[k].name);
        if (own)
            continue;
        rows[n] = common[k];
        for (size_t j = 0; j < n_extra; j++)
            if (!extra[j].dest && !strcmp(extra[j].name, common[k].name))
                rows[n].help = extra[j].help;
        n++;
    }
    /* documentation rows for backend options re-describe them the same way */
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < n_extra; j++)
            if (!extra[j].dest && !strcmp(extra[j].name, rows[k].name))
                rows[k].help = extra[j].help;
    return n;
}

/* getopt_long's error cases, in memlife's words. word: the argument that failed. */
static int option_error(const char *cmd, int c, const ml_opt *rows, size_t n, const char *word) {
    const ml_opt *o = NULL;
    if (optopt >= 256 && (size_t)(optopt - 256) < n)
        o = &rows[optopt - 256];
    else if (optopt > 0)
        for (size_t k = 0; k < n; k++)
            if (rows[k].alias && rows[k].alias[1] == optopt)
                o = &rows[k];
    if (c == ':' && o)
        return ml_usage_error(cmd, "option '%s' needs a value", o->name);
    if (o)   /* '?' on a known option: a long flag given "=value" */
        return ml_usage_error(cmd, "option '%s' takes no value", o->name);
    char name[128];
    if (optopt > 0)
        snprintf(name, sizeof name, "-%c", optopt);
    else
        snprintf(name, sizeof name, "%.*s", (int)strcspn(word, "="), word);
    const char *cands[ML_ARGS_MAX_FIXED * 4];
    size_t nc = 0;
    for (size_t k = 0; k < n && nc < ML_ARRAY_LEN(cands); k++)
        cands[nc++] = rows[k].name;
    return ml_usage_unknown(cmd, "option", name, cands, nc);
}

/* `--dtype T`: one of the dtype table's names. */
static int check_gpu(const char *cmd, const char *v, int *out) {
    int k = commmodel_gpu_find(v);
    if (k < 0)
        return ml_usage_error(cmd, "unknown GPU kind '%s' in --gpu: expected one of h100-80gb, "
                              "h200, a100-80gb, a100-40gb", v);
    *out = k + 1;
    return 0;
}

static int check_dtype(const char *cmd, const char *v, int *out) {
    int k = ml_dtype_lookup(v, strlen(v));
    if (k < 0)
        return ml_usage_error(cmd, "unknown dtype '%s' in --dtype: expected one of %s", v, ml_dtype_list());
    *out = k + 1;
    return 0;
}

int ml_args_parse(ml_args *a, const char *cmd, int argc, char **argv, const ml_opt *extra,
                  size_t n_extra, bool allow_no_files) {
    memset(a, 0, sizeof *a);
    fill_choices();
    sched_load_set_torch_conf_check(pred_torch_conf_check);
    a->format = FMT_TABLE;
    a->format_choice = FMT_TABLE;
    a->max_errors = ML_DIAGS_PRINT_LIMIT;
    ml_vec_init(&a->set, sizeof(const char *));
    ml_vec_init(&a->files, sizeof(const char *));
    ml_backend_opts_default(&a->backend);
    /* --help anywhere before `--` wins, even after a word that would be a usage error: asking
     * for help should always get it. */
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            a->help = true;
            return 0;
        }
    ml_opt *rows = ml_xcalloc(n_extra + ML_ARGS_MAX_FIXED, sizeof *rows);
    size_t n = ml_args_rows(a, cmd, extra, n_extra, rows);
    struct option *longs = ml_xcalloc(n + 1, sizeof *longs);
    /* ':' first: a missing value returns ':' rather than '?', so the two errors differ. */
    char shorts[3 * ML_ARGS_MAX_FIXED + 2] = ":";
    for (size_t k = 0; k < n; k++) {
        bool takes = rows[k].kind != OPT_FLAG;
        longs[k] = (struct option){rows[k].name + 2, takes ? required_argument : no_argument,
                                   NULL, 256 + (int)k};
        if (rows[k].alias && strlen(shorts) + 3 < sizeof shorts) {
            size_t l = strlen(shorts);
            shorts[l++] = rows[k].alias[1];
            if (takes)
                shorts[l++] = ':';
            shorts[l] = '\0';
        }
    }
    /* getopt permutes what it is given: a copy, so the caller's argv (relaunched under mpirun
     * as it was typed) stays as it is. */
    char **args = ml_xcalloc((size_t)argc + 1, sizeof *args);
    memcpy(args, argv, (size_t)argc * sizeof *args);
    int rc = 0;
    opterr = 0;
    optind = 0;   /* GNU: re-initialise, this parser runs more than once per process */
    for (;;) {
        int c = getopt_long(argc, args, shorts, longs, NULL);
        if (c == -1)
            break;
        const ml_opt *o = NULL;
        if (c >= 256)
            o = &rows[c - 256];
        else if (c != '?' && c != ':')
            for (size_t k = 0; k < n && !o; k++)
                if (rows[k].alias && rows[k].alias[1] == c)
                    o = &rows[k];
        if (!o) {
            rc = option_error(cmd, c, rows, n, args[optind > 0 ? optind - 1 : 0]);
            break;
        }
        if (o->help == ml_opt_not_applicable) {   /* parsed only to be refused by name */
            rc = ml_usage_error(cmd, "option '%s' does not apply to '%s'", o->name, cmd);
            break;
        }
        if (o->dest == &a->format_choice)
            a->format_set = true;
        if (o->dest == &a->set && check_set(cmd, optarg)) {
            rc = ML_EXIT_INPUT;
            break;
        }
        if (store(cmd, o, optarg)) {
            rc = ML_EXIT_INPUT;
            break;
        }
        if (o->dest == &a->dtype_name && check_dtype(cmd, a->dtype_name, &a->dtype)) {
            rc = ML_EXIT_INPUT;
            break;
        }
        if (o->dest == &a->gpu_name && check_gpu(cmd, a->gpu_name, &a->gpu)) {
            rc = ML_EXIT_INPUT;
            break;
        }
    }
    if (rc == 0)
        for (int i = optind; i < argc; i++)
            *(const char **)ml_vec_push(&a->files) = args[i];
    free(args);
    free(longs);
    free(rows);
    if (rc)
        return rc;
    a->format = (report_format)a->format_choice;
    /* how text reaches people, for every writer (base/human.h) */
    ml_term_set_wide(a->wide);
    ml_human_set_bytes(a->bytes);
    ml_color_set_mode((ml_color_mode)a->color);
    ml_diags_set_print_limit((size_t)a->max_errors);
    /* the report goes to -o FILE (read later, at any width, by anything: no colour) or stdout;
     * a command that writes text elsewhere says so (optimize, check's summary) */
    ml_term_set_target(a->output && strcmp(a->output, "-") ? ML_TARGET_FILE : STDOUT_FILENO);
    if (a->torch_conf && check_torch_conf(cmd, &a->torch_conf))
        return ML_EXIT_INPUT;
    if (a->torch_limit_text &&
        parse_torch_size(cmd, "--torch-limit", a->torch_limit_text, &a->torch_limit))
        return ML_EXIT_INPUT;
    a->has_torch_limit = a->torch_limit_text != NULL;
    if (a->torch_capacity_text &&
        parse_torch_size(cmd, "--torch-capacity", a->torch_capacity_text, &a->torch_capacity))
        return ML_EXIT_INPUT;
    a->has_torch_capacity = a->torch_capacity_text != NULL;
    if (!allow_no_files && a->files.n == 0)
        return ml_usage_error(cmd, "no schedule file given");
    /* A rank of memlife's own mpirun writes the result where memlife renames it from, once the
     * whole job has succeeded (place.h). */
    const char *staged = getenv("MEMLIFE_RESULT_TMP");
    if (a->output && staged && *staged && launch_is_child())
        a->output = staged;
    /* Before anything is read or written: `-o x.yaml` on input x.yaml would replace it. */
    char err[600];
    if (ml_output_check(a->output, (const char *const *)a->files.items, a->files.n, err,
                        sizeof err) != 0) {
        ml_report(ML_DIAG_ERROR, a->output, "%s", err);
        return ML_EXIT_INPUT;
    }
    return 0;
}

void ml_args_free(ml_args *a) {
    ml_vec_free(&a->set);
    ml_vec_free(&a->files);
}

bool ml_args_begin(ml_args *a, const char *cmd, const char *usage, int argc, char **argv,
                   const ml_opt *extra, size_t n_extra, bool allow_no_files, int *rc) {
    *rc = ml_args_parse(a, cmd, argc, argv, extra, n_extra, allow_no_files);
    if (*rc == 0 && !a->help)
        return true;
    if (*rc == 0) {
        ml_opt *rows = ml_xcalloc(n_extra + ML_ARGS_MAX_FIXED, sizeof *rows);
        size_t n = ml_args_rows(a, cmd, extra, n_extra, rows), shown = 0;
        for (size_t k = 0; k < n; k++)   /* what does not apply is not offered */
            if (rows[k].help != ml_opt_not_applicable)
                rows[shown++] = rows[k];
        ml_help_render(stdout, cmd, usage, rows, shown);
        free(rows);
    }
    ml_args_free(a);
    return false;
}

sched_params ml_args_params(const ml_args *a) {
    sched_params p = {
        .set = (const char **)a->set.items,
        .n_set = a->set.n,
        .world = a->world,
        .dtype = a->dtype,
        .torch_conf = a->torch_conf,
        .has_torch_limit = a->has_torch_limit,
        .torch_limit = a->torch_limit,
        .has_torch_capacity = a->has_torch_capacity,
        .torch_capacity = a->torch_capacity,
    };
    return p;
}
