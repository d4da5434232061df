/* SPDX-License-Identifier: MIT */
/* util.c — arena, growable vectors, diagnostics, atomic file writes and small formatters. */
#include "base/util.h"
#include "base/human.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- Arena ------------------------------------------------------------------------------------ */

typedef struct ml_arena_block {
    struct ml_arena_block *prev;
    size_t size, used;
    bool own;           /* one array of ml_arena_grow's, alone: it may be realloc'd */
    /* 16-byte aligned payload follows */
} ml_arena_block;

struct ml_arena {
    ml_arena_block *head;
    size_t next_size;   /* size of the next block: doubles up to a cap, so blocks are O(log n) */
    size_t handed_out;
};

#define ARENA_HEADER ((sizeof(ml_arena_block) + 15u) & ~(size_t)15u)
#define ARENA_FIRST_BLOCK ((size_t)16 << 10)
#define ARENA_MAX_BLOCK ((size_t)64 << 20)
#define ARENA_OWN_BLOCK ((size_t)256 << 10) /* ml_arena_grow: arrays this large get a block each */

/* ---- The one allocation-failure path ---------------------------------------------------------- */

void ml_out_of_memory(size_t bytes) {
    /* _exit, not exit: with no memory left, atexit handlers (stdio's, MPI's, a sanitizer's leak
     * check) may need memory themselves; the message is all there is to say. */
    fprintf(stderr, "memlife: error: out of memory (%zu bytes)\n", bytes);
    fflush(stderr);
    _exit(ML_EXIT_RUNTIME);
}

void ml_internal_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("memlife: internal error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void *ml_xmalloc(size_t size) {
    void *p = malloc(size ? size : 1);
    if (!p)
        ml_out_of_memory(size);
    return p;
}

void *ml_xcalloc(size_t n, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes))
        ml_out_of_memory(SIZE_MAX);
    /* calloc(0, ...) may return NULL: one byte keeps "NULL means failure" true. */
    void *p = calloc(bytes ? n : 1, bytes ? size : 1);
    if (!p)
        ml_out_of_memory(bytes);
    return p;
}

void *ml_xrealloc(void *p, size_t size) {
    void *q = realloc(p, size ? size : 1);
    if (!q)
        ml_out_of_memory(size);
    return q;
}

char *ml_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = ml_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

#define xcalloc ml_xcalloc
#define xrealloc ml_xrealloc

ml_arena *ml_arena_new(void) {
    ml_arena *a = xcalloc(1, sizeof *a);
    a->next_size = ARENA_FIRST_BLOCK;
    return a;
}

void ml_arena_free(ml_arena *a) {
    if (!a)
        return;
    for (ml_arena_block *b = a->head, *prev; b; b = prev) {
        prev = b->prev;
        free(b);
    }
    free(a);
}

void *ml_arena_alloc(ml_arena *a, size_t size) {
    size = (size + 15u) & ~(size_t)15u;
    if (size == 0)
        size = 16;
    ml_arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t bsize = a->next_size;
        if (a->next_size < ARENA_MAX_BLOCK)
            a->next_size *= 2;
        if (bsize < size)
            bsize = size;
        /* calloc: fresh pages come zeroed from the kernel, so zeroing costs nothing extra. */
        b = xcalloc(1, ARENA_HEADER + bsize);
        b->size = bsize;
        b->prev = a->head;
        a->head = b;
    }
    void *p = (char *)b + ARENA_HEADER + b->used;
    b->used += size;
    a->handed_out += size;
    return p;
}

/* Growing an array by doubling through ml_arena_alloc leaves every old copy behind: as much
 * memory again as the final array, all of it zeroed and copied (optimize's trees at 100k steps).
 * So the last allocation of the head block grows where it is while the block has room, and a
 * large array lives alone in a block of its own (linked behind the head, so that small
 * allocations go on in the head) that realloc grows: in place or by remapping pages for big
 * ones, and the old copy is gone. */
