/* SPDX-License-Identifier: MIT */
/* help.h — one command's usage rendered from its option rows (args.h), three ways: the text of
 * `memlife CMD --help`, a section of the man page, and a branch of the bash completion. The man
 * page and the completion script are built by running every command's --help in that mode
 * (`memlife help --man`, `memlife help --bash-completion`; the Makefile installs their output),
 * so they come from the very rows the parser uses and cannot drift from it.
 *
 * A command's usage text is prose with one line "@options" where the option list goes. */
#ifndef MEMLIFE_HELP_H
#define MEMLIFE_HELP_H

#include <stdio.h>
#include "args.h"
#include "cmd.h"

/* Renders cmd's usage with rows in the current mode (text unless a generator below runs). */
void ml_help_render(FILE *f, const char *cmd, const char *usage, const ml_opt *rows, size_t n);

/* memlife.1 (troff, man(7) macros) for the commands cmds[0..n), each section produced by running
 * the command's --help. overview: the commands' common prose. */
void ml_help_man(FILE *f, const ml_command *cmds, size_t n);

/* The bash completion script: commands, each command's options, the values of enumerated ones
 * (--format, --backend, ...), file names otherwise. */
void ml_help_bash(FILE *f, const ml_command *cmds, size_t n);

#endif
