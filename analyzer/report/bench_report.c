/* SPDX-License-Identifier: MIT */
/* bench_report.c — `memlife bench` results as table, Markdown, CSV and JSON (bench_report.h). */
#include "report/bench_report.h"
#include "report/doc.h"
#include "report/stats.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Numbers --------------------------------------------------------------------------------- */

typedef struct {
    bool present;
    st_summary us;               /* of the critical rank's times, microseconds */
    double payload_gbps, busbw_gbps;
} timing;

/* The summary of sec[0..cycles) in microseconds; false where there are none. */
static bool summary_us(const double *sec, int cycles, st_summary *out) {
    if (!sec || cycles < 1)
        return false;
    double *us = ml_xmalloc((size_t)cycles * sizeof *us);
    for (int c = 0; c < cycles; c++)
        us[c] = sec[c] * 1e6;
    bool ok = st_summarize(us, (size_t)cycles, out) == 0;
    free(us);
    return ok;
}

static timing timing_of(const bench_report *r, const bench_report_plan *p, bench_mode m) {
    timing t;
    memset(&t, 0, sizeof t);
    t.present = summary_us(p->res ? p->res->seconds[m] : NULL, r->cycles, &t.us);
    if (!t.present)
        return t;
    /* bytes per microsecond / 1e3 = GB/s */
    t.payload_gbps = t.us.median > 0 ? (double)p->payload_bytes / t.us.median / 1e3 : NAN;
    t.busbw_gbps = t.us.median > 0 ? p->bus_bytes / t.us.median / 1e3 : NAN;
    return t;
}

/* The median of the host's issue times of plan p in mode m; NaN where none were taken. */
static double issue_median(const bench_report *r, const bench_report_plan *p, bench_mode m) {
    st_summary st;
    return summary_us(p->res ? p->res->issue[m] : NULL, r->cycles, &st) ? st.median : NAN;
}

typedef enum { RATIO_REFERENCE, RATIO_STABLE, RATIO_UNSTABLE, RATIO_NONE } ratio_status;
static const char *const ratio_status_names[] = {"reference", "stable", "unstable", "none"};

/* Plan k against the size's first plan, by the chapter's rule. */
static ratio_status ratio_of(const bench_report *r, const bench_report_size *z, size_t k,
                             bench_mode m, double *ratio) {
    *ratio = NAN;
    timing a = timing_of(r, &z->plans[0], m), b = timing_of(r, &z->plans[k], m);
    if (!a.present || !b.present)
        return RATIO_NONE;
    if (k == 0)
        return RATIO_REFERENCE;
    st_ratio q = st_ratio_rule(&a.us, &b.us, r->cv_max);
    *ratio = q.ratio;
    return q.stable ? RATIO_STABLE : RATIO_UNSTABLE;
}

/* memlife / bare, and the difference in microseconds. */
static bool overhead_of(const bench_report *r, const bench_report_plan *p, double *ratio,
                        double *extra_us) {
    timing m = timing_of(r, p, BENCH_MEMLIFE), b = timing_of(r, p, BENCH_BARE);
    if (!m.present || !b.present || !(b.us.median > 0))
        return false;
    *ratio = m.us.median / b.us.median;
    *extra_us = m.us.median - b.us.median;
    return true;
}

/* memlife / bare cycle by cycle: the two modes of a plan run next to each other in every cycle
 * (docs/bench.md), so a pair shares that cycle's clocks, temperature and neighbours, and the
 * median of the per-cycle ratios does not mix one cycle's slow memlife run with another's fast
 * bare one. Its distribution-free 95% interval (stats.h) says how far the target may be trusted:
 * with 10 cycles and a CV of 3%, two medians alone move by a percent between runs. */
typedef struct {
    double value;        /* median of memlife_c / bare_c (spans) or memlife_c - bare_c (issue) */
    st_interval ci;      /* lo = hi = NaN with too few cycles */
} paired;

/* The per-cycle comparison of memlife with bare in arrays a (memlife) and b (bare) of seconds:
 * ratios of the spans, or differences in microseconds of the issue times. */
