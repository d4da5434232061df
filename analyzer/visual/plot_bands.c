/* SPDX-License-Identifier: MIT */
/* plot_bands.c — the buffer bands under a row's curve (plot_int.h).
 *
 * A band is one allocation of a buffer, from its alloc to its free (a release's kept chunk goes
 * on in the same place, narrower). Bands stack in a fixed order — allocations that are never
 * freed first, then by allocation time — so that a band moves only when one under it is freed,
 * never because a newer or larger one arrived. That is what makes memory_viz's active-memory
 * timeline readable, and the difference from stacking by size, where every new large buffer
 * pushes the long-lived ones up. */
#include "plot_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Pale first, so that the first buffers of a picture never hide the rank curves over them; the
 * grey of the "small buffers" band is not among them. */
static const char *const band_palette[] = {
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d",
    "#9edae5", "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69",
    "#fccde5", "#bc80bd"};
const char PLOT_SMALL_COLOR[] = "#d4d4d4";
const char PLOT_OTHER_COLOR[] = "#bfc9d1";

const char *plot_color_of(plot_colors *c, const char *name) {
    if (!c->names.item_size)
        ml_vec_init(&c->names, sizeof(const char *));
    size_t k = 0;
    while (k < c->names.n && strcmp(ML_VEC_AT(&c->names, const char *, k), name))
        k++;
    if (k == c->names.n)
        *(char **)ml_vec_push(&c->names) = ml_xstrdup(name);
    return band_palette[k % ML_ARRAY_LEN(band_palette)];
}

void plot_colors_free(plot_colors *c) {
    for (size_t k = 0; k < c->names.n; k++)
        free(ML_VEC_AT(&c->names, char *, k));
    if (c->names.item_size)
        ml_vec_free(&c->names);
}

/* One allocation's stretch at one size: live after ops k0 .. k1-1. */
typedef struct {
    uint32_t buf;
    size_t k0, k1;
    size_t order;             /* the op of its alloc (a release's rest keeps its allocation's) */
    uint64_t bytes;
    bool to_end;              /* its allocation is never freed */
    size_t c0, c1;            /* the columns it is drawn in: [c0, c1) */
    double *bottom;           /* [c1 - c0] bytes under it */
} span;

typedef struct {
    span *v;
    size_t n, cap;
} spans;

static span *spans_push(spans *s) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = ml_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    memset(&s->v[s->n], 0, sizeof s->v[0]);
    return &s->v[s->n++];
}

/* Walks the plan once: the spans of every buffer, and the total live bytes after every op. */
static void collect(const rank_plan *rp, spans *out, uint64_t *total) {
    uint32_t n_bufs = rp->s->syms[SYM_BUFFER].n;
    size_t *open = ml_xcalloc(n_bufs + 1, sizeof *open);   /* index + 1 of its open span */
    uint32_t *chunks = ml_xcalloc(n_bufs + 1, sizeof *chunks);
    uint64_t sum = 0;
    for (size_t k = 0; k < rp->n_ops; k++) {
        const plan_op *op = &rp->ops[k];
        uint32_t b = series_op_buffer(op);
        if (b < n_bufs && (op->kind == OP_ALLOC || op->kind == OP_FREE || op->kind == OP_RELEASE)) {
            span *was = open[b] ? &out->v[open[b] - 1] : NULL;
            size_t order = was ? was->order : k;
            uint64_t now = 0;
            if (op->kind == OP_ALLOC) {
                now = op->u.alloc.bytes;
                chunks[b] = op->u.alloc.chunks;
                order = k;
            } else if (op->kind == OP_RELEASE && was) {
                /* the kept chunk: ceil(bytes / chunks), the last one shorter (as lint has it) */
                uint64_t live = was->bytes;
                now = live;
                if (chunks[b] > 1) {
                    uint64_t ch = (live + chunks[b] - 1) / chunks[b], lo = (uint64_t)op->u.release.keep * ch;
                    now = lo >= live ? 0 : (live - lo < ch ? live - lo : ch);
                }
            }
            if (was) {
                was->k1 = k;
                sum -= was->bytes;
                open[b] = 0;
            }
            if (now) {
                span *sp = spans_push(out);
                *sp = (span){.buf = b, .k0 = k, .k1 = rp->n_ops, .order = order, .bytes = now};
                open[b] = out->n;
                sum += now;
            }
        }
        total[k] = sum;
    }
    /* an allocation is long-lived when its last stretch is still open at the end */
    bool *lives = ml_xcalloc(rp->n_ops + 1, sizeof *lives);
    for (uint32_t b = 0; b < n_bufs; b++)
        if (open[b])
            lives[out->v[open[b] - 1].order] = true;
    for (size_t i = 0; i < out->n; i++)
        out->v[i].to_end = lives[out->v[i].order];
    free(lives);
    free(open);
    free(chunks);
}

