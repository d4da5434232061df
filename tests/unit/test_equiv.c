/* SPDX-License-Identifier: MIT */
/* test_equiv.c — `memlife equiv` without a backend: rows 2-4 with the chapter's numbers, row 1
 * from the data flow, the checklist's causes with their steps, and the data comparison. The
 * schedules are the shipped ones in schedules/equiv/ (the tests run from the repository root), so
 * the examples stay what the tests say. */
#include "testutil.h"
#include "equiv/equiv.h"
#include "ir/data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MiB ((uint64_t)1 << 20)

typedef struct {
    series side[2];
    equiv_result r;
    ml_diags d;
} pair;

static int plan_index(const sched *s, const char *name) {
    for (uint32_t k = 0; k < s->n_plans; k++)
        if (!strcmp(s->plans[k].name, name))
            return (int)k;
    fail_msg("no plan '%s'", name);
    return -1;
}

/* Loads FILE:A and FILE:B (world from the file unless world > 0), picks the results and analyzes
 * them without data. */
static void load_pair(pair *t, const char *file, const char *a, const char *b, int world,
                      const char *set) {
    memset(t, 0, sizeof *t);
    ml_diags_init(&t->d);
    const char *sets[1] = {set};
    sched_params p = {.set = sets, .n_set = set ? 1 : 0, .world = world};
    for (int k = 0; k < 2; k++) {
        sched *s = sched_load_file(file, NULL, &t->d);
        assert_non_null(s);
        int w = sched_world(s, &p, &t->d);
        t->side[k].owns_sched = true;
        assert_int_equal(series_from_sched(s, plan_index(s, k ? b : a), w, &p, &t->side[k], &t->d), 0);
    }
    uint32_t result[2];
    assert_int_equal(equiv_pick_results(&t->side[0], &t->side[1], NULL, NULL, result, &t->d), 0);
    bool ok[2] = {true, true};
    const char *text[2] = {NULL, NULL};
    ml_mark marks[2] = {{0, 0}, {0, 0}};
    assert_int_equal(equiv_analyze(&t->side[0], &t->side[1], result, ok, text, marks, &t->r, &t->d), 0);
}

static void free_pair(pair *t) {
    equiv_result_free(&t->r);
    series_free(&t->side[0]);
    series_free(&t->side[1]);
    ml_diags_free(&t->d);
}

static const equiv_cause *only_cause(const equiv_result *r) {
    assert_int_equal(r->n_causes, 1);
    return &r->causes[0];
}

/* ---- Rows 2-4: the chapter's direct vs naive decomposed at 4 ranks ----------------------------*/

static void test_direct_vs_naive_rows(void **state) {
    pair t;
    load_pair(&t, "schedules/equiv/direct_vs_naive.yaml", "direct", "naive", 0, NULL);
    const equiv_result *r = &t.r;
    assert_int_equal(r->world, 4);
    for (int k = 0; k < 4; k++) {
        const equiv_facts *a = &r->facts[0][k], *b = &r->facts[1][k];
        /* seed: AllReduce 2(N-1) = 6 steps; RS + AG (N-1) + (N-1) = 3 + 3 */
        assert_int_equal(a->ring_steps, 6);
        assert_int_equal(b->ring_steps, 6);
        assert_int_equal(b->steps_by[COLL_REDUCE_SCATTER], 3);
        assert_int_equal(b->steps_by[COLL_ALL_GATHER], 3);
        /* seed: 2(N-1)/N * 256 MiB = 384 MiB; (N-1)/N * 256 MiB = 192 MiB each */
        assert_true(a->link_bytes == 384.0 * MiB);
        assert_true(b->bytes_by[COLL_REDUCE_SCATTER] == 192.0 * MiB);
        assert_true(b->bytes_by[COLL_ALL_GATHER] == 192.0 * MiB);
        /* seed (Nsight): 1 kernel per rank per iteration direct, 2 decomposed */
        assert_int_equal(a->n_calls, 1);
        assert_int_equal(b->n_calls, 2);
        assert_int_equal(a->syncs, 1);
        assert_int_equal(b->syncs, 1);
        assert_int_equal(a->n_intermediate, 0);
        assert_int_equal(b->n_intermediate, 2);          /* full, shard */
        assert_int_equal(b->intermediate_bytes, 320 * MiB);
        assert_string_equal(b->intermediates, "full, shard");
        /* seed lifetimes: AllReduce 256/256 MiB, naive RS+AG 256/576 MiB */
        assert_int_equal(t.side[0].pred[k].peak[VIEW_REQUESTED], 256 * MiB);
        assert_int_equal(t.side[1].pred[k].peak[VIEW_REQUESTED], 576 * MiB);
    }
    assert_int_equal(r->rows[EQ_OUTPUT].verdict, EQV_HOLDS);    /* by the data flow */
    assert_true(r->flow_known && r->flow_equal);
    assert_int_equal(r->rows[EQ_COMM].verdict, EQV_HOLDS);
    assert_int_equal(r->rows[EQ_STRUCTURE].verdict, EQV_FAILS);
    assert_int_equal(r->rows[EQ_STATE].verdict, EQV_FAILS);
    assert_string_equal(r->rows[EQ_COMM].b,
                        "reduce_scatter 3 + all_gather 3 = 6 steps, 192 MiB + 192 MiB = 384 MiB");
    assert_string_equal(r->rows[EQ_STRUCTURE].detail,
                        "public API calls 1 vs 2 per rank, kernels 1 vs 2 per rank (4 vs 8 over 4 "
                        "ranks); intermediate buffers 0 vs 2");
    assert_string_equal(r->rows[EQ_STATE].detail,
                        "requested peak 256 MiB vs 576 MiB; device peak 256 MiB vs 576 MiB on "
                        "every rank");
    assert_int_equal(r->n_causes, 0);
    assert_int_equal(equiv_exit_code(r), 1);
    free_pair(&t);
}