static bool paired_of(const bench_report *r, const double *a, const double *b, bool ratio,
                      paired *out) {
    if (!a || !b || r->cycles < 1)
        return false;
    double *q = ml_xmalloc((size_t)r->cycles * sizeof *q);
    size_t n = 0;
    for (int c = 0; c < r->cycles; c++)
        if (!ratio)
            q[n++] = (a[c] - b[c]) * 1e6;
        else if (b[c] > 0)
            q[n++] = a[c] / b[c];
    st_summary st;
    bool ok = st_summarize(q, n, &st) == 0;
    if (ok) {
        out->value = st.median;
        (void)st_median_ci(q, n, 0.95, &out->ci);   /* NaNs when n is too small */
    }
    free(q);
    return ok;
}

static bool paired_span(const bench_report *r, const bench_report_plan *p, paired *out) {
    return p->res && paired_of(r, p->res->seconds[BENCH_MEMLIFE], p->res->seconds[BENCH_BARE],
                               true, out);
}

static bool paired_issue(const bench_report *r, const bench_report_plan *p, paired *out) {
    return p->res && paired_of(r, p->res->issue[BENCH_MEMLIFE], p->res->issue[BENCH_BARE],
                               false, out);
}

/* The issue medians of memlife and bare, and the difference. */
static bool issue_overhead_of(const bench_report *r, const bench_report_plan *p, double *mine,
                              double *bare, double *extra_us) {
    *mine = issue_median(r, p, BENCH_MEMLIFE);
    *bare = issue_median(r, p, BENCH_BARE);
    *extra_us = *mine - *bare;
    return !isnan(*mine) && !isnan(*bare);
}

static bool any_mode(const bench_report *r, bench_mode m) {
    for (size_t s = 0; s < r->n_sizes; s++)
        for (size_t k = 0; k < r->sizes[s].n_plans; k++)
            if (r->sizes[s].plans[k].res && r->sizes[s].plans[k].res->seconds[m])
                return true;
    return false;
}

static bool any_kernels(const bench_report *r) {
    for (size_t s = 0; s < r->n_sizes; s++)
        for (size_t k = 0; k < r->sizes[s].n_plans; k++)
            if (r->sizes[s].plans[k].res && r->sizes[s].plans[k].res->kernels_done)
                return true;
    return false;
}

/* ---- Cells ----------------------------------------------------------------------------------- */

enum { CELL = 160 };

static void num_cell(double v, const char *fmt, char *buf) {
    if (isnan(v))
        snprintf(buf, CELL, "-");
    else
        snprintf(buf, CELL, fmt, v);
}

static void size_cell(const bench_report_size *z, char *buf) {
    report_size_cell(z->n_plans ? z->plans[0].payload_bytes : 0, buf, CELL);
}

/* "ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)": the chapter's short form of a kernel name. */
static void short_name(const char *name, char *buf, size_t len) {
    const char *paren = strchr(name, '(');
    if (paren)
        snprintf(buf, len, "%.*s(...)", (int)(paren - name), name);
    else
        snprintf(buf, len, "%s", name);
}

/* ---- Table and Markdown ---------------------------------------------------------------------- */

typedef enum {
    TC_SIZE, TC_MODE, TC_MEDIAN, TC_P95, TC_CV, TC_PAYLOAD, TC_BUSBW, TC_RATIO, TC_BARE,
    TC_OVERHEAD, TC_PAIRED, TC_ISSUE, TC_ISSUE_EXTRA, TC_COUNT
} time_col;
static const char *const time_headers[TC_COUNT] = {
    "size", "mode", "median us", "P95 us", "CV", "payload GB/s", "busbw GB/s", "ratio",
    "bare us", "memlife/bare", "per cycle [95% CI]", "issue us (memlife / bare)",
    "issue extra us"};
static const bool time_right[TC_COUNT] = {true, false, true, true, true, true, true, false, true,
                                          false, false, true, true};
/* Graph replays: the columns up to the ratio, then the replays per timed run. */
static const char *const graph_headers[TC_BARE + 1] = {
    "size", "mode", "median us", "P95 us", "CV", "payload GB/s", "busbw GB/s", "ratio",
    "replays"};
static const bool graph_right[TC_BARE + 1] = {true, false, true, true, true, true, true, false,
                                              true};

