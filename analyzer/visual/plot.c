/* SPDX-License-Identifier: MIT */
/* plot.c — the SVG writer of `memlife plot` (plot.h).
 *
 * Coordinates: each op k of a rank occupies [edges[k], edges[k+1]) on the x axis, in ops (edges[k]
 * = k) or, with --time, in seconds (edges[k+1] = the measured time after op k). The value drawn
 * over op k is the live bytes after it, so an alloc raises the curve over its own slot. */
#include "visual/plot.h"
#include "report/report_int.h"
#include "predict/timemodel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Layout, top to bottom: title and subtitle (TITLE_H), the peak note's band (so that the note
 * never covers a curve), the plot (PLOT_H), one lane per stream (LANE_H each: the spans of the
 * ops on it, labelled where the label fits), the x labels (LABELS_H), the legend. A panel is as
 * wide as its ops need (PX_PER_OP each, between MIN_PANEL_W and MAX_PANEL_W) or --width. */
enum {
    MIN_PANEL_W = 640, MAX_PANEL_W = 4000, PX_PER_OP = 6, PLOT_LEFT = 84, PLOT_RIGHT = 28,
    TITLE_H = 56, NOTE_LINES = 4, NOTE_H = 14 * NOTE_LINES + 10, PLOT_H = 300, LANE_H = 16, LABELS_H = 124, LEGEND_ROW = 18, MAX_PEAK_LINE = 72,
    MAX_BANDS = 8,  /* buffers with a band of their own; the rest is "other" */
    BAND_SAMPLES = 600
};
#define MIB 1048576.0
#define BAND_OPACITY 0.75   /* bands and their legend swatches alike */

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
/* Bands (pale, under the lines) and the "other" band; the legend takes the same table. */
static const char *const band_palette[MAX_BANDS + 1] = {
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5",
    "#d9d9d9"};
/* Spans in the stream lanes, by what the op is. */
static const char *lane_color(plan_op_kind k) {
    return k == OP_COLL ? "#5b8fd1" : k == OP_COMPUTE ? "#6bb36b" : "#e0a050";
}

void plot_xml_escape(ml_str *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': ml_str_append(out, "&amp;", 5); break;
        case '<': ml_str_append(out, "&lt;", 4); break;
        case '>': ml_str_append(out, "&gt;", 4); break;
        case '"': ml_str_append(out, "&quot;", 6); break;
        case '\'': ml_str_append(out, "&apos;", 6); break;
        default:
            /* Control characters are not allowed in XML 1.0 at all. */
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
                ml_str_append(out, s, 1);
        }
    }
}

/* One rank's curve(s) on a panel's x units. */
typedef struct {
    size_t n;                  /* ops */
    double *edges;             /* [n + 1] */
    uint64_t *pred;            /* [n] live bytes after each op */
    uint64_t *meas;            /* [n] or NULL */
} curve;

/* One panel: a series and the scale its curves are drawn on. */
typedef struct {
    const series *s;
    double x0;                 /* left edge of the panel in the document */
    double w, pw;              /* panel width, plot width */
    double xmax;               /* x units at the right end of the plot */
    double ymax;               /* bytes at the top (shared by all panels) */
    curve *curves;             /* [world] */
    int *group;                /* [world]: index of the first rank with the same curves */
    /* vertical layout, shared by every panel of the document */
    double note_top, top, lanes_top, labels_top, legend_top;
    uint32_t n_lanes;
} panel;

static double px(const panel *p, double u) { return p->x0 + PLOT_LEFT + u / p->xmax * p->pw; }
static double py(const panel *p, double bytes) {
    return p->top + PLOT_H - bytes / p->ymax * PLOT_H;
}

/* Fills c for rank r: predicted values, measured values and the x edges of every op. */
static void curve_build(curve *c, const series *s, int r, const plot_options *o) {
    c->n = s->plans[r].n_ops;
    c->edges = calloc(c->n + 1, sizeof *c->edges);
    c->pred = calloc(c->n + 1, sizeof *c->pred);
    c->meas = calloc(c->n + 1, sizeof *c->meas);
    double *t = calloc(c->n + 1, sizeof *t);
    if (!series_rank_values(s, r, o->view, c->pred, c->meas, t)) {
        free(c->meas);
        c->meas = NULL;
    }
    for (size_t k = 0; k < c->n; k++)
        c->edges[k + 1] = o->time_axis && c->meas ? fmax(t[k], c->edges[k]) : (double)(k + 1);
    free(t);
}

