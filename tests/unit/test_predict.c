/* SPDX-License-Identifier: MIT */
/* test_predict.c — the predictor's steady and peak bytes in both views, against the chapter's
 * lifetimes (seed: 4 × V100, 256 MiB: 256/256, 64/320, 256/576, 256/320 MiB; 2 × H200:
 * 256/256, 128/384, 256/640, 256/384 MiB; docs/design.md's formulas M/M, M/N / M+M/N, M / 2M+M/N,
 * M / M+M/N for other worlds), the beyond-seed lifetimes (in place, chunked), the padded 1003
 * case, the device model in a schedule, and expect_eval. The seed schedules are written here
 * inline; schedules/seed/ holds the CLI's copies. */
#include "plantest.h"

/* Loads yaml at world (0: the file's), checks that it lints clean and predicts every rank: what
 * the cases below that read predictions of a valid schedule start with. */
static void load_clean_and_predict(pt_run *r, const char *yaml, int world) {
    pt_load(r, yaml, world);
    pt_lint(r);
    assert_int_equal(r->lint_errors, 0);
    pt_predict(r);
}

/* Predicts fmt (with M = m) at world and checks every rank's steady and peak in MiB. */
static void seed_case(const char *fmt, const char *m, int world, double steady_req,
                      double peak_req, double steady_dev, double peak_dev) {
    char yaml[2048];
    snprintf(yaml, sizeof yaml, fmt, m);
    pt_run r;
    load_clean_and_predict(&r, yaml, world);
    for (int k = 0; k < world; k++) {
        const pred_rank *p = &r.pred[k];
        assert_int_equal(p->steady[VIEW_REQUESTED], (uint64_t)(steady_req * MiB));
        assert_int_equal(p->peak[VIEW_REQUESTED], (uint64_t)(peak_req * MiB));
        assert_int_equal(p->steady[VIEW_DEVICE], (uint64_t)(steady_dev * MiB));
        assert_int_equal(p->peak[VIEW_DEVICE], (uint64_t)(peak_dev * MiB));
        assert_true(p->exact[VIEW_DEVICE]);
        assert_int_equal(p->peak_lo[VIEW_DEVICE], p->peak[VIEW_DEVICE]);
        assert_int_equal(p->peak_hi[VIEW_DEVICE], p->peak[VIEW_DEVICE]);
    }
    pt_free(&r);
}

/* seed, 4 × V100 at 256 MiB: 256/256, 64/320, 256/576, 256/320 MiB;
 * seed, 2 × H200 at 256 MiB: 256/256, 128/384, 256/640, 256/384 MiB;
 * docs/design.md formulas at N = 8: M/N = 32, M+M/N = 288, 2M+M/N = 544;
 * N = 3 with M = 3·q, q = 86 MiB (43 whole pages): M/N = 86, M+M/N = 344, 2M+M/N = 602.
 * Whole pages everywhere, so the device view equals the requested one. */
static const struct {
    int world;
    const char *m;
    double steady_peak[4][2];   /* allreduce_full, rs_only, rs_ag_naive, rs_ag_optimized (MiB) */
} seed_table[] = {
    {4, "256MiB", {{256, 256}, {64, 320}, {256, 576}, {256, 320}}},
    {2, "256MiB", {{256, 256}, {128, 384}, {256, 640}, {256, 384}}},
    {8, "256MiB", {{256, 256}, {32, 288}, {256, 544}, {256, 288}}},
    {3, "258MiB", {{258, 258}, {86, 344}, {258, 602}, {258, 344}}},
};

static void seed_lifetimes(void **state) {
    for (size_t k = 0; k < ML_ARRAY_LEN(seed_table); k++)
        for (int seed = 0; seed < 4; seed++) {
            const double *sp = seed_table[k].steady_peak[seed];
            seed_case(pt_seed(seed), seed_table[k].m, seed_table[k].world, sp[0], sp[1], sp[0],
                      sp[1]);
        }
}

static void seed_world3_odd_pages(void **state) {
    /* N = 3 with M = 255 MiB: shards of 85 MiB. Requested 255/255, 85/340, 255/595, 255/340.
     * Device: 255 MiB is 127.5 pages → 128 pages = 256 MiB; 85 MiB is 42.5 → 43 pages = 86 MiB:
     * AR 256/256; RS-only 86 / 256+86 = 342; naive 256 / 256+86+256 = 598; optimized 256 / 342. */
    seed_case(pt_seed(PT_ALLREDUCE_FULL), "255MiB", 3, 255, 255, 256, 256);
    seed_case(pt_seed(PT_RS_ONLY), "255MiB", 3, 85, 340, 86, 342);
    seed_case(pt_seed(PT_RS_AG_NAIVE), "255MiB", 3, 255, 595, 256, 598);
    seed_case(pt_seed(PT_RS_AG_OPTIMIZED), "255MiB", 3, 255, 340, 256, 342);
}