static void test_direct_vs_direct_all_hold(void **state) {
    pair t;
    load_pair(&t, "schedules/equiv/direct_vs_naive.yaml", "direct", "direct", 0, NULL);
    for (int k = 0; k < EQ_ROW_COUNT; k++)
        assert_int_equal(t.r.rows[k].verdict, EQV_HOLDS);
    assert_int_equal(equiv_exit_code(&t.r), 0);
    free_pair(&t);
}

/* Other worlds: 2(N-1) = (N-1) + (N-1) holds at every N; the bytes scale with (N-1)/N. */
static void test_comm_other_worlds(void **state) {
    static const struct { int world; int steps; uint64_t link; } want[] = {
        {2, 2, 256 * MiB}, {8, 14, 448 * MiB}};   /* 2*1/2*256, 2*7/8*256 MiB */
    for (size_t k = 0; k < ML_ARRAY_LEN(want); k++) {
        pair t;
        load_pair(&t, "schedules/equiv/direct_vs_naive.yaml", "direct", "naive", want[k].world, NULL);
        assert_int_equal(t.r.facts[0][0].ring_steps, want[k].steps);
        assert_int_equal(t.r.facts[1][0].ring_steps, want[k].steps);
        assert_true(t.r.facts[0][0].link_bytes == (double)want[k].link);
        assert_true(fabs(t.r.facts[1][0].link_bytes - (double)want[k].link) < 1);
        assert_int_equal(t.r.rows[EQ_COMM].verdict, EQV_HOLDS);
        free_pair(&t);
    }
}

/* A pair whose communication differs: AllReduce against ReduceScatter only (the seed's RS-only
 * lifetime): 6 vs 3 steps, 384 vs 192 MiB at world 4. */
static void test_comm_differs(void **state) {
    const char *yaml =
        "world: 4\nlet: {n: 64MiB}\nplans:\n"
        "  ar:\n    steps:\n      - alloc: {buf: full, count: n, init: rank_iota}\n"
        "      - all_reduce: {buf: full}\n"
        "  rs:\n    steps:\n      - alloc: {buf: full, count: n, init: rank_iota}\n"
        "      - alloc: {buf: shard, count: n / world}\n"
        "      - reduce_scatter: {send: full, recv: shard}\n      - free: full\n";
    /* A temp file, not one under build/: a sanitizer build (build-san/) may have no build/. */
    char path[] = "/tmp/memlife-equiv-rs-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(yaml, f);
    fclose(f);
    pair t;
    load_pair(&t, path, "ar", "rs", 0, NULL);
    unlink(path);
    assert_int_equal(t.r.rows[EQ_COMM].verdict, EQV_FAILS);
    assert_string_equal(t.r.rows[EQ_COMM].detail,
                        "rank 0: 6 vs 3 ring steps, 384 MiB vs 192 MiB over its link");
    /* The results differ in size: 64 Mi floats against a 16 Mi shard. */
    assert_int_equal(t.r.rows[EQ_OUTPUT].verdict, EQV_FAILS);
    free_pair(&t);
}

