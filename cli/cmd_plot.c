/* SPDX-License-Identifier: MIT */
/* cmd_plot.c — `memlife plot`: live memory over the steps as one self-contained SVG. */
#include "cmd.h"
#include "visual.h"
#include "visual/plot.h"

const char cmd_plot_usage[] =
    "usage: memlife plot [OPTIONS] FILE.yaml[:PLAN]|RESULT.json...\n"
    "\n"
    "Draws live bytes per rank after every op: the prediction as a step line, and for a\n"
    "'memlife run' result (RESULT.json) the measured curve dashed over it, on the same op axis\n"
    "or, with --time, over the measured time. Under the line the largest buffers are stacked\n"
    "bands as PyTorch's memory_viz draws them: each allocation in its place, those never freed\n"
    "at the bottom, the rest in allocation order, the small ones summed in one band (an imported\n"
    "snapshot's allocations grouped by source line). Ranks whose curves differ get a row each\n"
    "(16 at most, the highest peak's among them).\n"
    "Collectives are shaded spans, syncs dashed ticks, regions bars; the peak is marked and\n"
    "labelled with the buffers live at it, largest first. --view torch adds the reserved\n"
    "envelope over the allocated curve. Several inputs (or a file with 'plans:') become a grid\n"
    "of panels, one y scale where their peaks are within 4x of each other, e.g.\n"
    "  memlife plot naive.yaml optimized.yaml -o lifetimes.svg\n"
    "The SVG needs no fonts, scripts or links and opens in any browser.\n"
    "\n"
    "@options\n"
    "exit codes: 0 ok, 2 bad input (syntax, lint error, unreadable result), 3 cannot write\n";

/* --view's values from the view table (views.h): a view's name plots its last series (torch:
 * reserved, what runs out of memory), VIEW.KEY one series of a view of several. */
static const char *view_names[2 * VIEW_COUNT + 1];
static ml_mem_view view_series[2 * VIEW_COUNT];
static char view_keys[VIEW_COUNT][64];
static char view_help[512];   /* --view's help, listing view_names */

static void fill_view_names(void) {
    size_t n = 0;
    for (int view = 0; view < MV_COUNT; view++) {
        const ml_view_info *vi = &ml_views[view];
        view_series[n] = vi->series[vi->n_series - 1];
        view_names[n++] = vi->name;
        for (int k = 0; vi->n_series > 1 && k < vi->n_series; k++) {
            ml_mem_view v = vi->series[k];
            snprintf(view_keys[v], sizeof view_keys[v], "%s.%s", vi->name, ml_series[v].key);
            view_series[n] = v;
            view_names[n++] = view_keys[v];
        }
    }
    view_names[n] = NULL;
    /* the values are the view table's, so the help names each one (a new view is listed) */
    size_t at = (size_t)snprintf(view_help, sizeof view_help, "what to draw:");
    for (size_t k = 0; k < n && at < sizeof view_help; k++)
        at += (size_t)snprintf(view_help + at, sizeof view_help - at, " %s%s%s", view_names[k],
                               k == 0 ? " (the default: the sum of live buffer sizes)" : "",
                               k + 1 < n ? "," : "");
    if (at < sizeof view_help)
        snprintf(view_help + at, sizeof view_help - at,
                 "; a view of several series draws its last (torch: reserved), VIEW.KEY one "
                 "series; an optional view is predicted for the plot (torch: PyTorch's "
                 "defaults unless --torch-conf)");
}

static int render(const series *items, size_t n, const void *ctx, ml_str *out, ml_diags *d) {
    return plot_svg(items, n, ctx, out, d);
}

int cmd_plot(int argc, char **argv) {
    ml_args a;
    int rc, view = 0;   /* requested */
    fill_view_names();
    bool time_axis = false;
    int width = 0;
    const ml_opt extra[] = {
        {"--width", NULL, OPT_INT, &width, 200, 100000, NULL,
         "PX", "width of each panel (default: 6 px an op, 640 to 1600 px; 1000 in a grid)"},
        {"--view", NULL, OPT_CHOICE, &view, 0, 0, view_names, "VIEW", view_help},
        {"--time", NULL, OPT_FLAG, &time_axis, 0, 0, NULL,
         NULL, "x axis in measured seconds (run results only)"},
        /* documentation rows: what the common option means here */
        ML_OPT_DOC("--output", "write the SVG to FILE (atomically); stdout when absent"),
        ML_OPT_DOC("--world", "world size (default: the file's or the result's)"),
        ML_OPT_DOC("--set", "override a 'let:' value; repeatable"),
        ML_OPT_NA("--format"),   /* SVG only: refused by name (args.c) */
    };
    if (!ml_args_begin(&a, "plot", cmd_plot_usage, argc, argv, extra, ML_ARRAY_LEN(extra), false, &rc))
        return rc;
    plot_options o = {.view = view_series[view], .time_axis = time_axis, .width = width};
    if (ml_views[ml_series[o.view].view].optional && !a.torch_conf)
        a.torch_conf = "";   /* plotting the torch view turns it on, with PyTorch's defaults */
    rc = ml_visual_run(&a, render, &o);
    ml_args_free(&a);
    return rc;
}