static bool same_values(const uint64_t *a, const uint64_t *b, size_t n) {
    if (!a || !b)
        return a == b;
    return !memcmp(a, b, n * sizeof *a);
}

/* "rank 2", "ranks 0-3", "ranks 0, 2". */
static void group_label(const panel *p, int g, char *buf, size_t len) {
    int *ranks = calloc((size_t)p->s->world, sizeof *ranks);
    size_t n = 0;
    for (int r = 0; r < p->s->world; r++)
        if (p->group[r] == g)
            ranks[n++] = r;
    char list[80];
    report_ranks_text(ranks, n, list, sizeof list);
    snprintf(buf, len, "rank%s %.80s", n > 1 ? "s" : "", list);
    free(ranks);
}

/* A round step for about `want` intervals over [0, max]: 1, 2, 2.5 or 5 times a power of ten. */
static double nice_step(double max, int want) {
    double raw = max / want, mag = pow(10, floor(log10(raw)));
    static const double mult[] = {1, 2, 2.5, 5, 10};
    for (size_t k = 0; k < ML_ARRAY_LEN(mult); k++)
        if (mult[k] * mag >= raw)
            return mult[k] * mag;
    return 10 * mag;
}

/* The shared y scale: round MiB ticks with headroom above the highest curve for the peak label. */
static double y_top(const panel *ps, size_t n, double *step) {
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++)
        for (int r = 0; r < ps[i].s->world; r++) {
            const curve *c = &ps[i].curves[r];
            for (size_t k = 0; k < c->n; k++) {
                max = c->pred[k] > max ? c->pred[k] : max;
                if (c->meas)
                    max = c->meas[k] > max ? c->meas[k] : max;
            }
        }
    double top = max ? max * 1.2 : MIB;
    double mib_step = nice_step(top / MIB, 6);
    *step = mib_step * MIB;
    return ceil(top / *step) * *step;
}

static void text(ml_str *o, double x, double y, const char *attrs, const char *s) {
    ml_str_printf(o, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    plot_xml_escape(o, s);
    ml_str_printf(o, "</text>\n");
}

static void draw_y_axis(ml_str *o, const panel *p, double step, const plot_options *opt) {
    double left = p->x0 + PLOT_LEFT, right = left + p->pw;
    for (double v = 0; v <= p->ymax + step / 2; v += step) {
        double y = py(p, v);
        char mib[32], label[48];
        ml_format_mib((int64_t)llround(v), mib, sizeof mib);
        snprintf(label, sizeof label, "%s MiB", mib);
        ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n",
                      left, y, right, y);
        /* data-y: where the value lies (the text sits 4 px lower to centre on its line). */
        ml_str_printf(o, "<text class=\"ytick\" data-bytes=\"%.0f\" data-y=\"%.1f\" x=\"%.1f\" "
                         "y=\"%.1f\" text-anchor=\"end\" font-size=\"11\" fill=\"#333\">",
                      v, y, left - 6, y + 4);
        plot_xml_escape(o, label);
        ml_str_printf(o, "</text>\n");
    }
    char title[64];
    snprintf(title, sizeof title, "live %s bytes", ml_mem_view_names[opt->view]);
    ml_str_printf(o, "<text x=\"%.1f\" y=\"%.1f\" transform=\"rotate(-90 %.1f %.1f)\" "
                     "text-anchor=\"middle\" font-size=\"12\" fill=\"#333\">",
                  p->x0 + 16, p->top + PLOT_H / 2.0, p->x0 + 16, p->top + PLOT_H / 2.0);
    plot_xml_escape(o, title);
    ml_str_printf(o, "</text>\n");
    ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", left,
                  p->top, left, p->top + PLOT_H);
    ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", left,
                  p->top + PLOT_H, right, p->top + PLOT_H);
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

