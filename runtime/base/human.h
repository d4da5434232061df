/* SPDX-License-Identifier: MIT */
/* human.h — output for people: sizes as people read them, the width tables fit, colour.
 *
 * Sizes (ml_human_size): binary units, the largest of B, KiB, MiB, GiB, TiB, PiB, EiB that the
 * value reaches. A whole number of that unit prints as it is ("4 KiB", "256 MiB", "1 GiB"); under
 * 1 KiB the exact bytes ("520 B"). Any other value is rounded half up to 3 significant digits
 * (2 decimals under 10, 1 under 100, none from 100), trailing zeros dropped, and marked '~' when
 * the digits shown are not the whole value: 1572864 B is "1.5 MiB", 1.5 MiB + 1 B "~1.5 MiB",
 * 1049601 B "~1 MiB", 1152 B (1.125 KiB) "~1.13 KiB" (a rounding that reaches 1024 moves up a
 * unit). So a number without '~' is the exact quantity, and one with '~' claims no digit it
 * does not have. --bytes (ml_human_set_bytes) prints every size as exact bytes. JSON
 * and CSV never come here: they carry exact bytes.
 *
 * Width (ml_term_width): of the stream the text being written goes to (ml_term_set_target:
 * stdout by default, stderr where a command puts its table there, a file for -o FILE): COLUMNS
 * when set to a number, else the terminal's width when that stream is a terminal, else 0
 * (unlimited: pipes get every column); a file is read later, at any width: always 0; --wide
 * forces 0.
 *
 * Colour (ml_color): --color=auto (the default) colours a stream that is a terminal, always
 * colours it anyway (a pager that understands escapes), never does not. NO_COLOR set to any value
 * but the empty string (no-color.org; an empty variable reads as unset, as all of memlife's do)
 * turns colour off whatever --color says: a user who set it in their environment never wants
 * escapes, and a script that exports it can rely on plain text. */
#ifndef MEMLIFE_HUMAN_H
#define MEMLIFE_HUMAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void ml_human_size(uint64_t bytes, char *buf, size_t len);
void ml_human_set_bytes(bool exact);

/* 0: unlimited. */
size_t ml_term_width(void);
void ml_term_set_wide(bool wide);
/* Where the text rendered next goes: 1 (stdout, the default), 2 (stderr) or ML_TARGET_FILE. */
enum { ML_TARGET_FILE = -1, ML_FD_TARGET = -2 };
void ml_term_set_target(int fd);
/* Before starting ranks under mpirun (exec/launch.c): they see mpirun's pseudo-terminal, so the
 * terminal memlife itself writes to travels in MEMLIFE_TERM, for ml_term_width and ml_color. */
void ml_term_export(void);

typedef enum { ML_COLOR_AUTO, ML_COLOR_ALWAYS, ML_COLOR_NEVER } ml_color_mode;
extern const char *const ml_color_mode_names[];   /* "auto", "always", "never", NULL */
void ml_color_set_mode(ml_color_mode mode);
/* What a mark is, not how it looks: the escape codes live in one table in human.c. */
typedef enum { ML_HUE_ERROR, ML_HUE_WARNING, ML_HUE_NOTE, ML_HUE_OK, ML_HUE_FAIL,
               ML_HUE_COUNT } ml_hue;
/* The escape that starts hue on file descriptor fd (1 stdout, 2 stderr, ML_FD_TARGET: the
 * target of ml_term_set_target, never coloured when a file), or "" without colour;
 * ml_color_end(fd) is the matching reset or "". */
const char *ml_color(ml_hue hue, int fd);
const char *ml_color_end(int fd);
bool ml_color_on(int fd);
/* The columns text takes on a terminal: its bytes less the colour escapes ("\033[...m"). */
size_t ml_visible_len(const char *s, size_t n);

#endif