/* What a narrow terminal drops first (report_int.h's grid priorities): the issue times, the
 * bare time, the payload rate, P95 and bus rate, CV and the paired interval, then the overhead;
 * the size, mode, median and ratio always stay. The graph table's replays go with the bare time. */
static const unsigned time_prio[TC_COUNT] = {0, 0, 0, 3, 2, 4, 3, 0, 5, 1, 2, 6, 6};
static const unsigned kernel_prio[] = {0, 0, 0, 0, 1, 2};

static void set_prio(report_grid *g, const unsigned *prio, size_t n) {
    for (size_t c = 0; c < n && c < g->cols; c++)
        report_grid_priority(g, c, prio[c]);
}

/* The bare and issue cells of plan p's memlife row. */
static void overhead_cells(const bench_report *r, const bench_report_plan *p, report_grid *g) {
    char c[CELL];
    timing b = timing_of(r, p, BENCH_BARE);
    num_cell(b.present ? b.us.median : NAN, "%.3f", c);
    report_grid_add(g, c);
    double over, extra, mine, bare;
    if (overhead_of(r, p, &over, &extra))
        snprintf(c, CELL, "%.3fx (%+.3f us)", over, extra);
    else
        snprintf(c, CELL, "-");
    report_grid_add(g, c);
    paired pr;
    if (!paired_span(r, p, &pr))
        snprintf(c, CELL, "-");
    else if (isnan(pr.ci.lo))
        snprintf(c, CELL, "%.3fx [too few cycles]", pr.value);
    else
        snprintf(c, CELL, "%.3fx [%.3f, %.3f]", pr.value, pr.ci.lo, pr.ci.hi);
    report_grid_add(g, c);
    bool issue = issue_overhead_of(r, p, &mine, &bare, &extra);
    if (issue)
        snprintf(c, CELL, "%.3f / %.3f", mine, bare);
    else
        snprintf(c, CELL, "-");
    report_grid_add(g, c);
    num_cell(issue ? extra : NAN, "%+.3f", c);
    report_grid_add(g, c);
}

/* The text written so far becomes a paragraph of the document before the next grid. */
static void flush(report_doc *d, unsigned mask, ml_str *stage) {
    if (stage->n)
        report_doc_printf(d, mask, "%s", stage->s);
    stage->n = 0;
    if (stage->s)
        stage->s[0] = '\0';
}

static void timing_grid(const bench_report *r, bench_mode m, bool markdown, report_doc *d,
                        ml_str *stage) {
    bool graph = m == BENCH_GRAPH;
    size_t cols = graph ? TC_BARE + 1 : any_mode(r, BENCH_BARE) ? TC_COUNT : TC_BARE;
    report_grid g;
    report_grid_init(&g, cols, graph ? graph_headers : time_headers,
                     graph ? graph_right : time_right);
    set_prio(&g, time_prio, cols);   /* the graph table's last column, replays, is TC_BARE's */
    char c[CELL];
    for (size_t s = 0; s < r->n_sizes; s++) {
        const bench_report_size *z = &r->sizes[s];
        for (size_t k = 0; k < z->n_plans; k++) {
            const bench_report_plan *p = &z->plans[k];
            timing t = timing_of(r, p, m);
            size_cell(z, c);
            report_grid_add(&g, c);
            report_grid_add(&g, p->name);
            num_cell(t.present ? t.us.median : NAN, "%.3f", c);
            report_grid_add(&g, c);
            num_cell(t.present ? t.us.p95 : NAN, "%.3f", c);
            report_grid_add(&g, c);
            num_cell(t.present ? t.us.cv * 100 : NAN, "%.2f%%", c);
            report_grid_add(&g, c);
            num_cell(t.present ? t.payload_gbps : NAN, "%.3f", c);
            report_grid_add(&g, c);
            num_cell(t.present ? t.busbw_gbps : NAN, "%.3f", c);
            report_grid_add(&g, c);
            double ratio;
            ratio_status st = ratio_of(r, z, k, m, &ratio);
            if (st == RATIO_STABLE)
                snprintf(c, CELL, "%.3fx", ratio);
            else
                snprintf(c, CELL, "%s", st == RATIO_UNSTABLE ? "unstable" : "-");
            report_grid_add(&g, c);
            if (graph) {
                snprintf(c, CELL, "%d", p->res ? p->res->graph_replays : 0);
                report_grid_add(&g, c);
            } else if (cols == TC_COUNT) {
                overhead_cells(r, p, &g);
            }
        }
    }
    flush(d, markdown ? DOC_MD : DOC_TABLE, stage);
    report_doc_grid(d, markdown ? DOC_MD : DOC_TABLE, &g, markdown ? "" : "  ");
}