/* Step labels (line and op), thinned so that rotated labels never overlap; or time ticks. */
static void draw_x_axis(ml_str *o, const panel *p, const plot_options *opt) {
    const double base = p->labels_top;
    if (opt->time_axis) {
        double step = nice_step(p->xmax, 6);
        for (double t = 0; t <= p->xmax * 1.0001; t += step) {
            char label[32];
            format_seconds(t, label, sizeof label);
            ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
                          px(p, t), base, px(p, t), base + 4);
            text(o, px(p, t), base + 16, "text-anchor=\"middle\" font-size=\"11\" fill=\"#333\"", label);
        }
        text(o, p->x0 + PLOT_LEFT + p->pw / 2.0, base + 40,
             "text-anchor=\"middle\" font-size=\"12\" fill=\"#333\"", "time since baseline (measured)");
        return;
    }
    const rank_plan *rp = &p->s->plans[0];
    const curve *c = &p->curves[0];
    size_t stride = (size_t)ceil((double)rp->n_ops / (p->pw / 15.0));
    stride = stride ? stride : 1;
    for (size_t k = 0; k < rp->n_ops; k += stride) {
        char op[96], label[128];
        series_op_label(rp, &rp->ops[k], op, sizeof op);
        snprintf(label, sizeof label, "%u %.24s", plan_op_mark(&rp->ops[k]).line, op);
        double x = px(p, (c->edges[k] + c->edges[k + 1]) / 2);
        ml_str_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
                      x, base, x, base + 4);
        char attrs[160];
        snprintf(attrs, sizeof attrs, "class=\"xtick\" data-op=\"%zu\" text-anchor=\"end\" "
                 "font-size=\"10\" fill=\"#333\" transform=\"rotate(-45 %.1f %.1f)\"", k, x + 3, base + 10);
        text(o, x + 3, base + 10, attrs, label);
    }
    char axis[96] = "op (source line and step)";
    if (stride > 1)
        snprintf(axis, sizeof axis, "op (source line and step; one in %zu labelled)", stride);
    text(o, p->x0 + PLOT_LEFT + p->pw / 2.0, base + LABELS_H - 8,
         "text-anchor=\"middle\" font-size=\"12\" fill=\"#333\"", axis);
}

/* Collectives as shaded spans, syncs as dashed ticks, regions as bars along the bottom. Spans
 * closer than a pixel are merged so that a million-op plan stays a small file. Their labels are
 * in the stream lanes (draw_lanes), where nothing crosses them. */
static void draw_spans(ml_str *o, const panel *p) {
    const rank_plan *rp = &p->s->plans[0];
    const curve *c = &p->curves[0];
    double last_tick = -1e9, pend0 = 0, pend1 = -1;
    size_t pend_op = 0, depth = 0, region_start[64];
    for (size_t k = 0; k < rp->n_ops; k++) {
        const plan_op *op = &rp->ops[k];
        double x0 = px(p, c->edges[k]), x1 = px(p, c->edges[k + 1]);
        if (op->kind == OP_COLL) {
            /* Spans are merged only where they are too thin to tell apart anyway. */
            if (pend1 >= 0 && (x0 > pend1 + 1 || x1 - x0 >= 2)) {
                ml_str_printf(o, "<rect class=\"coll\" data-op=\"%zu\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                                 "height=\"%d\" fill=\"#5b8fd1\" fill-opacity=\"0.16\"/>\n",
                              pend_op, pend0, p->top, fmax(pend1 - pend0, 1), PLOT_H);
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
                          k, x1, p->top, x1, p->lanes_top + LANE_H * (double)p->n_lanes);
            last_tick = x1;
        } else if (op->kind == OP_REGION_BEGIN) {
            if (depth < ML_ARRAY_LEN(region_start))
                region_start[depth] = k;
            depth++;
        } else if (op->kind == OP_REGION_END && depth > 0) {
            depth--;
            if (depth >= ML_ARRAY_LEN(region_start))
                continue;
            double r0 = px(p, c->edges[region_start[depth]]), r1 = x1;
            double y = p->top + PLOT_H - 13.0 * (double)(depth + 1);
            ml_str_printf(o, "<rect class=\"region\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"11\" "
                             "fill=\"#e8c872\" fill-opacity=\"0.45\"/>\n", r0, y, fmax(r1 - r0, 1));
            const char *name = sched_sym_name(rp->s, SYM_REGION, op->u.region.region);
            if (r1 - r0 >= 6.0 * (double)strlen(name))
                text(o, r0 + 2, y + 9, "font-size=\"9\" fill=\"#6b5410\"", name);
        }
    }
    if (pend1 >= 0)
        ml_str_printf(o, "<rect class=\"coll\" data-op=\"%zu\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                         "height=\"%d\" fill=\"#5b8fd1\" fill-opacity=\"0.16\"/>\n",
                      pend_op, pend0, p->top, fmax(pend1 - pend0, 1), PLOT_H);
}

