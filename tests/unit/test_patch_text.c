/* SPDX-License-Identifier: MIT */
/* test_patch_text.c — the rewrite as an edit of the input's text (analyzer/optimize/patch_text.h):
 * a rewrite equal to the input gives the input back byte for byte (LF, CRLF, no final line end,
 * comments everywhere, items at column 1, flow mapping items); moved steps keep their own text
 * and the comments above them; `world:` is changed where it must be; the layouts it does not
 * edit are refused with the reason the report prints. */
#include "optimize/patch_text.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    sched *s;
    patch_plan *plans;
    uint32_t **lines;
} loaded;

/* text loaded, each plan's steps at their own lines (a rewrite that changes nothing). */
static loaded load(const char *text) {
    ml_diags d;
    ml_diags_init(&d);
    loaded l = {.s = tu_load(text, &d)};
    if (!l.s)
        fail_msg("does not load: %s", tu_first_error(&d));
    ml_diags_free(&d);
    l.plans = calloc(l.s->n_plans + 1, sizeof *l.plans);
    l.lines = calloc(l.s->n_plans + 1, sizeof *l.lines);
    for (uint32_t k = 0; k < l.s->n_plans; k++) {
        l.lines[k] = calloc(l.s->plans[k].n + 1, sizeof **l.lines);
        for (uint32_t j = 0; j < l.s->plans[k].n; j++)
            l.lines[k][j] = l.s->plans[k].steps[j].mark.line;
        l.plans[k] = (patch_plan){l.s->plans[k].steps, l.s->plans[k].n, l.lines[k]};
    }
    return l;
}

static void unload(loaded *l) {
    for (uint32_t k = 0; k < l->s->n_plans; k++)
        free(l->lines[k]);
    free(l->lines);
    free(l->plans);
    sched_free(l->s);
}

/* patch_text of original -> rewrite; returns its result, the text in out. */
static int patch(const char *text, const loaded *o, const loaded *r, int world, const char *header,
                 ml_str *out, patch_stats *st) {
    ml_diags d;
    ml_diags_init(&d);
    emit_yaml_opts eo = {0};
    patch_in in = {.text = text, .len = strlen(text), .original = o->s, .rewrite = r->s,
                   .emit = &eo, .plans = r->plans, .world = world, .header = header};
    int rc = patch_text(&in, out, st, &d);
    ml_diags_free(&d);
    return rc;
}

static void test_unchanged_is_identity(void **state) {
    (void)state;
    static const char *const texts[] = {
        "name: a\nworld: 2\nsteps:\n  - alloc: {buf: x, bytes: 1MiB}\n  - free: x\n",
        "name: a\r\nworld: 2\r\nsteps:\r\n  - alloc: {buf: x, bytes: 1MiB}  # c\r\n  - free: x\r\n",
        "name: a\nworld: 2\nsteps:\n  - alloc: {buf: x, bytes: 1MiB}\n  - free: x",
        "# head\n\nname: a   # n\nworld: 2\nsteps:   # s\n  # above\n  - alloc: {buf: x,\n"
        "           bytes: 1MiB}   # two lines\n\n  # between\n  - free: x  # f\n# tail\n",
        "---\nname: a\nworld: 2\nsteps:\n- alloc: {buf: x, bytes: 1MiB}\n- free: x\n",
        "name: a\nworld: 2\nsteps:\n  - {alloc: {buf: x, bytes: 1MiB}}\n  - { free: x }\n",
    };
    for (size_t k = 0; k < ML_ARRAY_LEN(texts); k++) {
        loaded o = load(texts[k]);
        ml_str out = {0};
        patch_stats st;
        assert_int_equal(patch(texts[k], &o, &o, 2, NULL, &out, &st), 0);
        if (out.n != strlen(texts[k]) || memcmp(out.s, texts[k], out.n))
            fail_msg("text %zu: got\n%.*s", k, (int)out.n, out.s);
        assert_int_equal(st.edits, 0);
        ml_str_free(&out);
        unload(&o);
    }
}