static const char *const kernel_headers[] = {"size", "plan", "region", "kernels", "by collective",
                                             "names"};
static const bool kernel_right[] = {true, false, false, true, false, false};

static void kernel_grid(const bench_report *r, bool markdown, report_doc *d, ml_str *stage) {
    report_grid g;
    report_grid_init(&g, ML_ARRAY_LEN(kernel_headers), kernel_headers, kernel_right);
    set_prio(&g, kernel_prio, ML_ARRAY_LEN(kernel_prio));
    report_grid_wrap(&g, ML_ARRAY_LEN(kernel_headers) - 1);   /* the kernels' names: prose */
    char c[CELL];
    for (size_t s = 0; s < r->n_sizes; s++) {
        const bench_report_size *z = &r->sizes[s];
        for (size_t k = 0; k < z->n_plans; k++) {
            const bench_plan_result *res = z->plans[k].res;
            if (!res || !res->kernels_done)
                continue;
            /* The whole timed part only where the plan has no region of its own. */
            bool regions = res->n_windows > 1;
            for (size_t w = 0; w < res->n_windows; w++) {
                const bench_window *win = &res->windows[w];
                if (regions && !win->label[0])
                    continue;
                size_cell(z, c);
                report_grid_add(&g, c);
                report_grid_add(&g, z->plans[k].name);
                report_grid_add(&g, win->label[0] ? win->label : "(timed part)");
                snprintf(c, CELL, "%llu", (unsigned long long)win->tally.total);
                report_grid_add(&g, c);
                ml_str by = {0}, names = {0};
                ml_str_append(&by, "", 0);
                ml_str_append(&names, "", 0);
                for (int coll = 0; coll < COLL_COUNT; coll++)
                    if (win->tally.by_coll[coll])
                        ml_str_printf(&by, "%s%s %llu", by.n ? ", " : "", ml_colls[coll].name,
                                      (unsigned long long)win->tally.by_coll[coll]);
                for (size_t j = 0; j < win->tally.n_names; j++) {
                    char n[512];
                    short_name(win->tally.names[j].name, n, sizeof n);
                    ml_str_printf(&names, "%s%s x%llu", j ? "; " : "", n,
                                  (unsigned long long)win->tally.names[j].count);
                }
                report_grid_add(&g, by.n ? by.s : "-");
                report_grid_add(&g, names.n ? names.s : "-");
                ml_str_free(&by);
                ml_str_free(&names);
            }
        }
    }
    flush(d, markdown ? DOC_MD : DOC_TABLE, stage);
    report_doc_grid(d, markdown ? DOC_MD : DOC_TABLE, &g, markdown ? "" : "  ");
}

static void header_text(const bench_report *r, ml_str *out) {
    ml_str_printf(out, "%s%s%s\n", r->schedule, r->about ? ": " : "", r->about ? r->about : "");
    ml_str_printf(out,
                  "backend %s, %d ranks (%s); per size %d warm-up and %d measured cycles, the "
                  "plans' order alternating per cycle and each plan's modes counterbalanced; a "
                  "cycle's time is the critical rank's (max over ranks)\n",
                  r->backend, r->world,
                  !strcmp(r->launch, "mpi") ? "one process per rank" : "one process, every rank",
                  r->warmup, r->cycles);
    if (!strcmp(r->backend, "host"))
        ml_str_printf(out, "span start: after a host barrier (the host backend has no device to "
                      "line the ranks up on)\n");
    else if (r->align && !strcmp(r->backend, "torch"))
        ml_str_printf(out, "span start: aligned by the torch driver (a one-element all_reduce "
                      "before its start mark: CUDA events under NCCL; on CPUs the clock after "
                      "gloo's call, which returns when every rank has joined)\n");
    else if (r->align)
        ml_str_printf(out, "span start: aligned on the device (a one-element AllReduce before the "
                      "start event: host skew out of the span; launch overhead hidden behind it, "
                      "so see issue us)\n");
    else
        ml_str_printf(out, "span start: not aligned (--no-align: the start event follows a host "
                      "barrier; the eager spans hold host skew and launch gaps)\n");
}

