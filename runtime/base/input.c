/* SPDX-License-Identifier: MIT */
/* input.c — bounded reads of regular files and standard input; output-is-an-input check
 * (input.h). */
#include "base/input.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#define ML_FIFO_WRITER_WAIT_MS 1000   /* read_fifo: how long a FIFO may have no writer */
#define ML_FIFO_SLICE_MS 20

static const struct {
    const char *name;
    uint64_t scale;
} units[] = {
    {"B", 1},
    {"KiB", (uint64_t)1 << 10}, {"MiB", (uint64_t)1 << 20}, {"GiB", (uint64_t)1 << 30},
    {"TiB", (uint64_t)1 << 40},
    {"KB", 1000}, {"MB", 1000000}, {"GB", 1000000000}, {"TB", 1000000000000},
};

int ml_parse_byte_count(const char *text, uint64_t *out) {
    const char *p = text;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++)
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return -1;
    while (*p == ' ')
        p++;
    uint64_t scale = 1;
    if (*p) {
        size_t k = 0;
        while (k < sizeof units / sizeof *units && strcmp(units[k].name, p))
            k++;
        if (k == sizeof units / sizeof *units)
            return -1;
        scale = units[k].scale;
    }
    if (__builtin_mul_overflow(v, scale, &v) || v == 0 || v > (uint64_t)INT64_MAX)
        return -1;
    *out = v;
    return 0;
}

int ml_input_max(uint64_t *out, char *err, size_t len) {
    const char *v = getenv(ML_INPUT_MAX_ENV);
    *out = ML_INPUT_MAX_DEFAULT;
    if (!v || !*v)
        return 0;   /* empty: the default, as unset */
    if (ml_parse_byte_count(v, out) != 0) {
        snprintf(err, len, "%s='%s' is not a byte count of at least 1 (e.g. 64MiB)",
                 ML_INPUT_MAX_ENV, v);
        return -1;
    }
    return 0;
}

