/* SPDX-License-Identifier: MIT */
/* args.h — option parsing shared by every command (predict, check, run, and later ones).
 *
 * Every command accepts the common options below, and the backend options where its row in
 * commands.def says CMD_BACKEND; a command adds its own through a small table of ml_opt rows
 * (e.g. run's --inject), so no command writes its own argv loop. getopt_long does the parsing:
 * words that are not options are the input files ('-' is one: standard input), wherever they
 * stand; `--name=value`, `--name value`, a unique prefix of a long name, `-w4`, `-w 4` and
 * bundled flags (`-qw4`) are accepted; `--` ends the options. Usage errors print "error: ..."
 * plus a hint to stderr (ml_usage_error) and make ml_args_parse return ML_EXIT_INPUT. */
#ifndef MEMLIFE_ARGS_H
#define MEMLIFE_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "ir/sched.h"
#include "report/report.h"
#include "backend_opts.h"

typedef enum {
    OPT_FLAG,      /* bool *; no value */
    OPT_STRING,    /* const char **; the last one given wins */
    OPT_INT,       /* int *; decimal, range-checked against [min, max] */
    OPT_DOUBLE,    /* double *; must be > 0 when min > 0 */
    OPT_LIST,      /* ml_vec * of const char *; repeatable */
    OPT_CHOICE     /* int *; value must be one of choices[] (index stored) */
} ml_opt_kind;

/* One option: how it parses and how it is documented. --help, the man page and the bash
 * completion are all rendered from these rows (help.c), so the three cannot drift apart. */
typedef struct {
    const char *name;         /* "--backend" */
    const char *alias;        /* "-b" or NULL: one letter, bundles (-qw4) and attaches (-w4) */
    ml_opt_kind kind;
    void *dest;               /* NULL: a documentation row only, re-describing a common option
                                 of the same name for this command (its 'help' replaces the
                                 common row's) */
    long min, max;            /* OPT_INT bounds (inclusive); OPT_DOUBLE: min > 0 requires > 0 */
    const char *const *choices; /* OPT_CHOICE: NULL-terminated, the only values; OPT_STRING:
                                   the known values, for completion and "did you mean" */
    const char *arg;          /* the value's name in usage ("N", "FILE"); NULL for a flag */
    const char *help;         /* one sentence; the text renderer wraps it;
                                 ml_opt_not_applicable: see ML_OPT_NA */
} ml_opt;
/* A documentation row of a command's extra table: what a common option means for that command
 * (the common table parses it; the row only says so in --help). */
#define ML_OPT_DOC(name, help) {name, NULL, OPT_FLAG, NULL, 0, 0, NULL, NULL, help}
/* A common option that does not apply to this command (plot's and trace's --format: they write
 * SVG / trace-event JSON): still parsed, so that the command refuses it by name, but left out
 * of --help, the man page and completion. Its help is this marker (compared by address). */
extern const char ml_opt_not_applicable[];
#define ML_OPT_NA(name) ML_OPT_DOC(name, ml_opt_not_applicable)

typedef struct {
    report_format format;     /* --format table|json|csv|md (default table) */
    bool format_set;          /* --format was given (check prints the report instead of a summary) */
    const char *output;       /* -o FILE; NULL: stdout */
    int world;                /* --world N; 0: the file's */
    ml_vec set;               /* --set NAME=VALUE, repeatable (const char *) */
    const char *plan;         /* --plan NAME; NULL: every plan */
    int dtype;                /* --dtype T as ml_dtype + 1; 0: the files' own default */
    const char *dtype_name;   /* --dtype's word, checked into dtype after parsing */
    bool quiet;               /* --quiet / -q: nothing on success */
    bool help;                /* --help / -h seen: the caller prints usage and exits 0 */
    ml_backend_opts backend;  /* commands with CMD_BACKEND (commands.def): backend_opts.h */
    ml_vec files;             /* non-option words (const char *) */
    const char *torch_conf;   /* --torch-conf STR ("env": PYTORCH_CUDA_ALLOC_CONF); NULL: the file's */
    const char *torch_limit_text; /* --torch-limit as given, parsed into torch_limit */
    bool has_torch_limit;     /* --torch-limit BYTES given */
    uint64_t torch_limit;
    const char *torch_capacity_text; /* --torch-capacity as given */
    bool has_torch_capacity;
    uint64_t torch_capacity;
    int format_choice;        /* --format's index into its choices, while parsing */
    bool wide;                /* --wide: text tables at full width (base/human.h) */
    bool bytes;               /* --bytes: sizes in text as exact bytes */
    int color;                /* --color auto|always|never (ml_color_mode) */
    int max_errors;           /* --max-errors N: errors printed per file (0: all) */
    const char *gpu_name;     /* --gpu KIND as given, checked into gpu */
    int gpu;                  /* the communicator view's GPU kind: commmodel_gpus index + 1;
                                 0: its default */
} ml_args;

/* Parses argv[1..argc) (argv[0] is the command name). extra: the command's own options, or
 * NULL. Returns 0, or ML_EXIT_INPUT after printing a usage error. When --help is seen the
 * rest is not checked and a->help is set. Requires at least one file unless allow_no_files. */
int ml_args_parse(ml_args *a, const char *cmd, int argc, char **argv, const ml_opt *extra,
                  size_t n_extra, bool allow_no_files);
void ml_args_free(ml_args *a);

/* A command's first lines in one call: parses, and on --help prints usage to stdout. Returns
 * true when the command should go on; false with *rc the exit code (0 after --help) and a
 * already freed otherwise. */
bool ml_args_begin(ml_args *a, const char *cmd, const char *usage, int argc, char **argv,
                   const ml_opt *extra, size_t n_extra, bool allow_no_files, int *rc);

/* The backend option rows for a command with flags (CMD_BACKEND, CMD_ALLOCATOR) into
 * rows[0..ML_BACKEND_OPT_ROWS), their values into b. Returns how many (0 without CMD_BACKEND). */
size_t ml_backend_opt_rows(ml_backend_opts *b, unsigned flags, ml_opt *rows);

/* The sched_params view of the parsed options (pointers into a; valid while a lives). */
sched_params ml_args_params(const ml_args *a);

/* The rows a command parses, in usage order: its own (extra, documentation rows included), the
 * backend's, then the common ones; a common row that extra re-describes carries extra's help.
 * rows holds at least n_extra + ML_ARGS_MAX_FIXED. Returns how many. */
#define ML_ARGS_MAX_FIXED 22
size_t ml_args_rows(ml_args *a, const char *cmd, const ml_opt *extra, size_t n_extra,
                    ml_opt *rows);


#endif
