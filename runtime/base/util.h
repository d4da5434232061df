/* SPDX-License-Identifier: MIT */
/* util.h — arena allocation, diagnostics and small helpers shared by every module.
 *
 * Diagnostics follow the compiler convention `file:line:col: error: text` (1-based line and
 * column). Library code never exits: it records a diagnostic and returns -1; only cli/ decides
 * the exit code (0 ok, 1 expectation failed, 2 bad input or hazard, 3 runtime failure). */
#ifndef MEMLIFE_UTIL_H
#define MEMLIFE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>

#define ML_EXIT_OK 0
#define ML_EXIT_EXPECT 1
#define ML_EXIT_INPUT 2
#define ML_EXIT_RUNTIME 3

#define ML_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The one allocation-failure path: `memlife: error: out of memory (N bytes)` on stderr and exit 3
 * (a runtime failure, not bad input). Every allocation whose failure memlife cannot report as a
 * result goes through these; they never return NULL (a zero size gets one byte). */
void *ml_xmalloc(size_t size);
void *ml_xcalloc(size_t n, size_t size);
void *ml_xrealloc(void *p, size_t size);
char *ml_xstrdup(const char *s);
_Noreturn void ml_out_of_memory(size_t bytes);
/* A broken internal invariant (a bug, not bad input): `memlife: internal error: TEXT`, then
 * abort() for the core dump. */
_Noreturn void ml_internal_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Bump allocator: every node of a loaded schedule lives in one arena, freed at once. Blocks grow
 * geometrically, so a 10 M-step schedule costs O(log n) mallocs, not one per node. */
typedef struct ml_arena ml_arena;
ml_arena *ml_arena_new(void);
void ml_arena_free(ml_arena *a);
void *ml_arena_alloc(ml_arena *a, size_t size);          /* zeroed, 16-byte aligned; exits 3 on OOM */
/* p (an allocation of old_size bytes from a, or NULL) grown to new_size: the first old_size
 * bytes kept, the rest unspecified (unlike ml_arena_alloc: an array grown is written before it
 * is read, and zeroing a realloc'd end cost optimize 4% of its instructions); p is no longer
 * valid (unless returned). Large arrays grow in place (a block of their own) instead of
 * leaving their old copies in the arena. */
void *ml_arena_grow(ml_arena *a, void *p, size_t old_size, size_t new_size);
char *ml_arena_strndup(ml_arena *a, const char *s, size_t n);
size_t ml_arena_bytes(const ml_arena *a);               /* bytes handed out, for scale tests */

/* Growable array of fixed-size items (docs/design.md, "Tables for what grows"). */
typedef struct {
    void *items;
    size_t n, cap, item_size;
} ml_vec;
void ml_vec_init(ml_vec *v, size_t item_size);
void *ml_vec_push(ml_vec *v);                            /* returns a zeroed slot */
void ml_vec_free(ml_vec *v);
#define ML_VEC_AT(v, type, i) (((type *)(v)->items)[i])

/* A source position: 1-based line and column, as people count them (libyaml's marks are 0-based). */
typedef struct {
    uint32_t line, col;
} ml_mark;

typedef enum { ML_DIAG_ERROR, ML_DIAG_WARNING, ML_DIAG_NOTE } ml_diag_level;

typedef struct {
    ml_diag_level level;
    const char *file;
    ml_mark mark;
    char *text;      /* lowercase, subject quoted: "unknown step 'alreduce'" */
    int rank;        /* -1 when the diagnostic is not about one rank */
    const char *code; /* stable machine name, e.g. "size_mismatch"; NULL when none */
} ml_diag;

/* Collects diagnostics; printing is separate so tests can assert on the exact text. */
typedef struct {
    ml_vec items;           /* of ml_diag */
    size_t errors, warnings;
    size_t max_errors;      /* stop collecting after this many errors (0 = unlimited) */
} ml_diags;

