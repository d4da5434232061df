/* SPDX-License-Identifier: MIT */
/* test_data.c — the runtime's data side (runtime/data.c): init patterns, reduction identities of
 * every dtype, the reduction arithmetic, shard rolls, reduce-over-ranks closed forms, comparison
 * with and without float tolerance, and the 16-bit float conversions. */
#include "testutil.h"
#include "ir/data.h"

#include <math.h>
#include <stdlib.h>

/* Slots for (world, rank) with no lets. */
static void slots_for(int64_t *slots, int world, int rank) {
    slots[EXPR_SLOT_WORLD] = world;
    slots[EXPR_SLOT_RANK] = rank;
    slots[EXPR_SLOT_INDEX] = 0;
}

static int resolve(void *ctx, const char *name, size_t len) {
    if (len == 1 && name[0] == 'i')
        return EXPR_SLOT_INDEX;
    if (len == 4 && !strncmp(name, "rank", 4))
        return EXPR_SLOT_RANK;
    if (len == 5 && !strncmp(name, "world", 5))
        return EXPR_SLOT_WORLD;
    return -1;
}

static expr *parse(ml_arena *a, const char *text) {
    expr_error ee;
    expr *e = expr_parse(a, text, strlen(text), resolve, NULL, &ee);
    assert_non_null(e);
    return e;
}