/* ---- Row 1 from the data flow: the checklist's causes with their steps -------------------------*/

typedef struct {
    const char *file, *a, *b;
    equiv_cause_kind kind;
    int side;
    unsigned line, col;
    const char *text;
} cause_case;

static const cause_case cause_cases[] = {
    {"schedules/equiv/contracts.yaml", "direct", "scaled_shard", CAUSE_SHARD_CHANGED, 1, 41, 9,
     "B scales the shard 'shard[0 : 5]' by 2 (scale at 41:9) between its phases (reduce_scatter "
     "at 40:9; all_gather at 42:9): the result is the transformed shard state, 2 x the sum"},
    {"schedules/equiv/contracts.yaml", "direct", "prescaled", CAUSE_SCALING, 1, 48, 9,
     "B scales the data by 2 (scale at 48:9, before the reduction), A by 1"},
    {"schedules/equiv/contracts.yaml", "direct", "reordered", CAUSE_GATHER_ORDER, 1, 66, 9,
     "B moves 'gathered[15 : 5]' to 'y[0 : 5]' (copy at 66:9): element 0 of rank 0's result "
     "holds element 0 of the reduced tensor in A, 15 in B"},
    {"schedules/equiv/contracts.yaml", "direct", "shard_owner", CAUSE_OWNER, 1, 73, 9,
     "B: rank 0 sends 'x[5 : 5]' (all_gather at 73:9), which is not the shard its "
     "reduce_scatter left it; element 0 of rank 0's result differs"},
    {"schedules/equiv/contracts.yaml", "direct", "max_op", CAUSE_OP, 1, 81, 9,
     "A reduces with sum (all_reduce at 24:9), B with max (reduce_scatter at 81:9); the "
     "all_gather after it cannot turn max back into the other op"},
    {"schedules/equiv/contracts.yaml", "direct", "int8", CAUSE_DTYPE, 1, 89, 9,
     "A's result is int64 (alloc y at 23:9), B's int8 (alloc y at 89:9)"},
    {"schedules/equiv/padding.yaml", "direct", "trim_too_much", CAUSE_TRIM, 1, 52, 9,
     "B's result keeps 1002 elements (copy at 52:9), A's 1003: the trim removes 1 more than the "
     "tail padding"},
    {"schedules/equiv/padding.yaml", "direct", "input_count", CAUSE_INPUT_COUNT, 1, 59, 9,
     "B: reduce_scatter at 59:9 reduces 1000 = shard 250 x world 4 of the 1003 input elements; "
     "element 1000 of rank 0's result is never written"},
    {"schedules/equiv/padding.yaml", "direct_max", "max_zero_pad", CAUSE_PADDING, 1, 76, 9,
     "B pads with const 0 (init at 76:9) and reduces it with max, whose identity is the int64 "
     "minimum: element 1003 of rank 0's result is the reduced padding"},
};

static void test_causes(void **state) {
    for (size_t k = 0; k < ML_ARRAY_LEN(cause_cases); k++) {
        const cause_case *c = &cause_cases[k];
        pair t;
        load_pair(&t, c->file, c->a, c->b, 0, NULL);
        const equiv_cause *got = only_cause(&t.r);
        assert_int_equal(got->kind, c->kind);
        assert_int_equal(got->side, c->side);
        assert_int_equal(got->mark.line, c->line);
        assert_int_equal(got->mark.col, c->col);
        assert_string_equal(got->text, c->text);
        assert_int_equal(t.r.rows[EQ_OUTPUT].verdict, EQV_FAILS);
        free_pair(&t);
    }
}

