/* SPDX-License-Identifier: MIT */
/* gen_capture.c — a schedule of the shape `memlife capture --vary MBS` writes for an FSDP2 GPT
 * step (tests/capture/programs/gpt.py), without the capture's minutes: rank 0 of world 8 on
 * three streams (s1 the all-gathers' copies, s3 the all-gathers, s2 the reduce-scatters), every
 * step flat (alloc, free, record, wait, all_gather with the rank's shard as its send view,
 * reduce_scatter), the activations' sizes affine in MBS ("512*MBS"), the parameters' and
 * gradients' constant, and a torch view. Each layer is what the capture records for a block:
 * its shards allocated at init, then in the step the all-gather of its parameters, its forward
 * activations, and in reverse order its backward (the parameters gathered again, the gradients'
 * temporaries, the reduce-scatter of its gradient), then Adam's state and update per layer.
 *
 * usage: gen_capture LAYERS > FILE.yaml   (about 147 steps per layer) */
#include <stdio.h>
#include <stdlib.h>

static unsigned ev;   /* events used so far */

static void sync_to(const char *from, const char *to) {
    printf("    - record: {event: f%u, stream: %s}\n", ev, from);
    printf("    - wait: {event: f%u, stream: %s}\n", ev, to);
    ev++;
}

static const char *const params[] = {"norm1", "qkv", "proj", "norm2", "fc1", "fc2"};
static const unsigned long param_bytes[] = {256, 98304, 32768, 256, 131072, 131072};

/* The layer's parameters gathered (their shards on s1, the all_gather on s3) and unsharded on
 * the default stream; tag tells the forward's from the backward's. */
static void gather(int l, int tag) {
    printf("    - alloc: {buf: act/l%d_ag%d, bytes: 49216, stream: s1}\n", l, tag);
    printf("    - alloc: {buf: ag/l%d_%d, bytes: 393728, stream: s1}\n", l, tag);
    sync_to("s1", "s3");
    printf("    - all_gather: {send: \"ag/l%d_%d[rank*49216 : 49216]\", recv: ag/l%d_%d, "
           "stream: s3}\n", l, tag, l, tag);
    printf("    - record: {event: f%u, stream: s3}\n", ev);
    printf("    - free: act/l%d_ag%d\n", l, tag);
    printf("    - wait: {event: f%u, stream: default}\n", ev++);
    for (int k = 0; k < 6; k++)
        printf("    - alloc: {buf: l%d.%s/unsharded%d, bytes: %lu}\n", l, params[k], tag,
               param_bytes[k]);
    printf("    - free: ag/l%d_%d\n", l, tag);
}

static void ungather(int l, int tag) {
    for (int k = 0; k < 6; k++)
        printf("    - free: l%d.%s/unsharded%d\n", l, params[k], tag);
}

/* Activations kept for the backward: name and bytes per micro-batch. */
static const char *const acts[] = {"norm1", "norm1r", "qkv", "attn", "lse", "proj", "res1",
                                   "norm2", "norm2r", "fc1", "gelu", "fc2", "res2"};
static const unsigned act_mbs[] = {512, 8, 1536, 512, 16, 512, 512, 512, 8, 2048, 2048, 512, 512};
enum { N_ACTS = sizeof acts / sizeof *acts };

static void forward(int l) {
    gather(l, 0);
    for (int k = 0; k < N_ACTS; k++)
        printf("    - alloc: {buf: act/l%d.%s, bytes: \"%u*MBS\"}\n", l, acts[k], act_mbs[k]);
    printf("    - alloc: {buf: act/l%d.seed, bytes: 8}\n", l);
    printf("    - free: act/l%d.proj\n", l);
    printf("    - free: act/l%d.fc2\n", l);
    ungather(l, 0);
}

static void backward(int l) {
    gather(l, 1);
    /* each activation's gradient: a temporary of its size, the activation freed after it */
    for (int k = N_ACTS - 1; k >= 0; k--) {
        if (k == 5 || k == 11)   /* proj and fc2: freed in the forward */
            continue;
        printf("    - alloc: {buf: tmp/l%d.%s, bytes: \"%u*MBS\"}\n", l, acts[k], act_mbs[k]);
        if (k % 3 == 0)
            printf("    - alloc: {buf: tmp/l%d.%s_w, bytes: %lu}\n", l, acts[k],
                   param_bytes[k % 6]);
        printf("    - free: act/l%d.%s\n", l, acts[k]);
        if (k + 1 < N_ACTS && k + 1 != 5 && k + 1 != 11)
            printf("    - free: tmp/l%d.%s\n", l, acts[k + 1]);
    }
    printf("    - free: tmp/l%d.%s\n", l, acts[0]);
    printf("    - free: act/l%d.seed\n", l);
    ungather(l, 1);
    printf("    - alloc: {buf: rs/l%d, bytes: 787456}\n", l);
    for (int k = 0; k < N_ACTS; k += 3)
        printf("    - free: tmp/l%d.%s_w\n", l, acts[k]);
    sync_to("default", "s2");
    printf("    - alloc: {buf: l%d/grad, bytes: 98432, stream: s2}\n", l);
    printf("    - reduce_scatter: {send: rs/l%d, recv: l%d/grad, op: sum, stream: s2}\n", l, l);
    printf("    - record: {event: f%u, stream: s2}\n", ev);
    printf("    - wait: {event: f%u, stream: default}\n", ev++);
    printf("    - free: rs/l%d\n", l);
}

static void adam(int l) {
    printf("    - alloc: {buf: adam/l%d.m, bytes: 98432}\n", l);
    printf("    - alloc: {buf: adam/l%d.v, bytes: 98432}\n", l);
    printf("    - alloc: {buf: adam/l%d.t, bytes: 98432}\n", l);
    printf("    - free: adam/l%d.t\n", l);
    printf("    - free: l%d/grad\n", l);
}

int main(int argc, char **argv) {
    int layers = argc > 1 ? atoi(argv[1]) : 0;
    if (layers < 1) {
        fprintf(stderr, "usage: gen_capture LAYERS\n");
        return 2;
    }
    /* a line per step: sizes first, the events' list after (its length is known at the end) */
    printf("# gen_capture %d: the shape of a `memlife capture --vary MBS` of an FSDP2 step\n",
           layers);
    printf("name: gen_capture\nworld: 8\nlet: {MBS: 1}\ndtype: uint8\nstreams: [s1, s2, s3]\n");
    unsigned events = (unsigned)layers * 6;   /* 2 per gather, twice, and 2 per backward */
    printf("events: [");
    for (unsigned e = 0; e < events; e++)
        printf("%sf%u", e ? ", " : "", e);
    printf("]\ntorch: {}\nsteps:\n");
    for (int l = 0; l < layers; l++)
        for (int k = 0; k < 6; k++)
            printf("- alloc: {buf: l%d.%s, bytes: %lu}\n", l, params[k], param_bytes[k] / 8);
    printf("- alloc: {buf: x, bytes: \"512*MBS\"}\n");
    printf("- region:\n    name: step\n    steps:\n");
    for (int l = 0; l < layers; l++)
        forward(l);
    for (int l = layers - 1; l >= 0; l--)
        backward(l);
    for (int l = 0; l < layers; l++)
        adam(l);
    for (int l = 0; l < layers; l++)
        printf("    - free: adam/l%d.m\n    - free: adam/l%d.v\n", l, l);
    printf("- free: x\n");
    if (ev != events) {
        fprintf(stderr, "gen_capture: %u events used, %u declared\n", ev, events);
        return 1;
    }
    return 0;
}