static void legend_text(const bench_report *r, const char *first, ml_str *out) {
    ml_str_printf(out, "ratio: median / median of '%s' at the same size, stated only where both "
                  "CVs are at most %g%%; else unstable, with the raw numbers kept.\n",
                  first, r->cv_max);
    if (any_mode(r, BENCH_BARE))
        ml_str_printf(out, "memlife/bare: memlife's median over that of the same collectives "
                      "called bare (same buffers and streams, no schedule machinery).\n"
                      "per cycle: the median of memlife / bare taken cycle by cycle (the two run "
                      "next to each other), with its distribution-free 95%% interval (order "
                      "statistics; none below 6 cycles).\n"
                      "issue us: the host's time from the first collective call to the return of "
                      "the last (median; the slowest process), memlife / bare, and the "
                      "difference.\n");
    for (size_t s = 0; s < r->n_sizes; s++)
        for (size_t k = 0; k < r->sizes[s].n_plans; k++) {
            const bench_plan_result *res = r->sizes[s].plans[k].res;
            if (res && res->check_failures)
                ml_str_printf(out, "data checks after the timed part of '%s': %zu failed rows\n",
                              r->sizes[s].plans[k].name, res->check_failures);
        }
}

/* The human part of bench's document: the text table (markdown false) or Markdown. */
static void build_text(const void *ctx, bool markdown, report_doc *d) {
    const bench_report *r = ctx;
    ml_str stage = {0}, *out = &stage;
    ml_str_append(out, "", 0);
    const char *first = r->n_sizes && r->sizes[0].n_plans ? r->sizes[0].plans[0].name : "-";
    if (markdown)
        ml_str_printf(out, "### bench %s\n\n", r->schedule);
    header_text(r, out);
    ml_str_printf(out, markdown ? "\n**launches through memlife (eager):**\n\n"
                                : "\nlaunches through memlife (eager):\n");
    timing_grid(r, BENCH_MEMLIFE, markdown, d, out);
    if (any_mode(r, BENCH_GRAPH)) {
        ml_str_printf(out, "\n%sCUDA graph replays (the ranks lined up on the device first: no "
                      "launch gaps, no host skew; each graph holds `replays` back-to-back runs of "
                      "the timed part, the time is per run):%s\n", markdown ? "**" : "",
                      markdown ? "**\n" : "");
        timing_grid(r, BENCH_GRAPH, markdown, d, out);
    }
    ml_str_printf(out, "\n");
    legend_text(r, first, out);
    if (any_kernels(r)) {
        ml_str_printf(out, "\n%skernels inside each region (CUPTI, one eager run of each plan, "
                      "every rank's GPU):%s\n", markdown ? "**" : "", markdown ? "**\n" : "");
        kernel_grid(r, markdown, d, out);
    }
    if (r->kernels_requested && r->kernels_note)
        ml_str_printf(out, "\nkernels: %s\n", r->kernels_note);
    flush(d, markdown ? DOC_MD : DOC_TABLE, out);
    ml_str_free(&stage);
}

/* ---- CSV ------------------------------------------------------------------------------------- */

/* One number cell: empty where there is no value. */
static void cell_num(report_grid *g, double v, const char *fmt) {
    char c[64] = "";
    if (!isnan(v))
        snprintf(c, sizeof c, fmt, v);
    report_grid_add(g, c);
}

static const char *const csv_headers[] = {
    "size_bytes", "sweep_value", "plan", "timing", "n", "median_us", "p95_us", "mean_us",
    "cv_percent", "min_us", "max_us", "payload_gbps", "busbw_gbps", "ratio", "ratio_status",
    "overhead", "overhead_us", "paired_overhead", "paired_ci_low", "paired_ci_high",
    "issue_median_us", "issue_extra_us", "replays"};