/* The correct decompositions are proved equal, padded and trimmed ones included. */
static void test_flow_proves_equal(void **state) {
    static const char *const pairs[][3] = {
        {"schedules/equiv/contracts.yaml", "direct", "decomposed"},
        {"schedules/equiv/padding.yaml", "direct", "padded"},
        {"schedules/equiv/random_float.yaml", "direct", "decomposed"},
    };
    for (size_t k = 0; k < ML_ARRAY_LEN(pairs); k++) {
        pair t;
        load_pair(&t, pairs[k][0], pairs[k][1], pairs[k][2], 0, NULL);
        assert_int_equal(t.r.n_causes, 0);
        assert_true(t.r.flow_known && t.r.flow_equal);
        assert_int_equal(t.r.rows[EQ_OUTPUT].verdict, EQV_HOLDS);
        free_pair(&t);
    }
}

/* Inputs never initialized: nothing to compare, row 1 undecided (seed lifetimes have no init). */
static void test_uninitialized_undecided(void **state) {
    pair t;
    memset(&t, 0, sizeof t);
    ml_diags_init(&t.d);
    sched_params p = {0};
    const char *files[2] = {"schedules/seed/01_allreduce_full.yaml",
                            "schedules/seed/03_rs_ag_naive.yaml"};
    for (int k = 0; k < 2; k++) {
        sched *s = sched_load_file(files[k], NULL, &t.d);
        assert_non_null(s);
        t.side[k].owns_sched = true;
        assert_int_equal(series_from_sched(s, 0, 4, &p, &t.side[k], &t.d), 0);
    }
    uint32_t result[2];
    /* One buffer live at the end of each: full and gathered. */
    assert_int_equal(equiv_pick_results(&t.side[0], &t.side[1], NULL, NULL, result, &t.d), 0);
    bool ok[2] = {true, true};
    const char *text[2] = {NULL, NULL};
    ml_mark marks[2] = {{0, 0}, {0, 0}};
    assert_int_equal(equiv_analyze(&t.side[0], &t.side[1], result, ok, text, marks, &t.r, &t.d), 0);
    assert_true(t.r.flow_uninit);
    assert_int_equal(t.r.rows[EQ_OUTPUT].verdict, EQV_UNKNOWN);
    assert_int_equal(t.r.n_causes, 0);
    free_pair(&t);
}

/* A freed result cannot be read after the run: the bench file's plans free everything. */
static void test_pick_results_errors(void **state) {
    ml_diags d;
    ml_diags_init(&d);
    series s[2];
    memset(s, 0, sizeof s);
    sched_params p = {0};
    for (int k = 0; k < 2; k++) {
        sched *sc = sched_load_file("schedules/seed/06_bench_direct_decomposed.yaml", NULL, &d);
        assert_non_null(sc);
        s[k].owns_sched = true;
        assert_int_equal(series_from_sched(sc, k, 4, &p, &s[k], &d), 0);
    }
    uint32_t result[2];
    assert_int_equal(equiv_pick_results(&s[0], &s[1], NULL, NULL, result, &d), -1);
    assert_string_equal(tu_first_error(&d),
                        "schedules/seed/06_bench_direct_decomposed.yaml: error: plan "
                        "'bench-direct-decomposed:direct' frees every buffer before it ends: keep "
                        "the result live, or name it with --result NAME[=NAME_B]");
    series_free(&s[0]);
    series_free(&s[1]);
    ml_diags_free(&d);
}

/* ---- Row 1 from data -------------------------------------------------------------------------*/

static void test_compare_data_integers(void **state) {
    /* seed: 600 + 4i; one wrong element */
    int64_t a[4] = {600, 604, 608, 612}, b[4] = {600, 604, 609, 612};
    equiv_data_rank d;
    equiv_compare_data(a, DT_INT64, 4, b, DT_INT64, 4, 0, 0, &d);
    assert_int_equal(d.compared, 4);
    assert_int_equal(d.differ_tol, 1);
    assert_int_equal(d.differ_bits, 1);
    assert_true(d.max_abs == 1.0);
    assert_string_equal(d.first, "element 2: 608 vs 609");
    /* int64 600 against int8 88 (600 mod 256): values differ though "the same" sum */
    int8_t c[1] = {88};
    equiv_compare_data(a, DT_INT64, 1, c, DT_INT8, 1, 0, 0, &d);
    assert_int_equal(d.differ_tol, 1);
    assert_string_equal(d.first, "element 0: 600 vs 88");
}