/* What a path that is not a regular file is, for the message. */
static const char *kind_of(mode_t m) {
    if (S_ISFIFO(m))
        return "a FIFO (named pipe)";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

static int refuse_kind(mode_t m, char *err, size_t len) {
    if (S_ISCHR(m))
        snprintf(err, len, "is %s, not a regular file (give '-' to read standard input)",
                 kind_of(m));
    else
        snprintf(err, len, "is %s, not a regular file", kind_of(m));
    return -1;
}

/* Reads fd to its end, at most max bytes; cap is the first buffer size; first: a byte already
 * read from it (read_fifo's), or NULL. */
static int read_bounded(int fd, const char *what, uint64_t max, size_t cap, ml_input *out,
                        char *err, size_t len, const char *first) {
    size_t n = 0;
    char *buf = malloc(cap + 1);
    if (buf && first)
        buf[n++] = *first;   /* cap is at least 4 KiB */
    for (;;) {
        if (!buf) {
            snprintf(err, len, "cannot allocate %zu bytes to read it", cap + 1);
            return -1;
        }
        if (n == cap) {
            /* Full: one byte more than the limit tells "larger" from "exactly the limit". */
            if (n > max) {
                free(buf);
                snprintf(err, len, "%s is above the input limit of %" PRIu64 " bytes (%s)", what,
                         max, ML_INPUT_MAX_ENV);
                return -1;
            }
            size_t grown = cap < max / 2 ? cap * 2 : (size_t)max + 1;
            char *b = realloc(buf, grown + 1);
            if (!b) {
                free(buf);
                buf = NULL;
                cap = grown;
                continue;
            }
            buf = b;
            cap = grown;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, len, "cannot read file: %s", strerror(errno));
            free(buf);
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > max) {
        free(buf);
        snprintf(err, len, "%s is above the input limit of %" PRIu64 " bytes (%s)", what, max,
                 ML_INPUT_MAX_ENV);
        return -1;
    }
    buf[n] = '\0';
    out->data = buf;
    out->len = n;
    return 0;
}

/* A FIFO (a pipe by name: /dev/stdin, <(...), mkfifo's) opened O_NONBLOCK, read as `-` is once
 * a writer holds it open. A read that may not block tells: data, EAGAIN (a writer, nothing yet)
 * or 0 (no writer). With none, it waits ML_FIFO_WRITER_WAIT_MS for one (a `mkfifo` whose writer
 * starts beside memlife), a slice at a time, then refuses: opening it blocking, as `cat` does,
 * would hang for as long as no writer comes. Once a writer is there the read blocks as a
 * stream's does, up to the limit. */
static int read_fifo(int fd, uint64_t max, ml_input *out, char *err, size_t len) {
    char first;
    ssize_t r = -1;
    for (int waited = 0;; waited += ML_FIFO_SLICE_MS) {
        r = read(fd, &first, 1);
        if (r > 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
            break;
        if (r < 0 && errno == EAGAIN)
            break;   /* a writer, nothing written yet */
        if (waited >= ML_FIFO_WRITER_WAIT_MS) {
            snprintf(err, len, "is a FIFO (named pipe) that no process writes to (waited %d ms)",
                     ML_FIFO_WRITER_WAIT_MS);
            return -1;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, ML_FIFO_SLICE_MS);   /* a writer that writes wakes it early */
    }
    if (r < 0 && errno != EAGAIN) {
        snprintf(err, len, "cannot read file: %s", strerror(errno));
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        snprintf(err, len, "cannot read file: %s", strerror(errno));
        return -1;
    }
    if (read_bounded(fd, "the FIFO", max, 1 << 16, out, err, len, r > 0 ? &first : NULL) != 0)
        return -1;
    return 0;
}

int ml_input_read(const char *path, ml_input *out, char *err, size_t len) {
    out->data = NULL;
    out->len = 0;
    uint64_t max;
    if (ml_input_max(&max, err, len) != 0)
        return -1;
    if (!strcmp(path, "-"))
        return read_bounded(STDIN_FILENO, "standard input", max, 1 << 16, out, err, len, NULL);
    /* stat first: refusing a device must not open it (opening some devices acts). */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
        return refuse_kind(st.st_mode, err, len);
    /* O_NONBLOCK: a FIFO's open returns at once, writer or not (read_fifo). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, len, "cannot open file: %s", strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(err, len, "cannot stat file: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (S_ISFIFO(st.st_mode)) {
        int rc = read_fifo(fd, max, out, err, len);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return refuse_kind(st.st_mode, err, len);
    }
    if ((uint64_t)st.st_size > max) {
        snprintf(err, len, "is %" PRIu64 " bytes, above the input limit of %" PRIu64 " bytes (%s)",
                 (uint64_t)st.st_size, max, ML_INPUT_MAX_ENV);
        close(fd);
        return -1;
    }
    /* The size is known: one buffer, unless the file grows while it is read. */
    size_t cap = st.st_size > 0 ? (size_t)st.st_size : 1 << 12;
    int rc = read_bounded(fd, "the file", max, cap, out, err, len, NULL);
    close(fd);
    return rc;
}

bool ml_input_once(const char *path) {
    struct stat st;
    return !strcmp(path, "-") || (stat(path, &st) == 0 && S_ISFIFO(st.st_mode));
}

void ml_input_free(ml_input *in) {
    free(in->data);
    in->data = NULL;
    in->len = 0;
}

/* True when a and b are one file (st_dev and st_ino of existing paths). */
static bool same_file(const struct stat *a, const char *b) {
    struct stat sb;
    return stat(b, &sb) == 0 && a->st_dev == sb.st_dev && a->st_ino == sb.st_ino;
}

int ml_output_check(const char *output, const char *const *inputs, size_t n, char *err,
                    size_t len) {
    struct stat so;
    if (!output || !strcmp(output, "-") || stat(output, &so) != 0 || !S_ISREG(so.st_mode))
        return 0;   /* stdout, a file to be created, /dev/null: no input is replaced */
    for (size_t k = 0; k < n; k++) {
        const char *in = inputs[k];
        bool same = same_file(&so, in);
        const char *colon = strrchr(in, ':');
        if (!same && colon && colon > in) {
            char *file = strndup(in, (size_t)(colon - in));
            if (!file)
                abort();
            same = same_file(&so, file);
            free(file);
        }
        if (same) {
            snprintf(err, len, "output file is the input '%s' (the same file); refusing to "
                     "overwrite an input", in);
            return -1;
        }
    }
    return 0;
}
