/* SPDX-License-Identifier: MIT */
/* test_fitsizes.c — fit's one expansion and lint for many values of a let (plan_sizes_*,
 * pipeline_sizes_*): when it applies, and that it changes nothing.
 *
 * Each case is run at several values of M, once by pipeline_run (the full path: load once,
 * expand, lint, predict at each value, every detail) and once by pipeline_sizes_run from one
 * base (at every other value with the numbers alone, as fit asks: PRED_NUMBERS_ONLY); the
 * outcome, every rank's steady and peak bytes in every view, the floor, the torch view's retries
 * and the first error's text must be identical, and the base must exist exactly where the case
 * says the let reaches the ops through allocs' sizes alone. */
#include "plantest.h"
#include "pipeline/pipeline.h"

typedef struct {
    const char *name;
    const char *yaml;
    bool reuse;            /* pipeline_sizes_new gives a base */
} sizes_case;

/* A captured step's shape: activations sized by M, a gathered shard (a view naming rank, of a
 * buffer of constant size), a reduce_scatter, streams and events, the torch view under a
 * limit that some values pass (out of memory: the first error). */
#define CAPTURED_HEAD                                                                             \
    "world: 4\nlet: {M: 1}\ndtype: uint8\nstreams: [s1]\nevents: [e0, e1]\n"                    \
    "torch: {limit: 40MiB}\nsteps:\n"                                                             \
    "  - alloc: {buf: w, bytes: 4096}\n"                                                          \
    "  - alloc: {buf: ag, bytes: 16384, stream: s1}\n"                                            \
    "  - record: {event: e0, stream: default}\n  - wait: {event: e0, stream: s1}\n"             \
    "  - all_gather: {send: 'ag[rank*4096 : 4096]', recv: ag, stream: s1}\n"                    \
    "  - record: {event: e1, stream: s1}\n  - wait: {event: e1, stream: default}\n"             \
    "  - alloc: {buf: a1, bytes: '1MiB*M + 512'}\n"                                               \
    "  - alloc: {buf: a2, bytes: '3MiB*M'}\n"                                                     \
    "  - free: ag\n"                                                                              \
    "  - alloc: {buf: g, bytes: 8192}\n  - alloc: {buf: gs, bytes: 2048}\n"                       \
    "  - reduce_scatter: {send: g, recv: gs, op: sum}\n"                                          \
    "  - free: [g, a1]\n"

static const sizes_case cases[] = {
    {"sizes_only", CAPTURED_HEAD "  - repeat:\n      count: 3\n      index: j\n      steps:\n"
     "        - alloc: {buf: t, bytes: '(j + 1) * 2MiB * M'}\n        - free: t\n"
     "  - free: [a2, gs, w]\n", true},
    /* a let after M computed from it, read by a size only */
    {"derived_let", "world: 2\nlet: {M: 1, BS: M * 4096}\ndtype: uint8\nsteps:\n"
     "  - alloc: {buf: a, bytes: BS}\n  - alloc: {buf: b, count: 'BS / 2'}\n  - free: [a, b]\n",
     true},
    /* M in a `when:`: which steps run depends on it */
    {"when", CAPTURED_HEAD "  - when: M > 2\n    alloc: {buf: extra, bytes: 8MiB}\n"
     "  - free: [a2, gs, w]\n", false},
    /* M in a repeat's count */
    {"repeat_count", CAPTURED_HEAD "  - repeat:\n      count: M\n      steps:\n"
     "        - alloc: {buf: t, bytes: 1MiB}\n        - free: t\n"
     "  - free: [a2, gs, w]\n", false},
    /* a view of a buffer sized by M: its count follows the size (and lint's bounds) */
    {"view_of_sized", CAPTURED_HEAD "  - all_reduce: {buf: a2}\n  - free: [a2, gs, w]\n", false},
    /* a size of a let that names rank and M: one at M = 1 on every rank (the ranks share an
     * expansion there), rank apart at other values */
    {"let_of_rank_and_m", "world: 4\nlet: {M: 1, R: 'rank * (M - 1) + 64'}\ndtype: uint8\n"
     "steps:\n  - alloc: {buf: a, bytes: R}\n  - free: a\n", false},
    /* M in a derived let that a view's offset reads */
    {"let_in_offset", "world: 2\nlet: {M: 1, O: M}\ndtype: uint8\nsteps:\n"
     "  - alloc: {buf: a, bytes: 64}\n  - all_reduce: {buf: 'a[O : 8]'}\n  - free: a\n", false},
};

static const int64_t values[] = {1, 2, 3, 5, 9, 2};

/* fit: the run as fit makes it (numbers only: no timeline, no details); else the defaults */
static void input_at_as(pipeline_input *in, const sched *const *loaded, const char **set,
                        char *buf, size_t len, int64_t v, bool fit) {
    snprintf(buf, len, "M=%lld", (long long)v);
    set[0] = buf;
    pipeline_opts o;
    pipeline_opts_default(&o);
    o.timeline = o.details = !fit;
    static const char *const files[] = {"case.yaml"};
    *in = (pipeline_input){.files = files, .n_files = 1, .set = set, .n_set = 1,
                           .loaded = loaded, .what = o};
}

