/* args.c — the one argv loop of memlife: common options plus a command's own table (args.h). */
#include "args.h"
#include "cmd.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *const format_names[] = {"table", "json", "csv", "md", NULL};

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
            char list[256] = "";
            for (int k = 0; o->choices[k]; k++) {
                if (k)
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
                strncat(list, o->choices[k], sizeof list - strlen(list) - 1);
            }
            return ml_usage_error(cmd, "option '%s' must be one of %s, not '%s'", o->name, list,
                                  value);
        }
    }
    return ML_EXIT_INPUT;
}

static const ml_opt *find_opt(const ml_opt *tab, size_t n, const char *name, size_t len) {
    for (size_t k = 0; k < n; k++) {
        const ml_opt *o = &tab[k];
        if ((strlen(o->name) == len && !strncmp(o->name, name, len)) ||
            (o->alias && strlen(o->alias) == len && !strncmp(o->alias, name, len)))
            return o;
    }
    return NULL;
}

/* `--set` takes NAME=VALUE; the expression itself is checked later by the loader, which knows
 * the let-names, but a missing '=' or empty name is a usage error here. */
static int check_set(const char *cmd, const char *v) {
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1])
        return ml_usage_error(cmd, "option '--set' needs NAME=VALUE, not '%s'", v);
    return 0;
}

int ml_args_parse(ml_args *a, const char *cmd, int argc, char **argv, const ml_opt *extra,
                  size_t n_extra, bool allow_no_files) {
    memset(a, 0, sizeof *a);
    a->format = FMT_TABLE;
    ml_vec_init(&a->set, sizeof(const char *));
    ml_vec_init(&a->files, sizeof(const char *));
    int format = FMT_TABLE;
    const ml_opt common[] = {
        {"--format", "-f", OPT_CHOICE, &format, 0, 0, format_names},
        {"--output", "-o", OPT_STRING, &a->output, 0, 0, NULL},
        {"--world", "-w", OPT_INT, &a->world, 1, 65536, NULL},
        {"--set", NULL, OPT_LIST, &a->set, 0, 0, NULL},
        {"--plan", NULL, OPT_STRING, &a->plan, 0, 0, NULL},
        {"--quiet", "-q", OPT_FLAG, &a->quiet, 0, 0, NULL},
        {"--help", "-h", OPT_FLAG, &a->help, 0, 0, NULL},
    };
    ml_backend_opts_default(&a->backend);
    ml_opt backend[ML_BACKEND_OPT_ROWS];
    size_t n_backend = ml_backend_opt_rows(&a->backend, ml_command_flags(cmd), backend);
    /* --help anywhere before `--` wins, even after a word that would be a usage error: asking
     * for help should always get it. */
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            a->help = true;
            return 0;
        }
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (options_done || w[0] != '-' || !strcmp(w, "-")) {
            *(const char **)ml_vec_push(&a->files) = w;
            continue;
        }
        if (!strcmp(w, "--")) {
            options_done = true;
            continue;
        }
        const char *eq = strncmp(w, "--", 2) == 0 ? strchr(w, '=') : NULL;
        size_t len = eq ? (size_t)(eq - w) : strlen(w);
        const ml_opt *o = find_opt(common, ML_ARRAY_LEN(common), w, len);
        if (!o)
            o = find_opt(backend, n_backend, w, len);
        if (!o && extra)
            o = find_opt(extra, n_extra, w, len);
        if (!o)
            return ml_usage_error(cmd, "unknown option '%.*s'", (int)len, w);
        const char *value = NULL;
        if (o->kind == OPT_FLAG) {
            if (eq)
                return ml_usage_error(cmd, "option '%s' takes no value", o->name);
        } else if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            return ml_usage_error(cmd, "option '%s' needs a value", o->name);
        }
        if (o->dest == &format)
            a->format_set = true;
        if (o->dest == &a->set && check_set(cmd, value))
            return ML_EXIT_INPUT;
        if (store(cmd, o, value))
            return ML_EXIT_INPUT;
    }
    a->format = (report_format)format;
    if (!allow_no_files && a->files.n == 0)
        return ml_usage_error(cmd, "no schedule file given");
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
    if (*rc == 0)
        fputs(usage, stdout);
    ml_args_free(a);
    return false;
}

sched_params ml_args_params(const ml_args *a) {
    sched_params p = {
        .set = (const char **)a->set.items,
        .n_set = a->set.n,
        .world = a->world,
    };
    return p;
}