void *ml_arena_grow(ml_arena *a, void *p, size_t old_size, size_t new_size) {
    size_t olda = (old_size + 15u) & ~(size_t)15u, newa = (new_size + 15u) & ~(size_t)15u;
    if (!p || newa <= olda)
        return p ? p : ml_arena_alloc(a, new_size);
    ml_arena_block *h = a->head;
    if (h && !h->own && (char *)p + olda == (char *)h + ARENA_HEADER + h->used &&
        h->size - h->used >= newa - olda) {
        h->used += newa - olda;   /* the block's unused end is still calloc's zeros */
        a->handed_out += newa - olda;
        return p;
    }
    if (newa < ARENA_OWN_BLOCK) {
        void *q = ml_arena_alloc(a, new_size);
        memcpy(q, p, old_size);
        return q;
    }
    /* p's own block, if it has one: the link that points at it is the one to update */
    ml_arena_block **link = &a->head;
    while (*link && !((*link)->own && (char *)*link + ARENA_HEADER == (char *)p))
        link = &(*link)->prev;
    ml_arena_block *b;
    if (*link) {
        b = xrealloc(*link, ARENA_HEADER + newa); /* its new end is not zeroed: see util.h */
        *link = b;
    } else {
        b = xcalloc(1, ARENA_HEADER + newa);
        b->own = true;
        memcpy((char *)b + ARENA_HEADER, p, old_size);
        ml_arena_block **at = a->head ? &a->head->prev : &a->head;
        b->prev = *at;
        *at = b;
    }
    b->size = b->used = newa;
    a->handed_out += newa - olda;
    return (char *)b + ARENA_HEADER;
}

char *ml_arena_strndup(ml_arena *a, const char *s, size_t n) {
    char *p = ml_arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

size_t ml_arena_bytes(const ml_arena *a) { return a->handed_out; }

/* ---- Vectors ---------------------------------------------------------------------------------- */

void ml_vec_init(ml_vec *v, size_t item_size) {
    v->items = NULL;
    v->n = v->cap = 0;
    v->item_size = item_size;
}

void *ml_vec_push(ml_vec *v) {
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 8;
        v->items = xrealloc(v->items, v->cap * v->item_size);
    }
    void *slot = (char *)v->items + v->n * v->item_size;
    memset(slot, 0, v->item_size);
    v->n++;
    return slot;
}

void ml_vec_free(ml_vec *v) {
    free(v->items);
    v->items = NULL;
    v->n = v->cap = 0;
}

/* ---- Diagnostics ------------------------------------------------------------------------------ */

void ml_diags_init(ml_diags *d) {
    memset(d, 0, sizeof *d);
    ml_vec_init(&d->items, sizeof(ml_diag));
}

void ml_diags_free(ml_diags *d) {
    for (size_t k = 0; k < d->items.n; k++)
        free(ML_VEC_AT(&d->items, ml_diag, k).text);
    ml_vec_free(&d->items);
    d->errors = d->warnings = 0;
}

void ml_diag_add(ml_diags *d, ml_diag_level level, const char *file, ml_mark mark, int rank,
                 const char *code, const char *fmt, ...) {
    if (level == ML_DIAG_ERROR) {
        d->errors++;
        /* Still counted, so callers know there were more than they see. */
        if (d->max_errors && d->errors > d->max_errors)
            return;
    } else if (level == ML_DIAG_WARNING) {
        d->warnings++;
    } else if (d->max_errors && d->errors > d->max_errors) {
        return;   /* a note belongs to the error before it, which was left out */
    }
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    if (!text)
        ml_out_of_memory(strlen(fmt));
    /* The file name is kept beside the text (one block, freed with it): a caller may name a
     * buffer of its own that is gone before the diagnostics are printed. */
    size_t tn = strlen(text) + 1, fn = file ? strlen(file) + 1 : 0;
    char *block = fn ? realloc(text, tn + fn) : text;
    if (!block)
        ml_out_of_memory(tn + fn);
    text = block;
    if (fn)
        memcpy(text + tn, file, fn);
    ml_diag *g = ml_vec_push(&d->items);
    g->level = level;
    g->file = fn ? text + tn : NULL;
    g->mark = mark;
    g->text = text;
    g->rank = rank;
    g->code = code;
}

static const char *const level_names[] = {"error", "warning", "note"};

/* "file:line:col: error: text [rank N]"; a missing file or line (0) is left out, so a
 * diagnostic about the command line reads "error: text". */
static void diag_format(const ml_diag *g, const char *on, const char *off, char *buf, size_t len) {
    if (!len)
        return;
    char where[4096 + 48] = "";
    if (g->file && g->mark.line)
        snprintf(where, sizeof where, "%s:%u:%u: ", g->file, g->mark.line, g->mark.col);
    else if (g->file)
        snprintf(where, sizeof where, "%s: ", g->file);
    char rank[32] = "";
    if (g->rank >= 0)
        snprintf(rank, sizeof rank, " [rank %d]", g->rank);
    snprintf(buf, len, "%s%s%s%s: %s%s", where, on, level_names[g->level], off, g->text, rank);
}

void ml_diag_format(const ml_diag *g, char *buf, size_t len) { diag_format(g, "", "", buf, len); }