static void test_compare_data_floats(void **state) {
    /* Float addition is not associative: (0.1 + 0.1) + 0.7 = 0.899999976 but
     * 0.1 + (0.1 + 0.7) = 0.900000036 in float32, one ulp (5.96e-8) apart. */
    volatile float x = 0.1f, y = 0.1f, z = 0.7f;
    float a[2] = {(x + y) + z, 1.0f}, b[2] = {x + (y + z), 1.0f};
    assert_true(a[0] != b[0]);
    equiv_data_rank d;
    equiv_compare_data(a, DT_FLOAT32, 2, b, DT_FLOAT32, 2, 1.3e-6, 1e-5, &d);
    assert_int_equal(d.differ_bits, 1);
    assert_int_equal(d.differ_tol, 0);           /* one ulp: within torch's float32 tolerance */
    assert_true(d.max_abs == fabs((double)a[0] - (double)b[0]));
    assert_true(d.max_abs == 0x1p-24);            /* one float32 ulp in [0.5, 1) */
    assert_true(fabs(d.max_rel - d.max_abs / fabs((double)a[0])) < 1e-15);
    /* bitwise tolerance: the same element is outside */
    equiv_compare_data(a, DT_FLOAT32, 2, b, DT_FLOAT32, 2, 0, 0, &d);
    assert_int_equal(d.differ_tol, 1);
}

/* Row 1's verdict from per-rank data: within tolerance but not bitwise is "holds". */
static void test_judge_float_data(void **state) {
    pair t;
    load_pair(&t, "schedules/equiv/random_float.yaml", "direct", "decomposed", 2, "M=16");
    volatile float x = 0.1f, y = 0.1f, z = 0.7f;   /* one ulp apart, as above */
    float a[1] = {(x + y) + z}, b[1] = {x + (y + z)};
    t.r.data = calloc(2, sizeof *t.r.data);
    t.r.rtol = 1.3e-6;
    t.r.atol = 1e-5;
    equiv_compare_data(a, DT_FLOAT32, 1, b, DT_FLOAT32, 1, t.r.rtol, t.r.atol, &t.r.data[0]);
    equiv_compare_data(a, DT_FLOAT32, 1, a, DT_FLOAT32, 1, t.r.rtol, t.r.atol, &t.r.data[1]);
    equiv_judge_output(&t.r);
    assert_int_equal(t.r.rows[EQ_OUTPUT].verdict, EQV_HOLDS);
    assert_non_null(strstr(t.r.rows[EQ_OUTPUT].detail, "not bitwise equal: 1 of 2 elements differ"));
    assert_non_null(strstr(t.r.rows[EQ_OUTPUT].detail, "within rtol 1.3e-06, atol 1e-05"));
    /* Tighter than one ulp: outside. */
    t.r.rtol = 1e-9;
    t.r.atol = 0;
    equiv_compare_data(a, DT_FLOAT32, 1, b, DT_FLOAT32, 1, t.r.rtol, t.r.atol, &t.r.data[0]);
    equiv_judge_output(&t.r);
    assert_int_equal(t.r.rows[EQ_OUTPUT].verdict, EQV_FAILS);
    free_pair(&t);
}

/* ---- Row 3 against measured kernels (--kernels) ----------------------------------------------*/

static const char ar_kernel[] =
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
static const char rs_kernel[] =
    "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
static const char ag_kernel[] = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

/* What CUPTI gives one rank: count kernels of each name (NULL ends the list). */
static void measured(equiv_kernels_rank *k, const char *const *names, const uint64_t *counts) {
    memset(k, 0, sizeof *k);
    for (int j = 0; names[j]; j++) {
        snprintf(k->names[j].name, sizeof k->names[j].name, "%s", names[j]);
        k->names[j].count = counts[j];
        k->n_names++;
        k->total += counts[j];
        k->by_coll[names[j] == ar_kernel ? COLL_ALL_REDUCE
                   : names[j] == rs_kernel ? COLL_REDUCE_SCATTER : COLL_ALL_GATHER] += counts[j];
    }
}

static void measure_pair(pair *t, int extra_rank) {
    static const char *const direct[] = {ar_kernel, NULL}, *const naive[] = {rs_kernel, ag_kernel, NULL};
    for (int s = 0; s < 2; s++) {
        t->r.kernels[s] = calloc((size_t)t->r.world, sizeof *t->r.kernels[s]);
        assert_non_null(t->r.kernels[s]);
    }
    const char *const *b = t->side[1].plan_index == t->side[0].plan_index ? direct : naive;
    for (int k = 0; k < t->r.world; k++) {
        uint64_t one[] = {1, 1}, two[] = {2, 1};
        measured(&t->r.kernels[0][k], direct, one);
        measured(&t->r.kernels[1][k], b, k == extra_rank ? two : one);
    }
    equiv_judge_kernels(&t->r);
}

