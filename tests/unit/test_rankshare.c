/* SPDX-License-Identifier: MIT */
/* test_rankshare.c — the one-expansion fast path (plan_rank_invariant, plan_share, lint_plans on
 * shared ops, predict_rank_shared: analyzer/pipeline/rankshare.h's IDENTICAL): when it applies,
 * and that it changes nothing.
 *
 * Every case runs the real pipeline (ml_analyze, as `memlife predict` does) and, beside it, the
 * per-rank reference (plan_expand for every rank, lint_plans, predict_rank, expect_eval); the
 * diagnostics, contract rows, predictions (every field and the whole timeline) and expectation
 * rows must be identical, and the item must have taken the path the case names. */
#include "plantest.h"
#include "cli/analysis.h"
#include "pipeline/rankshare.h"
#include "predict/timemodel.h"

#include <unistd.h>

typedef struct {
    const char *name;
    const char *yaml;
    int world;             /* 0: the file's */
    const char *set;       /* one --set NAME=VALUE, or NULL */
    bool shared;           /* the fast path applies */
} share_case;

static const share_case cases[] = {
    /* seed: the four lifetimes carry no rank; the RS+AG ones are out of place, so NCCL's
     * in-place rule cannot tell the ranks apart */
    {"allreduce_full", "let: {M: 256MiB}\nworld: 4\nsteps:\n"
     "  - alloc: {buf: full, bytes: M}\n  - all_reduce: {buf: full}\n  - sync: device\n",
     0, NULL, true},
    {"rs_ag_naive", "let: {M: 256MiB}\nworld: 4\n"
     "expect:\n  requested: {steady: M, peak: 2*M + M/world}\nsteps:\n"
     "  - alloc: {buf: full, bytes: M}\n  - alloc: {buf: shard, bytes: M / world}\n"
     "  - alloc: {buf: gathered, bytes: M}\n  - reduce_scatter: {send: full, recv: shard}\n"
     "  - all_gather: {send: shard, recv: gathered}\n  - sync: device\n"
     "  - free: [full, shard]\n",
     8, NULL, true},
    /* no rank, but floors that differ: rank 0's send slot of the reduce_scatter is read after
     * it, so NCCL's in-place share (y's bytes) is the other ranks' only; the floor's short
     * way redoes that op alone on each rank (floor_rank_shared) */
    {"shard_slot_read_on_rank_0", "world: 4\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 16}\n"
     "  - reduce_scatter: {send: x, recv: y}\n  - compute: {reads: ['x[0 : 16]', y]}\n"
     "  - free: [x, y]\n",
     0, NULL, true},
    /* rank only where the executor reads it (data patterns, closed forms): still one plan */
    {"rank_in_data_only", "world: 4\nsteps:\n"
     "  - alloc: {buf: x, count: 64, dtype: int32, init: {expr: 100 * rank + i}}\n"
     "  - alloc: {buf: y, count: 64, dtype: int32, init: rank_iota}\n"
     "  - all_reduce: {send: x, recv: y}\n"
     "  - check: {name: c, equal: [y, {expr: 100 * rank + i}]}\n"
     "  - when: world > 1\n    free: [x, y]\n",
     0, NULL, true},
    /* lint findings on every rank (use after free, a hazard) and contract rows: linted per rank
     * for the texts, still from one expansion */
    {"findings_on_shared_ops", "world: 4\nstreams: [comm]\nsteps:\n"
     "  - alloc: {buf: a, bytes: 4KiB}\n  - alloc: {buf: b, bytes: 1KiB}\n"
     "  - reduce_scatter: {send: a, recv: b, stream: comm}\n  - free: a\n"
     "  - all_reduce: {buf: a}\n  - alloc: {buf: c, bytes: 1KiB}\n"
     "  - expect_error: {name: bad, error: size_mismatch, step: {all_gather: {send: b, recv: c}}}\n",
     0, NULL, true},
    {"expect_error_rows", "world: 4\nsteps:\n"
     "  - alloc: {buf: a, count: 1003, dtype: int64}\n  - alloc: {buf: b, count: 250, dtype: int64}\n"
     "  - expect_error: {name: nondivisible, error: size_mismatch,\n"
     "                   step: {reduce_scatter: {send: a, recv: b}}}\n  - free: [a, b]\n",
     0, NULL, true},
    /* NCCL's in-place rule without any `rank`: {buf: x} of a reduce_scatter is in place on rank
     * 0 only (recv == send + 0*count), and an all_gather's own slice likewise */
    {"rs_buf_in_place_on_rank0_only", "world: 4\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - reduce_scatter: {send: x, recv: 'x[0 : 16]'}\n",
     0, NULL, false},
    {"ag_slice_in_place_on_rank0_only", "world: 2\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - all_gather: {send: 'x[0 : 32]', recv: x}\n",
     0, NULL, false},
    /* rank in what plan_expand evaluates, directly or through a let or an override */
    {"rank_in_view", "world: 4\nlet: {s: 16}\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - reduce_scatter: {send: x, recv: 'x[rank*s : s]'}\n",
     0, NULL, false},
    {"rank_in_when", "world: 4\nsteps:\n"
     "  - alloc: {buf: x, bytes: 1KiB}\n  - when: rank == 0\n    all_reduce: {buf: x}\n",
     0, NULL, false},
    {"rank_in_repeat_body", "world: 2\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - repeat: {count: 2, steps: [{scale: {buf: x, by: rank + 1}}]}\n",
     0, NULL, false},
    {"rank_through_let", "world: 4\nlet: {n: 16 * (rank + 1)}\nsteps:\n"
     "  - alloc: {buf: x, count: n}\n  - all_reduce: {buf: x}\n",
     0, NULL, false},
    {"rank_through_set", "world: 4\nlet: {n: 16}\nsteps:\n"
     "  - alloc: {buf: x, count: n}\n  - all_reduce: {buf: x}\n",
     0, "n=16 * (rank + 1)", false},
    {"rank_as_root", "world: 4\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - broadcast: {buf: x, root: rank}\n",
     0, NULL, false},
    /* rank where the time model evaluates it with the rank's slots: a compute's time, the
     * link's latency (rank 1's step is 10 us longer in both) */
    {"rank_in_compute_time", "world: 2\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - compute: {reads: [x], time: 10 * (rank + 1)}\n  - all_reduce: {buf: x}\n",
     0, NULL, false},
    {"rank_in_link", "world: 2\nlink: {alpha_us: 5 + 10 * rank, busbw_gbps: 100}\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - all_reduce: {buf: x}\n",
     0, NULL, false},
    {"world_one", "world: 1\nsteps:\n  - alloc: {buf: x, count: 64}\n", 0, NULL, false},
};