/* Stacking order: long-lived allocations first, then by allocation time. */
static int stack_cmp(const span *a, const span *b) {
    if (a->to_end != b->to_end)
        return a->to_end ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The band a buffer is drawn in, as a key that prefixes its name. An imported snapshot names each
 * allocation by the first user frame that made it, made unique ("train.py-42", "train.py-42_2"):
 * the allocations of one source line share a band's colour and name (each still stacked in its own
 * place), since the line is what a reader can act on. Without frames it names them by address
 * ("a7f2a4ba00000_10"): the allocations of one address share a band, as the caching allocator
 * hands a block back to the same tensor of the next step. Numbered buffers of a schedule ("params0",
 * "grads_13") are one family the same way (*family set), so that 770 layers read as one band, not
 * as 770 slivers summed into grey; a stem with digits of its own ("a7f3d600000", an address) is
 * no family. Any other name is a band of its own. */
static size_t group_len(const char *name, bool *family) {
    size_t n = strlen(name), e = n;
    *family = false;
    while (e > 0 && is_digit(name[e - 1]))
        e--;
    size_t stem = e;   /* where the trailing number starts */
    if (e > 1 && e < n && name[e - 1] == '_') {   /* the uniquifier */
        n = e - 1;
        e = n;
        while (e > 0 && is_digit(name[e - 1]))
            e--;
    }
    bool addr = n > 6 && name[0] == 'a';   /* "a7f2a4ba00000": a block's address */
    for (size_t j = 1; j < n && addr; j++)
        addr = is_digit(name[j]) || (name[j] >= 'a' && name[j] <= 'f');
    if (addr)
        return n;
    if (e < n && e >= 3 && name[e - 1] == '-') {
        size_t dot = e - 1;   /* "FILE.EXT-LINE": a dot before the dash, letters between */
        while (dot > 0 && name[dot - 1] != '.' && name[dot - 1] != '/' && name[dot - 1] != '-')
            dot--;
        if (dot > 1 && name[dot - 1] == '.' && dot < e - 1)
            return n;
    }
    size_t k = stem < strlen(name) && stem > 0 && strchr("_-.", name[stem - 1]) ? stem - 1 : stem;
    bool digits = false;
    for (size_t j = 0; j < k; j++)
        digits = digits || is_digit(name[j]);
    if (stem == strlen(name) || k < 2 || digits)
        return strlen(name);
    *family = true;
    return k;
}

typedef struct {
    const char *name;
    size_t len;          /* of the key: a prefix of name */
    double area;         /* bytes times ops live, of all its allocations */
    uint32_t members;
    bool named;
    bool family;         /* numbered buffers: the key is a stem */
} group;

static int key_cmp(const group *a, const group *b) {
    size_t n = a->len < b->len ? a->len : b->len;
    int c = strncmp(a->name, b->name, n);
    return c ? c : a->len < b->len ? -1 : a->len > b->len;
}

static int group_sort_cmp(const void *a, const void *b) {
    const group *const *x = a, *const *y = b;
    return key_cmp(*x, *y);
}

/* Groups the buffers (gid[b]) and picks the groups that get a band: the MAX_BANDS with the most
 * bytes times ops, none under BAND_MIN_SHARE of the row's. Returns the groups, [*n]. */
