/* cmd.h — the command table. Each command lives in its own file (cli/cmd_<name>.c) with its usage
 * text beside it; main.c dispatches and never switches on a command's name. */
#ifndef MEMLIFE_CMD_H
#define MEMLIFE_CMD_H

#include <stdio.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);   /* argv[0] is the command name; returns the exit code */
    const char *summary;                 /* one line for `memlife help` */
    const char *usage;                   /* full text for `memlife CMD --help` */
} ml_command;

extern const ml_command ml_commands[];
extern const size_t ml_command_count;

/* Usage errors: print "error: ..." and a hint to stderr; exit code 2. */
int ml_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int cmd_predict(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_help(int argc, char **argv);
extern const char cmd_predict_usage[], cmd_check_usage[], cmd_run_usage[];
/* Visual commands (issue 6): cli/cmd_plot.c, cmd_trace.c, cmd_diff.c. */
int cmd_plot(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_diff(int argc, char **argv);
extern const char cmd_plot_usage[], cmd_trace_usage[], cmd_diff_usage[];
/* The four meanings of "AllReduce = RS + AG" for two plans (issue 9): cli/cmd_equiv.c. */
int cmd_equiv(int argc, char **argv);
extern const char cmd_equiv_usage[];

/* Rewriting toward the memory floor (issue 10): cli/cmd_optimize.c. */
int cmd_optimize(int argc, char **argv);
extern const char cmd_optimize_usage[];

/* The chapter's benchmark and kernel evidence (issue 5): cli/cmd_bench.c. */
int cmd_bench(int argc, char **argv);
extern const char cmd_bench_usage[];

/* PyTorch memory snapshots in (issue 16): cli/cmd_import.c. */
int cmd_import(int argc, char **argv);
extern const char cmd_import_usage[];

#endif
