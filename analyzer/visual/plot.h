/* SPDX-License-Identifier: MIT */
/* plot.h — live-memory timelines as one self-contained SVG (`memlife plot`).
 *
 * One panel per series (series.h), in a grid of at most three columns; panels share one y scale
 * where their peaks are within 4x of each other (a naive and an optimized plan read as one
 * picture), else each has its own. In each panel, a row per group of ranks with identical curves:
 * live bytes after every op as a step line, the measured curve of a run dashed over it; under it
 * the largest buffers as stacked bands, as PyTorch memory_viz's active-memory timeline draws them
 * (plot_int.h), the others in grey, the tiny ones summed in one "N small buffers" band; in the
 * torch view the reserved envelope over the allocated curve. Collectives are shaded spans, syncs dashed ticks, regions bars
 * under the plot, a lane per stream with a span per op; the predicted peak is marked and labelled
 * with the buffers live at it, largest first (in a band above the rows, never over a curve); a y
 * axis in MiB with round ticks, an x axis of round op indices (or seconds) that never overlap,
 * and a legend whose swatches are the colours drawn. A buffer name has one colour in the whole
 * document.
 *
 * The picture needs nothing outside the file: no fonts (generic sans-serif), no scripts, no links.
 * Every text is escaped for XML. Elements tests read carry stable classes: `panel` (g, placed by
 * translate), `peak` (a circle with data-bytes and data-op), `ytick` (text with data-bytes,
 * data-row), `xtick`, `row-label` (data-rank), `curve` (paths with data-rank and data-kind
 * predicted|measured|allocated|reserved), `reserved-envelope`, `band` (data-rank, data-name,
 * data-buffer, data-bytes; data-other on a grey one, data-small=N on the summed band,
 * data-summed=N on a named band drawn as the sum of its N allocations), `coll` and `sync`
 * (data-op), `lane-span` (data-op, data-stream), `peak-note`, `legend`. */
#ifndef MEMLIFE_PLOT_H
#define MEMLIFE_PLOT_H

#include "report/series.h"

typedef struct {
    ml_mem_view view;      /* default VIEW_REQUESTED */
    bool time_axis;        /* x in seconds from a run's timestamps (every series must have them) */
    int width;             /* panel width in px (`--width`); 0: from the op count */
} plot_options;

/* Appends the SVG document to out. Returns 0, or -1 with a diagnostic (e.g. --time without
 * measured times). */
int plot_svg(const series *items, size_t n, const plot_options *o, ml_str *out, ml_diags *d);

/* Appends s to out with & < > " ' escaped, for XML text and attribute values. */
void plot_xml_escape(ml_str *out, const char *s);

#endif
