/* SPDX-License-Identifier: MIT */
/* cmd_export.c — `memlife export --memory-viz SCHEDULE -o OUT.pickle`: the predicted torch view
 * of one rank as a PyTorch memory snapshot (analyzer/snapshot/export.h), for memory_viz. */
#include "cmd.h"
#include "args.h"
#include "pipeline/pipeline.h"
#include "snapshot/export.h"
#include "snapshot/pickle.h"

#include <stdlib.h>
#include <string.h>

const char cmd_export_usage[] =
    "usage: memlife export --memory-viz SCHEDULE -o OUT.pickle [--rank R] [--world N]\n"
    "                      [--set NAME=VALUE]... [--plan NAME] [--torch-conf CONF]\n"
    "\n"
    "Replays one rank's plan through memlife's model of PyTorch's caching allocator and writes\n"
    "what torch.cuda.memory._dump_snapshot() would have: segments and blocks at the model's\n"
    "addresses, and device_traces with every alloc, free_requested, free_completed and segment\n"
    "event, each framed by the schedule's file:line. Open it with\n"
    "  python -m torch.cuda._memory_viz trace_plot OUT.pickle -o out.html\n"
    "or at https://pytorch.org/memory_viz.\n"
    "\n"
    "@options\n"
    "exit codes: 0 written, 2 bad input (syntax, lint error, a conf the allocator refuses, a\n"
    "            predicted out-of-memory), 3 cannot write\n";

int cmd_export(int argc, char **argv) {
    ml_args a;
    int rc, rank = 0;
    bool memory_viz = false;
    const ml_opt extra[] = {
        {"--memory-viz", NULL, OPT_FLAG, &memory_viz, 0, 0, NULL, NULL,
         "the format (the one there is; required, so that others can join)"},
        {"--rank", NULL, OPT_INT, &rank, 0, 1 << 20, NULL, "R", "whose plan (default 0)"},
        {"--output", "-o", OPT_STRING, NULL, 0, 0, NULL, "FILE",
         "the pickle to write (atomically; required)"},
        ML_OPT_NA("--format"),   /* a pickle, the one format there is: --memory-viz */
        ML_OPT_NA("--wide"),
    };
    if (!ml_args_begin(&a, "export", cmd_export_usage, argc, argv, extra, ML_ARRAY_LEN(extra),
                       false, &rc))
        return rc;
    if (!memory_viz || a.files.n != 1 || !a.output) {
        rc = ml_usage_error("export", !memory_viz ? "say the format: --memory-viz"
                                      : a.files.n != 1 ? "'export' takes one schedule"
                                                       : "say where: -o OUT.pickle");
        ml_args_free(&a);
        return rc;
    }
    char err[1024];
    const char *file = ML_VEC_AT(&a.files, const char *, 0);
    pipeline_input in = {.files = &file, .n_files = 1, .world = a.world, .plan = a.plan,
                         .set = a.set.items, .n_set = a.set.n, .dtype = a.dtype,
                         .torch_conf = a.torch_conf, .has_torch_limit = a.has_torch_limit,
                         .torch_limit = a.torch_limit,
                         .has_torch_capacity = a.has_torch_capacity,
                         .torch_capacity = a.torch_capacity};
    pipeline_opts_default(&in.what);
    in.what.predict = false;
    in.what.expect = false;
    pipeline_result res;
    rc = pipeline_run(&in, &res) == 0 ? ML_EXIT_OK : ML_EXIT_INPUT;
    ml_diags_print(&res.diags, stderr);
    if (rc == ML_EXIT_OK && !res.items.n) {
        ml_report(ML_DIAG_ERROR, file, "no plan to export");
        rc = ML_EXIT_INPUT;
    }
    const pipeline_item *it = rc == ML_EXIT_OK ? &ML_VEC_AT(&res.items, pipeline_item, 0) : NULL;
    if (it && rank >= it->world) {
        ml_report(ML_DIAG_ERROR, file, "--rank %d: the world is %d", rank, it->world);
        rc = ML_EXIT_INPUT;
    }
    json_t *snap = NULL;
    if (rc == ML_EXIT_OK) {
        snap = snapshot_export(&it->plans[rank], err, sizeof err);
        if (!snap) {
            fprintf(stderr, "%s\n", err);
            rc = ML_EXIT_INPUT;
        }
    }
    size_t len = 0;
    unsigned char *bytes = snap ? pickle_write_buffer(snap, &len, err, sizeof err) : NULL;
    if (snap && !bytes) {
        ml_report(ML_DIAG_ERROR, a.output, "%s", err);
        rc = ML_EXIT_RUNTIME;
    } else if (bytes && ml_write_file_atomic(a.output, (const char *)bytes, len) != 0) {
        ml_report(ML_DIAG_ERROR, NULL, "cannot write '%s'", a.output);   /* no partial file */
        rc = ML_EXIT_RUNTIME;
    }
    free(bytes);
    json_decref(snap);
    pipeline_result_free(&res);
    ml_args_free(&a);
    return rc;
}