static void in_place_rs_then_ag(void **state) {
    /* docs/design.md beyond the seed: in-place RS then in-place AG on one buffer, M / M */
    pt_run r;
    pt_load(&r,
            "world: 4\n"
            "let: {M: 256MiB, q: M / 4 / world}\n"
            "steps:\n"
            "  - alloc: {buf: full, bytes: M}\n"
            "  - reduce_scatter: {send: full, recv: 'full[rank*q : q]'}\n"
            "  - all_gather: {send: 'full[rank*q : q]', recv: full}\n"
            "  - sync: device\n",
            0);
    pt_lint(&r);
    assert_int_equal(r.lint_errors, 0);
    pt_predict(&r);
    for (int k = 0; k < 4; k++) {
        assert_true(r.plans[k].ops[1].u.coll.in_place);
        assert_true(r.plans[k].ops[2].u.coll.in_place);
        for (int v = 0; v < VIEW_COUNT; v++) {
            if (!r.pred[k].on[ml_series[v].view])
                continue;   /* the torch view is off without a `torch:` key */
            assert_int_equal(r.pred[k].steady[v], 256 * MiB);
            assert_int_equal(r.pred[k].peak[v], 256 * MiB);
        }
    }
    pt_free(&r);
}

static void chunked_release(void **state) {
    /* docs/design.md: in-place RS on N chunks, then release of the chunks not owned: M/N / M
     * (measured on H200×2 at 256 MiB: peak 256, after release 128). */
    for (int world = 2; world <= 4; world += 2) {
        pt_run r;
        pt_load(&r,
                "let: {M: 256MiB, q: M / 4 / world}\n"
                "steps:\n"
                "  - alloc: {buf: full, bytes: M, chunks: world}\n"
                "  - reduce_scatter: {send: full, recv: 'full[rank*q : q]'}\n"
                "  - sync: device\n"
                "  - release: {buf: full, keep: rank}\n"
                "  - scale: {buf: 'full[rank*q : q]', by: 2}\n",
                world);
        pt_lint(&r);
        assert_int_equal(r.lint_errors, 0);
        pt_predict(&r);
        for (int k = 0; k < world; k++)
            for (int v = 0; v < VIEW_COUNT; v++) {
                if (!r.pred[k].on[ml_series[v].view])
                    continue;
                assert_int_equal(r.pred[k].steady[v], 256 * MiB / (uint64_t)world);
                assert_int_equal(r.pred[k].peak[v], 256 * MiB);
            }
        pt_free(&r);
    }
}

static void chunked_small_chunks_own_pages(void **state) {
    pt_run r;
    /* 4 chunks of 1 KiB: requested 4 KiB, but each chunk is a physical allocation of its own:
     * 4 pages = 8 MiB; after release 1 KiB / 2 MiB */
    pt_load(&r,
            "world: 4\n"
            "steps:\n"
            "  - alloc: {buf: a, bytes: 4KiB, chunks: world}\n"
            "  - release: {buf: a, keep: rank}\n",
            0);
    pt_predict(&r);
    assert_int_equal(r.pred[3].peak[VIEW_REQUESTED], 4 * KiB);
    assert_int_equal(r.pred[3].peak[VIEW_DEVICE], 8 * MiB);
    assert_int_equal(r.pred[3].steady[VIEW_REQUESTED], KiB);
    assert_int_equal(r.pred[3].steady[VIEW_DEVICE], 2 * MiB);
    pt_free(&r);
}

static const char padded_1003[] =
    "world: 4\n"
    "dtype: int64\n"
    "let: {L: 1003, P: 'ceil_div(L, world) * world', Q: P / world}\n"
    "steps:\n"
    "  - alloc: {buf: logical, count: L, init: rank_iota}\n"
    "  - alloc: {buf: direct, count: L, init: {copy: logical}}\n"
    "  - all_reduce: {buf: direct}\n"
    "  - alloc: {buf: padded, count: P, init: {identity: sum}}\n"
    "  - init: {buf: 'padded[0:L]', copy: logical}\n"
    "  - alloc: {buf: shard, count: Q}\n"
    "  - alloc: {buf: gathered, count: P}\n"
    "  - reduce_scatter: {send: padded, recv: shard}\n"
    "  - all_gather: {send: shard, recv: gathered}\n"
    "  - sync: device\n"
    "  - check: {name: padding-and-trim-equivalence, equal: [direct, 'gathered[0:L]']}\n"
    "  - free: [padded, shard, gathered]\n";