/* One lane per stream under the plot: a span per op on it, labelled only where the label fits
 * inside its span (so labels never overlap anything); spans thinner than a pixel merge. */
static void draw_lanes(ml_str *o, const panel *p) {
    const rank_plan *rp = &p->s->plans[0];
    const curve *c = &p->curves[0];
    double right = p->x0 + PLOT_LEFT + p->pw;
    for (uint32_t st = 0; st < p->n_lanes; st++) {
        double y = p->lanes_top + LANE_H * (double)st;
        ml_str_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n",
                      p->x0 + PLOT_LEFT, y, p->pw, LANE_H - 2, st % 2 ? "#f4f4f4" : "#fafafa");
        char attrs[96];
        snprintf(attrs, sizeof attrs, "class=\"lane\" text-anchor=\"end\" font-size=\"10\" fill=\"#333\"");
        text(o, p->x0 + PLOT_LEFT - 6, y + LANE_H - 5, attrs, sched_sym_name(rp->s, SYM_STREAM, st));
    }
    double *last_end = ml_xcalloc(p->n_lanes + 1, sizeof *last_end);
    for (uint32_t st = 0; st < p->n_lanes; st++)
        last_end[st] = -1e9;
    for (size_t k = 0; k < rp->n_ops; k++) {
        const plan_op *op = &rp->ops[k];
        int st = tm_op_stream(op);
        if (st < 0 || (uint32_t)st >= p->n_lanes)
            continue;
        double x0 = px(p, c->edges[k]), x1 = fmin(px(p, c->edges[k + 1]), right);
        if (x1 < last_end[st] + 1)
            continue;   /* under a pixel from the last span of this lane */
        double y = p->lanes_top + LANE_H * (double)st;
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
            text(o, x0 + 2, y + LANE_H - 5, "class=\"lane-label\" font-size=\"9\" fill=\"#fff\"", label);
    }
    free(last_end);
}

/* Live bytes of the largest buffers, stacked under the curves of the first rank group, as in
 * memory_viz's active-memory timeline: the MAX_BANDS buffers with the largest size, the rest as
 * "other" (what the curve has above them). Requested view only; the device view has pages. */
typedef struct {
    uint32_t buf[MAX_BANDS];
    uint32_t n;
} band_set;

static void choose_bands(const panel *p, band_set *bs) {
    const rank_plan *rp = &p->s->plans[0];
    uint32_t n_bufs = rp->s->syms[SYM_BUFFER].n;
    uint64_t *size = ml_xcalloc(n_bufs + 1, sizeof *size);
    for (size_t k = 0; k < rp->n_ops; k++)
        if (rp->ops[k].kind == OP_ALLOC && rp->ops[k].u.alloc.buf < n_bufs &&
            rp->ops[k].u.alloc.bytes > size[rp->ops[k].u.alloc.buf])
            size[rp->ops[k].u.alloc.buf] = rp->ops[k].u.alloc.bytes;
    bs->n = 0;
    for (uint32_t j = 0; j < MAX_BANDS; j++) {
        uint32_t best = UINT32_MAX;
        for (uint32_t b = 0; b < n_bufs; b++)
            if (size[b] && (best == UINT32_MAX || size[b] > size[best]))
                best = b;
        if (best == UINT32_MAX)
            break;
        bs->buf[bs->n++] = best;
        size[best] = 0;
    }
    free(size);
}