/* A span's start or end, for the sweep that finds each band's highest live bytes. */
typedef struct {
    size_t k;
    int64_t delta;      /* negative: an end, sorted before a start at the same op */
    uint32_t group;
} band_event;

static int event_cmp(const void *a, const void *b) {
    const band_event *x = a, *y = b;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return (x->delta > 0) - (y->delta > 0);
}

/* The highest bytes each group has live at once (high[gid]), by a sweep over its spans. */
static void group_highs(const spans *sp, const uint32_t *gid, size_t n_groups, double *high) {
    band_event *ev = ml_xcalloc(2 * sp->n + 1, sizeof *ev);
    for (size_t i = 0; i < sp->n; i++) {
        ev[2 * i] = (band_event){sp->v[i].k0, (int64_t)sp->v[i].bytes, gid[sp->v[i].buf]};
        ev[2 * i + 1] = (band_event){sp->v[i].k1, -(int64_t)sp->v[i].bytes, gid[sp->v[i].buf]};
    }
    qsort(ev, 2 * sp->n, sizeof *ev, event_cmp);
    double *live = ml_xcalloc(n_groups + 1, sizeof *live);
    for (size_t i = 0; i < 2 * sp->n; i++) {
        live[ev[i].group] += (double)ev[i].delta;
        high[ev[i].group] = fmax(high[ev[i].group], live[ev[i].group]);
    }
    free(live);
    free(ev);
}

static group *choose(const rank_plan *rp, const spans *sp, uint64_t peak, uint32_t *gid, size_t *n) {
    uint32_t n_bufs = rp->s->syms[SYM_BUFFER].n;
    group *g = ml_xcalloc(n_bufs + 1, sizeof *g), **by = ml_xcalloc(n_bufs + 1, sizeof *by);
    for (uint32_t b = 0; b < n_bufs; b++) {
        g[b].name = sched_sym_name(rp->s, SYM_BUFFER, b);
        g[b].len = group_len(g[b].name, &g[b].family);
        by[b] = &g[b];
    }
    qsort(by, n_bufs, sizeof *by, group_sort_cmp);
    group *out = ml_xcalloc(n_bufs + 1, sizeof *out);
    *n = 0;
    for (uint32_t k = 0; k < n_bufs; k++) {
        if (!*n || key_cmp(&out[*n - 1], by[k]))
            out[(*n)++] = (group){.name = by[k]->name, .len = by[k]->len, .family = by[k]->family};
        gid[by[k] - g] = (uint32_t)(*n - 1);
    }
    double total = 0;
    bool *seen = ml_xcalloc(n_bufs + 1, sizeof *seen);
    for (size_t i = 0; i < sp->n; i++) {
        double a = (double)sp->v[i].bytes * (double)(sp->v[i].k1 - sp->v[i].k0);
        out[gid[sp->v[i].buf]].area += a;
        total += a;
        if (!seen[sp->v[i].buf])
            out[gid[sp->v[i].buf]].members++;
        seen[sp->v[i].buf] = true;
    }
    /* a band too thin to see is no band to name: it must reach BAND_SEEN_SHARE of the peak */
    double *high = ml_xcalloc(*n + 1, sizeof *high);
    group_highs(sp, gid, *n, high);
    for (int j = 0; j < MAX_BANDS; j++) {
        group *best = NULL;
        for (size_t k = 0; k < *n; k++)
            if (!out[k].named && out[k].area > 0 && high[k] >= BAND_SEEN_SHARE * (double)peak &&
                (!best || out[k].area > best->area))
                best = &out[k];
        if (!best || best->area < BAND_MIN_SHARE * total)
            break;
        best->named = true;
    }
    free(high);
    free(seen);
    free(by);
    free(g);
    return out;
}

typedef struct {
    const panel *p;
    const row *r;
    const curve *c;
    size_t stride, n_cols;
} cols;

static double col_x0(const cols *g, size_t c) { return plot_px(g->p, g->c->edges[c * g->stride]); }
static double col_x1(const cols *g, size_t c) {
    size_t k = (c + 1) * g->stride;
    return plot_px(g->p, g->c->edges[k < g->c->n ? k : g->c->n]);
}