typedef struct {
    pt_run r;
    int exit_code;
    expect_row *expects;
    size_t n_expects;
    int failures;
} reference;

/* The per-rank pipeline, as analyzer/pipeline/pipeline.c ran it before the fast path. */
static void run_reference(const share_case *c, reference *ref) {
    memset(ref, 0, sizeof *ref);
    pt_run *r = &ref->r;
    ml_diags_init(&r->d);
    r->s = tu_load(c->yaml, &r->d);
    assert_non_null(r->s);
    const char *set[1] = {c->set};
    sched_params p = {.set = set, .n_set = c->set ? 1 : 0, .world = c->world};
    r->world = sched_world(r->s, &p, &r->d);
    r->plans = calloc((size_t)r->world, sizeof *r->plans);
    for (int k = 0; k < r->world; k++)
        assert_int_equal(plan_expand(r->s, 0, &p, r->world, k, NULL, &r->plans[k], &r->d), 0);
    pt_lint(r);
    if (r->lint_errors)
        return;
    pt_predict(r);
    ref->failures = expect_eval(r->s, 0, &p, r->world, r->pred, &ref->expects, &ref->n_expects,
                                &r->d);
}

static void same_prediction(const pred_rank *a, const pred_rank *b, size_t n_ops) {
    assert_int_equal(a->rank, b->rank);
    for (int v = 0; v < VIEW_COUNT; v++) {
        assert_int_equal(a->steady[v], b->steady[v]);
        assert_int_equal(a->peak[v], b->peak[v]);
        assert_int_equal(a->peak_op[v], b->peak_op[v]);
        assert_int_equal(a->n_peak_live[v], b->n_peak_live[v]);
        if (a->n_peak_live[v])
            assert_memory_equal(a->peak_live[v], b->peak_live[v],
                                a->n_peak_live[v] * sizeof(uint32_t));
    }
    assert_int_equal(a->exact[VIEW_DEVICE], b->exact[VIEW_DEVICE]);
    assert_int_equal(a->peak_lo[VIEW_DEVICE], b->peak_lo[VIEW_DEVICE]);
    assert_int_equal(a->peak_hi[VIEW_DEVICE], b->peak_hi[VIEW_DEVICE]);
    assert_int_equal(a->floor, b->floor);
    assert_int_equal(a->n_timeline, n_ops);
    assert_int_equal(b->n_timeline, n_ops);
    if (n_ops)
        assert_memory_equal(a->timeline, b->timeline, n_ops * sizeof *a->timeline);
}