/* seed: x_i = 100*rank + i, the chapter's pattern; rank 3 starts at 300. */
static void test_rank_iota(void **state) {
    int64_t slots[3], out[5];
    char err[200];
    slots_for(slots, 4, 3);
    sched_init init = {.kind = INIT_RANK_IOTA};
    assert_int_equal(data_fill(out, DT_INT64, 5, 0, &init, slots, err, sizeof err), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(out[i], 300 + i);
    /* From element 10 on (a block in the middle of a buffer). */
    assert_int_equal(data_fill(out, DT_INT64, 2, 10, &init, slots, err, sizeof err), 0);
    assert_int_equal(out[0], 310);
    /* int8 stores modulo 256: 300 -> 44. */
    int8_t small[1];
    assert_int_equal(data_fill(small, DT_INT8, 1, 0, &init, slots, err, sizeof err), 0);
    assert_int_equal(small[0], 44);
    float f[1];
    assert_int_equal(data_fill(f, DT_FLOAT32, 1, 7, &init, slots, err, sizeof err), 0);
    assert_true(f[0] == 307.0f);
}

static void test_expr_and_const(void **state) {
    ml_arena *a = ml_arena_new();
    int64_t slots[3], out[4];
    char err[200];
    slots_for(slots, 4, 2);
    sched_init e = {.kind = INIT_EXPR, .value = parse(a, "1 + (rank + i) % 3")};
    assert_int_equal(data_fill(out, DT_INT64, 4, 0, &e, slots, err, sizeof err), 0);
    assert_int_equal(out[0], 3);   /* 1 + (2+0)%3 */
    assert_int_equal(out[1], 1);
    assert_int_equal(out[3], 3);   /* 1 + (2+3)%3 */
    sched_init c = {.kind = INIT_CONST, .value = parse(a, "7 * world")};
    assert_int_equal(data_fill(out, DT_INT64, 4, 0, &c, slots, err, sizeof err), 0);
    assert_int_equal(out[3], 28);
    /* A failing expression names itself and the element. */
    sched_init bad = {.kind = INIT_EXPR, .value = parse(a, "10 / (i - 2)")};
    assert_int_equal(data_fill(out, DT_INT64, 4, 0, &bad, slots, err, sizeof err), -1);
    assert_non_null(strstr(err, "'10 / (i - 2)' at element 2"));
    ml_arena_free(a);
}

/* Same (seed, rank, i) gives the same value; integers in [0, 1000), floats in [-1, 1). */
static void test_random(void **state) {
    ml_arena *a = ml_arena_new();
    int64_t slots[3], x[64], y[64];
    double f[64];
    char err[200];
    slots_for(slots, 4, 1);
    sched_init r = {.kind = INIT_RANDOM, .value = parse(a, "42")};
    assert_int_equal(data_fill(x, DT_INT64, 64, 0, &r, slots, err, sizeof err), 0);
    assert_int_equal(data_fill(y, DT_INT64, 64, 0, &r, slots, err, sizeof err), 0);
    assert_memory_equal(x, y, sizeof x);
    bool differ = false;
    for (int i = 0; i < 64; i++) {
        assert_true(x[i] >= 0 && x[i] < 1000);
        differ |= x[i] != x[0];
    }
    assert_true(differ);
    slots_for(slots, 4, 2);
    assert_int_equal(data_fill(y, DT_INT64, 64, 0, &r, slots, err, sizeof err), 0);
    assert_memory_not_equal(x, y, sizeof x);           /* another rank, other values */
    assert_int_equal(data_fill(f, DT_FLOAT64, 64, 0, &r, slots, err, sizeof err), 0);
    for (int i = 0; i < 64; i++)
        assert_true(f[i] >= -1.0 && f[i] < 1.0);
    ml_arena_free(a);
}

/* Identities: SUM 0, PROD 1, MAX the dtype's minimum, MIN its maximum, for every dtype. */
static void test_identities(void **state) {
    struct {
        ml_dtype dt;
        double max_id, min_id;   /* as values */
    } rows[] = {
        {DT_INT8, -128, 127},
        {DT_UINT8, 0, 255},
        {DT_INT32, -2147483648.0, 2147483647.0},
        {DT_UINT32, 0, 4294967295.0},
        {DT_FLOAT16, -INFINITY, INFINITY},
        {DT_BFLOAT16, -INFINITY, INFINITY},
        {DT_FLOAT32, -INFINITY, INFINITY},
        {DT_FLOAT64, -INFINITY, INFINITY},
    };
    for (size_t k = 0; k < ML_ARRAY_LEN(rows); k++) {
        unsigned char e[8];
        char text[64], want[64];
        ml_dtype dt = rows[k].dt;
        data_identity(dt, RED_SUM, e);
        data_format(dt, e, text, sizeof text);
        assert_string_equal(text, "0");
        data_identity(dt, RED_PROD, e);
        data_format(dt, e, text, sizeof text);
        assert_string_equal(text, "1");
        data_identity(dt, RED_MAX, e);
        data_format(dt, e, text, sizeof text);
        snprintf(want, sizeof want, ml_dtypes[dt].kind == DTK_FLOAT ? "-inf" : "%.0f",
                 rows[k].max_id);
        assert_string_equal(text, want);
        data_identity(dt, RED_MIN, e);
        data_format(dt, e, text, sizeof text);
        snprintf(want, sizeof want, ml_dtypes[dt].kind == DTK_FLOAT ? "inf" : "%.0f",
                 rows[k].min_id);
        assert_string_equal(text, want);
    }
    /* The 64-bit integers exactly. */
    int64_t i64;
    uint64_t u64;
    data_identity(DT_INT64, RED_MAX, &i64);
    assert_true(i64 == INT64_MIN);
    data_identity(DT_INT64, RED_MIN, &i64);
    assert_true(i64 == INT64_MAX);
    data_identity(DT_UINT64, RED_MAX, &u64);
    assert_true(u64 == 0);
    data_identity(DT_UINT64, RED_MIN, &u64);
    assert_true(u64 == UINT64_MAX);
    /* Padding with the identity leaves every op's result unchanged. */
    for (int op = 0; op < RED_COUNT; op++) {
        int64_t acc[2] = {-5, 9}, pad[2];
        data_identity(DT_INT64, (ml_redop)op, &pad[0]);
        pad[1] = pad[0];
        data_combine(DT_INT64, (ml_redop)op, acc, pad, 2);
        assert_int_equal(acc[0], -5);
        assert_int_equal(acc[1], 9);
    }
}

/* seed: sum over 4 ranks of (100 r + i) = 600 + 4i for 20 int64 elements; max = 300 + i. */
static void test_reduced_closed_form(void **state) {
    int64_t s0[3], s1[3], s2[3], s3[3], out[20];
    int64_t *const slots[4] = {s0, s1, s2, s3};
    for (int r = 0; r < 4; r++)
        slots_for(slots[r], 4, r);
    char err[200];
    sched_init iota = {.kind = INIT_RANK_IOTA};
    assert_int_equal(data_fill_reduced(out, DT_INT64, 20, 0, &iota, RED_SUM, 4, slots, err,
                                       sizeof err), 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(out[i], 600 + 4 * i);
    assert_int_equal(data_fill_reduced(out, DT_INT64, 20, 0, &iota, RED_MAX, 4, slots, err,
                                       sizeof err), 0);
    assert_int_equal(out[0], 300);
    assert_int_equal(data_fill_reduced(out, DT_INT64, 20, 0, &iota, RED_MIN, 4, slots, err,
                                       sizeof err), 0);
    assert_int_equal(out[19], 19);
    /* PROD of (100r + 1) over r < 4: 1 * 101 * 201 * 301 = 6110601. */
    assert_int_equal(data_fill_reduced(out, DT_INT64, 2, 0, &iota, RED_PROD, 4, slots, err,
                                       sizeof err), 0);
    assert_int_equal(out[1], 6110601);
    /* uint8 wraps like the hardware: 600 mod 256 = 88. */
    uint8_t small[1];
    assert_int_equal(data_fill_reduced(small, DT_UINT8, 1, 0, &iota, RED_SUM, 4, slots, err,
                                       sizeof err), 0);
    assert_int_equal(small[0], (uint8_t)(0 + 100 + 200 + 300));
}

/* torch: x.reshape(4, -1).roll(1, dims=0): shard j of the result is shard j-1 of x. */
static void test_roll_shards(void **state) {
    int64_t x[8] = {0, 1, 10, 11, 20, 21, 30, 31}, y[8];
    char err[200];
    assert_int_equal(data_roll_shards(y, x, 8, 8, 4, 1, err, sizeof err), 0);
    int64_t want1[8] = {30, 31, 0, 1, 10, 11, 20, 21};
    assert_memory_equal(y, want1, sizeof y);
    assert_int_equal(data_roll_shards(y, x, 8, 8, 4, -1, err, sizeof err), 0);
    int64_t want_m1[8] = {10, 11, 20, 21, 30, 31, 0, 1};
    assert_memory_equal(y, want_m1, sizeof y);
    assert_int_equal(data_roll_shards(y, x, 8, 8, 4, 4, err, sizeof err), 0);   /* full turn */
    assert_memory_equal(y, x, sizeof y);
    assert_int_equal(data_roll_source(8, 4, 1, 0), 6);
    assert_int_equal(data_roll_source(8, 4, 1, 7), 5);
    /* seed: 1003 elements do not split into 4 shards. */
    assert_int_equal(data_roll_shards(y, x, 1003, 8, 4, 1, err, sizeof err), -1);
    assert_string_equal(err, "roll_shards: 1003 elements do not split into 4 equal shards");
}

static void test_compare_ints(void **state) {
    int64_t a[4] = {600, 604, 608, 612}, b[4] = {600, 604, 608, 612}, c[4] = {660, 664, 668, 612};
    data_diff d;
    char text[240];
    data_diff_init(&d);
    data_compare(a, DT_INT64, b, DT_INT64, 4, 0, 0, 0, &d);
    assert_true(data_check_verdict(true, &d, 0, 0, text, sizeof text));
    assert_string_equal(text, "equal: 4 of 4 elements");
    assert_false(data_check_verdict(false, &d, 0, 0, text, sizeof text));
    assert_string_equal(text, "equal, but required to differ: 4 of 4 elements");
    data_diff_init(&d);
    data_compare(c, DT_INT64, a, DT_INT64, 4, 0, 0, 0, &d);
    assert_true(data_check_verdict(false, &d, 0, 0, text, sizeof text));
    assert_string_equal(text, "not equal as required: first difference at element 0: 660 vs 600; "
                              "3 of 4 elements differ");
    assert_false(data_check_verdict(true, &d, 0, 0, text, sizeof text));
    /* Blocks accumulate: the first difference keeps its global index. */
    data_diff_init(&d);
    data_compare(a, DT_INT64, b, DT_INT64, 2, 0, 0, 0, &d);
    data_compare(a + 2, DT_INT64, c + 2, DT_INT64, 2, 2, 0, 0, &d);
    assert_int_equal(d.first, 2);
    assert_int_equal(d.differ, 1);
    assert_int_equal(d.compared, 4);
    /* Mixed kinds compare by value: int64 -1 never equals uint64 2^64-1. */
    int64_t neg = -1;
    uint64_t big = UINT64_MAX;
    data_diff_init(&d);
    data_compare(&neg, DT_INT64, &big, DT_UINT64, 1, 0, 0, 0, &d);
    assert_int_equal(d.differ, 1);
}

/* Floats: bitwise without tolerance (even -0.0 vs 0.0 differ), |a-b| <= atol + rtol|b| with. */
static void test_compare_floats(void **state) {
    float a[3] = {1.0f, 0.0f, 100.0f}, b[3] = {1.0f + 1e-6f, -0.0f, 100.0f};
    data_diff d;
    char text[240];
    data_diff_init(&d);
    data_compare(a, DT_FLOAT32, b, DT_FLOAT32, 3, 0, 0, 0, &d);
    assert_int_equal(d.differ, 2);
    data_diff_init(&d);
    data_compare(a, DT_FLOAT32, b, DT_FLOAT32, 3, 0, 1e-5, 1e-8, &d);
    assert_int_equal(d.differ, 0);
    assert_true(data_check_verdict(true, &d, 1e-5, 1e-8, text, sizeof text));
    assert_string_equal(text, "equal within rtol 1e-05, atol 1e-08: 3 of 3 elements");
    float n[1] = {NAN}, inf[1] = {INFINITY};
    data_diff_init(&d);
    data_compare(n, DT_FLOAT32, n, DT_FLOAT32, 1, 0, 1e-5, 1e-8, &d);
    assert_int_equal(d.differ, 1);          /* NaN is within no tolerance */
    data_diff_init(&d);
    data_compare(inf, DT_FLOAT32, inf, DT_FLOAT32, 1, 0, 1e-5, 1e-8, &d);
    assert_int_equal(d.differ, 0);
}

static void test_half_conversions(void **state) {
    assert_int_equal(data_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(data_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(data_f32_to_f16(65504.0f), 0x7bff);       /* largest half */
    assert_int_equal(data_f32_to_f16(65520.0f), 0x7c00);       /* rounds to infinity */
    assert_int_equal(data_f32_to_f16(5.9604645e-08f), 0x0001); /* smallest subnormal */
    assert_int_equal(data_f32_to_f16(2049.0f), 0x6800);        /* tie to even: 2048 */
    assert_true(data_f16_to_f32(0x3555) == 0.333251953125f);
    assert_true(data_f16_to_f32(0x0001) == 5.9604645e-08f);
    assert_true(isnan(data_f16_to_f32(data_f32_to_f16(NAN))));
    assert_int_equal(data_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(data_f32_to_bf16(1.00390625f), 0x3f80);   /* tie to even */
    assert_true(data_bf16_to_f32(0x4049) == 3.140625f);
    for (int v = -2048; v <= 2048; v++)                         /* integers exact in half */
        assert_true(data_f16_to_f32(data_f32_to_f16((float)v)) == (float)v);
}

static void test_scale(void **state) {
    int64_t x[3] = {600, -4, 7};
    data_scale(DT_INT64, x, 3, 3, 1);
    assert_int_equal(x[0], 1800);
    assert_int_equal(x[1], -12);
    int8_t y[1] = {100};
    data_scale(DT_INT8, y, 1, 2, 1);
    assert_int_equal(y[0], -56);                /* 200 wraps */
    float f[1] = {1.5f};
    data_scale(DT_FLOAT32, f, 1, -2, 1);
    assert_true(f[0] == -3.0f);
    /* fractions: 600 * 1/4 = 150; -4 * 1/4 = -1; 7 * 1/4 = 1.75 truncates to 1; -7/4 -> -1 */
    int64_t z[4] = {600, -4, 7, -7};
    data_scale(DT_INT64, z, 4, 1, 4);
    assert_int_equal(z[0], 150);
    assert_int_equal(z[1], -1);
    assert_int_equal(z[2], 1);
    assert_int_equal(z[3], -1);
    /* float32 by 1/3: the factor rounds to float first (0x3eaaaaab), then 3 * it */
    float g[1] = {3.0f};
    data_scale(DT_FLOAT32, g, 1, 1, 3);
    assert_true(g[0] == 3.0f * (float)(1.0 / 3.0));
    /* bfloat16 by 25/100 (`by: 0.25`): 6 * 0.25 = 1.5 exactly */
    uint16_t b[1] = {data_f32_to_bf16(6.0f)};
    data_scale(DT_BFLOAT16, b, 1, 25, 100);
    assert_true(data_bf16_to_f32(b[0]) == 1.5f);
}

/* ncclAvg as NCCL computes it: integers sum (wrapping) then divide truncating toward zero;
 * floats multiply by 1/world in the dtype, then sum. Values worked by hand below. */
static void test_avg(void **state) {
    /* int32 at world 4: 7 + 0 + 0 + 0 = 7 -> 1 (7/4 truncates); -7 -> -1 (toward zero, not -2) */
    int32_t acc[2] = {7, -7}, zero[2] = {0, 0};
    for (int r = 1; r < 4; r++)
        data_combine(DT_INT32, RED_AVG, acc, zero, 2);
    data_avg_postdiv(DT_INT32, acc, 2, 4);
    assert_int_equal(acc[0], 1);
    assert_int_equal(acc[1], -1);
    /* uint8 at world 2: 200 + 100 = 300 wraps to 44 before the divide (NCCL sums in the type): 22 */
    uint8_t u[1] = {200}, v[1] = {100};
    data_combine(DT_UINT8, RED_AVG, u, v, 1);
    data_avg_postdiv(DT_UINT8, u, 1, 2);
    assert_int_equal(u[0], 22);
    /* float32 at world 3: 1/3 rounds to 0x3eaaaaab; 3 * that, each product rounded, then summed */
    float f[1] = {3.0f}, g[1] = {3.0f};
    data_avg_premul(DT_FLOAT32, f, 1, 3);
    data_avg_premul(DT_FLOAT32, g, 1, 3);
    assert_true(f[0] == 3.0f * (1.0f / 3.0f));
    data_combine(DT_FLOAT32, RED_AVG, f, g, 1);
    assert_true(f[0] == 3.0f * (1.0f / 3.0f) + 3.0f * (1.0f / 3.0f));
    /* bfloat16 at world 4: 1/4 is exact; 6 * 0.25 = 1.5 exactly */
    uint16_t b[1] = {data_f32_to_bf16(6.0f)};
    data_avg_premul(DT_BFLOAT16, b, 1, 4);
    assert_true(data_bf16_to_f32(b[0]) == 1.5f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_iota),         cmocka_unit_test(test_expr_and_const),
        cmocka_unit_test(test_random),            cmocka_unit_test(test_identities),
        cmocka_unit_test(test_reduced_closed_form), cmocka_unit_test(test_roll_shards),
        cmocka_unit_test(test_compare_ints),      cmocka_unit_test(test_compare_floats),
        cmocka_unit_test(test_half_conversions),  cmocka_unit_test(test_scale),
        cmocka_unit_test(test_avg),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