/* One closed step path between lo(c) and hi(c) over columns [c0, c1). */
static void band_path(ml_str *o, const cols *g, size_t c0, size_t c1, const double *lo,
                      const double *hi) {
    const panel *p = g->p;
    double y = plot_py(p, g->r, lo[0]);
    ml_str_printf(o, " d=\"M%.1f %.1f", col_x0(g, c0), y);
    for (size_t c = c0; c < c1; c++) {
        double top = plot_py(p, g->r, hi[c - c0]);
        if (top != y) {
            if (c > c0)
                ml_str_printf(o, "H%.1f", col_x0(g, c));
            ml_str_printf(o, "V%.1f", top);
            y = top;
        }
    }
    ml_str_printf(o, "H%.1f", col_x1(g, c1 - 1));
    for (size_t c = c1; c-- > c0;) {
        double bot = plot_py(p, g->r, lo[c - c0]);
        if (bot != y) {
            ml_str_printf(o, "H%.1fV%.1f", col_x1(g, c), bot);
            y = bot;
        }
    }
    ml_str_printf(o, "H%.1fZ\"", col_x0(g, c0));
}

/* The name inside its band, at the first stretch where the band is flat and wide and tall
 * enough for it; nowhere if none is (the legend and the tooltip still name it). A band of many
 * allocations (a snapshot's source line) is measured as the block its allocations make where
 * they lie one on another: lo[c]..hi[c], lo[c] < 0 where it has none. */
static void band_label(ml_str *o, const cols *g, const double *lo, const double *hi, const char *name) {
    const panel *p = g->p;
    double need = 5.8 * (double)strlen(name) + 6, min_h = 11 * p->ymax / p->plot_h;
    for (size_t a = 0; a < g->n_cols;) {
        if (lo[a] < 0 || hi[a] - lo[a] < min_h) {
            a++;
            continue;
        }
        size_t b = a;
        double top = hi[a];
        while (b + 1 < g->n_cols && lo[b + 1] == lo[a] && hi[b + 1] - lo[a] >= min_h) {
            b++;
            top = fmin(top, hi[b]);
        }
        if (col_x1(g, b) - col_x0(g, a) >= need) {
            double y = plot_py(p, g->r, (lo[a] + top) / 2) + 3.5;
            plot_text(o, col_x0(g, a) + 3, y, "class=\"band-label\" font-size=\"10\" fill=\"#222\"", name);
            return;
        }
        a = b + 1;
    }
}

/* The tooltip: the buffer, its size, where the schedule allocates it (for an imported snapshot
 * the name is already its frame) and the ops it lives through. */
static void band_title(ml_str *o, const rank_plan *rp, const span *s) {
    char size[32], line[320];
    ml_format_bytes(s->bytes, size, sizeof size);
    ml_mark m = plan_op_mark(&rp->ops[s->order]);
    snprintf(line, sizeof line, "%.200s: %s, allocated at line %u, live after ops %zu to %zu",
             sched_sym_name(rp->s, SYM_BUFFER, s->buf), size, m.line, s->k0, s->k1 - 1);
    ml_str_printf(o, "><title>");
    plot_xml_escape(o, line);
    ml_str_printf(o, "</title></path>\n");
}

