/* SPDX-License-Identifier: MIT */
/* plot.c — the SVG writer of `memlife plot` (plot.h): layout, axes, curves, peak, legend; the
 * buffer bands are plot_bands.c's.
 *
 * Coordinates: each op k of a rank occupies [edges[k], edges[k+1]) on the x axis, in ops (edges[k]
 * = k) or, with --time, in seconds (edges[k+1] = the measured time after op k). The value drawn
 * over op k is the live bytes after it, so an alloc raises the curve over its own slot. Each panel
 * is drawn at (0, 0) and placed in the grid by a translate, so a panel reads the same wherever it
 * lands. */
#include "plot_int.h"
#include "report/report_int.h"
#include "predict/timemodel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Layout of a panel, top to bottom: title and subtitle (TITLE_H), the peak note's band (so that
 * the note never covers a curve), one row per rank group (its label, its plot, a lane per stream:
 * the spans of the ops on it), the x ticks (AXIS_H), the legend. A panel is as wide as its ops
 * need (PX_PER_OP each, between MIN_PANEL_W and the maximum) or --width; several panels share the
 * widest width and flow into a grid of at most GRID_COLS columns. */
enum {
    MIN_PANEL_W = 640, MAX_PANEL_W = 1600, MAX_GRID_PANEL_W = 1000, PX_PER_OP = 6, GRID_COLS = 3,
    TITLE_H = 56, NOTE_LINES = 4, NOTE_H = 14 * NOTE_LINES + 10, ROW_PLOT_H = 300, ROWS_PLOT_H = 190,
    ROW_LABEL_H = 18, REGION_H = 13, AXIS_H = 44, LEGEND_ROW = 18, MAX_ROWS = 16, TICK_GAP = 90
};
/* Panels whose highest values lie within this factor share one y scale (a naive and an optimized
 * plan compare by eye); past it each panel gets its own, or the small one would be a flat line. */
#define SHARED_SCALE_RATIO 4.0

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
#define RESERVED_FILL "#fdae6b"
/* The width of an 11 px glyph to reserve: sans-serif fonts run to 6.7 px on average (DejaVu
 * Sans, Chromium's on Linux); less lets a long note run out of its box. */
#define NOTE_GLYPH 6.8
/* Spans in the stream lanes, by what the op is. */
static const char *lane_color(plan_op_kind k) {
    return k == OP_COLL ? "#5b8fd1" : k == OP_COMPUTE ? "#6bb36b" : "#e0a050";
}

static bool torch_view(ml_mem_view v) { return v == VIEW_TORCH_ALLOCATED || v == VIEW_TORCH_RESERVED; }

/* Fills c for rank r: predicted values, measured values and the x edges of every op; in the torch
 * view also the predicted allocated and reserved bytes, the envelope drawn over the bands. */
static void curve_build(curve *c, const series *s, int r, const plot_options *o) {
    c->n = s->plans[r].n_ops;
    c->edges = ml_xcalloc(c->n + 1, sizeof *c->edges);
    c->pred = ml_xcalloc(c->n + 1, sizeof *c->pred);
    c->meas = ml_xcalloc(c->n + 1, sizeof *c->meas);
    double *t = ml_xcalloc(c->n + 1, sizeof *t);
    if (!series_rank_values(s, r, o->view, c->pred, c->meas, t)) {
        free(c->meas);
        c->meas = NULL;
    }
    for (size_t k = 0; k < c->n; k++)
        c->edges[k + 1] = o->time_axis && c->meas ? fmax(t[k], c->edges[k]) : (double)(k + 1);
    free(t);
    if (torch_view(o->view)) {
        c->alloc = ml_xcalloc(c->n + 1, sizeof *c->alloc);
        c->resv = ml_xcalloc(c->n + 1, sizeof *c->resv);
        series_rank_values(s, r, VIEW_TORCH_ALLOCATED, c->alloc, NULL, NULL);
        series_rank_values(s, r, VIEW_TORCH_RESERVED, c->resv, NULL, NULL);
    }
}

static void curve_free(curve *c) {
    free(c->edges);
    free(c->pred);
    free(c->meas);
    free(c->alloc);
    free(c->resv);
}

static bool same_values(const uint64_t *a, const uint64_t *b, size_t n) {
    if (!a || !b)
        return a == b;
    return !memcmp(a, b, n * sizeof *a);
}

static uint64_t curve_max(const curve *c) {
    uint64_t max = 0;
    for (size_t k = 0; k < c->n; k++) {
        max = c->pred[k] > max ? c->pred[k] : max;
        max = c->meas && c->meas[k] > max ? c->meas[k] : max;
        max = c->resv && c->resv[k] > max ? c->resv[k] : max;
    }
    return max;
}

/* "rank 2", "ranks 0-3", "ranks 0, 2". */
static void group_label(const panel *p, int g, char *buf, size_t len) {
    int *ranks = ml_xcalloc((size_t)p->s->world + 1, sizeof *ranks);
    size_t n = 0;
    for (int r = 0; r < p->s->world; r++)
        if (p->group[r] == g)
            ranks[n++] = r;
    char list[80];
    report_ranks_text(ranks, n, list, sizeof list);
    snprintf(buf, len, "rank%s %.80s", n > 1 ? "s" : "", list);
    free(ranks);
}

/* The colour of a rank group's curve: by the group's place among the panel's groups. */
static const char *group_color(const panel *p, int rank) {
    int g = 0;
    for (int r = 0; r < rank; r++)
        g += p->group[r] == r;
    return palette[g % ML_ARRAY_LEN(palette)];
}

