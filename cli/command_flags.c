/* SPDX-License-Identifier: MIT */
/* command_flags.c — each command's flags (cmd.h's CMD_*) from commands.def, apart from the
 * command table (commands.c): the option parser reads them, and the table, which names every
 * command's function, sits above the commands while the parser sits below them. */
#include "cmd.h"

#include <string.h>

static const struct {
    const char *name;
    unsigned flags;
} rows[] = {
#define ML_COMMAND(name, flags, summary) {#name, flags},
#include "commands.def"
#undef ML_COMMAND
};

unsigned ml_command_flags(const char *name) {
    for (size_t k = 0; name && k < sizeof rows / sizeof rows[0]; k++)
        if (!strcmp(rows[k].name, name))
            return rows[k].flags;
    return 0;
}