/* Every allocation of the named bands in its own place, then the bands' names. */
static void draw_each(ml_str *o, const cols *g, const rank_plan *rp, span *const *v, size_t nv,
                      const uint32_t *slot, const uint32_t *gid, const band_legend *lg,
                      plot_colors *colors) {
    for (size_t i = 0; i < nv; i++) {
        const span *s = v[i];
        uint32_t at = slot[gid[s->buf]];
        double *top = ml_xcalloc(s->c1 - s->c0, sizeof *top);
        for (size_t col = s->c0; col < s->c1; col++)
            top[col - s->c0] = s->bottom[col - s->c0] + (double)s->bytes;
        ml_str_printf(o, "<path class=\"band\" data-rank=\"%d\" ", g->r->rank);
        if (at) {
            ml_str_printf(o, "data-name=\"");
            plot_xml_escape(o, lg->names[at - 1]);
            ml_str_printf(o, "\" ");
        } else {
            ml_str_printf(o, "data-other=\"1\" ");
        }
        ml_str_printf(o, "data-buffer=\"");
        plot_xml_escape(o, sched_sym_name(rp->s, SYM_BUFFER, s->buf));
        ml_str_printf(o, "\" data-bytes=\"%llu\" fill=\"%s\" fill-opacity=\"%.2f\" stroke=\"#fff\" "
                         "stroke-width=\"%s\"", (unsigned long long)s->bytes,
                      at ? plot_color_of(colors, lg->names[at - 1]) : PLOT_OTHER_COLOR, BAND_OPACITY,
                      at ? "0.3" : "0.6");
        band_path(o, g, s->c0, s->c1, s->bottom, top);
        band_title(o, rp, s);
        free(top);
    }
    /* labels after every band, so that no band is drawn over one: per band and column, the
     * lowest block of its allocations lying one on another */
    double *lo = ml_xcalloc(g->n_cols + 1, sizeof *lo), *hi = ml_xcalloc(g->n_cols + 1, sizeof *hi);
    for (uint32_t j = 0; j < lg->n_names; j++) {
        for (size_t col = 0; col < g->n_cols; col++) {
            lo[col] = hi[col] = -1;
            for (size_t i = 0; i < nv; i++) {
                const span *sv = v[i];
                if (col < sv->c0 || col >= sv->c1)
                    continue;
                bool mine = slot[gid[sv->buf]] == j + 1;
                if (mine && lo[col] < 0)
                    lo[col] = sv->bottom[col - sv->c0];
                else if (!mine && lo[col] >= 0)
                    break;   /* another band on top ends the block */
                if (mine)
                    hi[col] = sv->bottom[col - sv->c0] + (double)sv->bytes;
            }
        }
        band_label(o, g, lo, hi, lg->names[j]);
    }
    free(lo);
    free(hi);
}

/* Where drawing the named allocations one by one would pass MAX_SPANS or BAND_BYTES (a 770-layer
 * plan), each named band is drawn as the sum of its live allocations, stacked in the legend's
 * order: a path per band rather than per allocation keeps the file small, and at that count the
 * allocations would be hairlines anyway. */
static void draw_summed(ml_str *o, const cols *g, span *const *v, size_t nv, const uint32_t *slot,
                        const uint32_t *gid, const band_legend *lg, plot_colors *colors) {
    size_t nc = g->n_cols;
    double *sum = ml_xcalloc((size_t)lg->n_names * nc + 1, sizeof *sum);
    size_t allocs[MAX_BANDS] = {0};
    for (size_t i = 0; i < nv; i++) {
        uint32_t at = slot[gid[v[i]->buf]];
        allocs[at ? at - 1 : 0] += at != 0;
        for (size_t col = v[i]->c0; at && col < v[i]->c1; col++)
            sum[(at - 1) * nc + col] += (double)v[i]->bytes;
    }
    double *lo = ml_xcalloc(nc + 1, sizeof *lo), *hi = ml_xcalloc(nc + 1, sizeof *hi);
    for (uint32_t j = 0; j < lg->n_names; j++) {
        for (size_t col = 0; col < nc; col++) {
            lo[col] = j ? hi[col] : 0;
            hi[col] = lo[col] + sum[j * nc + col];
        }
        ml_str_printf(o, "<path class=\"band\" data-rank=\"%d\" data-name=\"", g->r->rank);
        plot_xml_escape(o, lg->names[j]);
        ml_str_printf(o, "\" data-summed=\"%zu\" fill=\"%s\" fill-opacity=\"%.2f\" stroke=\"none\"",
                      allocs[j], plot_color_of(colors, lg->names[j]), BAND_OPACITY);
        band_path(o, g, 0, nc, lo, hi);
        char title[160];
        snprintf(title, sizeof title, "%.100s: %zu allocations, summed", lg->names[j], allocs[j]);
        ml_str_printf(o, "><title>");
        plot_xml_escape(o, title);
        ml_str_printf(o, "</title></path>\n");
        band_label(o, g, lo, hi, lg->names[j]);
    }
    free(lo);
    free(hi);
    free(sum);
}