static void draw_bands(ml_str *o, const panel *p, const band_set *bs) {
    const rank_plan *rp = &p->s->plans[0];
    const curve *c = &p->curves[0];
    uint32_t n_bufs = rp->s->syms[SYM_BUFFER].n;
    uint64_t *live = ml_xcalloc(n_bufs + 1, sizeof *live);
    /* levels[k * (n+1) + j]: top of band j after op k (band n is "other") */
    size_t nb = bs->n + 1;
    double *levels = ml_xcalloc((c->n + 1) * nb, sizeof *levels);
    int *slot = ml_xcalloc(n_bufs + 1, sizeof *slot);
    for (uint32_t b = 0; b < n_bufs; b++)
        slot[b] = -1;
    for (uint32_t j = 0; j < bs->n; j++)
        slot[bs->buf[j]] = (int)j;
    for (size_t k = 0; k < c->n; k++) {
        const plan_op *op = &rp->ops[k];
        if (op->kind == OP_ALLOC && op->u.alloc.buf < n_bufs)
            live[op->u.alloc.buf] = op->u.alloc.bytes;
        else if (op->kind == OP_FREE && op->u.free.buf < n_bufs)
            live[op->u.free.buf] = 0;
        else if (op->kind == OP_RELEASE && op->u.release.buf < n_bufs) {
            /* the kept chunk: ceil(bytes / chunks), the last one shorter (as lint has it) */
            uint32_t b = op->u.release.buf;
            uint32_t chunks = 0;
            for (size_t j = k; j-- > 0;)
                if (rp->ops[j].kind == OP_ALLOC && rp->ops[j].u.alloc.buf == b) {
                    chunks = rp->ops[j].u.alloc.chunks;
                    break;
                }
            if (chunks > 1) {
                uint64_t ch = (live[b] + chunks - 1) / chunks, lo = (uint64_t)op->u.release.keep * ch;
                live[b] = lo >= live[b] ? 0 : (live[b] - lo < ch ? live[b] - lo : ch);
            }
        }
        double sum = 0;
        for (uint32_t j = 0; j < bs->n; j++) {
            sum += (double)live[bs->buf[j]];
            levels[k * nb + j] = sum;
        }
        levels[k * nb + bs->n] = fmax(sum, (double)c->pred[k]);   /* other: up to the curve */
    }
    /* one closed path per band: its top along the ops, back along the band below. Past
     * BAND_SAMPLES ops the bands sample every stride-th op (an overview: the curve above keeps
     * every pixel column), so that a 20k-op plot stays a small file. */
    size_t stride = c->n > BAND_SAMPLES ? (c->n + BAND_SAMPLES - 1) / BAND_SAMPLES : 1;
    for (size_t j = 0; j < nb; j++) {
        if (j == bs->n && bs->n == 0)
            continue;
        ml_str_printf(o, "<path class=\"band\" data-band=\"%zu\" fill=\"%s\" fill-opacity=\"%.2f\" "
                         "stroke=\"none\" d=\"M%.1f %.1f", j, band_palette[j < bs->n ? j : MAX_BANDS],
                      BAND_OPACITY, px(p, c->edges[0]), py(p, 0));
        for (size_t k = 0; k < c->n; k += stride)
            ml_str_printf(o, "V%.1fH%.1f", py(p, levels[k * nb + j]),
                          px(p, c->edges[k + stride < c->n ? k + stride : c->n]));
        for (size_t k = (c->n - 1) / stride * stride + 1; k-- > 0;) {
            if (k % stride)
                continue;
            double below = j ? levels[k * nb + j - 1] : 0;
            ml_str_printf(o, "V%.1fH%.1f", py(p, below), px(p, c->edges[k]));
        }
        ml_str_printf(o, "Z\"/>\n");
    }
    free(live);
    free(levels);
    free(slot);
}