/* Two steps change places: each keeps its text and the comment above it. */
static void test_moved_steps_keep_their_text(void **state) {
    (void)state;
    const char *in = "name: a\nworld: 2\nsteps:\n  # x's\n  - alloc: {buf: x, bytes: 1MiB}   # x\n"
                     "  - alloc: {buf: y,   bytes: 2MiB}\n  - free: [x, y]\n";
    const char *swapped = "name: a\nworld: 2\nsteps:\n  - alloc: {buf: y, bytes: 2MiB}\n"
                          "  - alloc: {buf: x, bytes: 1MiB}\n  - free: [x, y]\n";
    loaded o = load(in), r = load(swapped);
    r.lines[0][0] = 6;   /* y's step came from line 6, x's from 5 */
    r.lines[0][1] = 5;
    r.lines[0][2] = 7;
    ml_str out = {0};
    patch_stats st;
    assert_int_equal(patch(in, &o, &r, 2, NULL, &out, &st), 0);
    assert_string_equal(out.s, "name: a\nworld: 2\nsteps:\n  - alloc: {buf: y,   bytes: 2MiB}\n"
                               "  # x's\n  - alloc: {buf: x, bytes: 1MiB}   # x\n"
                               "  - free: [x, y]\n");
    ml_str_free(&out);
    unload(&o);
    unload(&r);
}

/* The header goes first; a world other than the file's replaces its value, said above it. */
static void test_header_and_world(void **state) {
    (void)state;
    const char *in = "name: a\nworld: 2   # the usual\nsteps:\n  - alloc: {buf: x, bytes: 1MiB}\n";
    loaded o = load(in);
    ml_str out = {0};
    patch_stats st;
    assert_int_equal(patch(in, &o, &o, 8, "memlife optimize: from t.yaml", &out, &st), 0);
    assert_string_equal(out.s, "# memlife optimize: from t.yaml\nname: a\n"
                               "# memlife optimize (line 2): world 8, where the rewrite was "
                               "verified (was 2)\nworld: 8   # the usual\nsteps:\n"
                               "  - alloc: {buf: x, bytes: 1MiB}\n");
    ml_str_free(&out);
    unload(&o);
}

/* Layouts it does not edit: 1, the reason the report gives, nothing appended. */
static void test_refused_layouts(void **state) {
    (void)state;
    static const struct {
        const char *text, *why;
    } rows[] = {
        {"name: a\nworld: 2\nsteps: [{alloc: {buf: x, bytes: 1MiB}}, {free: x}]\n",
         "the steps at line 3 are a flow sequence"},
        {"{name: a, world: 2, steps: [{alloc: {buf: x, bytes: 1MiB}}]}\n",
         "the file is one flow mapping"},
        {"name: a\nworld: 2\nevents: [e,\n  f]\nsteps:\n  - alloc: {buf: x, bytes: 1MiB}\n",
         "'events:' at line 3 is not a list on its line or a block list"},
        {"name: a\nworld: 2\nsteps:\n  -\n    alloc: {buf: x, bytes: 1MiB}\n",
         "the steps at line 5 are a flow sequence"},
    };
    for (size_t k = 0; k < ML_ARRAY_LEN(rows); k++) {
        loaded o = load(rows[k].text);
        ml_str out = {0};
        patch_stats st;
        assert_int_equal(patch(rows[k].text, &o, &o, 2, NULL, &out, &st), 1);
        assert_string_equal(st.why, rows[k].why);
        assert_int_equal(out.n, 0);
        ml_str_free(&out);
        unload(&o);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unchanged_is_identity),
        cmocka_unit_test(test_moved_steps_keep_their_text),
        cmocka_unit_test(test_header_and_world),
        cmocka_unit_test(test_refused_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