/* seed (Nsight, per iteration): 1 AllReduce kernel per rank direct, 1 ReduceScatter + 1
 * AllGather naive; measured = expected leaves row 3's verdict to the structure, which differs. */
static void test_kernels_measured_as_expected(void **state) {
    pair t;
    load_pair(&t, "schedules/equiv/direct_vs_naive.yaml", "direct", "naive", 2, "M=64MiB");
    measure_pair(&t, -1);
    assert_int_equal(t.r.rows[EQ_STRUCTURE].verdict, EQV_FAILS);
    assert_string_equal(t.r.rows[EQ_STRUCTURE].detail,
                        "public API calls 1 vs 2 per rank, kernels 1 vs 2 per rank (2 vs 4 over 2 "
                        "ranks); intermediate buffers 0 vs 2; kernels per rank: expected 1 vs 2, "
                        "measured 1 vs 2 (ncclDevKernel_AllReduce_Sum_f32_RING_LL ×1 | "
                        "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL ×1, "
                        "ncclDevKernel_AllGather_RING_LL ×1)");
    ml_str o = {0};
    assert_int_equal(equiv_write(&t.r, FMT_JSON, NULL, &o), 0);
    assert_non_null(strstr(o.s, "\"kernels_measured\": {\n          \"collective\": 2,"));
    assert_non_null(strstr(o.s, "\"kernels\": {\n    \"measured\": true,\n    \"note\": null"));
    ml_str_free(&o);
    free_pair(&t);

    /* Direct against itself: all four hold, the kernels too. */
    load_pair(&t, "schedules/equiv/direct_vs_naive.yaml", "direct", "direct", 2, "M=64MiB");
    measure_pair(&t, -1);
    assert_int_equal(t.r.rows[EQ_STRUCTURE].verdict, EQV_HOLDS);
    assert_int_equal(equiv_exit_code(&t.r), 0);
    free_pair(&t);
}

/* One AllReduce kernel more on rank 1 than its one call: row 3 fails though the plans match. */
static void test_kernels_measured_differ(void **state) {
    pair t;
    load_pair(&t, "schedules/equiv/direct_vs_naive.yaml", "direct", "direct", 2, "M=64MiB");
    measure_pair(&t, 1);
    assert_int_equal(t.r.rows[EQ_STRUCTURE].verdict, EQV_FAILS);
    assert_non_null(strstr(t.r.rows[EQ_STRUCTURE].detail,
                           "; kernels on rank 1: expected 1 vs 1, measured 1 vs 2 "
                           "(ncclDevKernel_AllReduce_Sum_f32_RING_LL ×1 | "
                           "ncclDevKernel_AllReduce_Sum_f32_RING_LL ×2): measured differs from "
                           "expected (B all_reduce: 1 call, 1 kernel expected, 2 kernels)"));
    assert_int_equal(equiv_exit_code(&t.r), 1);
    free_pair(&t);
}

/* World 1: NCCL launches no kernel for a one-rank collective (CUPTI on H200, NCCL 2.28.3: a
 * one-rank AllReduce, ReduceScatter and AllGather each measured 0 kernels), so the expectation is
 * 0 vs 0 for 1 vs 2 calls, and 0 measured is not a mismatch; one kernel would be. */
