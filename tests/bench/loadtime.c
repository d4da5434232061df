/* SPDX-License-Identifier: MIT */
/* loadtime.c — times sched_load_file on one file (the loader alone, without lint or predict).
 * Prints "steps seconds arena_bytes". Usage: loadtime FILE */
#include <stdio.h>

#include "ir/sched.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: loadtime FILE\n");
        return 2;
    }
    ml_diags d;
    ml_diags_init(&d);
    double t0 = ml_now_seconds();
    sched *s = sched_load_file(argv[1], NULL, &d);
    double t1 = ml_now_seconds();
    ml_diags_print(&d, stderr);
    if (!s)
        return 2;
    printf("%llu %.3f %zu\n", (unsigned long long)s->n_steps_total, t1 - t0, ml_arena_bytes(s->arena));
    sched_free(s);
    ml_diags_free(&d);
    return 0;
}
