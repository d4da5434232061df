/* SPDX-License-Identifier: MIT */
/* input.h — how memlife reads every input file (schedules, result JSON), and the one check that
 * an output does not name an input.
 *
 * A schedule or result is read whole into memory, so each read is bounded: a regular file larger
 * than the limit is refused before it is read (1 GiB by default; MEMLIFE_MAX_INPUT=BYTES changes
 * it, e.g. 64MiB). Regular files and FIFOs are read: /dev/zero and /dev/urandom never end, a
 * directory is not text. A FIFO (`/dev/stdin` of a pipe, `<(...)`, a `mkfifo`) is read as a stream
 * up to the same limit once a writer holds it open; it is opened with O_NONBLOCK, so one that no
 * writer opens within a second is refused instead of blocking the open forever. `-` is standard
 * input, whatever it is (a pipe, a redirected file), read up to the same limit.
 *
 * Errors are one line without the `FILE: error: ` prefix, which the caller adds (through its
 * diagnostics): "is a character device, not a regular file (give '-' to read standard input)". */
#ifndef MEMLIFE_INPUT_H
#define MEMLIFE_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ML_INPUT_MAX_DEFAULT ((uint64_t)1 << 30)   /* 1 GiB */
#define ML_INPUT_MAX_ENV "MEMLIFE_MAX_INPUT"

/* A whole input: data[len] is '\0' (for readers that want a C string); free with ml_input_free. */
typedef struct {
    char *data;
    size_t len;
} ml_input;

/* Reads path ("-": standard input) whole. Returns 0, or -1 with the reason in err. */
int ml_input_read(const char *path, ml_input *out, char *err, size_t len);
void ml_input_free(ml_input *in);
/* True when path can be read only once: `-` or a FIFO (what was read is gone; a second open
 * waits for a writer that will not come). */
bool ml_input_once(const char *path);

/* The read limit: MEMLIFE_MAX_INPUT when set (a byte count: digits, optionally followed by B, KiB,
 * MiB, GiB, TiB, KB, MB, GB or TB; at least 1 byte), else ML_INPUT_MAX_DEFAULT. Returns 0, or -1
 * with err "MEMLIFE_MAX_INPUT='lots' is not a byte count (e.g. 64MiB)". */
int ml_input_max(uint64_t *out, char *err, size_t len);

/* Parses a byte count as ml_input_max accepts it. Returns 0 or -1 (junk, 0, past 2^63-1). */
int ml_parse_byte_count(const char *text, uint64_t *out);

/* Output and inputs: 0 when `output` is none of inputs[0..n) (by device and inode, so another
 * path or a hard link to an input counts as the input; an output that does not exist yet is no
 * input). -1 with err "output file is the input 'IN' (the same file); refusing to overwrite an input".
 * An input word may carry a ":PLAN" suffix (equiv): the part before the last ':' counts too. */
int ml_output_check(const char *output, const char *const *inputs, size_t n, char *err,
                    size_t len);

#endif