/* A round step for about `want` intervals over [0, max]: 1, 2, 2.5 or 5 times a power of ten. */
static double nice_step(double max, double want) {
    double raw = max / fmax(want, 1), mag = pow(10, floor(log10(raw)));
    static const double mult[] = {1, 2, 2.5, 5, 10};
    for (size_t k = 0; k < ML_ARRAY_LEN(mult); k++)
        if (mult[k] * mag >= raw)
            return mult[k] * mag;
    return 10 * mag;
}

/* A y scale for values up to max: round ticks with headroom for the peak marker, in MiB from a
 * MiB up, else in KiB or bytes (whole ones), so that a small plan's ticks do not all read 0 MiB. */
static void y_scale(uint64_t max, double *top, double *step) {
    double want = max ? max * 1.15 : MIB, unit = want >= MIB ? MIB : want >= 1024 ? 1024 : 1;
    *step = nice_step(want / unit, 5) * unit;
    *step = fmax(*step, 1);
    *top = ceil(want / *step) * *step;
}

static void draw_y_axis(ml_str *o, const panel *p, const row *r, const plot_options *opt) {
    double left = p->x0 + PLOT_LEFT, right = left + p->pw;
    for (double v = 0; v <= p->ymax + p->ystep / 2; v += p->ystep) {
        double y = plot_py(p, r, v);
        char mib[32], label[48];
        ml_format_mib((int64_t)llround(v), mib, sizeof mib);
        if (p->ymax >= MIB)
            snprintf(label, sizeof label, "%s MiB", mib);
        else if (p->ymax >= 1024)
            snprintf(label, sizeof label, "%g KiB", v / 1024);
        else
            snprintf(label, sizeof label, "%g B", v);
        ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n",
                      left, y, right, y);
        /* data-y: where the value lies (the text sits 4 px lower to centre on its line). */
        ml_str_printf(o, "<text class=\"ytick\" data-bytes=\"%.0f\" data-y=\"%.1f\" data-row=\"%d\" "
                         "x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\" fill=\"#333\">",
                      v, y, r->rank, left - 6, y + 4);
        plot_xml_escape(o, label);
        ml_str_printf(o, "</text>\n");
    }
    char title[64];
    snprintf(title, sizeof title, "live %s bytes", ml_mem_view_names[opt->view]);
    double cy = r->top + p->plot_h / 2;
    ml_str_printf(o, "<text x=\"%.1f\" y=\"%.1f\" transform=\"rotate(-90 %.1f %.1f)\" "
                     "text-anchor=\"middle\" font-size=\"11\" fill=\"#555\">",
                  p->x0 + 14, cy, p->x0 + 14, cy);
    plot_xml_escape(o, title);
    ml_str_printf(o, "</text>\n");
    ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", left,
                  r->top, left, r->top + p->plot_h);
    ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", left,
                  r->top + p->plot_h, right, r->top + p->plot_h);
}

/* "1.5 ms" for a time tick. */
static void format_seconds(double s, char *buf, size_t len) {
    if (s == 0)
        snprintf(buf, len, "0");
    else if (s < 1e-3)
        snprintf(buf, len, "%g us", s * 1e6);
    else if (s < 1)
        snprintf(buf, len, "%g ms", s * 1e3);
    else
        snprintf(buf, len, "%g s", s);
}

/* Round ticks along the bottom, horizontal and at least TICK_GAP px apart (so that no two labels
 * can meet), with faint grid lines up through every row: op indices, or seconds with --time. */
static void draw_x_axis(ml_str *o, const panel *p, const plot_options *opt) {
    const double base = p->axis_top, top = p->rows[0].top;
    double step = nice_step(p->xmax, p->pw / TICK_GAP);
    if (!opt->time_axis)
        step = fmax(step, 1);
    for (double u = 0; u <= p->xmax * 1.0001; u += step) {
        char label[32];
        if (opt->time_axis)
            format_seconds(u, label, sizeof label);
        else
            snprintf(label, sizeof label, "%.0f", u);
        double x = plot_px(p, u);
        ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
                         "stroke-opacity=\"0.07\"/>\n", x, top, x, base);
        ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
                      x, base, x, base + 4);
        char attrs[96];
        snprintf(attrs, sizeof attrs, "class=\"xtick\" data-x=\"%g\" text-anchor=\"middle\" "
                 "font-size=\"11\" fill=\"#333\"", u);
        plot_text(o, x, base + 16, attrs, label);
    }
    plot_text(o, p->x0 + PLOT_LEFT + p->pw / 2.0, base + 34,
              "class=\"xaxis\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\"",
              opt->time_axis ? "time since baseline (measured)" : "op (index in the rank's plan)");
}

/* Collectives as shaded spans, syncs as dashed ticks, regions as bars in the strip under a row
 * (under the plot, so that they hide no band).
 * Spans closer than a pixel are merged so that a million-op plan stays a small file. Their labels
 * are in the stream lanes (draw_lanes), where nothing crosses them. */