/* shared: the fast path is expected (the case's, or false under MEMLIFE_NO_SHARE). */
static void run_case(const share_case *c, bool shared) {
    char path[] = "/tmp/memlife-rankshare-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, c->yaml, strlen(c->yaml)), (ssize_t)strlen(c->yaml));
    close(fd);
    char world[16];
    snprintf(world, sizeof world, "%d", c->world);
    char *argv[8] = {"predict", path};
    int argc = 2;
    if (c->world) {
        argv[argc++] = "--world";
        argv[argc++] = world;
    }
    if (c->set) {
        argv[argc++] = "--set";
        argv[argc++] = (char *)c->set;
    }
    ml_args a;
    assert_int_equal(ml_args_parse(&a, "predict", argc, argv, NULL, 0, false), 0);
    pipeline_opts o;
    pipeline_opts_default(&o);
    ml_analysis an;
    int rc = ml_analyze(&a, "predict", &o, &an);
    unlink(path);

    reference ref;
    run_reference(c, &ref);
    print_message("case %s\n", c->name);
    assert_int_equal(rc, ref.r.lint_errors ? ML_EXIT_INPUT : ML_EXIT_OK);
    assert_int_equal(an.res.items.n, 1);
    const pipeline_item *it = &ML_VEC_AT(&an.res.items, pipeline_item, 0);
    assert_int_equal(it->shared, shared);
    assert_int_equal(it->world, ref.r.world);

    /* the same diagnostics, in the same order (the file name aside) */
    assert_int_equal(an.res.diags.items.n, ref.r.d.items.n);
    for (size_t k = 0; k < an.res.diags.items.n; k++) {
        const ml_diag *x = &ML_VEC_AT(&an.res.diags.items, ml_diag, k);
        const ml_diag *y = &ML_VEC_AT(&ref.r.d.items, ml_diag, k);
        assert_string_equal(x->text, y->text);
        assert_int_equal(x->rank, y->rank);
        assert_int_equal(x->mark.line, y->mark.line);
        assert_int_equal(x->mark.col, y->mark.col);
    }
    /* the same contract rows */
    assert_int_equal(it->lint.n_rows, ref.r.lint.n_rows);
    for (size_t k = 0; k < it->lint.n_rows; k++) {
        assert_string_equal(it->lint.rows[k].name, ref.r.lint.rows[k].name);
        assert_int_equal(it->lint.rows[k].rank, ref.r.lint.rows[k].rank);
        assert_int_equal(it->lint.rows[k].pass, ref.r.lint.rows[k].pass);
        assert_string_equal(it->lint.rows[k].detail, ref.r.lint.rows[k].detail);
    }
    /* every rank's plan is its own rank's, with the reference's ops */
    for (int k = 0; k < it->world; k++) {
        const rank_plan *x = &it->plans[k], *y = &ref.r.plans[k];
        assert_int_equal(x->rank, k);
        assert_int_equal(x->slots[EXPR_SLOT_RANK], k);
        assert_int_equal(x->borrowed, shared && k > 0);
        assert_int_equal(x->n_ops, y->n_ops);
        assert_memory_equal(x->slots, y->slots,
                            (EXPR_SLOT_FIRST_LET + x->s->n_lets) * sizeof *x->slots);
        for (size_t i = 0; i < x->n_ops; i++) {
            /* ops point at steps of their own load: compare all but the step pointer */
            plan_op xo = x->ops[i], yo = y->ops[i];
            assert_int_equal(xo.step->mark.line, yo.step->mark.line);
            xo.step = yo.step = NULL;
            assert_memory_equal(&xo, &yo, sizeof xo);
        }
    }
    if (!ref.r.lint_errors) {
        assert_non_null(it->pred);
        for (int k = 0; k < it->world; k++) {
            same_prediction(&it->pred[k], &ref.r.pred[k], ref.r.plans[k].n_ops);
            /* the time model on the rank's own plan, as the pipeline runs it (no --link) */
            tm_link l;
            tm_link_default(&l);
            tm_result t;
            assert_int_equal(tm_link_from_sched(&ref.r.plans[k], &l, &ref.r.d), 0);
            assert_int_equal(tm_predict(&ref.r.plans[k], &l, false, &t, &ref.r.d), 0);
            assert_true(it->pred[k].timed);
            assert_true(it->pred[k].step_us == t.step_us && it->pred[k].comm_us == t.comm_us &&
                        it->pred[k].exposed_comm_us == t.exposed_comm_us);
        }
        assert_int_equal(it->n_expects, ref.n_expects);
        for (size_t k = 0; k < ref.n_expects; k++) {
            const expect_row *x = &it->expects[k], *y = &ref.expects[k];
            assert_int_equal(x->view, y->view);
            assert_int_equal(x->rank, y->rank);
            assert_int_equal(x->is_peak, y->is_peak);
            assert_int_equal(x->expected, y->expected);
            assert_int_equal(x->got, y->got);
            assert_int_equal(x->pass, y->pass);
        }
    }
    free(ref.expects);
    pt_free(&ref.r);
    ml_analysis_free(&an);
    ml_args_free(&a);
}