/* A step path: from the baseline (0) at the first edge, one H/V pair per change of value. */
static void draw_curve(ml_str *o, const panel *p, int rank, const curve *c, const uint64_t *v,
                       const char *kind, const char *color) {
    /* Under a measured curve the prediction is wide and pale, so that a measurement that
     * matches it exactly still shows as a dashed line on top. */
    const char *style = *kind == 'm' ? " stroke-width=\"1.6\" stroke-dasharray=\"6,4\""
                        : c->meas ? " stroke-width=\"4\" stroke-opacity=\"0.45\""
                                  : " stroke-width=\"2\"";
    ml_str_printf(o, "<path class=\"curve\" data-rank=\"%d\" data-kind=\"%s\" fill=\"none\" "
                     "stroke=\"%s\"%s d=\"M%.1f %.1f",
                  rank, kind, color, style, px(p, c->edges[0]), py(p, 0));
    uint64_t prev = 0;
    double last_x = px(p, c->edges[0]);
    if (c->n > 4 * p->pw) {
        /* More ops than pixels: per pixel column, a vertical bar from the lowest to the highest
         * value in it, ending at its last; the peak stays visible and the file small. */
        size_t k = 0;
        while (k < c->n) {
            double col = floor(px(p, c->edges[k]));
            uint64_t lo = v[k], hi = v[k];
            for (; k < c->n && floor(px(p, c->edges[k])) == col; k++) {
                lo = v[k] < lo ? v[k] : lo;
                hi = v[k] > hi ? v[k] : hi;
            }
            ml_str_printf(o, "H%.1fV%.1fV%.1fV%.1f", col, py(p, (double)hi), py(p, (double)lo),
                          py(p, (double)v[k - 1]));
        }
        ml_str_printf(o, "H%.1f\"/>\n", px(p, c->edges[c->n]));
        return;
    }
    for (size_t k = 0; k < c->n; k++) {
        if (v[k] == prev)
            continue;
        double x = px(p, c->edges[k]);
        if (x != last_x)
            ml_str_printf(o, "H%.1f", x);
        ml_str_printf(o, "V%.1f", py(p, (double)v[k]));
        prev = v[k];
        last_x = x;
    }
    ml_str_printf(o, "H%.1f\"/>\n", px(p, c->edges[c->n]));
}

