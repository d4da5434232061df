/* SPDX-License-Identifier: MIT */
/* cmd_trace.c — `memlife trace`: Chrome trace-event JSON for Perfetto and chrome://tracing. */
#include "cmd.h"
#include "visual.h"
#include "visual/trace.h"

#include <stdio.h>
#include <stdlib.h>

const char cmd_trace_usage[] =
    "usage: memlife trace [OPTIONS] FILE.yaml[:PLAN]|RESULT.json...\n"
    "\n"
    "Writes a Chrome trace (open it in ui.perfetto.dev or chrome://tracing): one process per\n"
    "rank, counter tracks 'requested bytes' and 'device bytes' (predicted, and measured for a\n"
    "'memlife run' result), a span for every step on its stream's lane (collectives with bytes,\n"
    "count, op, dtype, stream, in_place; compute, copy, scale, record, wait) or the host's (syncs,\n"
    "inits, checks, regions), instants for alloc, free and release. Times, on the first clock\n"
    "that applies (otherData.clock): a run result's measured times; the steps' time_us (an\n"
    "imported snapshot's); the time model's predicted start and duration (streams overlap; see\n"
    "'memlife predict'); else op k at k microseconds. Each track's events are in op order, 1 ns\n"
    "apart at least. A trace estimated above 100 MB is announced on stderr before it is built.\n"
    "\n"
    "@options\n"
    "exit codes: 0 ok, 2 bad input, 3 cannot write\n";

/* Above this a trace is announced on stderr before it is built (20k iterations at
 * world 64 wrote 1.0 GB without a word). */
#define TRACE_WARN_BYTES (100ull * 1000 * 1000)

static int render(const series *items, size_t n, const void *ctx, ml_str *out, ml_diags *d) {
    const trace_options *o = ctx;
    int world = 0;
    for (size_t i = 0; i < n; i++)
        world = items[i].world > world ? items[i].world : world;
    for (size_t k = 0; k < o->n_ranks; k++)
        if (o->ranks[k] >= world) {
            ml_mark none = {0};
            ml_error(d, "--ranks", none, "rank %d is outside every input's world (largest %d)",
                     o->ranks[k], world);
            return -1;
        }
    uint64_t events, bytes = trace_estimate(items, n, o, &events);
    if (bytes > TRACE_WARN_BYTES)
        ml_report(ML_DIAG_WARNING, NULL, "the trace will be about %llu MB (%llu events); --ranks "
                  "writes fewer ranks", (unsigned long long)(bytes / 1000000),
                  (unsigned long long)events);
    return trace_json(items, n, o, out, d);
}

/* "0,3" into ranks; -1 with a usage error. */
static int parse_ranks(const char *text, ml_vec *ranks) {
    const char *at = text;
    for (;;) {
        char *end;
        long v = strtol(at, &end, 10);
        if (end == at || v < 0 || v > 1 << 20 || (*end && *end != ','))
            return ml_usage_error("trace", "--ranks takes ranks like 0,3, not '%s'", text);
        *(int *)ml_vec_push(ranks) = (int)v;
        if (!*end)
            return 0;
        at = end + 1;
    }
}

int cmd_trace(int argc, char **argv) {
    ml_args a;
    int rc;
    const char *ranks_text = NULL;
    const ml_opt extra[] = {
        {"--ranks", NULL, OPT_STRING, &ranks_text, 0, 0, NULL, "R,...",
         "only these ranks (default: every rank)"},
        /* documentation rows: what the common option means here */
        ML_OPT_DOC("--output", "write the trace to FILE (atomically); stdout when absent"),
        ML_OPT_DOC("--world", "world size (default: the file's or the result's)"),
        ML_OPT_DOC("--set", "override a 'let:' value; repeatable"),
        ML_OPT_NA("--format"),   /* trace-event JSON only: refused by name (args.c) */
    };
    if (!ml_args_begin(&a, "trace", cmd_trace_usage, argc, argv, extra,
                       ML_ARRAY_LEN(extra), false, &rc))
        return rc;
    ml_vec ranks;
    ml_vec_init(&ranks, sizeof(int));
    rc = ranks_text ? parse_ranks(ranks_text, &ranks) : 0;
    if (rc == 0) {
        trace_options o = {.ranks = ranks.items, .n_ranks = ranks.n};
        rc = ml_visual_run(&a, render, &o);
    }
    ml_vec_free(&ranks);
    ml_args_free(&a);
    return rc;
}