static void draw_spans(ml_str *o, const panel *p, const row *rw) {
    const rank_plan *rp = &p->s->plans[rw->rank];
    const curve *c = &p->curves[rw->rank];
    double last_tick = -1e9, pend0 = 0, pend1 = -1;
    size_t pend_op = 0, depth = 0, region_start[64];
    for (size_t k = 0; k < rp->n_ops; k++) {
        const plan_op *op = &rp->ops[k];
        double x0 = plot_px(p, c->edges[k]), x1 = plot_px(p, c->edges[k + 1]);
        if (op->kind == OP_COLL) {
            /* Spans are merged only where they are too thin to tell apart anyway. */
            if (pend1 >= 0 && (x0 > pend1 + 1 || x1 - x0 >= 2)) {
                ml_str_printf(o, "<rect class=\"coll\" data-op=\"%zu\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                                 "height=\"%.0f\" fill=\"#5b8fd1\" fill-opacity=\"0.16\"/>\n",
                              pend_op, pend0, rw->top, fmax(pend1 - pend0, 1), p->plot_h);
                pend1 = -1;
            }
            if (pend1 < 0) {
                pend0 = x0;
                pend_op = k;
            }
            pend1 = x1;
        } else if (op->kind == OP_SYNC && x1 - last_tick >= 2) {
            ml_str_printf(o, "<line class=\"sync\" data-op=\"%zu\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                             "y2=\"%.1f\" stroke=\"#777\" stroke-dasharray=\"2,3\"/>\n",
                          k, x1, rw->top, x1, rw->lanes_top + LANE_H * (double)rw->n_lanes);
            last_tick = x1;
        } else if (op->kind == OP_REGION_BEGIN) {
            if (depth < ML_ARRAY_LEN(region_start))
                region_start[depth] = k;
            depth++;
        } else if (op->kind == OP_REGION_END && depth > 0) {
            depth--;
            if (depth >= ML_ARRAY_LEN(region_start))
                continue;
            double r0 = plot_px(p, c->edges[region_start[depth]]), r1 = x1;
            double y = rw->regions_top + REGION_H * (double)depth;
            ml_str_printf(o, "<rect class=\"region\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"11\" "
                             "fill=\"#e8c872\" fill-opacity=\"0.6\"/>\n", r0, y, fmax(r1 - r0, 1));
            const char *name = sched_sym_name(rp->s, SYM_REGION, op->u.region.region);
            if (r1 - r0 >= 6.0 * (double)strlen(name))
                plot_text(o, r0 + 2, y + 9, "font-size=\"9\" fill=\"#6b5410\"", name);
        }
    }
    if (pend1 >= 0)
        ml_str_printf(o, "<rect class=\"coll\" data-op=\"%zu\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                         "height=\"%.0f\" fill=\"#5b8fd1\" fill-opacity=\"0.16\"/>\n",
                      pend_op, pend0, rw->top, fmax(pend1 - pend0, 1), p->plot_h);
}

/* One lane per stream under a row's plot: a span per op on it, labelled only where the label fits
 * inside its span (so labels never overlap anything); spans thinner than a pixel merge. */
static void draw_lanes(ml_str *o, const panel *p, const row *rw) {
    const rank_plan *rp = &p->s->plans[rw->rank];
    const curve *c = &p->curves[rw->rank];
    double right = p->x0 + PLOT_LEFT + p->pw;
    for (uint32_t st = 0; st < rw->n_lanes; st++) {
        double y = rw->lanes_top + LANE_H * (double)st;
        ml_str_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n",
                      p->x0 + PLOT_LEFT, y, p->pw, LANE_H - 2, st % 2 ? "#f4f4f4" : "#fafafa");
        plot_text(o, p->x0 + PLOT_LEFT - 6, y + LANE_H - 5,
                  "class=\"lane\" text-anchor=\"end\" font-size=\"10\" fill=\"#333\"",
                  sched_sym_name(rp->s, SYM_STREAM, st));
    }
    double *last_end = ml_xcalloc(rw->n_lanes + 1, sizeof *last_end);
    for (uint32_t st = 0; st < rw->n_lanes; st++)
        last_end[st] = -1e9;
    for (size_t k = 0; k < rp->n_ops; k++) {
        const plan_op *op = &rp->ops[k];
        int st = tm_op_stream(op);
        if (st < 0 || (uint32_t)st >= rw->n_lanes)
            continue;
        double x0 = plot_px(p, c->edges[k]), x1 = fmin(plot_px(p, c->edges[k + 1]), right);
        if (x1 < last_end[st] + 1)
            continue;   /* under a pixel from the last span of this lane */
        double y = rw->lanes_top + LANE_H * (double)st;
        ml_str_printf(o, "<rect class=\"lane-span\" data-op=\"%zu\" data-stream=\"%d\" x=\"%.1f\" "
                         "y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" stroke=\"#fff\" "
                         "stroke-width=\"0.5\"/>\n",
                      k, st, x0, y + 1, fmax(x1 - x0, 1), LANE_H - 4, lane_color(op->kind));
        last_end[st] = x1;
        char label[96];
        if (op->kind == OP_COLL)
            snprintf(label, sizeof label, "%s", ml_colls[op->u.coll.coll].name);
        else
            snprintf(label, sizeof label, "%s", plan_op_names[op->kind]);
        if (x1 - x0 >= 5.6 * (double)strlen(label) + 4)   /* 9 px sans-serif: about 5.6 px a glyph */
            plot_text(o, x0 + 2, y + LANE_H - 5, "class=\"lane-label\" font-size=\"9\" fill=\"#fff\"", label);
    }
    free(last_end);
}

/* The d attribute of a step path over values v: one H/V pair per change of value; with more ops
 * than pixels, per pixel column a vertical bar from the lowest to the highest value in it, ending
 * at its last, so that the peak stays visible and the file small. */
