/* SPDX-License-Identifier: MIT */
/* scale_gen.c — writes big schedules for tests/cli/scale.sh.
 *
 *   scale_gen steps N     N steps over a few buffer names: cycles of alloc, all_reduce, free
 *                         (every third step a collective), world 1, so the cost is the loader's
 *                         and one rank's expansion, lint and prediction per written step.
 *   scale_gen buffers N   N distinct buffers live at once (1 KiB each, so the device model
 *                         packs them into shared 2 MiB pages), one all_reduce on each, then one
 *                         free of them all: the symbol table, lint's per-buffer state and the
 *                         predictor's live set at N names.
 *   scale_gen name LEN    one buffer whose name is LEN bytes long
 *   scale_gen nest DEPTH  DEPTH nested repeats around one step
 * Steps are in flow style, one per line, as a generated schedule would be written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void header(const char *name, int world) {
    printf("name: %s\nworld: %d\ndtype: float32\nsteps:\n", name, world);
}

static void steps(long n) {
    header("scale-steps", 1);
    for (long k = 0; k < n; k++) {
        long b = (k / 3) % 64;
        switch (k % 3) {
        case 0: printf("  - alloc: {buf: b%ld, bytes: 4096}\n", b); break;
        case 1: printf("  - all_reduce: {buf: b%ld}\n", b); break;
        default: printf("  - free: b%ld\n", b); break;
        }
    }
}

static void buffers(long n) {
    header("scale-buffers", 1);
    for (long k = 0; k < n; k++)
        printf("  - alloc: {buf: b%ld, bytes: 1KiB}\n", k);
    for (long k = 0; k < n; k++)
        printf("  - all_reduce: {buf: b%ld}\n", k);
    printf("  - free:\n");
    for (long k = 0; k < n; k++)
        printf("      - b%ld\n", k);
}

static void long_name(long len) {
    header("scale-name", 1);
    char *name = malloc((size_t)len + 1);
    if (!name)
        exit(2);
    memset(name, 'n', (size_t)len);
    name[len] = '\0';
    printf("  - alloc: {buf: %s, bytes: 1KiB}\n  - free: %s\n", name, name);
    free(name);
}

static void nest(long depth) {
    header("scale-nest", 1);
    for (long k = 0; k < depth; k++)
        printf("%*s- repeat:\n%*s    count: 1\n%*s    steps:\n", (int)(2 + 6 * k), "",
               (int)(2 + 6 * k), "", (int)(2 + 6 * k), "");
    printf("%*s- sync: device\n", (int)(2 + 6 * depth), "");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: scale_gen steps|buffers|name|nest N\n");
        return 2;
    }
    long n = atol(argv[2]);
    if (!strcmp(argv[1], "steps"))
        steps(n);
    else if (!strcmp(argv[1], "buffers"))
        buffers(n);
    else if (!strcmp(argv[1], "name"))
        long_name(n);
    else if (!strcmp(argv[1], "nest"))
        nest(n);
    else
        return 2;
    return 0;
}