static void padded_1003_int64(void **state) {
    pt_run r;
    load_clean_and_predict(&r, padded_1003, 0);
    for (int k = 0; k < 4; k++) {
        const pred_rank *p = &r.pred[k];
        /* seed: ceil(1003/4) = 251, padded 1004. int64 bytes: logical 1003×8 = 8024, direct
         * 8024, padded 1004×8 = 8032, shard 251×8 = 2008, gathered 8032.
         * peak = 8024 + 8024 + 8032 + 2008 + 8032 = 34120 at the alloc of gathered (op 9:
         * alloc, init, alloc, init, all_reduce, alloc, init, init, alloc, alloc);
         * steady = logical + direct = 16048. */
        assert_int_equal(p->peak[VIEW_REQUESTED], 34120);
        assert_int_equal(p->steady[VIEW_REQUESTED], 16048);
        assert_int_equal(p->peak_op[VIEW_REQUESTED], 9);
        assert_int_equal(p->n_peak_live[VIEW_REQUESTED], 5);
        static const char *const live[5] = {"logical", "direct", "padded", "shard", "gathered"};
        for (int j = 0; j < 5; j++)
            assert_string_equal(sched_sym_name(r.s, SYM_BUFFER, p->peak_live[VIEW_REQUESTED][j]),
                                live[j]);
        /* device: rounded to 512 B: 8192 + 8192 + 8192 + 2048 + 8192 = 34816 B, one shared page
         * from the first alloc on: 2 MiB peak at op 0, 2 MiB steady; exact (no alloc after the
         * frees that left holes) */
        assert_int_equal(p->peak[VIEW_DEVICE], 2 * MiB);
        assert_int_equal(p->steady[VIEW_DEVICE], 2 * MiB);
        assert_int_equal(p->peak_op[VIEW_DEVICE], 0);
        assert_int_equal(p->n_peak_live[VIEW_DEVICE], 1);
        assert_true(p->exact[VIEW_DEVICE]);
        assert_int_equal(p->n_timeline, r.plans[k].n_ops);
        assert_int_equal(p->timeline[9].live[VIEW_REQUESTED], 34120);
        assert_int_equal(p->timeline[r.plans[k].n_ops - 1].live[VIEW_REQUESTED], 16048);
    }
    pt_free(&r);
}

/* predict and check run without a timeline (pipeline_opts.timeline): every other field is the
 * same as with it, and no point is kept. */
static void no_timeline_same_prediction(void **state) {
    pt_run r;
    pt_load(&r, padded_1003, 0);
    pt_lint(&r);
    pt_predict(&r);
    for (int k = 0; k < 4; k++) {
        pred_rank bare;
        assert_int_equal(predict_rank_with(&r.plans[k], false, &bare, &r.d), 0);
        const pred_rank *p = &r.pred[k];
        assert_null(bare.timeline);
        assert_int_equal(bare.n_timeline, 0);
        assert_int_equal(p->n_timeline, r.plans[k].n_ops);
        assert_memory_equal(bare.peak, p->peak, sizeof bare.peak);
        assert_memory_equal(bare.steady, p->steady, sizeof bare.steady);
        assert_memory_equal(bare.peak_op, p->peak_op, sizeof bare.peak_op);
        assert_memory_equal(bare.peak_lo, p->peak_lo, sizeof bare.peak_lo);
        assert_memory_equal(bare.peak_hi, p->peak_hi, sizeof bare.peak_hi);
        assert_int_equal(bare.peak[VIEW_REQUESTED], 34120);   /* padded_1003_int64's sum */
        assert_int_equal(bare.floor, p->floor);
        for (int v = 0; v < VIEW_COUNT; v++) {
            assert_int_equal(bare.n_peak_live[v], p->n_peak_live[v]);
            if (p->n_peak_live[v])
                assert_memory_equal(bare.peak_live[v], p->peak_live[v],
                                    p->n_peak_live[v] * sizeof(uint32_t));
        }
        pred_rank_free(&bare);
    }
    pt_free(&r);
}

/* The floor (floor.c's definition) through both ways of counting an op's views: one view per
 * buffer or an in-place collective's send = recv (counted without a scratch set), and two views
 * of one buffer (a copy inside a, merged first). float32, bytes:
 *   end: b live, needed [0, 1024).
 *   op 4, copy a[2048, 3072) -> b: a's bytes 1024 + b's needed 1024 = 2048; then a needs
 *        [2048, 3072), b nothing.
 *   op 3, in-place all_reduce of a[2048, 3072): already needed, 1024.
 *   op 2, copy a[0, 1024) -> a[2048, 3072): a's two views 2048 bytes (1024 of them needed);
 *        then a needs [0, 1024): 1024.
 * floor = max(1024 at the end, 2048, 1024, 2048) = 2048; the peak is 4096 + 1024 = 5120. */