/* How the bands of a row are drawn: every allocation that is not tiny one by one; only the
 * named ones one by one (the others summed into the small band); the named ones summed per band. */
typedef enum { DRAW_ALL, DRAW_NAMED, DRAW_SUMMED } band_mode;

/* What every way of drawing a row's bands starts from. */
typedef struct {
    const rank_plan *rp;
    cols g;
    spans sp;
    uint64_t *total, peak;
    group *groups;
    size_t n_groups;
    uint32_t *gid;
    uint32_t n_bufs;
} band_input;

/* Draws the bands in one mode; returns false, having drawn nothing, where the mode would draw
 * more than MAX_SPANS allocations one by one. */
static bool draw_mode(ml_str *o, const band_input *in, band_mode mode, plot_colors *colors,
                      band_legend *lg) {
    const cols *g = &in->g;
    memset(lg, 0, sizeof *lg);
    /* one buffer's later spans merge into its earlier ones: a copy for each try */
    span *work = ml_xcalloc(in->sp.n + 1, sizeof *work);
    memcpy(work, in->sp.v, in->sp.n * sizeof *work);
    bool *small = ml_xcalloc(in->n_bufs + 1, sizeof *small), *other = ml_xcalloc(in->n_bufs + 1, sizeof *other);
    span **v = ml_xcalloc(in->sp.n + 1, sizeof *v);
    size_t nv = 0;
    /* Past BAND_COLUMNS ops a column stands for stride ops and a span is drawn in every column
     * it touches; one buffer's spans that then meet are drawn as one, at the largest size (as the
     * curve's bars keep each column's highest value), so that a buffer allocated and freed 10,000
     * times is one band, not 10,000 slivers. */
    size_t *last = ml_xcalloc(in->n_bufs + 1, sizeof *last);   /* index + 1 in v */
    for (size_t i = 0; i < in->sp.n; i++) {
        span *s = &work[i];
        if (!in->groups[in->gid[s->buf]].named) {
            if (mode != DRAW_ALL || (double)s->bytes < BAND_TINY_SHARE * (double)in->peak) {
                small[s->buf] = true;
                continue;
            }
            other[s->buf] = true;
        }
        if (g->stride == 1) {
            s->c0 = s->k0;
            s->c1 = s->k1;
        } else {
            s->c0 = s->k0 / g->stride;
            s->c1 = (s->k1 - 1) / g->stride + 1;
            span *was = last[s->buf] ? v[last[s->buf] - 1] : NULL;
            if (was && s->c0 <= was->c1) {
                was->c1 = s->c1 > was->c1 ? s->c1 : was->c1;
                was->k1 = s->k1;
                was->bytes = s->bytes > was->bytes ? s->bytes : was->bytes;
                was->to_end = s->to_end;
                continue;
            }
        }
        v[nv++] = s;
        last[s->buf] = nv;
    }
    free(last);
    bool ok = mode == DRAW_SUMMED || nv <= MAX_SPANS;
    for (size_t i = 0; ok && i < nv; i++)
        v[i]->bottom = ml_xcalloc(v[i]->c1 - v[i]->c0, sizeof *v[i]->bottom);
    for (size_t i = 1; ok && i < nv; i++)   /* insertion sort: stable, the spans come nearly sorted */
        for (size_t j = i; j > 0 && stack_cmp(v[j], v[j - 1]) < 0; j--) {
            span *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    /* column by column: the bytes under each live span, and the drawn sum under the small band */
    double *small_lo = ml_xcalloc(g->n_cols + 1, sizeof *small_lo);
    double *small_hi = ml_xcalloc(g->n_cols + 1, sizeof *small_hi);
    for (size_t col = 0; ok && col < g->n_cols; col++) {
        double under = 0;
        for (size_t i = 0; i < nv; i++)
            if (v[i]->c0 <= col && col < v[i]->c1) {
                v[i]->bottom[col - v[i]->c0] = under;
                under += (double)v[i]->bytes;
            }
        small_lo[col] = under;
        small_hi[col] = fmax(under, (double)in->total[col * g->stride]);
    }
    /* the legend's entries: the named groups in stacking order */
    uint32_t *slot = ml_xcalloc(in->n_groups + 1, sizeof *slot);
    for (size_t i = 0; ok && i < nv; i++) {
        const group *gr = &in->groups[in->gid[v[i]->buf]];
        size_t k = (size_t)(gr - in->groups);
        if (gr->named && !slot[k] && lg->n_names < MAX_BANDS) {
            snprintf(lg->names[lg->n_names], sizeof lg->names[0], "%.*s%s", (int)gr->len, gr->name,
                     gr->family ? "*" : "");
            lg->members[lg->n_names] = gr->members;
            lg->family[lg->n_names] = gr->family;
            slot[k] = ++lg->n_names;
        }
    }
    if (ok && mode == DRAW_SUMMED)
        draw_summed(o, g, v, nv, slot, in->gid, lg, colors);
    else if (ok)
        draw_each(o, g, in->rp, v, nv, slot, in->gid, lg, colors);
    for (uint32_t b = 0; ok && b < in->n_bufs; b++) {
        lg->n_small += small[b];
        lg->n_other += other[b];
    }
    if (ok && lg->n_small) {
        char label[64];
        snprintf(label, sizeof label, "%u small buffer%s", lg->n_small, lg->n_small > 1 ? "s" : "");
        ml_str_printf(o, "<path class=\"band\" data-small=\"%u\" data-rank=\"%d\" data-name=\"%s\" "
                         "fill=\"%s\" fill-opacity=\"%.2f\" stroke=\"none\"",
                      lg->n_small, g->r->rank, label, PLOT_SMALL_COLOR, BAND_OPACITY);
        band_path(o, g, 0, g->n_cols, small_lo, small_hi);
        ml_str_printf(o, "><title>");
        plot_xml_escape(o, label);
        ml_str_printf(o, ", summed: each holds less of the row's bytes over time than the named "
                         "bands</title></path>\n");
    }
    for (size_t i = 0; i < nv; i++)
        free(v[i]->bottom);
    free(work);
    free(v);
    free(slot);
    free(small);
    free(other);
    free(small_lo);
    free(small_hi);
    return ok;
}

void plot_bands_draw(ml_str *o, const panel *p, const row *r, plot_colors *colors,
                     band_legend *lg) {
    band_input in = {.rp = &p->s->plans[r->rank]};
    const curve *c = &p->curves[r->rank];
    in.n_bufs = in.rp->s->syms[SYM_BUFFER].n;
    memset(lg, 0, sizeof *lg);
    if (!c->n)
        return;
    in.total = ml_xcalloc(c->n + 1, sizeof *in.total);
    collect(in.rp, &in.sp, in.total);
    for (size_t k = 0; k < c->n; k++)
        in.peak = in.total[k] > in.peak ? in.total[k] : in.peak;
    in.gid = ml_xcalloc(in.n_bufs + 1, sizeof *in.gid);
    in.groups = choose(in.rp, &in.sp, in.peak, in.gid, &in.n_groups);
    in.g = (cols){.p = p, .r = r, .c = c};
    in.g.stride = c->n > BAND_COLUMNS ? (c->n + BAND_COLUMNS - 1) / BAND_COLUMNS : 1;
    in.g.n_cols = (c->n + in.g.stride - 1) / in.g.stride;
    /* the most detailed picture that keeps within MAX_SPANS allocations and BAND_BYTES a row */
    for (band_mode mode = DRAW_ALL; mode <= DRAW_SUMMED; mode++) {
        ml_str try = {0};
        bool ok = draw_mode(&try, &in, mode, colors, lg) && (mode == DRAW_SUMMED || try.n <= BAND_BYTES);
        if (ok && try.n)
            ml_str_append(o, try.s, try.n);
        ml_str_free(&try);
        if (ok)
            break;
    }
    free(in.sp.v);
    free(in.total);
    free(in.gid);
    free(in.groups);
}
