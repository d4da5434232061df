/* SPDX-License-Identifier: MIT */
/* gen_mesh.c — writes an N-step schedule to stdout for the load benchmark (tests/bench.sh): a
 * training step on a 2-D mesh, unlike gen.c's shapes (which memlife was tuned on): world 4 as
 * dp 2 x tp 2 with a communicator per dimension, three streams, and per layer group:
 *  - the parameters' dp shard, gathered in place on the dp stream into the group's full
 *    tp-sharded weight (the rank's slot at its rank within the dp group: `(rank / 2) * e`);
 *  - the forward compute and its tensor-parallel all_reduce on tp (a third stream), the
 *    backward compute, ordered by events both ways;
 *  - the gradients reduce_scattered on dp into the shard, and an optimizer compute on the even
 *    tp ranks only (`when: rank % 2 == 0`: the ranks do not all expand alike), on half of it;
 *  - the group's frees.
 * Buffer names cycle through 1000 groups, each freed before its name comes back. The steps
 * left over at the end are `sync: device`.
 * Usage: gen_mesh N > file.yaml */
#include <stdio.h>
#include <stdlib.h>

/* One layer group; %1$d is its name. */
static const char *const group[] = {
    "  - alloc: {buf: w%1$d, bytes: W}\n",
    "  - copy: {src: s%1$d, dst: \"w%1$d[(rank / 2) * e : e]\", stream: dp}\n",
    "  - all_gather: {send: \"w%1$d[(rank / 2) * e : e]\", recv: w%1$d, comm: dp, stream: dp}\n",
    "  - record: {event: gathered, stream: dp}\n",
    "  - wait: {event: gathered}\n",
    "  - alloc:\n      buf: a%1$d\n      bytes: A\n",
    "  - compute: {reads: [w%1$d], writes: [a%1$d], time: 30}\n",
    "  - record: {event: act}\n",
    "  - wait: {event: act, stream: tp}\n",
    "  - all_reduce: {buf: a%1$d, comm: tp, stream: tp}\n",
    "  - record: {event: reduced, stream: tp}\n",
    "  - wait: {event: reduced}\n",
    "  - alloc: {buf: g%1$d, bytes: W}\n",
    "  - compute: {reads: [a%1$d, w%1$d], writes: [g%1$d], time: 60}\n",
    "  - free: [a%1$d, w%1$d]\n",
    "  - record: {event: grads}\n",
    "  - wait: {event: grads, stream: dp}\n",
    "  - reduce_scatter: {send: g%1$d, recv: s%1$d, op: avg, comm: dp, stream: dp}\n",
    "  - record: {event: scattered, stream: dp}\n",
    "  - wait: {event: scattered}\n",
    "  - when: rank %% 2 == 0\n    compute: {reads: [s%1$d], writes: [\"s%1$d[0 : e / 2]\"], time: 5}\n",
    "  - free: g%1$d\n",
};

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    printf("name: mesh-%ld\n"
           "about: generated 2-D mesh training benchmark, %ld steps\n"
           "world: 4\n"
           "dtype: bfloat16\n"
           "mesh: {dp: 2, tp: 2}\n"
           "comms:\n"
           "  dp: {mesh_dim: dp}\n"
           "  tp: {mesh_dim: tp}\n"
           "let:\n"
           "  W: 16 MiB             # a layer group's weight, this rank's tp shard of it\n"
           "  A: 48 MiB             # its activations\n"
           "  e: W / 2 / 2          # bf16 elements of the rank's dp shard\n"
           "streams: [dp, tp]\n"
           "events: [gathered, act, reduced, grads, scattered]\n"
           "steps:\n",
           n, n);
    const long len = (long)(sizeof group / sizeof group[0]);
    long k = 0;
    /* the shards live across the step: one per group name, allocated up front */
    long names = n / (len + 1) < 1000 ? n / (len + 1) : 1000;
    for (long g = 0; g < names && k < n; g++, k++)
        printf("  - alloc: {buf: s%ld, bytes: W / 2, init: rank_iota}\n", g);
    for (long g = 0; k + len <= n; k += len, g++)
        for (long t = 0; t < len; t++)
            printf(group[t], (int)(names ? g % names : 0));
    for (; k < n; k++)
        printf("  - sync: device\n");
    return 0;
}