static void input_at(pipeline_input *in, const sched *const *loaded, const char **set,
                     char *buf, size_t len, int64_t v) {
    input_at_as(in, loaded, set, buf, len, v, false);
}

static void first_error(const ml_diags *d, char *buf, size_t len) {
    const ml_diag *g = ml_diags_first_error(d);
    buf[0] = '\0';
    if (g)
        ml_diag_format(g, buf, len);
}

static void same_results(const char *name, int64_t v, int rc_full, const pipeline_result *full,
                         int rc_sizes, const pipeline_result *sizes) {
    char a[400], b[400];
    first_error(&full->diags, a, sizeof a);
    first_error(&sizes->diags, b, sizeof b);
    if (rc_full != rc_sizes || strcmp(a, b) != 0) {
        fprintf(stderr, "%s at M=%lld: full %d '%s', sizes %d '%s'\n", name, (long long)v,
                rc_full, a, rc_sizes, b);
        fail();
    }
    if (rc_full != 0)
        return;
    assert_int_equal(full->items.n, sizes->items.n);
    for (size_t k = 0; k < full->items.n; k++) {
        const pipeline_item *x = &ML_VEC_AT(&full->items, pipeline_item, k);
        const pipeline_item *y = &ML_VEC_AT(&sizes->items, pipeline_item, k);
        assert_int_equal(x->world, y->world);
        for (int r = 0; r < x->world; r++) {
            const pred_rank *p = &x->pred[r], *q = &y->pred[r];
            for (int view = 0; view < VIEW_COUNT; view++) {
                assert_int_equal(p->peak[view], q->peak[view]);
                assert_int_equal(p->steady[view], q->steady[view]);
            }
            assert_int_equal(p->floor, q->floor);
            assert_int_equal(!p->torch, !q->torch);
            if (p->torch)
                assert_int_equal(p->torch->alloc_retries, q->torch->alloc_retries);
        }
    }
}

static void every_case_matches_full_path(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ml_diags d;
        ml_diags_init(&d);
        sched *s = tu_load(cases[c].yaml, &d);
        if (!s)
            pt_dump(&d);
        assert_non_null(s);
        const sched *loaded[1] = {s};
        const char *set[1];
        char buf[64];
        pipeline_input in;
        input_at(&in, loaded, set, buf, sizeof buf, values[0]);
        pipeline_sizes *z = pipeline_sizes_new(&in, "M");
        if ((z != NULL) != cases[c].reuse) {
            fprintf(stderr, "%s: base %s, expected %s\n", cases[c].name, z ? "made" : "refused",
                    cases[c].reuse ? "made" : "refused");
            fail();
        }
        int oom = 0;
        for (size_t k = 0; z && k < sizeof values / sizeof *values; k++) {
            input_at(&in, loaded, set, buf, sizeof buf, values[k]);
            pipeline_result full;
            int rc_full = pipeline_run(&in, &full);
            /* the reuse as fit runs it: numbers only, against the full run with every detail */
            input_at_as(&in, loaded, set, buf, sizeof buf, values[k], k % 2 == 1);
            const pipeline_result *res;
            int rc_sizes = pipeline_sizes_run(z, &in, &res);
            assert_int_not_equal(rc_sizes, 1);
            same_results(cases[c].name, values[k], rc_full, &full, rc_sizes, res);
            oom += rc_full != 0;
            pipeline_result_free(&full);
        }
        /* the captured shape runs out of memory under its limit at the larger values */
        if (z && !strcmp(cases[c].name, "sizes_only"))
            assert_true(oom > 0 && oom < (int)(sizeof values / sizeof *values));
        pipeline_sizes_free(z);
        sched_free(s);
        ml_diags_free(&d);
    }
}

/* A size that fails to evaluate at some value is the full run's to report. */
static void failing_size_takes_full_path(void **state) {
    (void)state;
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load("world: 2\nlet: {M: 1}\nsteps:\n  - alloc: {buf: a, bytes: '4096 - M'}\n"
                       "  - free: a\n", &d);
    assert_non_null(s);
    const sched *loaded[1] = {s};
    const char *set[1];
    char buf[64];
    pipeline_input in;
    input_at(&in, loaded, set, buf, sizeof buf, 1);
    pipeline_sizes *z = pipeline_sizes_new(&in, "M");
    assert_non_null(z);
    const pipeline_result *res;
    input_at(&in, loaded, set, buf, sizeof buf, 5000);   /* negative bytes */
    assert_int_equal(pipeline_sizes_run(z, &in, &res), 1);
    input_at(&in, loaded, set, buf, sizeof buf, 96);
    assert_int_equal(pipeline_sizes_run(z, &in, &res), 0);
    assert_int_equal(ML_VEC_AT(&res->items, pipeline_item, 0).pred[1].peak[VIEW_REQUESTED], 4000);
    pipeline_sizes_free(z);
    sched_free(s);
    ml_diags_free(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_case_matches_full_path),
        cmocka_unit_test(failing_size_takes_full_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
