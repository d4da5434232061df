/* SPDX-License-Identifier: MIT */
/* cmd_optimize.c — `memlife optimize FILE`: rewrite a schedule toward its memory floor
 * (analyzer/optimize.h) and report what each transformation saved.
 *
 * Where things go: with -o OUT.yaml the rewritten schedule is written there atomically and the
 * report goes to stdout; without -o and without --format the rewritten schedule goes to stdout
 * (so `memlife optimize a.yaml > b.yaml` works) and the report to stderr; with --format and no
 * -o, only the report is printed (stdout). */
#include "cmd.h"
#include "base/human.h"
#include "args.h"
#include "optimize/optimize.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_optimize_usage[] =
    "usage: memlife optimize [OPTIONS] FILE\n"
    "\n"
    "Rewrites the schedule to use less memory and keeps a rewrite only if the result\n"
    "expands, lints with nothing new, keeps its expect_error contracts, does not raise the\n"
    "predicted step time (streams the input overlapped stay overlapped) and lowers a peak:\n"
    "  lifetimes  frees right after the last use has completed (default-stream work by stream\n"
    "             order; another stream's by a wait the program already has, else a record\n"
    "             after the use and a wait before the allocation the memory is for; a host\n"
    "             sync only with --allow-host-syncs), allocs right before the first use\n"
    "  inplace    ReduceScatter into the input's own rank slice, AllGather into the buffer whose\n"
    "             rank slice is the input (NCCL's in-place rules); the separate buffer goes\n"
    "  chunked    after an in-place ReduceScatter whose other slices are dead: allocate in\n"
    "             world chunks and release all but this rank's\n"
    "  reorder    a free ahead of the allocs just before it\n"
    "The report gives, per stage and rank, steady and peak in both views, the saving, and the\n"
    "floor: what must be live by data dependence alone. The rewritten file is the input's\n"
    "text with only the edits changed (comments, key order, expect: kept), each under a\n"
    "'# memlife optimize (line N)' comment. Rewrites are verified at one world size (and\n"
    "the --set values); prove the results equal with 'memlife run' on both files. When no\n"
    "rewrite is kept nothing is written. The report ends with the predicted step time before\n"
    "and after and the host syncs added.\n"
    "\n"
    "@options\n"
    "exit codes: 0 written, 2 bad input (syntax, lint error or hazard), 3 cannot write\n";

static int parse_allow(const char *list, opt_options *o) {
    for (int k = 0; k < OPT_KIND_COUNT; k++)
        o->allow[k] = false;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int k = opt_kind_lookup(p, len);
        if (k < 0)
            return ml_usage_error("optimize",
                                  "unknown transformation '%.*s' in --allow (lifetimes, inplace, "
                                  "chunked, reorder)", (int)len, p);
        o->allow[k] = true;
        p += len + (e != NULL);
    }
    return 0;
}

int cmd_optimize(int argc, char **argv) {
    ml_args a;
    int rc;
    const char *allow = NULL;
    bool host_syncs = false;
    const ml_opt extra[] = {
        {"--allow", NULL, OPT_STRING, &allow, 0, 0, NULL, "LIST",
         "transformations to try (default: all), comma-separated"},
        {"--allow-host-syncs", NULL, OPT_FLAG, &host_syncs, 0, 0, NULL, NULL,
         "complete a use before a free with sync: {stream: S}, which stops every stream, instead "
         "of record/wait"},
        /* documentation rows: what the common option means here */
        ML_OPT_DOC("--output",
            "write the rewritten schedule to FILE (atomically); the report goes to stdout. "
            "Without -o: the schedule to stdout and the report to stderr, or, with --format, only "
            "the report to stdout"),
        ML_OPT_DOC("--plan", "only this plan of a file with 'plans:' (the others are kept)"),
        ML_OPT_DOC("--format", "report as table (default), json or md"),
        ML_OPT_DOC("--quiet", "no report"),
    };
    if (!ml_args_begin(&a, "optimize", cmd_optimize_usage, argc, argv, extra, ML_ARRAY_LEN(extra),
                       false, &rc))
        return rc;
    opt_options o;
    opt_options_default(&o);
    o.allow_host_syncs = host_syncs;
    bool format_ok = opt_formats() & (1u << a.format);   /* the formats its document has */
    if (a.files.n != 1 || !format_ok || (allow && parse_allow(allow, &o) != 0)) {
        char names[128];
        report_format_names(opt_formats(), ", ", " or ", names, sizeof names);
        if (a.files.n != 1)
            rc = ml_usage_error("optimize", "'optimize' takes one schedule, not %zu", a.files.n);
        else if (!format_ok)
            rc = ml_usage_error("optimize", "'optimize' reports as %s, not %s", names,
                                report_formats[a.format].name);
        else
            rc = ML_EXIT_INPUT;
        ml_args_free(&a);
        return rc;
    }
    o.params = ml_args_params(&a);
    o.plan = a.plan;
    ml_diags d;
    ml_diags_init(&d);
    const char *path = ML_VEC_AT(&a.files, const char *, 0);
    sched_load_limits lim = sched_load_with(&o.params);
    sched *s = sched_load_file(path, &lim, &d);
    opt_result r;
    rc = s && (!a.plan || sched_plan_named(s, a.plan, &d) >= 0) &&
                 optimize_sched(s, &o, &r, &d) == 0 ? ML_EXIT_OK : ML_EXIT_INPUT;
    ml_diags_print(&d, stderr);
    if (rc == ML_EXIT_OK) {
        ml_str text = {0};
        /* nothing kept: nothing to write (the input is its own best version) */
        bool kept = false;
        for (size_t k = 0; k < r.n_plans; k++)
            kept |= r.plans[k].any_kept;
        bool yaml_to_stdout = kept && !a.output && !a.format_set;
        /* -o names the YAML: the report goes to stdout, or to stderr beside YAML on stdout */
        ml_term_set_target(yaml_to_stdout ? STDERR_FILENO : STDOUT_FILENO);
        opt_report(&r, a.format, &text);
        if (!kept && !a.quiet)
            fprintf(stderr, "note: no rewrite was kept: %s not written\n",
                    a.output ? a.output : "the schedule is");
        if (kept && a.output && ml_write_file_atomic(a.output, r.yaml.s, r.yaml.n) != 0) {
            fprintf(stderr, "error: cannot write '%s'\n", a.output);
            rc = ML_EXIT_RUNTIME;
        }
        if (rc == ML_EXIT_OK && yaml_to_stdout)
            fwrite(r.yaml.s, 1, r.yaml.n, stdout);
        if (rc == ML_EXIT_OK && !a.quiet && text.n)
            fwrite(text.s, 1, text.n, yaml_to_stdout ? stderr : stdout);
        ml_str_free(&text);
        opt_result_free(&r);
    }
    sched_free(s);
    ml_diags_free(&d);
    ml_args_free(&a);
    return rc;
}