/* Marks the highest predicted peak of the panel and lists the buffers live at it. */
static void draw_peak(ml_str *o, const panel *p, const plot_options *opt) {
    const series *s = p->s;
    int best = -1;
    for (int r = 0; r < s->world; r++)
        if (s->pred[r].peak_op[opt->view] != SIZE_MAX &&
            (best < 0 || s->pred[r].peak[opt->view] > s->pred[best].peak[opt->view]))
            best = r;
    if (best < 0)
        return;
    const pred_rank *pr = &s->pred[best];
    const rank_plan *rp = &s->plans[best];
    size_t op = pr->peak_op[opt->view];
    if (op >= rp->n_ops)
        return;
    const curve *c = &p->curves[best];
    double mx = px(p, (c->edges[op] + c->edges[op + 1]) / 2), my = py(p, (double)pr->peak[opt->view]);

    /* Lines of the label: the value, where, then the live buffers wrapped to the panel. */
    char lines[NOTE_LINES][MAX_PEAK_LINE + 32];
    int n = 0;
    char mib[32], what[96];
    ml_format_mib((int64_t)pr->peak[opt->view], mib, sizeof mib);
    snprintf(lines[n++], sizeof lines[0], "peak %s MiB", mib);
    series_op_label(rp, &rp->ops[op], what, sizeof what);
    ml_mark m = plan_op_mark(&rp->ops[op]);
    bool one_group = true;
    for (int r = 0; r < s->world; r++)
        one_group = one_group && p->group[r] == 0;
    char on_rank[32] = "";
    if (!one_group)
        snprintf(on_rank, sizeof on_rank, " on rank %d", best);
    snprintf(lines[n++], sizeof lines[0], "at %u:%u %.64s%s", m.line, m.col, what, on_rank);
    uint64_t *bytes = calloc(s->s->syms[SYM_BUFFER].n + 1, sizeof *bytes);
    series_live_bytes_at(rp, op, bytes);
    snprintf(lines[n], sizeof lines[0], "live:");
    for (uint32_t k = 0; k < pr->n_peak_live[opt->view]; k++) {
        uint32_t b = pr->peak_live[opt->view][k];
        char item[200], size[32];
        ml_format_bytes(bytes[b], size, sizeof size);
        snprintf(item, sizeof item, " %.120s %s%s", sched_sym_name(s->s, SYM_BUFFER, b), size,
                 k + 1 < pr->n_peak_live[opt->view] ? "," : "");
        if (strlen(lines[n]) + strlen(item) > MAX_PEAK_LINE) {
            if (n == (int)ML_ARRAY_LEN(lines) - 1) {
                snprintf(lines[n] + strlen(lines[n]), sizeof lines[0] - strlen(lines[n]), " ...");
                break;
            }
            n++;
            lines[n][0] = 0;
        }
        snprintf(lines[n] + strlen(lines[n]), sizeof lines[0] - strlen(lines[n]), "%.100s", item);
    }
    n++;
    free(bytes);

    size_t widest = 0;
    for (int k = 0; k < n; k++)
        widest = strlen(lines[k]) > widest ? strlen(lines[k]) : widest;
    double w = 6.2 * (double)widest + 10, h = 14.0 * n + 6;
    /* In the note band above the plot, never over a curve: centred on the marker as far as the
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
        text(o, bx + 5, by + 14.0 * (k + 1), k == 0 ? "class=\"peak-label\" font-size=\"12\" "
             "font-weight=\"bold\" fill=\"#b00\"" : "class=\"peak-label\" font-size=\"11\" fill=\"#222\"",
             lines[k]);
    ml_str_printf(o, "<circle class=\"peak\" data-rank=\"%d\" data-op=\"%zu\" data-bytes=\"%llu\" "
                     "cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"#c00\" stroke=\"#fff\"/>\n",
                  best, op, (unsigned long long)pr->peak[opt->view], mx, my);
}

/* The legend of one panel, flowed in rows along its bottom. */
/* Returns the bottom of the last row. */
static double draw_legend(ml_str *o, const panel *p, const band_set *bs) {
    double x = p->x0 + PLOT_LEFT, y = p->legend_top + 14;
    const double right = p->x0 + p->w - 10;
    bool measured = false;
    for (int r = 0; r < p->s->world; r++)
        measured = measured || p->curves[r].meas;
    enum { SWATCH_LINE, SWATCH_DASH, SWATCH_BOX, SWATCH_TICK, SWATCH_DOT };
    struct { int kind; const char *color; char label[96]; double opacity; } items[32];
    for (size_t k = 0; k < ML_ARRAY_LEN(items); k++)
        items[k].opacity = 1;
    int n = 0;
    for (int r = 0; r < p->s->world && n < 8; r++)
        if (p->group[r] == r) {
            items[n].kind = SWATCH_LINE;
            items[n].color = palette[n % ML_ARRAY_LEN(palette)];
            group_label(p, r, items[n].label, sizeof items[n].label);
            n++;
        }
    items[n].kind = SWATCH_LINE, items[n].color = "#555", snprintf(items[n++].label, 96, "predicted");
    if (measured)
        items[n].kind = SWATCH_DASH, items[n].color = "#555", snprintf(items[n++].label, 96, "measured");
    /* the bands and lane spans with the very colours they are drawn in */
    for (uint32_t j = 0; bs && j <= bs->n && bs->n; j++) {
        items[n].kind = SWATCH_BOX, items[n].color = band_palette[j < bs->n ? j : MAX_BANDS];
        items[n].opacity = BAND_OPACITY;
        snprintf(items[n++].label, 96, "%.90s",
                 j < bs->n ? sched_sym_name(p->s->s, SYM_BUFFER, bs->buf[j]) : "other");
    }
    items[n].kind = SWATCH_BOX, items[n].color = lane_color(OP_COLL), snprintf(items[n++].label, 96, "collective");
    items[n].kind = SWATCH_BOX, items[n].color = lane_color(OP_COMPUTE), snprintf(items[n++].label, 96, "compute");
    items[n].kind = SWATCH_BOX, items[n].color = lane_color(OP_COPY), snprintf(items[n++].label, 96, "copy, scale");
    items[n].kind = SWATCH_TICK, items[n].color = "#777", snprintf(items[n++].label, 96, "sync");
    items[n].kind = SWATCH_DOT, items[n].color = "#c00", snprintf(items[n++].label, 96, "peak");
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
        text(o, x + 25, y, "class=\"legend\" font-size=\"11\" fill=\"#222\"", items[k].label);
        x += w + 8;
    }
    return y + 8;
}