static void every_case_matches_per_rank(void **state) {
    (void)state;
    for (size_t k = 0; k < ML_ARRAY_LEN(cases); k++)
        run_case(&cases[k], cases[k].shared);
}

/* MEMLIFE_NO_SHARE (rankshare.h): every rank expanded on its own, the same outcome. */
static void no_share_expands_every_rank(void **state) {
    (void)state;
    assert_int_equal(setenv("MEMLIFE_NO_SHARE", "1", 1), 0);
    for (size_t k = 0; k < ML_ARRAY_LEN(cases); k++)
        run_case(&cases[k], false);
    assert_int_equal(unsetenv("MEMLIFE_NO_SHARE"), 0);
}

/* plan_share: borrowed arrays are left alone by plan_free, in either order (ASan and valgrind
 * would see a double free); the slots are the rank's own. */
static void share_and_free_in_any_order(void **state) {
    (void)state;
    pt_run r;
    pt_load(&r, "world: 3\nlet: {n: 8}\nsteps:\n  - alloc: {buf: x, count: n}\n", 0);
    assert_true(plan_rank_invariant(&r.plans[0], &(sched_params){0}));
    rank_plan a, b;
    plan_share(&r.plans[0], 2, &a);
    plan_share(&r.plans[0], 1, &b);
    assert_ptr_equal(a.ops, r.plans[0].ops);
    assert_true(a.slots != r.plans[0].slots);
    assert_int_equal(a.slots[EXPR_SLOT_RANK], 2);
    assert_int_equal(a.slots[EXPR_SLOT_FIRST_LET], 8);
    assert_int_equal(r.plans[0].slots[EXPR_SLOT_RANK], 0);
    plan_free(&a);                 /* before its source */
    plan_free(&r.plans[0]);
    plan_free(&b);                 /* after it */
    pt_free(&r);
}

