/* SPDX-License-Identifier: MIT */
/* plot_int.h — what the modules of `memlife plot` share: the geometry of a panel and its rows,
 * and the buffer bands (plot_bands.c) drawn under the curves. Not for use outside visual/plot*. */
#ifndef MEMLIFE_PLOT_INT_H
#define MEMLIFE_PLOT_INT_H

#include "visual/plot.h"

enum {
    PLOT_LEFT = 84, PLOT_RIGHT = 28, LANE_H = 16,
    MAX_BANDS = 10,      /* buffers with a band of their own per row; the rest share one band */
    BAND_COLUMNS = 1200, /* past this many ops the bands sample every stride-th op */
    MAX_SPANS = 3000,    /* past this many allocations to draw one by one, fewer are (or summed) */
    BAND_BYTES = 512 << 10   /* nor past this much SVG a row */
};
#define MIB 1048576.0
#define BAND_OPACITY 0.8   /* bands and their legend swatches alike */
/* A buffer (or source line) under this share of the row's bytes times ops never gets a band of its
 * own: a thousand short 4 KiB buffers are one "N small buffers" band, not a thousand slivers. */
#define BAND_MIN_SHARE 0.004
/* Nor does one whose allocations never reach this share of the row's peak bytes at once: a band
 * of a pixel or two is no band to name in the legend. */
#define BAND_SEEN_SHARE 0.02
/* An unnamed allocation under this share of the row's peak bytes is summed into the small band;
 * larger ones are drawn one by one, in grey. */
#define BAND_TINY_SHARE 0.005

/* One rank's curve(s) on a panel's x units. */
typedef struct {
    size_t n;                  /* ops */
    double *edges;             /* [n + 1] */
    uint64_t *pred;            /* [n] live bytes after each op, in the plotted view */
    uint64_t *meas;            /* [n] or NULL */
    uint64_t *alloc, *resv;    /* [n] torch allocated and reserved (torch view only), else NULL */
} curve;

/* One row of a panel: the representative rank of a group of ranks with identical curves. */
typedef struct {
    int rank;
    double top;                /* of its plot area */
    double regions_top;        /* a strip per nesting depth of regions, under the plot */
    int n_regions;             /* that depth */
    double lanes_top;
    uint32_t n_lanes;
} row;

/* One panel: a series, its rows (one per rank group) and its scale. */
typedef struct {
    const series *s;
    double x0, y0;             /* top left corner in the document */
    double w, pw, h;           /* panel width, plot width, panel height */
    double xmax;               /* x units at the right end of the plot */
    double ymax, ystep;        /* bytes at the top, between ticks */
    double plot_h;             /* height of each row's plot area */
    curve *curves;             /* [world] */
    int *group;                /* [world]: the first rank with the same curves */
    row *rows;
    int n_rows, n_groups;      /* rows drawn; groups there are (more than rows: a note says so) */
    double note_top, axis_top, legend_top;
} panel;

static inline double plot_px(const panel *p, double u) {
    return p->x0 + PLOT_LEFT + u / p->xmax * p->pw;
}
static inline double plot_py(const panel *p, const row *r, double bytes) {
    return r->top + p->plot_h - bytes / p->ymax * p->plot_h;
}

/* Appends <text> at (x, y) with attrs, its content escaped. */
void plot_text(ml_str *o, double x, double y, const char *attrs, const char *s);

/* The colour of a buffer name, the same in every panel of a document: names take the palette's
 * colours in the order they are first met, so the first panel's bands read alike everywhere. */
typedef struct {
    ml_vec names;              /* const char * (owned by the schedules) */
} plot_colors;
const char *plot_color_of(plot_colors *c, const char *name);
void plot_colors_free(plot_colors *c);
extern const char PLOT_SMALL_COLOR[];   /* the "N small buffers" band */
extern const char PLOT_OTHER_COLOR[];   /* the unnamed allocations drawn one by one */

/* The bands of one row: the named bands drawn (in stacking order) and how many buffers the
 * "small" band holds. */
typedef struct {
    char names[MAX_BANDS][100];
    uint32_t members[MAX_BANDS];   /* buffers of each (a snapshot's source line has many) */
    bool family[MAX_BANDS];        /* numbered buffers ("params*"), else one name or one line */
    uint32_t n_names;
    uint32_t n_small;          /* buffers summed in the small band (0: no such band) */
    uint32_t n_other;          /* buffers drawn one by one without a name of their own */
} band_legend;

/* Draws the bands of row r under its curve, as memory_viz's active-memory timeline stacks them:
 * each allocation a band of its own, stacked in allocation order with the buffers that live to
 * the end at the bottom, so that a band only moves when one under it goes. The MAX_BANDS buffers
 * with the most bytes times ops live (a long-lived 1 GiB buffer over a 4 GiB spike that lasts one
 * op) are named and coloured (an imported snapshot's allocations grouped by source line or
 * address, a schedule's numbered buffers by their stem); the others are drawn one by one in grey,
 * the tiny ones summed in one "N small buffers" band on top. Past MAX_SPANS allocations or
 * BAND_BYTES of SVG, fewer are drawn one by one. Fills lg with what the legend must show. */
void plot_bands_draw(ml_str *o, const panel *p, const row *r, plot_colors *colors,
                     band_legend *lg);

#endif
