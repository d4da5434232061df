/* SPDX-License-Identifier: MIT */
/* cmd_trace.c — `memlife trace`: Chrome trace-event JSON for Perfetto and chrome://tracing. */
#include "cmd.h"
#include "visual.h"
#include "visual/trace.h"

const char cmd_trace_usage[] =
    "usage: memlife trace [OPTIONS] FILE.yaml[:PLAN]|RESULT.json...\n"
    "\n"
    "Writes a Chrome trace (open it in ui.perfetto.dev or chrome://tracing): one process per\n"
    "rank, counter tracks 'requested bytes' and 'device bytes' (predicted, and measured for a\n"
    "'memlife run' result), spans for collectives (bytes, count, op, dtype, stream, in_place),\n"
    "regions and syncs, instants for alloc, free and release. Without measured times op k spans\n"
    "[k, k+1) microseconds; a run result gives the measured times.\n"
    "\n"
    "@options\n"
    "exit codes: 0 ok, 2 bad input, 3 cannot write\n";

static int render(const series *items, size_t n, const void *ctx, ml_str *out, ml_diags *d) {
    return trace_json(items, n, out, d);
}

int cmd_trace(int argc, char **argv) {
    ml_args a;
    int rc;
    const ml_opt extra[] = {
        /* documentation rows: what the common option means here */
        {"--output", NULL, OPT_FLAG, NULL, 0, 0, NULL, NULL,
            "write the trace to FILE (atomically); stdout when absent"},
        {"--world", NULL, OPT_FLAG, NULL, 0, 0, NULL, NULL,
            "world size (default: the file's or the result's)"},
        {"--set", NULL, OPT_FLAG, NULL, 0, 0, NULL, NULL, "override a 'let:' value; repeatable"},
    };
    if (!ml_args_begin(&a, "trace", cmd_trace_usage, argc, argv, extra,
                       ML_ARRAY_LEN(extra), false, &rc))
        return rc;
    if (a.format_set) {
        ml_args_free(&a);
        return ml_usage_error("trace", "'trace' writes trace-event JSON; '--format' does not apply");
    }
    rc = ml_visual_run(&a, render, NULL);
    ml_args_free(&a);
    return rc;
}