/* rankshare_new's ways, from rank 0's expansion, as the pipeline asks (offsets on; groups as
 * predict and check have them, compact plans; the timeline off): a schedule of each way, and
 * the same schedule where the options or MEMLIFE_NO_SHARE leave it alone. */
static rankshare_kind kind_of(const char *yaml, bool offsets, bool groups, bool timeline) {
    pt_run r;
    pt_load(&r, yaml, 0);
    sched_params p = {.world = r.world};
    rankshare *rs = rankshare_new(&r.plans[0], &p, offsets, groups, timeline);
    rankshare_kind k = rankshare_kind_of(rs);
    rankshare_free(rs);
    pt_free(&r);
    return k;
}

static void kinds_of_sharing(void **state) {
    (void)state;
    const char *identical = "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
                            "  - all_reduce: {buf: x}\n";
    const char *offsets = "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
                          "  - all_reduce: {buf: 'x[rank*16 : 16]'}\n";
    const char *groups = "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
                         "  - when: rank == 0\n    compute: {reads: [x]}\n"
                         "  - free: x\n";
    const char *size = "world: 4\nsteps:\n  - alloc: {buf: x, count: 64 + rank}\n";
    const char *p2p = "world: 2\nsteps:\n  - alloc: {buf: x, count: 64}\n"
                      "  - when: rank == 0\n    send: {buf: x, peer: 1}\n"
                      "  - when: rank == 1\n    recv: {buf: x, peer: 0}\n";
    assert_int_equal(kind_of(identical, true, true, false), RANKSHARE_IDENTICAL);
    assert_int_equal(kind_of(identical, false, false, true), RANKSHARE_IDENTICAL);
    assert_int_equal(kind_of(offsets, true, true, false), RANKSHARE_OFFSETS);
    assert_int_equal(kind_of(offsets, false, true, false), RANKSHARE_ALONE);
    assert_int_equal(kind_of(groups, true, true, false), RANKSHARE_GROUPS);
    assert_int_equal(kind_of(groups, true, false, false), RANKSHARE_ALONE);   /* whole plans */
    assert_int_equal(kind_of(size, true, true, false), RANKSHARE_ALONE);
    assert_int_equal(kind_of(p2p, true, true, false), RANKSHARE_ALONE);
    assert_int_equal(setenv("MEMLIFE_NO_SHARE", "1", 1), 0);
    assert_int_equal(kind_of(identical, true, true, false), RANKSHARE_ALONE);
    assert_int_equal(kind_of(offsets, true, true, false), RANKSHARE_ALONE);
    assert_int_equal(kind_of(groups, true, true, false), RANKSHARE_ALONE);
    assert_int_equal(setenv("MEMLIFE_NO_SHARE", "", 1), 0);   /* empty: as unset */
    assert_int_equal(kind_of(identical, true, true, false), RANKSHARE_IDENTICAL);
    assert_int_equal(unsetenv("MEMLIFE_NO_SHARE"), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_case_matches_per_rank),
        cmocka_unit_test(no_share_expands_every_rank),
        cmocka_unit_test(share_and_free_in_any_order),
        cmocka_unit_test(kinds_of_sharing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