/* Returns the panel's bottom (the end of its legend). */
static double draw_panel(ml_str *o, const panel *p, double ystep, const plot_options *opt) {
    const series *s = p->s;
    text(o, p->x0 + PLOT_LEFT, 26, "class=\"title\" font-size=\"16\" font-weight=\"bold\" fill=\"#111\"",
         s->label);
    char sub[320];
    snprintf(sub, sizeof sub, "%.160s, world %d, %s view, %s", s->source, s->world,
             ml_mem_view_names[opt->view],
             p->curves[0].meas ? "predicted (solid) and measured (dashed)" : "predicted");
    text(o, p->x0 + PLOT_LEFT, 46, "font-size=\"11\" fill=\"#555\"", sub);
    band_set bs = {0};
    bool bands = opt->view == VIEW_REQUESTED && p->curves[0].n && !opt->time_axis;
    if (bands) {
        choose_bands(p, &bs);
        draw_bands(o, p, &bs);
    }
    draw_spans(o, p);
    draw_lanes(o, p);
    draw_y_axis(o, p, ystep, opt);
    draw_x_axis(o, p, opt);
    for (int r = 0, g = 0; r < s->world; r++) {
        if (p->group[r] != r)
            continue;
        const char *color = palette[g++ % ML_ARRAY_LEN(palette)];
        draw_curve(o, p, r, &p->curves[r], p->curves[r].pred, "predicted", color);
        if (p->curves[r].meas)
            draw_curve(o, p, r, &p->curves[r], p->curves[r].meas, "measured", color);
    }
    draw_peak(o, p, opt);
    return draw_legend(o, p, bands ? &bs : NULL);
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
    panel *ps = calloc(n, sizeof *ps);
    /* the vertical layout: lanes for the most streams any input has */
    uint32_t lanes = 1;
    for (size_t i = 0; i < n; i++)
        lanes = items[i].s->syms[SYM_STREAM].n > lanes ? items[i].s->syms[SYM_STREAM].n : lanes;
    double x0 = 0;
    for (size_t i = 0; i < n; i++) {
        panel *p = &ps[i];
        p->s = &items[i];
        p->x0 = x0;
        size_t ops = items[i].world ? items[i].plans[0].n_ops : 0;
        double want = o->width ? (double)o->width
                               : PLOT_LEFT + PLOT_RIGHT + PX_PER_OP * (double)ops;
        p->w = fmin(fmax(want, o->width ? PLOT_LEFT + PLOT_RIGHT + 100 : MIN_PANEL_W),
                    o->width ? 1e6 : MAX_PANEL_W);
        p->pw = p->w - PLOT_LEFT - PLOT_RIGHT;
        x0 += p->w;
        p->n_lanes = items[i].s->syms[SYM_STREAM].n ? items[i].s->syms[SYM_STREAM].n : 1;
        p->note_top = TITLE_H;
        p->top = TITLE_H + NOTE_H;
        p->lanes_top = p->top + PLOT_H + 8;
        p->labels_top = p->lanes_top + LANE_H * (double)lanes + 4;
        p->legend_top = p->labels_top + LABELS_H;
        p->curves = calloc((size_t)p->s->world, sizeof *p->curves);
        p->group = calloc((size_t)p->s->world, sizeof *p->group);
        for (int r = 0; r < p->s->world; r++) {
            curve *c = &p->curves[r];
            curve_build(c, p->s, r, o);
            p->xmax = fmax(p->xmax, c->edges[c->n]);
            p->group[r] = r;
            for (int q = 0; q < r; q++) {
                const curve *cq = &p->curves[q];
                if (p->group[q] == q && cq->n == c->n && same_values(cq->pred, c->pred, c->n) &&
                    same_values(cq->meas, c->meas, c->n)) {
                    p->group[r] = q;
                    break;
                }
            }
        }
        if (p->xmax <= 0)
            p->xmax = o->time_axis ? 1e-6 : 1;
    }
    double ystep;
    double ymax = y_top(ps, n, &ystep);
    for (size_t i = 0; i < n; i++)
        ps[i].ymax = ymax;

    double width = x0;
    /* the panels first, so that the document is as tall as the tallest legend */
    ml_str body = {0};
    double svg_h = ps[0].legend_top;
    for (size_t i = 0; i < n; i++) {
        ml_str_printf(&body, "<g class=\"panel\" data-index=\"%zu\">\n", i);
        svg_h = fmax(svg_h, draw_panel(&body, &ps[i], ystep, o) + 6);
        ml_str_printf(&body, "</g>\n");
    }
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
    ml_str_free(&body);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            ml_str_printf(out, "<line x1=\"%.1f\" y1=\"10\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n",
                          ps[i].x0, ps[i].x0, svg_h - 10);
    }
    ml_str_printf(out, "</svg>\n");
    for (size_t i = 0; i < n; i++) {
        for (int r = 0; r < ps[i].s->world; r++) {
            free(ps[i].curves[r].edges);
            free(ps[i].curves[r].pred);
            free(ps[i].curves[r].meas);
        }
        free(ps[i].curves);
        free(ps[i].group);
    }
    free(ps);
    return 0;
}
