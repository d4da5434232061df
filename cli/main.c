/* main.c — memlife's entry point: the command table and dispatch.
 *
 * Adding a command is one row here plus cli/cmd_<name>.c; main never switches on a command's
 * name. Results go to stdout, errors to stderr; the exit code is the command's (cmd.h). */
#include "cmd.h"
#include "args.h"
#include "exec/rt.h"

#include <string.h>

extern const char cmd_help_usage[];

const ml_command ml_commands[] = {
    {"predict", cmd_predict, "lint and predict steady/peak memory of schedules", cmd_predict_usage},
    {"check", cmd_check, "predict and gate on the schedules' expectations (CI)", cmd_check_usage},
    {"run", cmd_run, "execute schedules on a backend and compare with the prediction",
     cmd_run_usage},
    {"plot", cmd_plot, "draw live memory per rank over the steps as an SVG", cmd_plot_usage},
    {"trace", cmd_trace, "write a Chrome trace (Perfetto) of memory, collectives and syncs",
     cmd_trace_usage},
    {"diff", cmd_diff, "compare two plans: steady/peak deltas and the lifetimes behind them",
     cmd_diff_usage},
    {"equiv", cmd_equiv, "check the four meanings of AllReduce = RS + AG for two plans",
     cmd_equiv_usage},
    {"optimize", cmd_optimize, "rewrite a schedule toward its memory floor, keeping its results",
     cmd_optimize_usage},
    {"bench", cmd_bench, "time plans against each other: stable ratios, overhead, kernels",
     cmd_bench_usage},
    {"help", cmd_help, "show the commands, or one command's usage", cmd_help_usage},
};
const size_t ml_command_count = ML_ARRAY_LEN(ml_commands);

const char cmd_help_usage[] =
    "usage: memlife help [COMMAND]\n"
    "\n"
    "Without COMMAND, lists the commands; with one, prints its usage (same as\n"
    "'memlife COMMAND --help').\n";

static const ml_command *find_command(const char *name) {
    for (size_t k = 0; k < ml_command_count; k++)
        if (!strcmp(ml_commands[k].name, name))
            return &ml_commands[k];
    return NULL;
}

static void print_overview(FILE *f) {
    fputs("usage: memlife COMMAND [OPTIONS] FILE...\n"
          "       memlife --version | --help\n"
          "\n"
          "memlife predicts and measures the GPU memory lifetimes of NCCL collective schedules.\n"
          "\n"
          "commands:\n",
          f);
    for (size_t k = 0; k < ml_command_count; k++)
        fprintf(f, "  %-10s %s\n", ml_commands[k].name, ml_commands[k].summary);
    fputs("\n"
          "Run 'memlife COMMAND --help' for a command's options. The schedule language is\n"
          "described in docs/schedule.md.\n"
          "exit codes: 0 ok, 1 an expectation failed, 2 bad input or hazard, 3 runtime failure\n",
          f);
}

int cmd_help(int argc, char **argv) {
    if (argc > 2)
        return ml_usage_error("help", "'help' takes at most one command name");
    if (argc == 1 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        print_overview(stdout);
        return ML_EXIT_OK;
    }
    const ml_command *c = find_command(argv[1]);
    if (!c)
        return ml_usage_error(NULL, "unknown command '%s'", argv[1]);
    ml_usage_print(c->usage, stdout);
    return ML_EXIT_OK;
}

/* "memlife 0.1.0 (<commit>)" then the backend table: available ones and how to get the others. */
static int print_version(void) {
    printf("memlife %s (%s)\n", MEMLIFE_VERSION, MEMLIFE_COMMIT);
    printf("backends:");
    for (size_t k = 0; k < rt_backend_count; k++)
        printf(" %s%s", rt_backends[k]->name, rt_backends[k]->available ? "" : " (not built)");
    putchar('\n');
    for (size_t k = 0; k < rt_backend_count; k++)
        if (!rt_backends[k]->available && rt_backends[k]->how_to_get)
            printf("  %s: %s\n", rt_backends[k]->name, rt_backends[k]->how_to_get);
    return ML_EXIT_OK;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_overview(stderr);
        return ML_EXIT_INPUT;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--version") || !strcmp(name, "-V") || !strcmp(name, "version"))
        return print_version();
    if (!strcmp(name, "--help") || !strcmp(name, "-h"))
        return cmd_help(1, argv + 1);
    const ml_command *c = find_command(name);
    if (!c) {
        if (name[0] == '-')
            return ml_usage_error(NULL, "unknown option '%s' (options follow the command)", name);
        return ml_usage_error(NULL, "unknown command '%s'", name);
    }
    int rc = c->run(argc - 1, argv + 1);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "error: cannot write the results to stdout\n");
        return rc ? rc : ML_EXIT_RUNTIME;
    }
    return rc;
}
