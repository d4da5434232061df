/* SPDX-License-Identifier: MIT */
/* cmd.h — the command table. Each command lives in its own file (cli/cmd_<name>.c) with its usage
 * text beside it; cli/commands.def lists them once, and this header's prototypes and
 * cli/commands.c's table both come from that list. main.c dispatches and never switches on a
 * command's name. */
#ifndef MEMLIFE_CMD_H
#define MEMLIFE_CMD_H

#include <stdio.h>

/* What a command takes beyond the common options (args.h). */
enum {
    CMD_BACKEND = 1 << 0,    /* --backend, --ranks, --gpus, --timeout (backend_opts.h) */
    CMD_ALLOCATOR = 1 << 1,  /* --allocator (with CMD_BACKEND) */
};

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);   /* argv[0] is the command name; returns the exit code */
    const char *summary;                 /* one line for `memlife help` */
    const char *usage;                   /* full text for `memlife CMD --help` */
    unsigned flags;                      /* CMD_* */
} ml_command;

extern const ml_command ml_commands[];
extern const size_t ml_command_count;
/* A command's CMD_* flags (0 for a name that is no command). */
unsigned ml_command_flags(const char *name);
/* The row of a command, NULL when there is none. */
const ml_command *ml_command_find(const char *name);
/* `memlife help` without a command: usage, the commands with their summaries, exit codes. */
void ml_print_overview(FILE *f);

/* "unknown command 'NAME'" with the closest command as a suggestion; exit code 2. */
int ml_unknown_command(const char *name);

/* Usage errors: print "error: ..." and a hint to stderr; exit code 2. */
int ml_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "unknown WHAT 'NAME'", with "; did you mean 'X'?" when one of cands[n] is close (suggest.h):
 * the one wording of an unknown command and an unknown option. Exit code 2. */
int ml_usage_unknown(const char *cmd, const char *what, const char *name,
                     const char *const *cands, size_t n);

#define ML_COMMAND(name, flags, summary)                                                          \
    int cmd_##name(int argc, char **argv);                                                        \
    extern const char cmd_##name##_usage[];
#include "commands.def"
#undef ML_COMMAND


#endif
