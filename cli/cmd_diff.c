/* SPDX-License-Identifier: MIT */
/* cmd_diff.c — `memlife diff A B`: steady and peak deltas per rank and view, and the lifetimes
 * that cause them. Informational: exit 0 whatever the deltas (gate with `memlife check`). */
#include "cmd.h"
#include "visual.h"
#include "report/diff.h"

const char cmd_diff_usage[] =
    "usage: memlife diff [OPTIONS] A.yaml[:PLAN] B.yaml[:PLAN]\n"
    "       memlife diff FILE.yaml          (a file with exactly two plans)\n"
    "\n"
    "Predicts both plans and prints, per rank and view (requested, device), steady and peak of\n"
    "A and B and the delta B - A; then why the peaks differ: the buffers live at each peak and\n"
    "not at the other, and the lifetime that costs the difference, e.g.\n"
    "  gathered (256 MiB) allocated at 7:5 while 'full' (256 MiB) is still live: +256 MiB\n"
    "  at the all_gather (9:5); B frees 'full' at 8:5, before it allocates 'gathered'\n"
    "Buffers are matched by name. --format md gives a report to paste into a pull request.\n"
    "\n"
    "@options\n"
    "exit codes: 0 compared (whatever the deltas), 2 bad input, 3 cannot write\n";

/* The inputs must give exactly two plans: A and B. */
static int render(const series *items, size_t n, const void *ctx, ml_str *out, ml_diags *d) {
    if (n != 2) {
        ml_error(d, items[0].source, ((ml_mark){0, 0}),
                 "diff compares two plans; the inputs give %zu (name one plan of a file as "
                 "FILE.yaml:PLAN)", n);
        return -1;
    }
    diff_result r;
    if (diff_series(&items[0], &items[1], &r, d) < 0)
        return -1;
    diff_write(&r, *(const report_format *)ctx, out);
    diff_result_free(&r);
    return 0;
}

int cmd_diff(int argc, char **argv) {
    ml_args a;
    int rc;
    const ml_opt extra[] = {
        /* documentation rows: what the common option means here */
        ML_OPT_DOC("--world", "world size for both (default: each file's)"),
        ML_OPT_DOC("--set", "override a 'let:' value in both; repeatable"),
        ML_OPT_DOC("--format", "table (default), json or md"),
        ML_OPT_DOC("--output", "write to FILE (atomically) instead of stdout"),
    };
    if (!ml_args_begin(&a, "diff", cmd_diff_usage, argc, argv, extra,
                       ML_ARRAY_LEN(extra), false, &rc))
        return rc;
    if (!(diff_formats() & (1u << a.format))) {   /* the formats its document has */
        char names[128];
        report_format_names(diff_formats(), ", ", " or ", names, sizeof names);
        int bad = a.format;
        ml_args_free(&a);
        return ml_usage_error("diff", "'diff' writes %s, not %s", names, report_formats[bad].name);
    }
    rc = ml_visual_run(&a, render, &a.format);
    ml_args_free(&a);
    return rc;
}