/* The level word coloured where the stream takes colour (base/human.h): the rest of the line
 * stays plain, so a file:line:col is still what an editor's parser reads. */
static const ml_hue level_hues[] = {ML_HUE_ERROR, ML_HUE_WARNING, ML_HUE_NOTE};

static size_t print_limit = ML_DIAGS_PRINT_LIMIT;

void ml_diags_set_print_limit(size_t n) { print_limit = n; }

/* The errors of one file that ml_diags_print printed and left out. The diagnostics keep their
 * own copy of the file name, so files are told apart by name; there are few of them. */
typedef struct {
    const char *file;
    size_t shown, hidden;
} file_tally;

static file_tally *tally_of(ml_vec *files, const char *file) {
    for (size_t k = files->n; k-- > 0;) {   /* the latest first: errors come grouped by file */
        file_tally *t = &ML_VEC_AT(files, file_tally, k);
        if (t->file == file || (t->file && file && !strcmp(t->file, file)))
            return t;
    }
    file_tally *t = ml_vec_push(files);
    *t = (file_tally){.file = file};
    return t;
}

void ml_diags_print(const ml_diags *d, FILE *f) {
    char line[8192];
    int fd = fileno(f);
    ml_vec files;
    ml_vec_init(&files, sizeof(file_tally));
    bool shown = true;   /* whether the last error was printed: its notes go with it */
    for (size_t k = 0; k < d->items.n; k++) {
        const ml_diag *g = &ML_VEC_AT(&d->items, ml_diag, k);
        if (g->level == ML_DIAG_ERROR) {
            file_tally *t = tally_of(&files, g->file);
            shown = !print_limit || t->shown < print_limit;
            if (shown)
                t->shown++;
            else
                t->hidden++;
        }
        if (!shown && g->level != ML_DIAG_WARNING)
            continue;
        diag_format(g, ml_color(level_hues[g->level], fd), ml_color_end(fd), line, sizeof line);
        fprintf(f, "%s\n", line);
    }
    /* As gcc and clang do past their limit: say how many more there were, and how to see them. */
    for (size_t k = 0; k < files.n; k++) {
        const file_tally *t = &ML_VEC_AT(&files, file_tally, k);
        if (!t->hidden)
            continue;
        char text[128];
        snprintf(text, sizeof text, "%zu more error%s not shown (--max-errors 0 shows all)",
                 t->hidden, t->hidden == 1 ? "" : "s");
        const ml_diag more = {.level = ML_DIAG_NOTE, .file = t->file, .text = text, .rank = -1};
        diag_format(&more, ml_color(level_hues[ML_DIAG_NOTE], fd), ml_color_end(fd), line,
                    sizeof line);
        fprintf(f, "%s\n", line);
    }
    ml_vec_free(&files);
}

