/* SPDX-License-Identifier: MIT */
/* usage.c — usage errors (cmd.h), at the bottom of cli/: every command and the option parser
 * report through it. */
#include "cmd.h"
#include "suggest.h"
#include "base/util.h"
#include "base/human.h"

#include <stdarg.h>

int ml_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ml_vreport(ML_DIAG_ERROR, NULL, fmt, ap);
    va_end(ap);
    if (cmd)
        fprintf(stderr, "hint: run 'memlife %s --help' for usage\n", cmd);
    else
        fputs("hint: run 'memlife help' for the list of commands\n", stderr);
    return ML_EXIT_INPUT;
}


int ml_usage_unknown(const char *cmd, const char *what, const char *name,
                     const char *const *cands, size_t n) {
    const char *s = ml_suggest(name, cands, n);
    if (s)
        return ml_usage_error(cmd, "unknown %s '%s'; did you mean '%s'?", what, name, s);
    return ml_usage_error(cmd, "unknown %s '%s'", what, name);
}