static const char floor_views[] =
    "world: 2\n"
    "dtype: float32\n"
    "steps:\n"
    "  - alloc: {buf: a, count: 1024}\n"
    "  - alloc: {buf: b, count: 256}\n"
    "  - copy: {src: 'a[0:256]', dst: 'a[512:256]'}\n"
    "  - all_reduce: {buf: 'a[512:256]'}\n"
    "  - copy: {src: 'a[512:256]', dst: b}\n"
    "  - free: a\n";

static void floor_of_views(void **state) {
    pt_run r;
    load_clean_and_predict(&r, floor_views, 0);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(r.pred[k].floor, 2048);
        assert_int_equal(r.pred[k].peak[VIEW_REQUESTED], 5120);
        size_t at = 0;
        assert_int_equal(floor_rank(&r.plans[k], &at), 2048);
        assert_int_equal(at, 2);   /* of the tied ops 2 and 4, the earliest (the backward walk takes >=) */
    }
    pt_free(&r);
}

static void device_exact_after_churn(void **state) {
    pt_run r;
    /* 3 x 600 KiB share page 0; freeing b leaves a hole before c; d (500 KiB) goes into b's hole
     * by best fit, e (300 KiB) fits no hole (100 KiB, 248 KiB tail): a new page. 4 MiB peak at
     * op 5, exact (the rule held at every measured step, test_pages_fixtures): bounds 4 .. 4. */
    pt_load(&r,
            "world: 1\n"
            "steps:\n"
            "  - alloc: {buf: a, bytes: 600KiB}\n"
            "  - alloc: {buf: b, bytes: 600KiB}\n"
            "  - alloc: {buf: c, bytes: 600KiB}\n"
            "  - free: b\n"
            "  - alloc: {buf: d, bytes: 500KiB}\n"
            "  - alloc: {buf: e, bytes: 300KiB}\n",
            0);
    pt_predict(&r);
    const pred_rank *p = &r.pred[0];
    assert_int_equal(p->peak[VIEW_DEVICE], 4 * MiB);
    assert_int_equal(p->peak_op[VIEW_DEVICE], 5);
    assert_true(p->exact[VIEW_DEVICE]);
    assert_int_equal(p->peak_lo[VIEW_DEVICE], 4 * MiB);
    assert_int_equal(p->peak_hi[VIEW_DEVICE], 4 * MiB);
    assert_int_equal(p->peak[VIEW_REQUESTED], 2000 * KiB);   /* 600 x 2 + 500 + 300 */
    pt_free(&r);
}

static void expect_rows(void **state) {
    pt_run r;
    /* seed: naive RS+AG at world 4, 256 MiB / 576 MiB; the device line is wrong on purpose
     * (peak 2M instead of 2M + M/world): 4 failing rows */
    char full[2048];
    snprintf(full, sizeof full,
             "world: 4\n"
             "let: {M: 256MiB}\n"
             "expect:\n"
             "  requested: {steady: M, peak: 2*M + M/world}\n"
             "  device: {peak: 2*M}\n"
             "%s",
             strstr(pt_seed(PT_RS_AG_NAIVE), "steps:"));
    pt_load(&r, full, 0);
    pt_predict(&r);
    expect_row *rows = NULL;
    size_t n = 0;
    sched_params p = {0};
    int failures = expect_eval(r.s, 0, &p, 4, r.pred, &rows, &n, &r.d);
    assert_int_equal(failures, 4);
    assert_int_equal(n, 12);   /* 4 ranks × (requested steady, requested peak, device peak) */
    size_t passed = 0;
    for (size_t k = 0; k < n; k++) {
        passed += rows[k].pass;
        if (rows[k].view == VIEW_DEVICE) {
            assert_false(rows[k].pass);
            assert_int_equal(rows[k].expected, 512 * MiB);
            assert_int_equal(rows[k].got, 576 * MiB);
        }
    }
    assert_int_equal(passed, 8);
    free(rows);
    pt_free(&r);
}

