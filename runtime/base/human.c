/* SPDX-License-Identifier: MIT */
/* human.c — sizes, width and colour for people (human.h). Self-contained (libc only): util.c
 * colours its diagnostics through it, so it may not use util.c back. */
#include "base/human.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

static bool exact_bytes;
static bool wide;
static ml_color_mode color_mode = ML_COLOR_AUTO;
static int target = STDOUT_FILENO;   /* ml_term_set_target */

void ml_human_set_bytes(bool exact) { exact_bytes = exact; }
void ml_term_set_wide(bool w) { wide = w; }
void ml_color_set_mode(ml_color_mode mode) { color_mode = mode; }
void ml_term_set_target(int fd) { target = fd; }

static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
enum { N_UNITS = sizeof units / sizeof units[0] };

void ml_human_size(uint64_t bytes, char *buf, size_t len) {
    int u = 0;
    while (u + 1 < N_UNITS && bytes >> (10 * (u + 1)))
        u++;
    uint64_t unit = (uint64_t)1 << (10 * u);
    if (exact_bytes || u == 0) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return;
    }
    if (bytes % unit == 0) {
        snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / unit), units[u]);
        return;
    }
    /* 3 significant digits: the decimals depend on the whole part, which rounding may carry up
     * (9.996 -> 10.0 -> "10"); the value is at most 2^64 / 2^10 * 100, so 128 bits hold it. */
    unsigned __int128 whole = bytes / unit;
    int dec = whole < 10 ? 2 : whole < 100 ? 1 : 0;
    unsigned __int128 pow = dec == 2 ? 100 : dec == 1 ? 10 : 1;
    unsigned __int128 scaled = ((unsigned __int128)bytes * pow + unit / 2) / unit;
    if (dec && scaled >= 1000) {   /* 9.996 -> 10.00 or 99.96 -> 100.0: one decimal fewer */
        dec--;
        pow /= 10;
        scaled = ((unsigned __int128)bytes * pow + unit / 2) / unit;
    }
    if (scaled >= 1024 * pow && u + 1 < N_UNITS) {   /* 1023.6 KiB -> ~1 MiB */
        snprintf(buf, len, "~1 %s", units[u + 1]);
        return;
    }
    /* the digits shown may still be the whole value (1.5 MiB, 1.25 KiB): then no '~' */
    const char *mark = scaled * unit == (unsigned __int128)bytes * pow ? "" : "~";
    unsigned long long w = (unsigned long long)(scaled / pow);
    unsigned f = (unsigned)(scaled % pow);
    if (dec == 2 && f % 10 == 0) {   /* trailing zeros dropped: 1.50 -> 1.5 */
        f /= 10;
        dec = 1;
    }
    if (f == 0)
        snprintf(buf, len, "%s%llu %s", mark, w, units[u]);
    else
        snprintf(buf, len, "%s%llu.%0*u %s", mark, w, dec, f, units[u]);
}

/* The terminal of the memlife that started this rank under mpirun (ml_term_export), else of
 * this process: whether stdout and stderr are terminals, and stdout's width (0: none). */
typedef struct {
    bool tty[3];
    size_t width;
} term_state;

/* The terminal's width from stdout, else stderr (optimize's table goes there when the YAML
 * goes to stdout); 0 when neither is a terminal. */
static size_t tty_width(void) {
    struct winsize ws;
    for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++)
        if (isatty(fd) == 1 && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
            return ws.ws_col;
    return 0;
}

static term_state term(void) {
    term_state t = {{false, isatty(STDOUT_FILENO) == 1, isatty(STDERR_FILENO) == 1}, 0};
    const char *env = getenv("MEMLIFE_TERM");   /* checked by exec/env.c */
    unsigned out, err;
    size_t width;
    if (env && sscanf(env, "%1u%1u:%zu", &out, &err, &width) == 3) {
        t.tty[1] = out == 1;
        t.tty[2] = err == 1;
        t.width = width;
    } else {
        t.width = tty_width();
    }
    return t;
}

/* Open MPI gives its local ranks' stdout and stderr a pseudo-terminal of its own, whatever
 * memlife's were: the ranks learn the real ones from MEMLIFE_TERM ("OE:WIDTH"). */
void ml_term_export(void) {
    term_state t = term();
    char v[48];
    snprintf(v, sizeof v, "%d%d:%zu", t.tty[1], t.tty[2], t.width);
    setenv("MEMLIFE_TERM", v, 1);
}

size_t ml_term_width(void) {
    if (wide || target == ML_TARGET_FILE)
        return 0;
    const char *env = getenv("COLUMNS");
    if (env && *env) {
        char *end;
        unsigned long v = strtoul(env, &end, 10);
        if (*end == '\0' && v > 0 && v < 100000)
            return (size_t)v;
    }
    term_state t = term();
    return t.tty[target == STDERR_FILENO ? 2 : 1] ? t.width : 0;   /* a pipe: every column */
}

const char *const ml_color_mode_names[] = {"auto", "always", "never", NULL};

bool ml_color_on(int fd) {
    if (fd == ML_FD_TARGET)
        fd = target;
    const char *no = getenv("NO_COLOR");
    if ((no && *no) || fd == ML_TARGET_FILE)
        return false;
    if (color_mode == ML_COLOR_AUTO)
        return fd == STDOUT_FILENO || fd == STDERR_FILENO ? term().tty[fd] : isatty(fd) == 1;
    return color_mode == ML_COLOR_ALWAYS;
}

/* SGR codes: bold red errors and failures, bold magenta warnings, bold cyan notes, green ok. */
static const char *const hues[ML_HUE_COUNT] = {
    [ML_HUE_ERROR] = "\033[1;31m", [ML_HUE_WARNING] = "\033[1;35m", [ML_HUE_NOTE] = "\033[1;36m",
    [ML_HUE_OK] = "\033[32m",      [ML_HUE_FAIL] = "\033[1;31m",
};

const char *ml_color(ml_hue hue, int fd) {
    return (unsigned)hue < ML_HUE_COUNT && ml_color_on(fd) ? hues[hue] : "";
}

const char *ml_color_end(int fd) { return ml_color_on(fd) ? "\033[0m" : ""; }

size_t ml_visible_len(const char *s, size_t n) {
    size_t w = 0;
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '\033' && k + 1 < n && s[k + 1] == '[') {
            k += 2;
            while (k < n && s[k] != 'm')
                k++;
            continue;
        }
        w++;
    }
    return w;
}