static void step_path(ml_str *o, const panel *p, const row *rw, const curve *c, const uint64_t *v) {
    ml_str_printf(o, " d=\"M%.1f %.1f", plot_px(p, c->edges[0]), plot_py(p, rw, 0));
    if (c->n > 4 * p->pw) {
        size_t k = 0;
        while (k < c->n) {
            double col = floor(plot_px(p, c->edges[k]));
            uint64_t lo = v[k], hi = v[k];
            for (; k < c->n && floor(plot_px(p, c->edges[k])) == col; k++) {
                lo = v[k] < lo ? v[k] : lo;
                hi = v[k] > hi ? v[k] : hi;
            }
            ml_str_printf(o, "H%.1fV%.1fV%.1fV%.1f", col, plot_py(p, rw, (double)hi),
                          plot_py(p, rw, (double)lo), plot_py(p, rw, (double)v[k - 1]));
        }
    } else {
        uint64_t prev = 0;
        double last_x = plot_px(p, c->edges[0]);
        for (size_t k = 0; k < c->n; k++) {
            if (v[k] == prev)
                continue;
            double x = plot_px(p, c->edges[k]);
            if (x != last_x)
                ml_str_printf(o, "H%.1f", x);
            ml_str_printf(o, "V%.1f", plot_py(p, rw, (double)v[k]));
            prev = v[k];
            last_x = x;
        }
    }
    ml_str_printf(o, "H%.1f\"", plot_px(p, c->edges[c->n]));
}

static void draw_curve(ml_str *o, const panel *p, const row *rw, const uint64_t *v, const char *kind,
                       const char *color, const char *style) {
    ml_str_printf(o, "<path class=\"curve\" data-rank=\"%d\" data-kind=\"%s\" fill=\"none\" "
                     "stroke=\"%s\"%s", rw->rank, kind, color, style);
    step_path(o, p, rw, &p->curves[rw->rank], v);
    ml_str_printf(o, "/>\n");
}

/* One edge of the envelope, left to right over v (up) or right to left (!up), a vertex only where
 * the drawn value changes; with more ops than pixels, per pixel column the highest value going
 * up and the lowest coming back, so that the envelope never shrinks and the file stays small. */
static void envelope_edge(ml_str *o, const panel *p, const row *rw, const curve *c, const uint64_t *v,
                          bool up) {
    bool dense = c->n > 4 * p->pw;
    double cur = NAN;
    for (size_t j = 0; j < c->n;) {
        size_t k = up ? j : c->n - 1 - j;
        double col = floor(plot_px(p, c->edges[k])), val = (double)v[k];
        size_t m = 1;
        while (dense && j + m < c->n) {
            size_t q = up ? j + m : c->n - 1 - j - m;
            if (floor(plot_px(p, c->edges[q])) != col)
                break;
            val = up ? fmax(val, (double)v[q]) : fmin(val, (double)v[q]);
            m++;
        }
        double y = round(plot_py(p, rw, val) * 10) / 10;
        if (y != cur) {
            /* the run's near edge: its left going up, its right coming back */
            size_t first = up ? k : c->n - 1 - j;
            ml_str_printf(o, "H%.1fV%.1f", plot_px(p, c->edges[up ? first : first + 1]), y);
            cur = y;
        }
        j += m;
    }
    ml_str_printf(o, "H%.1f", plot_px(p, c->edges[up ? c->n : 0]));
}

/* The torch view: what the caching allocator holds over what it hands out, as a pale envelope
 * between the allocated and the reserved curves. */
static void draw_envelope(ml_str *o, const panel *p, const row *rw) {
    const curve *c = &p->curves[rw->rank];
    ml_str_printf(o, "<path class=\"reserved-envelope\" data-rank=\"%d\" fill=\"%s\" "
                     "fill-opacity=\"0.35\" stroke=\"none\" d=\"M%.1f %.1f", rw->rank, RESERVED_FILL,
                  plot_px(p, c->edges[0]), plot_py(p, rw, 0));
    envelope_edge(o, p, rw, c, c->resv, true);
    envelope_edge(o, p, rw, c, c->alloc, false);
    ml_str_printf(o, "Z\"/>\n");
}

/* The curves of a row's rank group: in the torch view allocated and reserved; a measured curve
 * dashed over its prediction, which is then wide and pale so that an exact match still shows. */
static void draw_row_curves(ml_str *o, const panel *p, const row *rw) {
    const curve *c = &p->curves[rw->rank];
    const char *color = group_color(p, rw->rank);
    const char *pred_style = c->meas ? " stroke-width=\"4\" stroke-opacity=\"0.45\"" : " stroke-width=\"2\"";
    if (c->resv) {
        draw_curve(o, p, rw, c->resv, "reserved", "#e6550d", " stroke-width=\"1.5\"");
        draw_curve(o, p, rw, c->alloc, "allocated", color, pred_style);
    } else {
        draw_curve(o, p, rw, c->pred, "predicted", color, pred_style);
    }
    if (c->meas)
        draw_curve(o, p, rw, c->meas, "measured", color, " stroke-width=\"1.6\" stroke-dasharray=\"6,4\"");
}

typedef struct {
    uint32_t buf;
    uint64_t bytes;
} live_buf;

static int live_cmp(const void *a, const void *b) {
    const live_buf *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->buf < y->buf ? -1 : x->buf > y->buf;
}

