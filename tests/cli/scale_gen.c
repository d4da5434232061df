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
 *   scale_gen races N     N steps of overlapped work on two streams (world 1), FSDP's prefetch
 *                         pattern: in groups of six, 'ag' waits for default's last use, a compute
 *                         on 'ag' writes element k of one big buffer, 'ag' records, default waits
 *                         and reads element k, default records (k going up, one new race
 *                         segment per group); every 64th group reads the whole buffer instead
 *                         (a read over every segment since the last one). No host sync until
 *                         the end; clean, so lint walks all of it.
 *   scale_gen fsdp L      schedules/fsdp_prefetch.yaml's step with L layers (world 4, 64 MiB a
 *                         layer, gathers prefetched on 'ag', reduce-scatters on 'rs'): 22 + 13 L
 *                         ops, so L = 14 is a 204-op step, for the plot screenshots (docs/img)
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

static void races(long n) {
    long groups = n / 6;
    printf("name: scale-races\nworld: 1\ndtype: float32\nstreams: [ag]\nevents: [e, used]\n"
           "steps:\n");
    printf("  - alloc: {buf: x, count: %ld}\n", groups + 1);
    printf("  - record: {event: used, stream: default}\n");
    for (long k = 0; k < groups; k++) {
        printf("  - wait: {event: used, stream: ag}\n");
        printf("  - compute: {writes: [\"x[%ld:1]\"], stream: ag}\n", k);
        printf("  - record: {event: e, stream: ag}\n");
        printf("  - wait: {event: e, stream: default}\n");
        if (k % 64 == 63)
            printf("  - compute: {reads: [x]}\n");
        else
            printf("  - compute: {reads: [\"x[%ld:1]\"]}\n", k);
        printf("  - record: {event: used, stream: default}\n");
    }
    printf("  - sync: device\n  - free: x\n");
}

static void fsdp(long L) {
    printf("name: fsdp-prefetch-%ld\nworld: 4\ndtype: int32\nstreams: [ag, rs]\nevents: [fwd, reduced", L);
    for (long k = 0; k < L; k++)
        printf(", g%ld, b%ld", k, k);
    printf("]\nlet:\n  P: 64MiB\n  q: ceil_div(P / 4, world)\nsteps:\n");
    printf("  - alloc: {buf: param_shards, count: %ld * q, init: rank_iota}\n", L);
    printf("  - alloc: {buf: grad_shards, count: %ld * q, init: {const: 0}}\n", L);
    for (long k = 0; k < L; k++)
        printf("  - alloc: {buf: params%ld, count: world * q}\n  - alloc: {buf: grads%ld, count: world * q}\n", k, k);
    printf("  - all_gather: {send: \"param_shards[0 : q]\", recv: params0, stream: ag}\n"
           "  - record: {event: g0, stream: ag}\n");
    for (long k = 0; k < L; k++) {
        if (k + 1 < L)
            printf("  - all_gather: {send: \"param_shards[%ld * q : q]\", recv: params%ld, stream: ag}\n"
                   "  - record: {event: g%ld, stream: ag}\n", k + 1, k + 1, k + 1);
        printf("  - wait: {event: g%ld, stream: default}\n  - compute: {reads: [params%ld], time: 400}\n", k, k);
    }
    printf("  - record: {event: fwd, stream: default}\n  - wait: {event: fwd, stream: ag}\n");
    for (long k = L - 1; k >= 0; k--)
        printf("  - all_gather: {send: \"param_shards[%ld * q : q]\", recv: params%ld, stream: ag}\n"
               "  - record: {event: g%ld, stream: ag}\n  - wait: {event: g%ld, stream: default}\n"
               "  - compute: {reads: [params%ld], writes: [grads%ld], time: 800}\n"
               "  - record: {event: b%ld, stream: default}\n  - wait: {event: b%ld, stream: rs}\n"
               "  - reduce_scatter: {send: grads%ld, recv: \"grad_shards[%ld * q : q]\", stream: rs}\n",
               k, k, k, k, k, k, k, k, k, k);
    printf("  - record: {event: reduced, stream: rs}\n  - wait: {event: reduced, stream: default}\n"
           "  - compute: {reads: [grad_shards, param_shards], writes: [param_shards], time: 200}\n"
           "  - sync: device\n  - free: [param_shards, grad_shards");
    for (long k = 0; k < L; k++)
        printf(", params%ld, grads%ld", k, k);
    printf("]\n");
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
    else if (!strcmp(argv[1], "fsdp"))
        fsdp(n);
    else if (!strcmp(argv[1], "races"))
        races(n);
    else if (!strcmp(argv[1], "name"))
        long_name(n);
    else if (!strcmp(argv[1], "nest"))
        nest(n);
    else
        return 2;
    return 0;
}
