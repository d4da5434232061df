/* SPDX-License-Identifier: MIT */
/* lint_classes.c — the table behind `--no-lint NAME` (analyzer.h). A class is a set of lint
 * diagnostic codes; letting it through leaves the schedule to the runtime, which must then
 * refuse it itself (tests/mpi/nolint.sh runs each class on the host backend). A new class is one
 * row here. */
#include "lint/lint.h"

#include <stdio.h>
#include <string.h>

#define CODES(...) ((const char *const[]){__VA_ARGS__, NULL})

const lint_class lint_classes[] = {
    {"cross-rank", CODES("cross_rank"), "ranks that would issue different collectives"},
    {"hazards", CODES("hazard"), "a free or release racing an op on another stream"},
    {"use-after-free", CODES("use_after_free", "use_after_release"),
     "a use of a freed buffer or of a released chunk"},
    {"double-free", CODES("double_free"), "a free of a buffer already freed"},
    {"double-alloc", CODES("live_alloc"), "an alloc of a name that is still live"},
    {"double-release", CODES("double_release"), "a release of a buffer already released"},
    {"inplace-offsets", CODES("bad_inplace"),
     "send and recv overlapping elsewhere than at NCCL's in-place offset"},
    {"races", CODES("race"),
     "accesses of one buffer on two streams with no happens-before between them, one a write"},
};
const size_t lint_class_count = sizeof lint_classes / sizeof *lint_classes;

int lint_options_disable(lint_options *o, const char *name) {
    for (size_t k = 0; k < lint_class_count; k++)
        if (!strcmp(lint_classes[k].name, name)) {
            o->off |= 1u << k;
            return 0;
        }
    return -1;
}

bool lint_code_on(const lint_options *o, const char *code) {
    if (!o->off || !code)
        return true;
    for (size_t k = 0; k < lint_class_count; k++) {
        if (!(o->off & (1u << k)))
            continue;
        for (const char *const *c = lint_classes[k].codes; *c; c++)
            if (!strcmp(*c, code))
                return false;
    }
    return true;
}

void lint_class_list(char *buf, size_t len) {
    size_t at = 0;
    if (len)
        buf[0] = '\0';
    for (size_t k = 0; k < lint_class_count && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", k ? ", " : "", lint_classes[k].name);
}

_Static_assert(sizeof lint_classes / sizeof *lint_classes <= 32, "lint_options.off has 32 bits");