/* "3.906 MiB" from a MiB up (as the peak itself reads), else the exact "4 KiB" or "1000 B". */
static void note_size(uint64_t bytes, char *buf, size_t len) {
    if (bytes >= (1u << 20)) {
        char mib[24];
        ml_format_mib((int64_t)bytes, mib, sizeof mib);
        snprintf(buf, len, "%.23s MiB", mib);
    } else {
        ml_format_bytes(bytes, buf, len);
    }
}

/* Marks the highest predicted peak of the panel and lists what it is made of: the buffers live
 * at it, largest first, as many as the note holds, then how many more and their sum. */
static void draw_peak(ml_str *o, const panel *p, const plot_options *opt) {
    const series *s = p->s;
    int best = -1;
    for (int r = 0; r < s->world; r++)
        if (s->pred[r].peak_op[opt->view] != SIZE_MAX &&
            (best < 0 || s->pred[r].peak[opt->view] > s->pred[best].peak[opt->view]))
            best = r;
    if (best < 0)
        return;
    const row *rw = NULL;
    for (int k = 0; k < p->n_rows; k++)
        if (p->rows[k].rank == p->group[best])
            rw = &p->rows[k];
    const pred_rank *pr = &s->pred[best];
    const rank_plan *rp = &s->plans[best];
    size_t op = pr->peak_op[opt->view];
    if (op >= rp->n_ops || !rw)
        return;
    const curve *c = &p->curves[best];
    double mx = plot_px(p, (c->edges[op] + c->edges[op + 1]) / 2);
    double my = plot_py(p, rw, (double)pr->peak[opt->view]);

    const size_t max_line = (size_t)fmin(fmax((p->pw - 20) / NOTE_GLYPH, 40), 140);
    char lines[NOTE_LINES][400];
    int n = 0;
    char peak[32], what[96];
    note_size(pr->peak[opt->view], peak, sizeof peak);
    snprintf(lines[n++], sizeof lines[0], "peak %s", peak);
    series_op_label(rp, &rp->ops[op], what, sizeof what);
    ml_mark m = plan_op_mark(&rp->ops[op]);
    char on_rank[32] = "";
    if (p->n_groups > 1)
        snprintf(on_rank, sizeof on_rank, " on rank %d", best);
    snprintf(lines[n++], sizeof lines[0], "at op %zu, %u:%u %.64s%s", op, m.line, m.col, what, on_rank);

    uint32_t n_bufs = s->s->syms[SYM_BUFFER].n;
    uint64_t *bytes = ml_xcalloc(n_bufs + 1, sizeof *bytes);
    series_live_bytes_at(rp, op, bytes);
    live_buf *live = ml_xcalloc(n_bufs + 1, sizeof *live);
    size_t n_live = 0;
    for (uint32_t b = 0; b < n_bufs; b++)
        if (bytes[b])
            live[n_live++] = (live_buf){b, bytes[b]};
    qsort(live, n_live, sizeof *live, live_cmp);
    snprintf(lines[n], sizeof lines[0], "live:");
    for (size_t k = 0; k < n_live; k++) {
        char item[200], size[32], rest[96] = "";
        note_size(live[k].bytes, size, sizeof size);
        snprintf(item, sizeof item, " %.120s %s%s", sched_sym_name(s->s, SYM_BUFFER, live[k].buf), size,
                 k + 1 < n_live ? "," : "");
        if (strlen(lines[n]) + strlen(item) > max_line && n == NOTE_LINES - 1) {
            /* the note is full: what is left, counted and summed, giving back listed items
             * until the count fits */
            size_t left = k;
            for (;;) {
                uint64_t sum = 0;
                for (size_t j = left; j < n_live; j++)
                    sum += live[j].bytes;
                note_size(sum, size, sizeof size);
                snprintf(rest, sizeof rest, " and %zu more (%s)", n_live - left, size);
                char *cut = strrchr(lines[n], ',');
                if (strlen(lines[n]) + strlen(rest) <= max_line || !cut)
                    break;
                *cut = 0;
                left--;
            }
            snprintf(lines[n] + strlen(lines[n]), sizeof lines[0] - strlen(lines[n]), "%s", rest);
            break;
        }
        if (strlen(lines[n]) + strlen(item) > max_line) {
            n++;
            lines[n][0] = 0;
        }
        snprintf(lines[n] + strlen(lines[n]), sizeof lines[0] - strlen(lines[n]), "%s", item);
    }
    n++;
    free(bytes);
    free(live);

    size_t widest = 0;
    for (int k = 0; k < n; k++)
        widest = strlen(lines[k]) > widest ? strlen(lines[k]) : widest;
    double w = NOTE_GLYPH * (double)widest + 10, h = 14.0 * n + 6;
    /* In the note band above the rows, never over a curve: centred on the marker as far as the
     * panel allows, with a leader line down to it. */
    double bx = fmax(fmin(mx - w / 2, p->x0 + p->w - 6 - w), p->x0 + PLOT_LEFT + 2);
    double by = p->note_top;
    double lx = fmin(fmax(mx, bx + 4), bx + w - 4);
    ml_str_printf(o, "<line class=\"peak-leader\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                     "stroke=\"#c00\" stroke-width=\"0.8\" stroke-dasharray=\"3,2\"/>\n",
                  lx, by + h, mx, my - 5);
    ml_str_printf(o, "<rect class=\"peak-note\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                     "fill=\"#fff\" stroke=\"#c00\" stroke-width=\"0.8\" rx=\"3\"/>\n",
                  bx, by, w, h);
    for (int k = 0; k < n; k++)
        plot_text(o, bx + 5, by + 14.0 * (k + 1), k == 0 ? "class=\"peak-label\" font-size=\"12\" "
                  "font-weight=\"bold\" fill=\"#b00\"" : "class=\"peak-label\" font-size=\"11\" fill=\"#222\"",
                  lines[k]);
    ml_str_printf(o, "<circle class=\"peak\" data-rank=\"%d\" data-op=\"%zu\" data-bytes=\"%llu\" "
                     "cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"#c00\" stroke=\"#fff\"/>\n",
                  best, op, (unsigned long long)pr->peak[opt->view], mx, my);
}

