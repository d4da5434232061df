/* SPDX-License-Identifier: MIT */
/* main.c — memlife's entry point: --version and the dispatch over the command table.
 *
 * Adding a command is one row in cli/commands.def plus cli/cmd_<name>.c; main never switches on
 * a command's name. Results go to stdout, errors to stderr; the exit code is the command's
 * (cmd.h). */
#include "cmd.h"
#include "args.h"
#include "exec/rt.h"
#include "exec/env.h"

#include <string.h>

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
        ml_print_overview(stderr);
        return ML_EXIT_INPUT;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--version") || !strcmp(name, "-V") || !strcmp(name, "version"))
        return print_version();
    if (!strcmp(name, "--help") || !strcmp(name, "-h"))
        return cmd_help(1, argv + 1);
    const ml_command *c = ml_command_find(name);
    if (!c) {
        if (name[0] == '-')
            return ml_usage_error(NULL, "unknown option '%s' (options follow the command)", name);
        return ml_unknown_command(name);
    }
    /* Before the command reads a file or starts a process: a bad variable is exit 2 here,
     * not a failure of the ranks later (exec/env.h). */
    char err[800];
    if (ml_env_check(err, sizeof err) != 0) {
        ml_report(ML_DIAG_ERROR, NULL, "%s", err);
        return ML_EXIT_INPUT;
    }
    int rc = c->run(argc - 1, argv + 1);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        ml_report(ML_DIAG_ERROR, NULL, "cannot write the results to stdout");
        return rc ? rc : ML_EXIT_RUNTIME;
    }
    return rc;
}