/* bench's CSV grid: one row per size, plan and timing mode with a measurement. */
static void build_csv(const void *ctx, report_doc *d) {
    const bench_report *r = ctx;
    bool right[ML_ARRAY_LEN(csv_headers)] = {false};
    report_grid g;
    report_grid_init(&g, ML_ARRAY_LEN(csv_headers), csv_headers, right);
    char c[64];
    for (size_t s = 0; s < r->n_sizes; s++) {
        const bench_report_size *z = &r->sizes[s];
        for (size_t k = 0; k < z->n_plans; k++)
            for (int m = 0; m < BENCH_MODE_COUNT; m++) {
                const bench_report_plan *p = &z->plans[k];
                timing t = timing_of(r, p, (bench_mode)m);
                if (!t.present)
                    continue;
                snprintf(c, sizeof c, "%llu", (unsigned long long)p->payload_bytes);
                report_grid_add(&g, c);
                snprintf(c, sizeof c, "%lld", (long long)z->sweep_value);
                report_grid_add(&g, c);
                report_grid_add(&g, p->name);
                report_grid_add(&g, bench_mode_names[m]);
                snprintf(c, sizeof c, "%zu", t.us.n);
                report_grid_add(&g, c);
                cell_num(&g, t.us.median, "%.3f");
                cell_num(&g, t.us.p95, "%.3f");
                cell_num(&g, t.us.mean, "%.3f");
                cell_num(&g, t.us.cv * 100, "%.4f");
                cell_num(&g, t.us.min, "%.3f");
                cell_num(&g, t.us.max, "%.3f");
                cell_num(&g, t.payload_gbps, "%.4f");
                cell_num(&g, t.busbw_gbps, "%.4f");
                double ratio = NAN, over = NAN, extra = NAN;
                ratio_status st = m == BENCH_BARE ? RATIO_NONE
                                                  : ratio_of(r, z, k, (bench_mode)m, &ratio);
                cell_num(&g, ratio, "%.4f");
                report_grid_add(&g, st == RATIO_NONE ? "" : ratio_status_names[st]);
                if (m != BENCH_MEMLIFE || !overhead_of(r, p, &over, &extra))
                    over = extra = NAN;
                cell_num(&g, over, "%.4f");
                cell_num(&g, extra, "%.3f");
                paired pr = {NAN, {NAN, NAN, NAN, 0}};
                if (m != BENCH_MEMLIFE || !paired_span(r, p, &pr))
                    pr.value = NAN;
                cell_num(&g, pr.value, "%.4f");
                cell_num(&g, m == BENCH_MEMLIFE ? pr.ci.lo : NAN, "%.4f");
                cell_num(&g, m == BENCH_MEMLIFE ? pr.ci.hi : NAN, "%.4f");
                double mine, bare, issue_extra;
                bool issue = issue_overhead_of(r, p, &mine, &bare, &issue_extra);
                cell_num(&g, issue_median(r, p, (bench_mode)m), "%.3f");
                cell_num(&g, m == BENCH_MEMLIFE && issue ? issue_extra : NAN, "%.3f");
                snprintf(c, sizeof c, "%d", m == BENCH_GRAPH ? p->res->graph_replays : 0);
                report_grid_add(&g, m == BENCH_GRAPH ? c : "");
            }
    }
    report_doc_csv(d, &g);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static json_t *jnum(double v) { return isnan(v) || isinf(v) ? json_null() : json_real(v); }

/* Rounded to `places` decimals: microseconds to the nanosecond, so that float artifacts of the
 * event timers (2.503999895) do not pose as precision. */
static json_t *jround(double v, int places) {
    double f = pow(10, places);
    return jnum(round(v * f) / f);
}

/* {name: the median, ci95_low, ci95_high, coverage} (nulls without an interval); with
 * `collectives`, also the median per collective call. */
static json_t *paired_json(const paired *pr, const char *name, int places, size_t collectives) {
    json_t *o = json_object();
    json_object_set_new(o, name, jround(pr->value, places));
    json_object_set_new(o, "ci95_low", isnan(pr->ci.lo) ? json_null() : jround(pr->ci.lo, places));
    json_object_set_new(o, "ci95_high", isnan(pr->ci.hi) ? json_null() : jround(pr->ci.hi, places));
    json_object_set_new(o, "coverage", isnan(pr->ci.coverage) ? json_null()
                                                              : jround(pr->ci.coverage, 4));
    if (collectives)
        json_object_set_new(o, "per_collective_us", jround(pr->value / (double)collectives, 3));
    return o;
}

static json_t *timing_json(const bench_report *r, const bench_report_size *z, size_t k,
                           bench_mode m) {
    const bench_report_plan *p = &z->plans[k];
    timing t = timing_of(r, p, m);
    if (!t.present)
        return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "n", json_integer((json_int_t)t.us.n));
    json_object_set_new(o, "median_us", jround(t.us.median, 3));
    json_object_set_new(o, "p95_us", jround(t.us.p95, 3));
    json_object_set_new(o, "mean_us", jround(t.us.mean, 3));
    json_object_set_new(o, "cv_percent", jround(t.us.cv * 100, 4));
    json_object_set_new(o, "min_us", jround(t.us.min, 3));
    json_object_set_new(o, "max_us", jround(t.us.max, 3));
    json_object_set_new(o, "payload_gbps", jround(t.payload_gbps, 4));
    json_object_set_new(o, "busbw_gbps", jround(t.busbw_gbps, 4));
    json_t *samples = json_array();
    for (int c = 0; c < r->cycles; c++)
        json_array_append_new(samples, jround(p->res->seconds[m][c] * 1e6, 3));
    json_object_set_new(o, "samples_us", samples);
    if (m != BENCH_GRAPH && p->res->issue[m]) {
        json_object_set_new(o, "issue_median_us", jround(issue_median(r, p, m), 3));
        json_t *issue = json_array();
        for (int c = 0; c < r->cycles; c++)
            json_array_append_new(issue, jround(p->res->issue[m][c] * 1e6, 3));
        json_object_set_new(o, "issue_samples_us", issue);
    }
    if (m == BENCH_GRAPH)
        json_object_set_new(o, "replays", json_integer(p->res->graph_replays));
    if (m != BENCH_BARE) {
        double ratio;
        ratio_status st = ratio_of(r, z, k, m, &ratio);
        json_object_set_new(o, "ratio", st == RATIO_STABLE ? jround(ratio, 4) : json_null());
        json_object_set_new(o, "ratio_status", json_string(ratio_status_names[st]));
    }
    return o;
}