enum { SWATCH_LINE, SWATCH_DASH, SWATCH_BOX, SWATCH_TICK, SWATCH_DOT };
typedef struct {
    int kind;
    const char *color;
    char label[96];
    double opacity;
} legend_item;

static legend_item *legend_add(legend_item *items, int *n, int kind, const char *color,
                               const char *label) {
    legend_item *it = &items[(*n)++];
    *it = (legend_item){.kind = kind, .color = color, .opacity = kind == SWATCH_BOX ? BAND_OPACITY : 1};
    snprintf(it->label, sizeof it->label, "%.90s", label);
    return it;
}

/* The legend of one panel, flowed in rows along its bottom, with the very colours drawn: the rank
 * groups, the bands of every row (once each), the lanes. Returns the bottom of its last row. */
static double draw_legend(ml_str *o, const panel *p, const band_legend *bands, plot_colors *colors,
                          const plot_options *opt) {
    double x = p->x0 + PLOT_LEFT, y = p->legend_top + 14;
    const double right = p->x0 + p->w - 10;
    bool measured = false;
    for (int r = 0; r < p->s->world; r++)
        measured = measured || p->curves[r].meas;
    legend_item items[MAX_ROWS + MAX_BANDS * MAX_ROWS + 16];
    int n = 0;
    for (int k = 0; k < p->n_rows; k++) {
        char label[96];
        group_label(p, p->rows[k].rank, label, sizeof label);
        legend_add(items, &n, SWATCH_LINE, group_color(p, p->rows[k].rank), label);
    }
    if (torch_view(opt->view)) {
        legend_add(items, &n, SWATCH_LINE, "#555", "torch allocated (predicted)");
        legend_add(items, &n, SWATCH_LINE, "#e6550d", "torch reserved (predicted)");
        legend_add(items, &n, SWATCH_BOX, RESERVED_FILL, "reserved, not allocated")->opacity = 0.35;
    } else {
        legend_add(items, &n, SWATCH_LINE, "#555", "predicted");
    }
    if (measured)
        legend_add(items, &n, SWATCH_DASH, "#555", "measured");
    uint32_t n_small = 0, n_other = 0;
    const char *shown[MAX_BANDS * MAX_ROWS];
    int n_shown = 0;
    for (int k = 0; k < p->n_rows; k++) {
        for (uint32_t j = 0; j < bands[k].n_names; j++) {
            const char *name = bands[k].names[j];
            bool seen = false;
            for (int i = 0; i < n_shown; i++)
                seen = seen || !strcmp(shown[i], name);
            if (seen)
                continue;
            shown[n_shown++] = name;
            char label[128];
            if (bands[k].members[j] > 1)
                snprintf(label, sizeof label, "%.80s (%u %s)", name, bands[k].members[j],
                         bands[k].family[j] ? "buffers" : "allocations");
            else
                snprintf(label, sizeof label, "%.80s", name);
            legend_add(items, &n, SWATCH_BOX, plot_color_of(colors, name), label);
        }
        n_small = bands[k].n_small > n_small ? bands[k].n_small : n_small;
        n_other = bands[k].n_other > n_other ? bands[k].n_other : n_other;
    }
    if (n_other) {
        char label[80];
        snprintf(label, sizeof label, "%s%u other buffer%s, one by one", p->n_rows > 1 ? "up to " : "",
                 n_other, n_other > 1 ? "s" : "");
        legend_add(items, &n, SWATCH_BOX, PLOT_OTHER_COLOR, label);
    }
    if (n_small) {
        char label[64];
        snprintf(label, sizeof label, "%s%u small buffer%s", p->n_rows > 1 ? "up to " : "", n_small,
                 n_small > 1 ? "s" : "");
        legend_add(items, &n, SWATCH_BOX, PLOT_SMALL_COLOR, label);
    }
    legend_add(items, &n, SWATCH_BOX, lane_color(OP_COLL), "collective");
    legend_add(items, &n, SWATCH_BOX, lane_color(OP_COMPUTE), "compute");
    legend_add(items, &n, SWATCH_BOX, lane_color(OP_COPY), "copy, scale");
    legend_add(items, &n, SWATCH_TICK, "#777", "sync");
    legend_add(items, &n, SWATCH_DOT, "#c00", "peak");
    for (int k = 0; k < n; k++) {
        double w = 30 + 6.2 * (double)strlen(items[k].label);
        if (x + w > right) {
            x = p->x0 + PLOT_LEFT;
            y += LEGEND_ROW;
        }
        switch (items[k].kind) {
        case SWATCH_LINE:
        case SWATCH_DASH:
            ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                             "stroke-width=\"2\"%s/>\n", x, y - 4, x + 20, y - 4, items[k].color,
                          items[k].kind == SWATCH_DASH ? " stroke-dasharray=\"5,3\"" : "");
            break;
        case SWATCH_BOX:
            ml_str_printf(o, "<rect class=\"swatch\" x=\"%.1f\" y=\"%.1f\" width=\"20\" height=\"10\" "
                             "fill=\"%s\" fill-opacity=\"%.2f\"/>\n", x, y - 9, items[k].color,
                          items[k].opacity);
            break;
        case SWATCH_TICK:
            ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                             "stroke-dasharray=\"2,2\"/>\n", x + 10, y - 11, x + 10, y + 2, items[k].color);
            break;
        default:
            ml_str_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"/>\n", x + 10, y - 4,
                          items[k].color);
        }
        plot_text(o, x + 25, y, "class=\"legend\" font-size=\"11\" fill=\"#222\"", items[k].label);
        x += w + 8;
    }
    return y + 8;
}