static void test_kernels_world1_none(void **state) {
    pair t;
    load_pair(&t, "schedules/equiv/direct_vs_naive.yaml", "direct", "naive", 1, "M=64MiB");
    for (int s = 0; s < 2; s++) {
        t.r.kernels[s] = calloc(1, sizeof *t.r.kernels[s]);
        assert_non_null(t.r.kernels[s]);
    }
    equiv_judge_kernels(&t.r);
    assert_int_equal(equiv_kernels_expected(&t.r.facts[0][0], 1, COLL_COUNT), 0);
    assert_int_equal(equiv_kernels_expected(&t.r.facts[1][0], 1, COLL_COUNT), 0);
    assert_int_equal(equiv_kernels_expected(&t.r.facts[1][0], 2, COLL_COUNT), 2);
    assert_non_null(strstr(t.r.rows[EQ_STRUCTURE].detail,
                           "; kernels per rank: expected 0 vs 0, measured 0 vs 0 (no kernels | "
                           "no kernels)"));
    assert_null(strstr(t.r.rows[EQ_STRUCTURE].detail, "measured differs"));
    ml_str o = {0};
    assert_int_equal(equiv_write(&t.r, FMT_JSON, NULL, &o), 0);
    assert_non_null(strstr(o.s, "\"kernels_expected\": 0"));
    ml_str_free(&o);
    /* One AllReduce kernel where none is expected is a mismatch. */
    t.r.kernels[0][0].by_coll[COLL_ALL_REDUCE] = 1;
    t.r.kernels[0][0].total = 1;
    equiv_judge_kernels(&t.r);
    assert_non_null(strstr(t.r.rows[EQ_STRUCTURE].detail,
                           "(A all_reduce: 1 call, 0 kernels expected, 1 kernel)"));
    free_pair(&t);
}

/* Not measured: the note is in the report, row 3 as without --kernels, JSON nulls. */
static void test_kernels_not_measured(void **state) {
    pair t;
    load_pair(&t, "schedules/equiv/direct_vs_naive.yaml", "direct", "direct", 2, "M=64MiB");
    snprintf(t.r.kernels_note, sizeof t.r.kernels_note, "kernel evidence needs the cuda backend "
             "with CUPTI: backend 'host' runs no GPU kernels");
    equiv_judge_kernels(&t.r);
    assert_int_equal(t.r.rows[EQ_STRUCTURE].verdict, EQV_HOLDS);
    ml_str o = {0};
    assert_int_equal(equiv_write(&t.r, FMT_TABLE, NULL, &o), 0);
    assert_non_null(strstr(o.s, "\n--kernels: kernel evidence needs the cuda backend with CUPTI: "
                                "backend 'host' runs no GPU kernels\nall four hold\n"));
    ml_str_free(&o);
    assert_int_equal(equiv_write(&t.r, FMT_JSON, NULL, &o), 0);
    assert_non_null(strstr(o.s, "\"kernels_measured\": null"));
    assert_non_null(strstr(o.s, "\"measured\": false,\n    \"note\": \"kernel evidence needs"));
    ml_str_free(&o);
    free_pair(&t);
}

/* The writers: JSON keys, Markdown table, exit line. */
static void test_writers(void **state) {
    pair t;
    load_pair(&t, "schedules/equiv/contracts.yaml", "direct", "max_op", 0, NULL);
    ml_str o = {0};
    assert_int_equal(equiv_write(&t.r, FMT_JSON, "memlife=0.1.0\ncommit=abc\nworld=4\n", &o), 0);
    assert_non_null(strstr(o.s, "\"code\": \"reduction_op\""));
    assert_non_null(strstr(o.s, "\"commit\": \"abc\""));
    assert_non_null(strstr(o.s, "\"api_calls\": 2"));
    ml_str_free(&o);
    assert_int_equal(equiv_write(&t.r, FMT_MD, NULL, &o), 0);
    assert_non_null(strstr(o.s, "| 1 output semantics | does not hold |"));
    assert_non_null(strstr(o.s, "- schedules/equiv/contracts.yaml:81:9: reduction op differs: "));
    ml_str_free(&o);
    assert_int_equal(equiv_write(&t.r, FMT_CSV, NULL, &o), -1);
    ml_str_free(&o);
    free_pair(&t);
}

/* ---- Communicators: tests/cli/comms/equiv_mesh_2d.yaml, dp 2 x tp 2 at world 4 -------------*/

#define MESH "tests/cli/comms/equiv_mesh_2d.yaml"

/* RS on tp, AR on dp, AG on tp: the world's sum in stages. Row 1 holds by the data flow (the
 * halves reduced over {0,1} and {2,3} combine over dp into every rank's). Row 2 on every rank:
 * the world's AllReduce 2(4-1) = 6 ring steps and 2(3)/4 x 64 B = 96 B; in stages the group's
 * size is 2: RS (2-1) = 1 step, 1/2 x 64 B = 32 B; AR of the 8-element shard 2(2-1) = 2 steps,
 * 2(1)/2 x 32 B = 32 B; AG 1 step, 1/2 x 64 B = 32 B: 4 steps, 96 B. */