static json_t *kernels_json(const bench_plan_result *res) {
    json_t *a = json_array();
    for (size_t w = 0; w < res->n_windows; w++) {
        const bench_window *win = &res->windows[w];
        json_t *o = json_object(), *by = json_object(), *names = json_array();
        json_object_set_new(o, "region", win->label[0] ? json_string(win->label) : json_null());
        json_object_set_new(o, "total", json_integer((json_int_t)win->tally.total));
        for (int c = 0; c < COLL_COUNT; c++)
            if (win->tally.by_coll[c])
                json_object_set_new(by, ml_colls[c].name,
                                    json_integer((json_int_t)win->tally.by_coll[c]));
        json_object_set_new(o, "by_collective", by);
        for (size_t j = 0; j < win->tally.n_names; j++) {
            json_t *n = json_object();
            json_object_set_new(n, "name", json_string(win->tally.names[j].name));
            json_object_set_new(n, "count", json_integer((json_int_t)win->tally.names[j].count));
            json_array_append_new(names, n);
        }
        json_object_set_new(o, "names", names);
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *plan_json(const bench_report *r, const bench_report_size *z, size_t k) {
    const bench_report_plan *p = &z->plans[k];
    json_t *o = json_object();
    json_object_set_new(o, "plan", json_string(p->name));
    json_object_set_new(o, "payload_bytes", json_integer((json_int_t)p->payload_bytes));
    json_object_set_new(o, "bus_bytes", jnum(p->bus_bytes));
    json_object_set_new(o, "collectives", json_integer((json_int_t)p->collectives));
    json_object_set_new(o, "check_failures",
                        json_integer(p->res ? (json_int_t)p->res->check_failures : 0));
    for (int m = 0; m < BENCH_MODE_COUNT; m++) {
        json_t *t = timing_json(r, z, k, (bench_mode)m);
        if (t)
            json_object_set_new(o, bench_mode_names[m], t);
    }
    double over, extra;
    if (overhead_of(r, p, &over, &extra)) {
        json_t *ov = json_object();
        json_object_set_new(ov, "ratio", jround(over, 4));
        json_object_set_new(ov, "extra_us", jround(extra, 3));
        paired pr;
        if (paired_span(r, p, &pr))
            json_object_set_new(ov, "per_cycle", paired_json(&pr, "ratio", 4, 0));
        json_object_set_new(o, "overhead", ov);
    }
    double mine, bare;
    if (issue_overhead_of(r, p, &mine, &bare, &extra)) {
        json_t *io = json_object();
        json_object_set_new(io, "memlife_us", jround(mine, 3));
        json_object_set_new(io, "bare_us", jround(bare, 3));
        json_object_set_new(io, "extra_us", jround(extra, 3));
        paired pr;
        if (paired_issue(r, p, &pr))
            json_object_set_new(io, "per_cycle",
                                paired_json(&pr, "extra_us", 3, p->collectives));
        json_object_set_new(o, "issue_overhead", io);
    }
    if (p->res && p->res->kernels_done)
        json_object_set_new(o, "kernels", kernels_json(p->res));
    return o;
}

static void build_json(const void *ctx, report_doc *d) {
    const bench_report *r = ctx;
    json_t *root = json_object();
    json_object_set_new(root, "command", json_string("bench"));
    json_object_set_new(root, "schedule", json_string(r->schedule));
    json_object_set_new(root, "file", json_string(r->file));
    json_object_set_new(root, "backend", json_string(r->backend));
    json_object_set_new(root, "launch", json_string(r->launch));
    json_object_set_new(root, "align", json_boolean(r->align));
    json_object_set_new(root, "world", json_integer(r->world));
    json_object_set_new(root, "warmup", json_integer(r->warmup));
    json_object_set_new(root, "cycles", json_integer(r->cycles));
    json_object_set_new(root, "cv_max_percent", jnum(r->cv_max));
    json_object_set_new(root, "sweep_let", r->sweep_let ? json_string(r->sweep_let) : json_null());
    json_t *sizes = json_array();
    for (size_t s = 0; s < r->n_sizes; s++) {
        const bench_report_size *z = &r->sizes[s];
        json_t *o = json_object(), *plans = json_array();
        json_object_set_new(o, "sweep_value",
                            z->sweep_value >= 0 ? json_integer(z->sweep_value) : json_null());
        json_object_set_new(o, "payload_bytes",
                            json_integer(z->n_plans ? (json_int_t)z->plans[0].payload_bytes : 0));
        for (size_t k = 0; k < z->n_plans; k++)
            json_array_append_new(plans, plan_json(r, z, k));
        json_object_set_new(o, "plans", plans);
        json_array_append_new(sizes, o);
    }
    json_object_set_new(root, "sizes", sizes);
    json_t *k = json_object();
    json_object_set_new(k, "requested", json_boolean(r->kernels_requested));
    json_object_set_new(k, "available", json_boolean(r->kernels_requested && !r->kernels_note));
    json_object_set_new(k, "note", r->kernels_note ? json_string(r->kernels_note) : json_null());
    json_object_set_new(root, "kernels", k);
    if (r->provenance)
        json_object_set_new(root, "provenance", report_provenance_json(r->provenance));
    report_doc_json(d, root, JSON_REAL_PRECISION(10));
}

/* ---- Entry points ---------------------------------------------------------------------------- */

/* bench's document has all four parts (its CSV: the timings only). */
static const report_family bench_family = {build_text, build_json, build_csv};

int bench_report_render(const bench_report *r, report_format fmt, ml_str *out) {
    ml_str_append(out, "", 0);
    return report_family_render(&bench_family, r, fmt, out);
}

int bench_report_emit(const bench_report *r, report_format fmt, const char *path) {
    ml_str out = {0};
    int rc = bench_report_render(r, fmt, &out);
    if (rc != 0)
        ml_report(ML_DIAG_ERROR, NULL, "cannot render the bench report");
    else
        rc = report_doc_write(&out, path);
    ml_str_free(&out);
    return rc;
}