/* Draws panel p at its own origin; returns its height (the end of its legend). */
static double draw_panel(ml_str *o, panel *p, plot_colors *colors, const plot_options *opt) {
    const series *s = p->s;
    plot_text(o, p->x0 + PLOT_LEFT, 26, "class=\"title\" font-size=\"16\" font-weight=\"bold\" fill=\"#111\"",
              s->label);
    char sub[320];
    snprintf(sub, sizeof sub, "%.160s, world %d, %s view, %s", s->source, s->world,
             ml_mem_view_names[opt->view],
             p->curves[0].meas ? "predicted (solid) and measured (dashed)" : "predicted");
    plot_text(o, p->x0 + PLOT_LEFT, 46, "font-size=\"11\" fill=\"#555\"", sub);
    /* the device view counts pages, not buffers: no bands there */
    bool bands = opt->view != VIEW_DEVICE && p->curves[0].n;
    band_legend lg[MAX_ROWS];
    memset(lg, 0, sizeof lg);
    for (int k = 0; k < p->n_rows; k++) {
        const row *rw = &p->rows[k];
        char label[96];
        group_label(p, rw->rank, label, sizeof label);
        char attrs[128];
        snprintf(attrs, sizeof attrs, "class=\"row-label\" data-rank=\"%d\" font-size=\"12\" "
                 "font-weight=\"bold\" fill=\"%s\"", rw->rank, group_color(p, rw->rank));
        plot_text(o, p->x0 + PLOT_LEFT, rw->top - 5, attrs, label);
        if (bands)
            plot_bands_draw(o, p, rw, colors, &lg[k]);
        if (p->curves[rw->rank].resv)
            draw_envelope(o, p, rw);
        draw_spans(o, p, rw);
        draw_lanes(o, p, rw);
        draw_y_axis(o, p, rw, opt);
        draw_row_curves(o, p, rw);
    }
    if (p->n_groups > p->n_rows) {
        char note[160];
        snprintf(note, sizeof note, "%d more rank groups with curves of their own are not drawn "
                 "(at most %d rows)", p->n_groups - p->n_rows, MAX_ROWS);
        plot_text(o, p->x0 + PLOT_LEFT, p->axis_top - 4, "class=\"rows-note\" font-size=\"11\" fill=\"#b00\"", note);
    }
    draw_x_axis(o, p, opt);
    draw_peak(o, p, opt);
    return draw_legend(o, p, lg, colors, opt);
}

/* How deep regions nest in a plan: the strips its region bars need. */
static int region_depth(const rank_plan *rp) {
    int depth = 0, max = 0;
    for (size_t k = 0; k < rp->n_ops; k++) {
        if (rp->ops[k].kind == OP_REGION_BEGIN)
            max = ++depth > max ? depth : max;
        else if (rp->ops[k].kind == OP_REGION_END && depth > 0)
            depth--;
    }
    return max < 64 ? max : 64;
}

/* Sets up panel p for series s: curves, rank groups, rows, the vertical layout. */
static void panel_build(panel *p, const series *s, double w, const plot_options *o) {
    p->s = s;
    p->w = w;
    p->pw = w - PLOT_LEFT - PLOT_RIGHT;
    p->curves = ml_xcalloc((size_t)s->world + 1, sizeof *p->curves);
    p->group = ml_xcalloc((size_t)s->world + 1, sizeof *p->group);
    p->rows = ml_xcalloc(MAX_ROWS, sizeof *p->rows);
    for (int r = 0; r < s->world; r++) {
        curve *c = &p->curves[r];
        curve_build(c, s, r, o);
        p->xmax = fmax(p->xmax, c->edges[c->n]);
        p->group[r] = r;
        for (int q = 0; q < r; q++) {
            const curve *cq = &p->curves[q];
            if (p->group[q] == q && cq->n == c->n && same_values(cq->pred, c->pred, c->n) &&
                same_values(cq->meas, c->meas, c->n) && same_values(cq->resv, c->resv, c->n)) {
                p->group[r] = q;
                break;
            }
        }
        if (p->group[r] == r) {
            if (p->n_rows < MAX_ROWS)
                p->rows[p->n_rows++].rank = r;
            p->n_groups++;
        }
    }
    if (p->n_groups > p->n_rows) {
        /* past MAX_ROWS groups the last row goes to the group with the highest peak (the rows
         * left out come after it, so the rows stay in rank order), whose note is drawn */
        int best = 0;
        for (int r = 1; r < s->world; r++)
            best = s->pred[r].peak[o->view] > s->pred[best].peak[o->view] ? r : best;
        bool drawn = false;
        for (int k = 0; k < p->n_rows; k++)
            drawn = drawn || p->rows[k].rank == p->group[best];
        if (!drawn)
            p->rows[p->n_rows - 1].rank = p->group[best];
    }
    if (p->xmax <= 0)
        p->xmax = o->time_axis ? 1e-6 : 1;
    p->plot_h = p->n_rows > 1 ? ROWS_PLOT_H : ROW_PLOT_H;
    p->note_top = TITLE_H;
    double y = TITLE_H + NOTE_H;
    for (int k = 0; k < p->n_rows; k++) {
        row *rw = &p->rows[k];
        uint32_t streams = s->s->syms[SYM_STREAM].n;
        rw->n_lanes = streams ? streams : 1;
        rw->top = y + ROW_LABEL_H;
        rw->regions_top = rw->top + p->plot_h + 4;
        rw->n_regions = region_depth(&s->plans[rw->rank]);
        rw->lanes_top = rw->regions_top + REGION_H * (double)rw->n_regions + 2;
        y = rw->lanes_top + LANE_H * (double)rw->n_lanes + 4;
    }
    p->axis_top = y + (p->n_groups > p->n_rows ? 16 : 0);
    p->legend_top = p->axis_top + AXIS_H;
}

