/* commands.c — the command table built from commands.def, and `memlife help` (cmd.h): the top
 * of cli/, naming every command's function (their flags, which the option parser reads, are in
 * command_flags.c, below the commands). */
#include "cmd.h"
#include "base/util.h"

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
    "'memlife COMMAND --help').\n";

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
    const ml_command *c = ml_command_find(argv[1]);
    if (!c)
        return ml_usage_error(NULL, "unknown command '%s'", argv[1]);
    fputs(c->usage, stdout);
    return ML_EXIT_OK;
}