static void test_mesh_hierarchical_holds(void **state) {
    pair t;
    load_pair(&t, MESH, "direct", "hierarchical", 0, NULL);
    const equiv_result *r = &t.r;
    assert_int_equal(r->rows[EQ_OUTPUT].verdict, EQV_HOLDS);
    assert_true(r->flow_known && r->flow_equal);
    for (int k = 0; k < 4; k++) {
        const equiv_facts *a = &r->facts[0][k], *b = &r->facts[1][k];
        assert_int_equal(a->ring_steps, 6);
        assert_true(a->link_bytes == 96.0);
        assert_int_equal(b->ring_steps, 4);
        assert_int_equal(b->steps_by[COLL_REDUCE_SCATTER], 1);
        assert_int_equal(b->steps_by[COLL_ALL_REDUCE], 2);
        assert_int_equal(b->steps_by[COLL_ALL_GATHER], 1);
        assert_true(b->bytes_by[COLL_REDUCE_SCATTER] == 32.0);
        assert_true(b->bytes_by[COLL_ALL_REDUCE] == 32.0);
        assert_true(b->bytes_by[COLL_ALL_GATHER] == 32.0);
    }
    assert_int_equal(r->rows[EQ_COMM].verdict, EQV_FAILS);   /* 6 vs 4 steps */
    assert_int_equal(r->n_causes, 0);
    free_pair(&t);
}

/* AR on tp, then AR on dp: the sums over {0,1} and {2,3} are disjoint, their sum is every
 * rank's: row 1 holds. */
static void test_mesh_staged_holds(void **state) {
    pair t;
    load_pair(&t, MESH, "direct", "staged", 0, NULL);
    assert_int_equal(t.r.rows[EQ_OUTPUT].verdict, EQV_HOLDS);
    assert_true(t.r.flow_known && t.r.flow_equal);
    free_pair(&t);
}

/* AR on tp only: rank 0's result is the sum over its group {0, 1}, not over every rank. */
static void test_mesh_group_reduction_differs(void **state) {
    pair t;
    load_pair(&t, MESH, "direct", "tp_only", 0, NULL);
    assert_int_equal(t.r.rows[EQ_OUTPUT].verdict, EQV_FAILS);
    const equiv_cause *c = only_cause(&t.r);
    assert_int_equal(c->rank, 0);
    assert_string_equal(c->text, "element 0 of rank 0's result is reduced over every rank in A, "
                                 "over ranks 0, 1 in B (all_reduce at 41:9)");
    free_pair(&t);
}

/* A second AR over the same group reduces a reduction over the same ranks again: not a value
 * the flow models, so row 1 is undecided, never claimed equal. */
static void test_mesh_same_group_twice_undecided(void **state) {
    pair t;
    load_pair(&t, MESH, "direct", "tp_twice", 0, NULL);
    assert_int_equal(t.r.rows[EQ_OUTPUT].verdict, EQV_UNKNOWN);
    assert_false(t.r.flow_known);
    free_pair(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_vs_naive_rows),
        cmocka_unit_test(test_direct_vs_direct_all_hold),
        cmocka_unit_test(test_comm_other_worlds),
        cmocka_unit_test(test_comm_differs),
        cmocka_unit_test(test_causes),
        cmocka_unit_test(test_flow_proves_equal),
        cmocka_unit_test(test_uninitialized_undecided),
        cmocka_unit_test(test_pick_results_errors),
        cmocka_unit_test(test_compare_data_integers),
        cmocka_unit_test(test_compare_data_floats),
        cmocka_unit_test(test_judge_float_data),
        cmocka_unit_test(test_kernels_measured_as_expected),
        cmocka_unit_test(test_kernels_measured_differ),
        cmocka_unit_test(test_kernels_world1_none),
        cmocka_unit_test(test_kernels_not_measured),
        cmocka_unit_test(test_writers),
        cmocka_unit_test(test_mesh_hierarchical_holds),
        cmocka_unit_test(test_mesh_staged_holds),
        cmocka_unit_test(test_mesh_group_reduction_differs),
        cmocka_unit_test(test_mesh_same_group_twice_undecided),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