void ml_vreport(ml_diag_level level, const char *where, const char *fmt, va_list ap) {
    fprintf(stderr, "%s%s%s%s%s: ", where ? where : "", where ? ": " : "",
            ml_color(level_hues[level], 2), level_names[level], ml_color_end(2));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void ml_report(ml_diag_level level, const char *where, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ml_vreport(level, where, fmt, ap);
    va_end(ap);
}

ml_diags_mark ml_diags_mark_now(const ml_diags *d) {
    return (ml_diags_mark){d->items.n, d->errors, d->warnings};
}

void ml_diags_rewind(ml_diags *d, ml_diags_mark m) {
    for (size_t k = m.n; k < d->items.n; k++)
        free(ML_VEC_AT(&d->items, ml_diag, k).text);
    if (m.n < d->items.n)
        d->items.n = m.n;
    d->errors = m.errors;
    d->warnings = m.warnings;
}

const ml_diag *ml_diags_first_error(const ml_diags *d) {
    for (size_t k = 0; k < d->items.n; k++) {
        const ml_diag *g = &ML_VEC_AT(&d->items, ml_diag, k);
        if (g->level == ML_DIAG_ERROR)
            return g;
    }
    return NULL;
}

/* ---- Atomic file write ------------------------------------------------------------------------ */

static int write_all(int fd, const char *data, size_t len) {
    while (len) {
        ssize_t w = write(fd, data, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

/* A descriptor named by path: /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N. */
static int named_fd(const char *path) {
    if (!strcmp(path, "/dev/stdout"))
        return STDOUT_FILENO;
    if (!strcmp(path, "/dev/stderr"))
        return STDERR_FILENO;
    const char *n = !strncmp(path, "/dev/fd/", 8)           ? path + 8
                    : !strncmp(path, "/proc/self/fd/", 14) ? path + 14
                                                            : NULL;
    if (!n || !*n)
        return -1;
    int fd = 0;
    for (; *n; n++) {
        if (*n < '0' || *n > '9' || fd > 100000)
            return -1;
        fd = fd * 10 + (*n - '0');
    }
    return fd;
}

int ml_output_place(const char *path, int *fd, char *target, size_t len) {
    size_t n = strlen(path);
    if (n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(target, path, n + 1);
    /* Follow a chain of links by hand (as open(2) would, at most 40), checking each name for a
     * descriptor: a link to a file that does not exist yet names the file to create, which
     * realpath(3) cannot say. */
    for (int hop = 0; hop < 40; hop++) {
        *fd = named_fd(target);
        if (*fd >= 0)
            return ML_OUT_FD;
        struct stat st;
        if (stat(target, &st) == 0 && !S_ISREG(st.st_mode))
            return ML_OUT_IN_PLACE;
        char link[PATH_MAX];
        ssize_t k = readlink(target, link, sizeof link - 1);
        if (k < 0)
            return ML_OUT_REPLACE;   /* not a link (or nothing there yet): this name */
        link[k] = '\0';
        const char *slash = strrchr(target, '/');
        size_t dir = link[0] != '/' && slash ? (size_t)(slash - target + 1) : 0;
        if (dir + (size_t)k >= len) {
            errno = ENAMETOOLONG;
            return -1;
        }
        memmove(target + dir, link, (size_t)k + 1);   /* relative: beside the link */
    }
    errno = ELOOP;
    return -1;
}

/* Written in place (ML_OUT_IN_PLACE): renaming over a device would replace the node with a
 * plain file. */
static int write_special(const char *path, const char *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = write_all(fd, data, len);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* The temp file being written, for ml_write_abandon (a signal handler): its path lives in a
 * static buffer, set and cleared with the signals held off, so a handler sees it either whole
 * and still there or not at all. */
static char pending_tmp[PATH_MAX + 16];
static volatile sig_atomic_t pending;

/* The signals that end a process by default while it writes: each one whose action is still
 * the default gets abandon_signal for the length of the write. */
static const int abandon_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ};

void ml_write_abandon(void) {
    if (pending)
        unlink(pending_tmp);
    pending = 0;
}

/* Removes the temp file, then lets the signal do what it does by default: the handler returns
 * with the signal raised and blocked, so it ends the process the moment it returns. */
static void abandon_signal(int sig) {
    int saved = errno;
    ml_write_abandon();
    signal(sig, SIG_DFL);
    raise(sig);
    errno = saved;
}

static void hold_signals(bool hold, sigset_t *old) {
    sigset_t s;
    sigemptyset(&s);
    for (size_t k = 0; k < ML_ARRAY_LEN(abandon_signals); k++)
        sigaddset(&s, abandon_signals[k]);
    if (hold)
        sigprocmask(SIG_BLOCK, &s, old);
    else
        sigprocmask(SIG_SETMASK, old, NULL);
}

/* mkstemp for tmp, registered as pending with the signals held off, and abandon_signal for the
 * signals nobody handles (a command that handles them calls ml_write_abandon itself). */
static int create_pending(char *tmp, struct sigaction *saved) {
    sigset_t old;
    hold_signals(true, &old);
    int fd = mkstemp(tmp);
    if (fd >= 0) {
        size_t n = strlen(tmp);
        if (n < sizeof pending_tmp) {   /* longer: it cannot exist (PATH_MAX), kept unregistered */
            memcpy(pending_tmp, tmp, n + 1);
            pending = 1;
        }
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = abandon_signal;
        for (size_t k = 0; k < ML_ARRAY_LEN(abandon_signals); k++) {
            sigaction(abandon_signals[k], NULL, &saved[k]);
            if (saved[k].sa_handler == SIG_DFL)
                sigaction(abandon_signals[k], &sa, NULL);
        }
    }
    int e = errno;
    hold_signals(false, &old);
    errno = e;
    return fd;
}

/* The end of the write: renamed (rc 0) or removed, no longer pending, the signals' actions as
 * they were. */
static int finish_pending(const char *tmp, const char *target, int rc,
                          const struct sigaction *saved) {
    sigset_t old;
    hold_signals(true, &old);
    int e = errno;
    if (rc == 0 && rename(tmp, target) != 0) {
        rc = -1;
        e = errno;
    }
    if (rc != 0)
        unlink(tmp);
    pending = 0;
    for (size_t k = 0; k < ML_ARRAY_LEN(abandon_signals); k++) {
        struct sigaction now;
        sigaction(abandon_signals[k], NULL, &now);
        if (now.sa_handler == abandon_signal)
            sigaction(abandon_signals[k], &saved[k], NULL);
    }
    hold_signals(false, &old);
    errno = e;
    return rc;
}

int ml_write_file_atomic(const char *path, const char *data, size_t len) {
    int out_fd;
    char *target = malloc(PATH_MAX);
    if (!target)
        return -1;
    int kind = ml_output_place(path, &out_fd, target, PATH_MAX);
    if (kind != ML_OUT_REPLACE) {
        free(target);
        if (kind == ML_OUT_FD && out_fd == STDOUT_FILENO)
            fflush(stdout);   /* what stdio holds comes first, as it was printed first */
        return kind == ML_OUT_FD       ? write_all(out_fd, data, len)
               : kind == ML_OUT_IN_PLACE ? write_special(path, data, len)
                                         : -1;
    }
    size_t plen = strlen(target);
    char *tmp = malloc(plen + 16);
    if (!tmp) {
        free(target);
        return -1;
    }
    /* Same folder as the target, so rename(2) stays on one file system and is atomic. */
    memcpy(tmp, target, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    struct sigaction actions[ML_ARRAY_LEN(abandon_signals)];
    int fd = create_pending(tmp, actions);
    if (fd < 0) {
        int saved = errno;
        free(tmp);
        free(target);
        errno = saved;
        return -1;
    }
    /* mkstemp creates 0600; a report is an ordinary file: 0666 less the umask. */
    mode_t mask = umask(0);
    umask(mask);
    int rc = fchmod(fd, 0666 & ~mask);
    if (rc == 0)
        rc = write_all(fd, data, len);
    if (rc == 0)
        rc = fsync(fd);
    int saved = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    errno = saved;
    rc = finish_pending(tmp, target, rc, actions);
    saved = errno;
    free(tmp);
    free(target);
    errno = saved;
    return rc;
}

/* ---- Formatting ------------------------------------------------------------------------------- */

void ml_format_bytes(uint64_t bytes, char *buf, size_t len) {
    const uint64_t mib = (uint64_t)1 << 20, kib = 1024;
    if (bytes && bytes % mib == 0)
        snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes / mib));
    else if (bytes && bytes % kib == 0)
        snprintf(buf, len, "%llu KiB", (unsigned long long)(bytes / kib));
    else
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
}

void ml_format_mib(int64_t bytes, char *buf, size_t len) {
    /* Exact: thousandths of a MiB, rounded half away from zero, in 128-bit arithmetic. */
    __int128 b = bytes;
    bool neg = b < 0;
    if (neg)
        b = -b;
    __int128 milli = (b * 1000 + ((__int128)1 << 19)) >> 20;
    unsigned long long whole = (unsigned long long)(milli / 1000);
    unsigned frac = (unsigned)(milli % 1000);
    const char *sign = neg && milli ? "-" : "";
    if (frac == 0) {
        snprintf(buf, len, "%s%llu", sign, whole);
        return;
    }
    char f[4];
    snprintf(f, sizeof f, "%03u", frac);
    for (int k = 2; k > 0 && f[k] == '0'; k--)
        f[k] = '\0';
    snprintf(buf, len, "%s%llu.%s", sign, whole, f);
}

/* ---- Growable string -------------------------------------------------------------------------- */

static void str_reserve(ml_str *o, size_t extra) {
    if (o->n + extra + 1 <= o->cap)
        return;
    size_t cap = o->cap ? o->cap : 256;
    while (cap < o->n + extra + 1)
        cap *= 2;
    o->s = xrealloc(o->s, cap);
    o->cap = cap;
}

void ml_str_append(ml_str *o, const char *s, size_t len) {
    str_reserve(o, len);
    memcpy(o->s + o->n, s, len);
    o->n += len;
    o->s[o->n] = '\0';
}

void ml_put(char *buf, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

void ml_str_vprintf(ml_str *o, const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    char probe[256];
    int need = vsnprintf(probe, sizeof probe, fmt, ap);
    if (need >= 0 && (size_t)need < sizeof probe) {
        ml_str_append(o, probe, (size_t)need);
    } else if (need >= 0) {
        str_reserve(o, (size_t)need);
        vsnprintf(o->s + o->n, (size_t)need + 1, fmt, again);
        o->n += (size_t)need;
    }
    va_end(again);
}

void ml_str_printf(ml_str *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ml_str_vprintf(o, fmt, ap);
    va_end(ap);
}

void ml_str_free(ml_str *o) {
    free(o->s);
    o->s = NULL;
    o->n = o->cap = 0;
}

double ml_now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