void ml_diags_init(ml_diags *d);
void ml_diags_free(ml_diags *d);
void ml_diag_add(ml_diags *d, ml_diag_level level, const char *file, ml_mark mark, int rank,
                 const char *code, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
#define ml_error(d, file, mark, ...) ml_diag_add((d), ML_DIAG_ERROR, (file), (mark), -1, NULL, __VA_ARGS__)
/* Prints "file:line:col: error: text" lines (with " [rank N]" where set) to f: of each file's
 * errors the first print limit's (each with its notes), then "file: note: N more errors not
 * shown", so that one input with a million findings prints a screenful, as compilers do. */
void ml_diags_print(const ml_diags *d, FILE *f);
/* The errors per file ml_diags_print prints; 0: all. --max-errors N sets it. */
#define ML_DIAGS_PRINT_LIMIT 100
void ml_diags_set_print_limit(size_t n);
/* Formats one diagnostic into buf exactly as ml_diags_print would (without newline). */
void ml_diag_format(const ml_diag *diag, char *buf, size_t len);
const ml_diag *ml_diags_first_error(const ml_diags *d);
/* What d holds at a moment, and going back to it: the diagnostics added since are dropped (a
 * loader whose error turned out to be an artifact of a later syntax error). */
typedef struct {
    size_t n, errors, warnings;
} ml_diags_mark;
ml_diags_mark ml_diags_mark_now(const ml_diags *d);
void ml_diags_rewind(ml_diags *d, ml_diags_mark m);
/* One diagnostic straight to stderr, for the command line's own errors that no ml_diags
 * collects (a file that cannot be written, a backend that cannot start): "where: error: text"
 * (where NULL: "error: text"), the level word coloured as ml_diags_print colours it, the bytes
 * otherwise those of the plain fprintf it replaces. A newline ends it. */
void ml_report(ml_diag_level level, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ml_vreport(ml_diag_level level, const char *where, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Writes a whole file atomically: data goes to a temp file in the same folder, then rename(2).
 * A failed or interrupted write leaves no partial file. Where it goes is ml_output_place's
 * answer. Returns 0 or -1 with errno. */
int ml_write_file_atomic(const char *path, const char *data, size_t len);
/* Removes the temp file ml_write_file_atomic is writing, if any; async-signal-safe. A signal
 * whose action is the default removes it itself (the write installs a handler for the length of
 * the write); a command's own handler that ends the process must call this first. */
void ml_write_abandon(void);

/* How an output path is written (every -o of every command):
 *   ML_OUT_FD        one of this process's descriptors by name (/dev/stdout, /dev/stderr,
 *                    /dev/fd/N, /proc/self/fd/N): written to descriptor *fd as it stands, so
 *                    `-o /dev/stdout >> log` appends as `-o -` does;
 *   ML_OUT_IN_PLACE  something that exists and is not a regular file (/dev/null, a FIFO, a
 *                    terminal): opened and written, never replaced by a plain file;
 *   ML_OUT_REPLACE   a regular file or a new name: replaced atomically at target, which is the
 *                    path itself, or the file a chain of symbolic links ends at (a link stays a link:
 *                    renaming onto the link's own name would turn it into a plain file).
 * Returns the kind, or -1 with errno (ELOOP: more than 40 links; ENAMETOOLONG). */
typedef enum { ML_OUT_FD, ML_OUT_IN_PLACE, ML_OUT_REPLACE } ml_out_kind;
int ml_output_place(const char *path, int *fd, char *target, size_t len);

/* Formats bytes as "256 MiB", "1 MiB + 1 B"-free exact text: whole MiB as "256 MiB", whole KiB
 * as "64 KiB", else plain bytes "1048577 B". */
void ml_format_bytes(uint64_t bytes, char *buf, size_t len);
/* Bytes in MiB with up to 3 decimals, trailing zeros trimmed: "256", "320", "0.001". */
void ml_format_mib(int64_t bytes, char *buf, size_t len);
/* snprintf for messages into a fixed buffer that may cut them at its end (the start matters
 * most): the runtime's and the backends' error texts. */
void ml_put(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Growable string for report writers. */
typedef struct ml_str {
    char *s;
    size_t n, cap;
} ml_str;
void ml_str_printf(ml_str *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ml_str_vprintf(ml_str *o, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void ml_str_append(ml_str *o, const char *s, size_t len);
void ml_str_free(ml_str *o);

double ml_now_seconds(void);  /* CLOCK_MONOTONIC */

#endif
