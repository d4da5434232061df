/* SPDX-License-Identifier: MIT */
/* cmd_import.c — `memlife import SNAPSHOT`: a PyTorch memory snapshot as a schedule
 * (analyzer/snapshot/import.h). The snapshot is read by memlife's own pickle reader, which runs
 * no code (pickle.h), so an untrusted file is safe to import; JSON of the same dict works too. */
#include "cmd.h"
#include "base/human.h"
#include "args.h"
#include "snapshot/import.h"
#include "snapshot/pickle.h"

#include <stdlib.h>
#include <string.h>

const char cmd_import_usage[] =
    "usage: memlife import SNAPSHOT.pickle|SNAPSHOT.json [-o OUT.yaml] [--device N]\n"
    "                      [--names frames|addr] [--quiet]\n"
    "\n"
    "Writes a schedule that replays a PyTorch memory snapshot (torch.cuda.memory.\n"
    "_record_memory_history() then _dump_snapshot()): one alloc per alloc event and one free\n"
    "per free_requested event of the device's trace, after steps that rebuild the allocator's\n"
    "state when recording began, with the allocator's settings as 'torch: {conf:}' and the\n"
    "snapshot's own numbers as 'expect:'. 'memlife check OUT.yaml' then passes exactly when\n"
    "memlife's torch view reproduces the recorded allocator. The pickle is read without\n"
    "running any code: a file that would import or call something is refused.\n"
    "\n"
    "@options\n"
    "exit codes: 0 written, 2 bad input (not a snapshot, a refused pickle), 3 cannot write\n";

static const char *const NAME_KINDS[] = {"frames", "addr", NULL};

/* "a_train" from "dir/a_train.pickle": the schedule's name. */
static char *stem(const char *path) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    size_t n = dot && dot != b ? (size_t)(dot - b) : strlen(b);
    char *s = ml_xmalloc(n + 1);
    for (size_t k = 0; k < n; k++) {
        char c = b[k];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        s[k] = ok ? c : '_';
    }
    s[n] = 0;
    return s;
}

int cmd_import(int argc, char **argv) {
    ml_args a;
    int rc, device = 0, names = IMPORT_NAMES_FRAMES;
    const ml_opt extra[] = {
        {"--device", NULL, OPT_INT, &device, 0, 1 << 16, NULL, "N",
         "the CUDA device whose trace to import (default 0)"},
        {"--names", NULL, OPT_CHOICE, &names, 0, 0, NAME_KINDS, "KIND",
         "buffer names: frames (the first frame in user code, file-line, made unique; the "
         "default) or addr (the block's address)"},
        {"--output", "-o", OPT_STRING, NULL, 0, 0, NULL, "FILE",
         "write the schedule to FILE (atomically) and a summary to stdout; without -o the "
         "schedule goes to stdout"},
        /* a snapshot is one device's record: no schedule to size, no report to format */
        ML_OPT_NA("--world"), ML_OPT_NA("--set"), ML_OPT_NA("--plan"), ML_OPT_NA("--dtype"),
        ML_OPT_NA("--format"), ML_OPT_NA("--wide"), ML_OPT_NA("--torch-conf"),
        ML_OPT_NA("--torch-limit"), ML_OPT_NA("--torch-capacity"),
    };
    if (!ml_args_begin(&a, "import", cmd_import_usage, argc, argv, extra, ML_ARRAY_LEN(extra),
                       false, &rc))
        return rc;
    if (a.files.n != 1) {
        rc = ml_usage_error("import", "'import' takes one snapshot, not %zu", a.files.n);
        ml_args_free(&a);
        return rc;
    }
    const char *path = ML_VEC_AT(&a.files, const char *, 0);
    char err[1024];
    /* the trace digested as it is read: a snapshot's events never live whole as a tree */
    import_digest *digest = import_digest_new();
    pickle_hooks hooks = import_digest_hooks(digest);
    json_t *snap = snapshot_load_file_hooked(path, &hooks, err, sizeof err);
    if (!snap) {
        fprintf(stderr, "%s\n", err);
        import_digest_free(digest);
        ml_args_free(&a);
        return ML_EXIT_INPUT;
    }
    char *name = stem(path);
    import_opts o = {.device = device, .names = (import_names)names, .name = name, .source = path,
                     .digest = digest};
    import_stats st;
    char *yaml;
    size_t len;
    rc = ML_EXIT_OK;
    if (snapshot_import(snap, &o, &yaml, &len, &st, err, sizeof err) != 0) {
        ml_report(ML_DIAG_ERROR, path, "%s", err);
        rc = ML_EXIT_INPUT;
    } else if (!a.output) {
        fwrite(yaml, 1, len, stdout);
    } else if (ml_write_file_atomic(a.output, yaml, len) != 0) {
        ml_report(ML_DIAG_ERROR, NULL, "cannot write '%s'", a.output);
        rc = ML_EXIT_RUNTIME;
    } else if (!a.quiet) {
        /* the peaks for people (--bytes: exact); the schedule's expect: has them exact */
        char req[64], res[64];
        ml_human_size(st.requested_peak > 0 ? (uint64_t)st.requested_peak : 0, req, sizeof req);
        ml_human_size(st.reserved_peak > 0 ? (uint64_t)st.reserved_peak : 0, res, sizeof res);
        printf("%s: device %d: %zu events -> %zu steps in %s (%zu before recording: %zu segments, "
               "%zu blocks%s); expect requested peak %s, torch reserved peak %s\n",
               path, device, st.events, st.steps, a.output, st.prelude_steps, st.initial_segments,
               st.initial_blocks, st.exact_prelude ? "" : ", approximate", req, res);
    }
    if (rc == ML_EXIT_OK && !st.exact_prelude && !a.quiet)
        fprintf(stderr, "%s: note: the state before recording is rebuilt approximately "
                "(expandable segments, or blocks outside every segment)\n", path);
    free(yaml);
    free(name);
    json_decref(snap);
    import_digest_free(digest);
    ml_args_free(&a);
    return rc;
}