static const char two_plans[] =
    "world: 2\n"
    "let: {M: 256MiB, q: M / 4 / world}\n"
    "expect:\n"
    "  requested: {steady: M, peak: M}\n"
    "plans:\n"
    "  direct:\n"
    "    steps:\n"
    "      - alloc: {buf: full, bytes: M}\n"
    "      - all_reduce: {buf: full}\n"
    "      - sync: device\n"
    "  chunked:\n"
    "    expect:\n"
    "      - {rank: 0, requested: {steady: M / world, peak: M}}\n"
    "    steps:\n"
    "      - alloc: {buf: full, bytes: M, chunks: world}\n"
    "      - reduce_scatter: {send: full, recv: 'full[rank*q : q]'}\n"
    "      - sync: device\n"
    "      - release: {buf: full, keep: rank}\n";

/* Evaluates plan k of two_plans; returns the rows (caller frees) and their number. */
static expect_row *eval_plan(int k, size_t *n, int *failures) {
    pt_run r;
    pt_load_plan(&r, two_plans, 0, k, NULL);
    pt_predict(&r);
    expect_row *rows = NULL;
    *n = 0;
    sched_params p = {0};
    *failures = expect_eval(r.s, k, &p, 2, r.pred, &rows, n, &r.d);
    pt_free(&r);
    return rows;
}

static void expect_plan_overrides_and_ranks(void **state) {
    size_t n;
    int failures;
    /* plan "direct" has no expectation of its own: the schedule's (AR: M / M) on both ranks */
    expect_row *rows = eval_plan(0, &n, &failures);
    assert_int_equal(failures, 0);
    assert_int_equal(n, 4);
    assert_int_equal(rows[3].rank, 1);
    assert_int_equal(rows[3].got, 256 * MiB);
    free(rows);
    /* plan "chunked" replaces it with its own, for rank 0 only: steady M/N = 128 MiB, peak M */
    rows = eval_plan(1, &n, &failures);
    assert_int_equal(failures, 0);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].rank, 0);
    assert_false(rows[0].is_peak);
    assert_int_equal(rows[0].got, 128 * MiB);
    assert_true(rows[1].is_peak);
    assert_int_equal(rows[1].expected, 256 * MiB);
    assert_true(rows[1].pass);
    free(rows);
}

static void expect_rank_outside_world(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 2\n"
            "expect:\n"
            "  - {rank: 2, requested: {peak: 1KiB}}\n"
            "steps:\n"
            "  - alloc: {buf: a, bytes: 1KiB}\n",
            0);
    pt_predict(&r);
    expect_row *rows = NULL;
    size_t n = 0;
    sched_params p = {0};
    assert_int_equal(expect_eval(r.s, 0, &p, 2, r.pred, &rows, &n, &r.d), -1);
    assert_string_equal(tu_first_error(&r.d),
                        "t.yaml:3:15: error: expectation for rank 2, outside the world (2 ranks)");
    free(rows);
    pt_free(&r);
}

static void expected_refused_alloc_counts_nothing(void **state) {
    pt_run r;
    /* a refused op inside expect_error changes no memory: only the 1 KiB alloc counts */
    pt_load(&r,
            "world: 2\n"
            "steps:\n"
            "  - alloc: {buf: a, count: 256}\n"
            "  - expect_error:\n"
            "      name: oob\n"
            "      error: out_of_bounds\n"
            "      step: {scale: {buf: 'a[200:100]', by: 2}}\n",
            0);
    pt_lint(&r);
    assert_int_equal(r.lint_errors, 0);
    pt_predict(&r);
    assert_int_equal(r.pred[1].peak[VIEW_REQUESTED], KiB);
    pt_free(&r);
}

static void empty_plan(void **state) {
    pt_run r;
    pt_load(&r, "world: 1\nsteps:\n  - sync: device\n", 0);
    pt_predict(&r);
    assert_int_equal(r.pred[0].peak[VIEW_REQUESTED], 0);
    assert_int_equal(r.pred[0].peak_op[VIEW_REQUESTED], SIZE_MAX);
    assert_int_equal(r.pred[0].n_peak_live[VIEW_REQUESTED], 0);
    pt_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_lifetimes),
        cmocka_unit_test(seed_world3_odd_pages),
        cmocka_unit_test(in_place_rs_then_ag),
        cmocka_unit_test(chunked_release),
        cmocka_unit_test(chunked_small_chunks_own_pages),
        cmocka_unit_test(padded_1003_int64),
        cmocka_unit_test(no_timeline_same_prediction),
        cmocka_unit_test(floor_of_views),
        cmocka_unit_test(device_exact_after_churn),
        cmocka_unit_test(expect_rows),
        cmocka_unit_test(expect_plan_overrides_and_ranks),
        cmocka_unit_test(expect_rank_outside_world),
        cmocka_unit_test(expected_refused_alloc_counts_nothing),
        cmocka_unit_test(empty_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
