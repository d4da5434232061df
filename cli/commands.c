/* SPDX-License-Identifier: MIT */
/* commands.c — the command table built from commands.def, and `memlife help` (cmd.h): the top
 * of cli/, naming every command's function (their flags, which the option parser reads, are in
 * command_flags.c, below the commands). */
#include "cmd.h"
#include "args.h"
#include "base/util.h"
#include "help.h"

#include <string.h>

const ml_command ml_commands[] = {
#define ML_COMMAND(name, flags, summary) {#name, cmd_##name, summary, cmd_##name##_usage, flags},
#include "commands.def"
#undef ML_COMMAND
};
const size_t ml_command_count = ML_ARRAY_LEN(ml_commands);

const char cmd_help_usage[] =
    "usage: memlife help [COMMAND]\n"
    "\n"
    "Without COMMAND, lists the commands; with one, prints its usage (same as\n"
    "'memlife COMMAND --help'). 'memlife help --man' prints the man page (troff) and\n"
    "'memlife help --bash-completion' the bash completion script, both generated from the\n"
    "same tables as the usage texts ('make install' installs them).\n";

const ml_command *ml_command_find(const char *name) {
    for (size_t k = 0; k < ml_command_count; k++)
        if (!strcmp(ml_commands[k].name, name))
            return &ml_commands[k];
    return NULL;
}

void ml_print_overview(FILE *f) {
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
        ml_print_overview(stdout);
        return ML_EXIT_OK;
    }
    if (!strcmp(argv[1], "--man")) {
        ml_help_man(stdout, ml_commands, ml_command_count);
        return ML_EXIT_OK;
    }
    if (!strcmp(argv[1], "--bash-completion")) {
        ml_help_bash(stdout, ml_commands, ml_command_count);
        return ML_EXIT_OK;
    }
    const ml_command *c = ml_command_find(argv[1]);
    if (!c)
        return ml_unknown_command(argv[1]);
    /* the command renders its own usage from its option rows */
    char name[32], help[] = "--help";
    snprintf(name, sizeof name, "%s", c->name);
    char *args[] = {name, help, NULL};
    return c->run(2, args);
}

int ml_unknown_command(const char *name) {
    const char *names[64];
    size_t n = 0;
    for (size_t k = 0; k < ml_command_count && n < ML_ARRAY_LEN(names); k++)
        names[n++] = ml_commands[k].name;
    return ml_usage_unknown(NULL, "command", name, names, n);
}
