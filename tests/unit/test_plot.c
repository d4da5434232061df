/* SPDX-License-Identifier: MIT */
/* test_plot.c — the SVG of `memlife plot`: labels, the peak's coordinates against the drawn axis,
 * a shared y scale across panels, spans for collectives and syncs, escaping, measured overlays,
 * the bands' stacking order, one row per rank that differs.
 * (tests/cli/plot_svg.sh parses the same output with a real XML parser; plot_render.sh renders
 * it in Chromium.) */
#include <math.h>
#include <stdlib.h>
#include "tu_series.h"
#include "visual/plot.h"

#define MiB ((uint64_t)1 << 20)

/* The value of attribute name="..." of the element that contains `at`. */
static double attr(const char *at, const char *name) {
    const char *start = at;
    while (start > at - 4096 && *start != '<')
        start--;
    const char *end = strchr(at, '>');
    char key[64];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *v = strstr(start, key);
    if (!v || v > end)
        fail_msg("no attribute %s", name);
    return strtod(v + strlen(key), NULL);
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static char *render(const series *s, size_t n, ml_mem_view view, bool time_axis) {
    plot_options o = {.view = view, .time_axis = time_axis};
    ml_str out = {0};
    ml_diags d;
    ml_diags_init(&d);
    assert_int_equal(plot_svg(s, n, &o, &out, &d), 0);
    ml_diags_free(&d);
    return out.s;
}

/* The y pixel of `bytes` on the panel's axis, from the ticks it drew (0 and the top one). */
static double y_of(const char *svg, double bytes) {
    const char *zero = strstr(svg, "class=\"ytick\" data-bytes=\"0\"");
    assert_non_null(zero);
    const char *top = zero, *p = zero;
    while ((p = strstr(p + 1, "class=\"ytick\"")) && attr(p, "data-bytes") > attr(top, "data-bytes"))
        top = p;
    double y0 = attr(zero, "data-y"), yt = attr(top, "data-y");
    return y0 - (y0 - yt) * bytes / attr(top, "data-bytes");
}

static void naive_peak_label_and_position(void **state) {
    series s;
    tu_series(&s, tu_naive_yaml, 0, NULL);
    char *svg = render(&s, 1, VIEW_REQUESTED, false);
    /* seed: naive RS+AG peak at world 4 is 256 + 64 + 256 = 576 MiB, first at the gathered alloc */
    assert_non_null(strstr(svg, ">peak 576 MiB<"));
    assert_non_null(strstr(svg, ">at op 2, 7:5 alloc gathered<"));
    /* largest first: full and gathered 256 MiB (in symbol order), then shard */
    assert_non_null(strstr(svg, "live: full 256 MiB, gathered 256 MiB, shard 64 MiB"));
    const char *peak = strstr(svg, "class=\"peak\"");
    assert_non_null(peak);
    assert_int_equal((uint64_t)attr(peak, "data-bytes"), 576 * MiB);
    assert_int_equal((int)attr(peak, "data-op"), 2);
    assert_true(fabs(attr(peak, "cy") - y_of(svg, 576.0 * MiB)) < 0.2);
    /* x: the middle of op 2's slot, a quarter of the way from tick 2 to tick 4 (8 ops over the
     * 528 px of a 640 px panel want a tick every 90 px or more: every 2 ops, 0 to 8) */
    const char *t2 = strstr(svg, "class=\"xtick\" data-x=\"2\""), *t4 = strstr(svg, "class=\"xtick\" data-x=\"4\"");
    assert_non_null(t2);
    assert_non_null(t4);
    assert_true(fabs(attr(peak, "cx") - (attr(t2, "x") + (attr(t4, "x") - attr(t2, "x")) / 4)) < 0.2);
    assert_int_equal(count(svg, "class=\"xtick\""), 5);
    assert_null(strstr(svg, "rotate(-45"));
    /* all ranks have one curve: one line, labelled as such */
    assert_int_equal(count(svg, "class=\"curve\""), 1);
    assert_non_null(strstr(svg, ">ranks 0-3<"));
    free(svg);
    series_free(&s);
}

static void collectives_and_syncs_are_drawn(void **state) {
    series s;
    tu_series(&s, tu_naive_yaml, 0, NULL);
    char *svg = render(&s, 1, VIEW_REQUESTED, false);
    /* naive: reduce_scatter (op 3) and all_gather (op 4), one sync (op 5) */
    assert_int_equal(count(svg, "class=\"coll\""), 2);
    assert_non_null(strstr(svg, "class=\"coll\" data-op=\"3\""));
    assert_non_null(strstr(svg, "class=\"coll\" data-op=\"4\""));
    /* in the default stream's lane: a span each (the label only where it fits its span) */
    assert_non_null(strstr(svg, "class=\"lane-span\" data-op=\"3\" data-stream=\"0\""));
    assert_non_null(strstr(svg, "class=\"lane-span\" data-op=\"4\" data-stream=\"0\""));
    assert_int_equal(count(svg, "class=\"sync\" data-op=\"5\""), 1);
    assert_null(strstr(svg, "<script"));
    assert_null(strstr(svg, "href"));
    assert_non_null(strstr(svg, "font-family=\"sans-serif\""));
    free(svg);
    series_free(&s);
}

static void panels_share_one_scale(void **state) {
    series s[2];
    tu_series(&s[0], tu_naive_yaml, 0, NULL);
    tu_series(&s[1], tu_optimized_yaml, 0, NULL);
    char *svg = render(s, 2, VIEW_REQUESTED, false);
    assert_int_equal(count(svg, "class=\"panel\""), 2);
    const char *p1 = strstr(svg, "data-index=\"1\"");
    assert_non_null(p1);
    /* seed: optimized peak 320 MiB, drawn on the same scale as naive's 576 MiB */
    const char *peak0 = strstr(svg, "class=\"peak\""), *peak1 = strstr(p1, "class=\"peak\"");
    assert_true(peak0 < p1);
    assert_non_null(peak1);
    assert_int_equal((uint64_t)attr(peak1, "data-bytes"), 320 * MiB);
    assert_true(fabs(attr(peak1, "cy") - y_of(svg, 320.0 * MiB)) < 0.2);
    assert_true(fabs(attr(peak1, "cy") - y_of(p1, 320.0 * MiB)) < 0.2);
    assert_non_null(strstr(p1, ">peak 320 MiB<"));
    assert_non_null(strstr(p1, "live: full 256 MiB, shard 64 MiB<"));
    free(svg);
    series_free(&s[1]);
    series_free(&s[0]);
}

static void text_is_escaped(void **state) {
    series s;
    tu_series(&s, "name: \"a<b & 'c' \\\"d\\\"\"\nworld: 2\nsteps:\n  - alloc: {buf: x, bytes: 3MiB}\n",
              0, NULL);
    char *svg = render(&s, 1, VIEW_REQUESTED, false);
    assert_non_null(strstr(svg, "a&lt;b &amp; &apos;c&apos; &quot;d&quot;"));
    assert_null(strstr(svg, "a<b"));
    free(svg);
    series_free(&s);
}

static void device_view_uses_pages(void **state) {
    series s;
    /* docs/design.md page rule: 2 MiB + 1 B gets pages of its own, 4 MiB */
    tu_series(&s, "name: pages\nworld: 1\nsteps:\n  - alloc: {buf: x, bytes: 2MiB + 1}\n", 0, NULL);
    char *svg = render(&s, 1, VIEW_DEVICE, false);
    assert_non_null(strstr(svg, ">peak 4 MiB<"));
    assert_int_equal((uint64_t)attr(strstr(svg, "class=\"peak\""), "data-bytes"), 4 * MiB);
    free(svg);
    series_free(&s);
}

/* A hand-made measurement: 1 MiB more than predicted after every op, op k done at (k+1) ms. */
static void add_measured(series *s) {
    s->measured = calloc((size_t)s->world, sizeof *s->measured);
    s->has_time = true;
    for (int r = 0; r < s->world; r++) {
        const pred_rank *p = &s->pred[r];
        for (size_t k = 0; k < p->n_timeline; k++)
            *ml_measure_push_sample(&s->measured[r]) =
                (ml_sample){.op = p->timeline[k].op,
                            .requested = p->timeline[k].live[VIEW_REQUESTED] + MiB,
                            .t = 1e-3 * (double)(k + 1)};
    }
}

static void measured_overlay_and_time_axis(void **state) {
    series s;
    tu_series(&s, tu_naive_yaml, 0, NULL);
    ml_str out = {0};
    ml_diags d;
    ml_diags_init(&d);
    plot_options o = {.view = VIEW_REQUESTED, .time_axis = true};
    assert_int_equal(plot_svg(&s, 1, &o, &out, &d), -1);   /* no measured times yet */
    assert_non_null(strstr(tu_first_error(&d), "'--time' needs a run result"));
    ml_diags_free(&d);
    add_measured(&s);
    char *svg = render(&s, 1, VIEW_REQUESTED, false);
    const char *m = strstr(svg, "data-kind=\"measured\"");
    assert_non_null(m);
    assert_non_null(strstr(m, "stroke-dasharray"));
    assert_non_null(strstr(svg, ">measured<"));
    free(svg);
    svg = render(&s, 1, VIEW_REQUESTED, true);
    assert_non_null(strstr(svg, ">time since baseline (measured)<"));
    assert_non_null(strstr(svg, ">4 ms<"));    /* ticks over 7 ms of ops */
    /* the host run read no device memory: no measured device curve */
    free(svg);
    svg = render(&s, 1, VIEW_DEVICE, false);
    assert_null(strstr(svg, "data-kind=\"measured\""));
    free(svg);
    series_free(&s);
}

static void many_ops_stay_small(void **state) {
    series s;
    /* 20,001 ops, far more than the panel's pixels: the curve becomes one bar per pixel column */
    tu_series(&s, "name: many\nworld: 1\nsteps:\n  - alloc: {buf: keep, bytes: 8MiB}\n"
                  "  - repeat:\n      count: 10000\n      steps:\n"
                  "        - alloc: {buf: tmp, bytes: 4MiB}\n        - free: tmp\n", 0, NULL);
    char *svg = render(&s, 1, VIEW_REQUESTED, false);
    /* the panel is 1600 px (6 px an op, at most 1600): one curve bar per pixel column (about 24
     * bytes a column) and bands of at most 1200 columns, tmp's 10,000 allocations drawn as one
     * band where they meet, keep it under 64 bytes a pixel column, not per op */
    assert_non_null(strstr(svg, "width=\"1600\""));
    assert_true(strlen(svg) < 64 * 1600);
    assert_int_equal(count(svg, "data-name=\"tmp\""), 1);
    assert_non_null(strstr(svg, ">peak 12 MiB<"));   /* keep + tmp */
    const char *curve = strstr(svg, "class=\"curve\"");
    assert_non_null(curve);
    /* the bars reach the peak: some vertex sits at the peak's y */
    char at[32];
    snprintf(at, sizeof at, "V%.1f", y_of(svg, 12.0 * MiB));
    assert_non_null(strstr(curve, at));
    free(svg);
    series_free(&s);
}

/* memory_viz's order: what is never freed at the bottom, then by allocation time, so that a band
 * moves only when one under it goes. Naive RS+AG: full (op 0), shard (op 1), gathered (op 2),
 * then full and shard freed; gathered lives to the end, so it is drawn first, at the bottom. */
static void bands_stack_long_lived_first(void **state) {
    series s;
    tu_series(&s, tu_naive_yaml, 0, NULL);
    char *svg = render(&s, 1, VIEW_REQUESTED, false);
    const char *g = strstr(svg, "class=\"band\" data-rank=\"0\" data-name=\"gathered\"");
    const char *f = strstr(svg, "class=\"band\" data-rank=\"0\" data-name=\"full\"");
    const char *sh = strstr(svg, "class=\"band\" data-rank=\"0\" data-name=\"shard\"");
    assert_non_null(g);
    assert_non_null(f);
    assert_non_null(sh);
    assert_true(g < f && f < sh);
    /* gathered starts at the baseline: its path begins at y of 0 bytes */
    const char *d = strstr(g, " d=\"M");
    double x0, y0;
    assert_non_null(d);
    assert_int_equal(sscanf(d, " d=\"M%lf %lf", &x0, &y0), 2);
    assert_true(fabs(y0 - y_of(svg, 0)) < 0.2);
    /* no small buffers here: every buffer has a band */
    assert_null(strstr(svg, "data-small"));
    free(svg);
    series_free(&s);
}

/* Ranks whose curves differ get a row each, with bands of their own. */
static void a_row_per_rank_that_differs(void **state) {
    series s;
    tu_series(&s, "name: ranks\nworld: 3\nsteps:\n  - alloc: {buf: x, bytes: (rank + 1) * 1MiB}\n"
                  "  - alloc: {buf: y, bytes: 1MiB}\n  - free: y\n", 0, NULL);
    char *svg = render(&s, 1, VIEW_REQUESTED, false);
    assert_int_equal(count(svg, "class=\"row-label\""), 3);
    for (int r = 0; r < 3; r++) {
        char want[64];
        snprintf(want, sizeof want, "class=\"band\" data-rank=\"%d\" data-name=\"x\"", r);
        const char *b = strstr(svg, want);
        assert_non_null(b);
        assert_int_equal((uint64_t)attr(b, "data-bytes"), (uint64_t)(r + 1) * MiB);
        snprintf(want, sizeof want, "class=\"curve\" data-rank=\"%d\"", r);
        assert_non_null(strstr(svg, want));
    }
    /* one colour for x in every row */
    const char *b0 = strstr(svg, "data-name=\"x\""), *b2 = strstr(svg, "data-rank=\"2\" data-name=\"x\"");
    assert_non_null(b0);
    assert_non_null(b2);
    assert_memory_equal(strstr(b0, "fill=\""), strstr(b2, "fill=\""), 14);
    free(svg);
    series_free(&s);
}

/* Under a MiB the ticks are in KiB (or bytes), round ones, not a column of "0 MiB". */
static void small_plans_tick_in_kib(void **state) {
    series s;
    tu_series(&s, "name: small\nworld: 1\nsteps:\n  - alloc: {buf: x, bytes: 300KiB}\n", 0, NULL);
    char *svg = render(&s, 1, VIEW_REQUESTED, false);
    /* 300 KiB and 15% headroom: 345 KiB over about 5 ticks, a round step of 100 KiB */
    assert_non_null(strstr(svg, ">peak 300 KiB<"));
    assert_non_null(strstr(svg, ">100 KiB<"));
    assert_non_null(strstr(svg, ">400 KiB<"));
    assert_null(strstr(svg, ">500 KiB<"));
    assert_null(strstr(svg, " MiB<"));
    free(svg);
    series_free(&s);
}

/* Past 16 rank groups the rows stop, and the last goes to the group with the highest peak. */
static void rows_stop_at_sixteen(void **state) {
    series s;
    tu_series(&s, "name: wide\nworld: 20\nsteps:\n  - alloc: {buf: x, bytes: (rank + 1) * 1MiB}\n",
              0, NULL);
    char *svg = render(&s, 1, VIEW_REQUESTED, false);
    assert_int_equal(count(svg, "class=\"row-label\""), 16);
    assert_non_null(strstr(svg, "class=\"row-label\" data-rank=\"19\""));
    assert_null(strstr(svg, "class=\"row-label\" data-rank=\"15\""));
    assert_non_null(strstr(svg, ">4 more rank groups with curves of their own are not drawn (at most 16 rows)<"));
    const char *peak = strstr(svg, "class=\"peak\"");
    assert_non_null(peak);
    assert_int_equal((int)attr(peak, "data-rank"), 19);
    assert_int_equal((uint64_t)attr(peak, "data-bytes"), 20 * MiB);
    free(svg);
    series_free(&s);
}

/* Numbered buffers are one band family; a name whose stem has digits of its own (an address) is
 * not; past 3000 allocations to draw one by one each band is drawn summed. */
static void families_and_summed_bands(void **state) {
    series s;
    tu_series(&s, "name: fam\nworld: 1\nsteps:\n  - alloc: {buf: params0, bytes: 4MiB}\n"
                  "  - alloc: {buf: params1, bytes: 4MiB}\n  - alloc: {buf: params_12, bytes: 4MiB}\n"
                  "  - alloc: {buf: a7f3d600000, bytes: 4MiB}\n  - alloc: {buf: a7f3d600001, bytes: 4MiB}\n",
              0, NULL);
    char *svg = render(&s, 1, VIEW_REQUESTED, false);
    assert_int_equal(count(svg, "data-name=\"params*\""), 3);
    assert_non_null(strstr(svg, ">params* (3 buffers)<"));
    assert_int_equal(count(svg, "data-name=\"a7f3d600000\""), 1);
    assert_int_equal(count(svg, "data-name=\"a7f3d600001\""), 1);
    free(svg);
    series_free(&s);
    /* keep, then a to f allocated and freed in turn 550 times: 3301 allocations over 6601 ops,
     * six ops a column (1200 columns at most), each buffer's allocations two columns apart, so
     * not merged: past MAX_SPANS (3000), each band is drawn summed */
    tu_series(&s, "name: summed\nworld: 1\nsteps:\n  - alloc: {buf: keep, bytes: 8MiB}\n"
                  "  - repeat:\n      count: 550\n      steps:\n"
                  "        - alloc: {buf: a, bytes: 4MiB}\n        - free: a\n"
                  "        - alloc: {buf: b, bytes: 4MiB}\n        - free: b\n"
                  "        - alloc: {buf: c, bytes: 4MiB}\n        - free: c\n"
                  "        - alloc: {buf: d, bytes: 4MiB}\n        - free: d\n"
                  "        - alloc: {buf: e, bytes: 4MiB}\n        - free: e\n"
                  "        - alloc: {buf: f, bytes: 4MiB}\n        - free: f\n", 0, NULL);
    svg = render(&s, 1, VIEW_REQUESTED, false);
    assert_int_equal(count(svg, "class=\"band\""), 7);
    assert_non_null(strstr(svg, "data-name=\"keep\" data-summed=\"1\""));
    assert_non_null(strstr(svg, "data-name=\"a\" data-summed=\"550\""));
    assert_non_null(strstr(svg, "data-name=\"f\" data-summed=\"550\""));
    free(svg);
    series_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(naive_peak_label_and_position),
        cmocka_unit_test(collectives_and_syncs_are_drawn),
        cmocka_unit_test(panels_share_one_scale),
        cmocka_unit_test(text_is_escaped),
        cmocka_unit_test(device_view_uses_pages),
        cmocka_unit_test(measured_overlay_and_time_axis),
        cmocka_unit_test(many_ops_stay_small),
        cmocka_unit_test(bands_stack_long_lived_first),
        cmocka_unit_test(a_row_per_rank_that_differs),
        cmocka_unit_test(families_and_summed_bands),
        cmocka_unit_test(rows_stop_at_sixteen),
        cmocka_unit_test(small_plans_tick_in_kib),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