int plot_svg(const series *items, size_t n, const plot_options *o, ml_str *out, ml_diags *d) {
    static const ml_mark none = {0, 0};
    if (!n) {
        ml_error(d, "plot", none, "nothing to plot");
        return -1;
    }
    for (size_t i = 0; i < n && o->time_axis; i++)
        if (!items[i].has_time) {
            ml_error(d, items[i].source, none,
                     "'--time' needs a run result with measured times; '%s' has none", items[i].source);
            return -1;
        }
    /* one width for every panel: the widest any needs, so that the grid's columns line up */
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        size_t ops = 0;
        for (int r = 0; r < items[i].world; r++)
            ops = items[i].plans[r].n_ops > ops ? items[i].plans[r].n_ops : ops;
        w = fmax(w, PLOT_LEFT + PLOT_RIGHT + PX_PER_OP * (double)ops);
    }
    w = o->width ? fmax(o->width, PLOT_LEFT + PLOT_RIGHT + 100)
                 : fmin(fmax(w, MIN_PANEL_W), n > 1 ? MAX_GRID_PANEL_W : MAX_PANEL_W);
    panel *ps = ml_xcalloc(n, sizeof *ps);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        panel_build(&ps[i], &items[i], w, o);
        uint64_t max = 0;
        for (int r = 0; r < items[i].world; r++)
            max = curve_max(&ps[i].curves[r]) > max ? curve_max(&ps[i].curves[r]) : max;
        y_scale(max, &ps[i].ymax, &ps[i].ystep);
        lo = max < lo ? max : lo;
        hi = max > hi ? max : hi;
    }
    if ((double)hi <= SHARED_SCALE_RATIO * (double)lo)
        for (size_t i = 0; i < n; i++)
            y_scale(hi, &ps[i].ymax, &ps[i].ystep);

    /* the panels first, so that each grid row is as tall as its tallest panel */
    size_t cols = n <= GRID_COLS ? n : n == 4 ? 2 : GRID_COLS;
    ml_str *bodies = ml_xcalloc(n, sizeof *bodies);
    double *heights = ml_xcalloc(n, sizeof *heights);
    plot_colors colors = {0};
    for (size_t i = 0; i < n; i++)
        heights[i] = draw_panel(&bodies[i], &ps[i], &colors, o) + 6;
    double svg_h = 0;
    ml_str body = {0};
    for (size_t i = 0; i < n; i += cols) {
        double row_h = 0;
        for (size_t j = i; j < i + cols && j < n; j++)
            row_h = fmax(row_h, heights[j]);
        for (size_t j = i; j < i + cols && j < n; j++) {
            double x = w * (double)(j - i);
            ml_str_printf(&body, "<g class=\"panel\" data-index=\"%zu\" transform=\"translate(%.0f %.0f)\">\n",
                          j, x, svg_h);
            if (bodies[j].n)
                ml_str_append(&body, bodies[j].s, bodies[j].n);
            ml_str_printf(&body, "</g>\n");
            if (j > i)
                ml_str_printf(&body, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n",
                              x, svg_h + 10, x, svg_h + row_h - 10);
        }
        if (i > 0)
            ml_str_printf(&body, "<line x1=\"10\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n",
                          svg_h, w * (double)cols - 10, svg_h);
        svg_h += row_h;
    }
    double width = w * (double)cols;
    ml_str_printf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                       "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
                  width, svg_h, width, svg_h);
    ml_str_printf(out, "<title>");
    plot_xml_escape(out, "memlife plot: ");
    for (size_t i = 0; i < n; i++) {
        plot_xml_escape(out, items[i].label);
        plot_xml_escape(out, i + 1 < n ? " vs " : "");
    }
    ml_str_printf(out, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
    if (body.n)
        ml_str_append(out, body.s, body.n);
    ml_str_printf(out, "</svg>\n");
    ml_str_free(&body);
    for (size_t i = 0; i < n; i++) {
        ml_str_free(&bodies[i]);
        for (int r = 0; r < ps[i].s->world; r++)
            curve_free(&ps[i].curves[r]);
        free(ps[i].curves);
        free(ps[i].group);
        free(ps[i].rows);
    }
    plot_colors_free(&colors);
    free(bodies);
    free(heights);
    free(ps);
    return 0;
}
