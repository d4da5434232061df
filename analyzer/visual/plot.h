/* SPDX-License-Identifier: MIT */
/* plot.h — live-memory timelines as one self-contained SVG (`memlife plot`).
 *
 * One panel per series (series.h), side by side with one shared y scale, so a naive and an
 * optimized plan read as one picture. In each panel: live bytes per rank after every op as a step
 * line (ranks with identical curves share one line), the measured curve of a run dashed over it,
 * collectives as shaded spans and syncs as dashed ticks (both labelled), regions as bars under the
 * curve, the predicted peak marked and labelled with the buffers live at it (in a band above the
 * plot, never over a curve), a y axis in MiB with round ticks, thinned step labels (source line
 * and op) on the x axis, and a legend whose swatches are the colours drawn. Under the lines, the
 * live bytes of the largest buffers as stacked bands ("other" for the rest); under the plot, a
 * lane per stream with a span per op on it, labelled where the label fits. A panel is as wide as
 * its op count needs (6 px an op, 640 to 4000 px) or `width`.
 *
 * The picture needs nothing outside the file: no fonts (generic sans-serif), no scripts, no links.
 * Every text is escaped for XML. Elements tests read carry stable classes: `peak` (a circle with
 * data-bytes and data-op), `ytick` (text with data-bytes), `curve` (paths with data-rank and
 * data-kind predicted|measured), `coll` and `sync` (spans/ticks with data-op), `band` (data-band), `lane-span` (data-op,
 * data-stream), `peak-note`. */
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
