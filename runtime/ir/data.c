/* SPDX-License-Identifier: MIT */
/* data.c — init patterns, identities, reduction arithmetic, shard rolls, comparison (data.h).
 *
 * Elements are handled through three small per-dtype accessors (store an int64, store a double,
 * load as a value) so that one loop per operation serves every dtype; the cost is a switch per
 * element, which is far below the cost of moving the data through a collective. */
#include "ir/data.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- float16 / bfloat16 -------------------------------------------------------------------- */

uint16_t data_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xffu)                                   /* inf or NaN (NaN keeps a mantissa bit) */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00u);              /* overflow to infinity */
    if (e <= 0) {                                       /* subnormal half, or zero */
        if (e < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
        half++;                                         /* may carry into the exponent: correct */
    return (uint16_t)half;
}

float data_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1f) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (!mant) {
            x = sign;
        } else {                                        /* normalize the subnormal */
            int e = -1;
            do {
                mant <<= 1;
                e++;
            } while (!(mant & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t data_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
        return (uint16_t)((x >> 16) | 0x40u);           /* quiet NaN */
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)((x + rounding) >> 16);
}

float data_bf16_to_f32(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ---- Element accessors --------------------------------------------------------------------- */

/* A loaded element: integers exactly (i for signed, u for unsigned), floats as double (every
 * value of every float dtype here is exact in a double). */
typedef struct {
    ml_dtype_kind kind;
    int64_t i;
    uint64_t u;
    double f;
} elem_value;

static elem_value load(ml_dtype dt, const void *base, uint64_t k) {
    elem_value v = {.kind = ml_dtypes[dt].kind};
    const unsigned char *p = (const unsigned char *)base + k * ml_dtypes[dt].size;
    switch (dt) {
    case DT_INT8: { int8_t x; memcpy(&x, p, 1); v.i = x; break; }
    case DT_UINT8: { uint8_t x; memcpy(&x, p, 1); v.u = x; break; }
    case DT_INT32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case DT_UINT32: { uint32_t x; memcpy(&x, p, 4); v.u = x; break; }
    case DT_INT64: { int64_t x; memcpy(&x, p, 8); v.i = x; break; }
    case DT_UINT64: { uint64_t x; memcpy(&x, p, 8); v.u = x; break; }
    case DT_FLOAT16: { uint16_t x; memcpy(&x, p, 2); v.f = data_f16_to_f32(x); break; }
    case DT_BFLOAT16: { uint16_t x; memcpy(&x, p, 2); v.f = data_bf16_to_f32(x); break; }
    case DT_FLOAT32: { float x; memcpy(&x, p, 4); v.f = x; break; }
    case DT_FLOAT64: { double x; memcpy(&x, p, 8); v.f = x; break; }
    default: break;
    }
    return v;
}

/* Stores an integer: modulo 2^bits for integer dtypes, rounded for floats. */
static void store_i64(ml_dtype dt, void *base, uint64_t k, int64_t v) {
    unsigned char *p = (unsigned char *)base + k * ml_dtypes[dt].size;
    uint64_t u = (uint64_t)v;
    switch (dt) {
    case DT_INT8: case DT_UINT8: { uint8_t x = (uint8_t)u; memcpy(p, &x, 1); break; }
    case DT_INT32: case DT_UINT32: { uint32_t x = (uint32_t)u; memcpy(p, &x, 4); break; }
    case DT_INT64: case DT_UINT64: memcpy(p, &u, 8); break;
    case DT_FLOAT16: { uint16_t x = data_f32_to_f16((float)v); memcpy(p, &x, 2); break; }
    case DT_BFLOAT16: { uint16_t x = data_f32_to_bf16((float)v); memcpy(p, &x, 2); break; }
    case DT_FLOAT32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case DT_FLOAT64: { double x = (double)v; memcpy(p, &x, 8); break; }
    default: break;
    }
}

/* Stores a float value into a float dtype (rounded once). */
static void store_f64(ml_dtype dt, void *base, uint64_t k, double v) {
    unsigned char *p = (unsigned char *)base + k * ml_dtypes[dt].size;
    switch (dt) {
    case DT_FLOAT16: { uint16_t x = data_f32_to_f16((float)v); memcpy(p, &x, 2); break; }
    case DT_BFLOAT16: { uint16_t x = data_f32_to_bf16((float)v); memcpy(p, &x, 2); break; }
    case DT_FLOAT32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case DT_FLOAT64: memcpy(p, &v, 8); break;
    default: store_i64(dt, base, k, (int64_t)v); break;
    }
}

/* Stores an integer result given as unsigned bits (wrapping arithmetic is done in uint64). */
static void store_bits(ml_dtype dt, void *base, uint64_t k, uint64_t u) {
    store_i64(dt, base, k, (int64_t)u);
}

/* ---- Patterns ------------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t data_random_bits(int64_t seed, int64_t rank, uint64_t i) {
    return splitmix64(splitmix64(splitmix64((uint64_t)seed) ^ (uint64_t)rank) ^ i);
}

static int eval_at(const expr *e, int64_t *slots, uint64_t i, int64_t *out, char *err, size_t len) {
    expr_error ee;
    slots[EXPR_SLOT_INDEX] = (int64_t)i;
    if (expr_eval(e, slots, out, &ee) == 0)
        return 0;
    snprintf(err, len, "data pattern '%s' at element %" PRIu64 ": %s", expr_text(e), i, ee.msg);
    return -1;
}

int data_fill(void *dst, ml_dtype dt, uint64_t count, uint64_t first, const sched_init *init,
              int64_t *slots, char *err, size_t len) {
    int64_t rank = slots[EXPR_SLOT_RANK], v;
    switch (init->kind) {
    case INIT_RANK_IOTA:
        for (uint64_t k = 0; k < count; k++)
            store_i64(dt, dst, k, 100 * rank + (int64_t)(first + k));
        return 0;
    case INIT_CONST:
    case INIT_EXPR:
        if (!expr_uses_slot(init->value, EXPR_SLOT_INDEX)) {   /* one evaluation serves all */
            if (eval_at(init->value, slots, first, &v, err, len) != 0)
                return -1;
            for (uint64_t k = 0; k < count; k++)
                store_i64(dt, dst, k, v);
            return 0;
        }
        for (uint64_t k = 0; k < count; k++) {
            if (eval_at(init->value, slots, first + k, &v, err, len) != 0)
                return -1;
            store_i64(dt, dst, k, v);
        }
        return 0;
    case INIT_RANDOM: {
        int64_t seed;
        if (eval_at(init->value, slots, first, &seed, err, len) != 0)
            return -1;
        bool is_float = ml_dtypes[dt].kind == DTK_FLOAT;
        for (uint64_t k = 0; k < count; k++) {
            uint64_t bits = data_random_bits(seed, rank, first + k);
            if (is_float)
                store_f64(dt, dst, k, (double)(bits >> 11) * 0x1p-53 * 2.0 - 1.0);
            else
                store_i64(dt, dst, k, (int64_t)(bits % 1000));
        }
        return 0;
    }
    case INIT_IDENTITY: {
        unsigned char elem[8];
        size_t size = ml_dtypes[dt].size;
        data_identity(dt, init->op, elem);
        for (uint64_t k = 0; k < count; k++)
            memcpy((unsigned char *)dst + k * size, elem, size);
        return 0;
    }
    default:
        snprintf(err, len, "no data pattern to generate (init kind %d)", (int)init->kind);
        return -1;
    }
}

/* ---- Identities and reductions -------------------------------------------------------------- */

/* Smallest and largest values of an integer dtype, as int64 bits stored modulo 2^bits. */
static void int_limits(ml_dtype dt, int64_t *lo, int64_t *hi) {
    uint32_t bits = ml_dtypes[dt].size * 8;
    if (ml_dtypes[dt].kind == DTK_SIGNED) {
        *lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        *hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    } else {
        *lo = 0;
        *hi = bits == 64 ? (int64_t)UINT64_MAX : (int64_t)(((uint64_t)1 << bits) - 1);
    }
}

void data_identity(ml_dtype dt, ml_redop op, void *elem) {
    bool is_float = ml_dtypes[dt].kind == DTK_FLOAT;
    int64_t lo = 0, hi = 0;
    if (!is_float)
        int_limits(dt, &lo, &hi);
    switch (op) {
    case RED_SUM:
    case RED_AVG:   /* avg accumulates a sum: 0 pads it (NCCL's padded elements then read 0) */
        store_i64(dt, elem, 0, 0);
        break;
    case RED_PROD: store_i64(dt, elem, 0, 1); break;
    case RED_MAX:
        if (is_float) store_f64(dt, elem, 0, -INFINITY); else store_i64(dt, elem, 0, lo);
        break;
    case RED_MIN:
        if (is_float) store_f64(dt, elem, 0, INFINITY); else store_i64(dt, elem, 0, hi);
        break;
    default: break;
    }
}

bool data_redop_valid(ml_dtype dt, ml_redop op) {
    return dt < DT_COUNT && op < RED_COUNT;
}

/* Orders two integer values of the same dtype kind: -1, 0, 1. */
static int int_cmp(elem_value a, elem_value b) {
    if (a.kind == DTK_SIGNED)
        return a.i < b.i ? -1 : a.i > b.i;
    return a.u < b.u ? -1 : a.u > b.u;
}

static void combine_one(ml_dtype dt, ml_redop op, void *acc, const void *src, uint64_t k) {
    elem_value a = load(dt, acc, k), b = load(dt, src, k);
    if (a.kind == DTK_FLOAT) {
        double r = a.f;
        switch (op) {
        /* float32 arithmetic for the 16-bit types and float32 itself: the result is rounded to
         * float32 first, then to the dtype, as a device kernel computing in float would. */
        case RED_SUM: r = dt == DT_FLOAT64 ? a.f + b.f : (double)((float)a.f + (float)b.f); break;
        case RED_PROD: r = dt == DT_FLOAT64 ? a.f * b.f : (double)((float)a.f * (float)b.f); break;
        case RED_MAX: r = b.f > a.f ? b.f : a.f; break;
        case RED_MIN: r = b.f < a.f ? b.f : a.f; break;
        default: break;
        }
        store_f64(dt, acc, k, r);
        return;
    }
    uint64_t ua = a.kind == DTK_SIGNED ? (uint64_t)a.i : a.u;
    uint64_t ub = b.kind == DTK_SIGNED ? (uint64_t)b.i : b.u;
    switch (op) {
    case RED_SUM: store_bits(dt, acc, k, ua + ub); break;       /* wraps modulo 2^bits */
    case RED_PROD: store_bits(dt, acc, k, ua * ub); break;
    case RED_MAX: if (int_cmp(b, a) > 0) store_bits(dt, acc, k, ub); break;
    case RED_MIN: if (int_cmp(b, a) < 0) store_bits(dt, acc, k, ub); break;
    default: break;
    }
}

void data_combine(ml_dtype dt, ml_redop op, void *acc, const void *src, uint64_t count) {
    ml_redop add = op == RED_AVG ? RED_SUM : op;   /* avg accumulates a sum (data_avg_*) */
    for (uint64_t k = 0; k < count; k++)
        combine_one(dt, add, acc, src, k);
}

bool data_avg_divides_after(ml_dtype dt) { return ml_dtypes[dt].kind != DTK_FLOAT; }

/* FuncPreMulSum's scalar: 1/world rounded to the dtype (NCCL's enqueue.cc: half(1.0/nRanks),
 * float(1.0/nRanks), ...); the product in float32 for the 16-bit types, then rounded. */
void data_avg_premul(ml_dtype dt, void *buf, uint64_t count, int world) {
    for (uint64_t k = 0; k < count; k++) {
        elem_value v = load(dt, buf, k);
        if (v.kind != DTK_FLOAT)
            return;
        double s = 1.0 / world;
        if (dt != DT_FLOAT64) {
            store_f64(dt, buf, k, s);   /* the scalar in the dtype */
            s = load(dt, buf, k).f;
            store_f64(dt, buf, k, (double)((float)v.f * (float)s));
        } else {
            store_f64(dt, buf, k, v.f * s);
        }
    }
}

/* FuncSumPostDiv's divide: |x| / world, negated back for a negative signed x: truncation toward
 * zero of the (wrapped) sum. */
void data_avg_postdiv(ml_dtype dt, void *buf, uint64_t count, int world) {
    for (uint64_t k = 0; k < count; k++) {
        elem_value v = load(dt, buf, k);
        if (v.kind == DTK_SIGNED)
            store_i64(dt, buf, k, v.i / world);
        else if (v.kind == DTK_UNSIGNED)
            store_bits(dt, buf, k, v.u / (uint64_t)world);
    }
}

int data_fill_reduced(void *dst, ml_dtype dt, uint64_t count, uint64_t first,
                      const sched_init *pattern, ml_redop op, int world, int64_t *const *rank_slots,
                      char *err, size_t len) {
    if (world < 1) {
        snprintf(err, len, "reduction over %d ranks", world);
        return -1;
    }
    if (data_fill(dst, dt, count, first, pattern, rank_slots[0], err, len) != 0)
        return -1;
    bool premul = op == RED_AVG && !data_avg_divides_after(dt);
    bool postdiv = op == RED_AVG && data_avg_divides_after(dt);
    if (premul)
        data_avg_premul(dt, dst, count, world);
    if (world == 1 || count == 0) {
        if (postdiv)
            data_avg_postdiv(dt, dst, count, world);
        return 0;
    }
    void *tmp = malloc(count * ml_dtypes[dt].size);
    if (!tmp) {
        snprintf(err, len, "out of host memory for a reduced pattern of %" PRIu64 " elements",
                 count);
        return -1;
    }
    int rc = 0;
    for (int r = 1; r < world && rc == 0; r++) {
        rc = data_fill(tmp, dt, count, first, pattern, rank_slots[r], err, len);
        if (rc == 0 && premul)
            data_avg_premul(dt, tmp, count, world);
        if (rc == 0)
            data_combine(dt, op, dst, tmp, count);
    }
    if (rc == 0 && postdiv)
        data_avg_postdiv(dt, dst, count, world);
    free(tmp);
    return rc;
}

void data_scale(ml_dtype dt, void *buf, uint64_t count, int64_t num, int64_t den) {
    double f = (double)num / (double)den;
    if (ml_dtypes[dt].kind == DTK_FLOAT && dt != DT_FLOAT64 && count) {
        elem_value first = load(dt, buf, 0);
        store_f64(dt, buf, 0, f);   /* the factor in the buffer's dtype */
        f = load(dt, buf, 0).f;
        store_f64(dt, buf, 0, first.f);
    }
    for (uint64_t k = 0; k < count; k++) {
        elem_value v = load(dt, buf, k);
        if (v.kind == DTK_FLOAT) {
            store_f64(dt, buf, k, dt == DT_FLOAT64 ? v.f * f : (double)((float)v.f * (float)f));
        } else if (den == 1) {
            store_bits(dt, buf, k, (v.kind == DTK_SIGNED ? (uint64_t)v.i : v.u) * (uint64_t)num);
        } else {
            /* exact in 128 bits (|x| < 2^64, |num| <= 2^63), truncated toward zero, then wrapped */
            __int128 x = v.kind == DTK_SIGNED ? (__int128)v.i : (__int128)v.u;
            store_bits(dt, buf, k, (uint64_t)(x * num / den));
        }
    }
}

/* ---- Shard rolls ---------------------------------------------------------------------------- */

uint64_t data_roll_source(uint64_t n, int world, int64_t k, uint64_t i) {
    uint64_t shard = n / (uint64_t)world;
    uint64_t j = i / shard;
    int64_t w = world;
    int64_t src_j = (((int64_t)j - k) % w + w) % w;   /* out[j] = in[j - k], torch.roll */
    return (uint64_t)src_j * shard + i % shard;
}

int data_roll_shards(void *dst, const void *src, uint64_t n, size_t elem_size, int world,
                     int64_t k, char *err, size_t len) {
    if (world < 1 || n % (uint64_t)world) {
        snprintf(err, len, "roll_shards: %" PRIu64 " elements do not split into %d equal shards",
                 n, world);
        return -1;
    }
    if (n == 0)
        return 0;
    uint64_t shard = n / (uint64_t)world;
    for (int j = 0; j < world; j++) {
        uint64_t from = data_roll_source(n, world, k, (uint64_t)j * shard);
        memcpy((unsigned char *)dst + (uint64_t)j * shard * elem_size,
               (const unsigned char *)src + from * elem_size, shard * elem_size);
    }
    return 0;
}

/* ---- Comparison ----------------------------------------------------------------------------- */

void data_format(ml_dtype dt, const void *elem, char *buf, size_t len) {
    elem_value v = load(dt, elem, 0);
    switch (v.kind) {
    case DTK_SIGNED: snprintf(buf, len, "%" PRId64, v.i); break;
    case DTK_UNSIGNED: snprintf(buf, len, "%" PRIu64, v.u); break;
    default: snprintf(buf, len, dt == DT_FLOAT64 ? "%.17g" : "%.9g", v.f); break;
    }
}

void data_diff_init(data_diff *d) {
    memset(d, 0, sizeof *d);
}

static double as_double(elem_value v) {
    return v.kind == DTK_FLOAT ? v.f : v.kind == DTK_SIGNED ? (double)v.i : (double)v.u;
}

/* Equality of two values of possibly different dtypes. */
static bool values_equal(elem_value a, elem_value b, double rtol, double atol) {
    if (a.kind != DTK_FLOAT && b.kind != DTK_FLOAT) {
        if (a.kind == b.kind)
            return int_cmp(a, b) == 0;
        elem_value s = a.kind == DTK_SIGNED ? a : b, u = a.kind == DTK_SIGNED ? b : a;
        return s.i >= 0 && (uint64_t)s.i == u.u;
    }
    double x = as_double(a), y = as_double(b);
    if (x == y)
        return true;
    if (rtol == 0 && atol == 0)
        return false;
    return fabs(x - y) <= atol + rtol * fabs(y);   /* false for NaN */
}

double data_as_double(ml_dtype dt, const void *base, uint64_t k) {
    return as_double(load(dt, base, k));
}

void data_compare(const void *a, ml_dtype da, const void *b, ml_dtype db, uint64_t count,
                  uint64_t base_index, double rtol, double atol, data_diff *acc) {
    size_t size = ml_dtypes[da].size;
    bool bitwise = da == db && ml_dtypes[da].kind == DTK_FLOAT && rtol == 0 && atol == 0;
    for (uint64_t k = 0; k < count; k++) {
        bool same;
        if (bitwise)
            same = !memcmp((const unsigned char *)a + k * size, (const unsigned char *)b + k * size,
                           size);
        else
            same = values_equal(load(da, a, k), load(db, b, k), rtol, atol);
        if (!same) {
            if (!acc->differ) {
                acc->first = base_index + k;
                data_format(da, (const unsigned char *)a + k * size, acc->first_a,
                            sizeof acc->first_a);
                data_format(db, (const unsigned char *)b + k * ml_dtypes[db].size, acc->first_b,
                            sizeof acc->first_b);
            }
            acc->differ++;
        }
    }
    acc->compared += count;
}

bool data_check_verdict(bool want_equal, const data_diff *d, double rtol, double atol, char *buf,
                        size_t len) {
    char how[80] = "";
    if (rtol != 0 || atol != 0)
        snprintf(how, sizeof how, " within rtol %g, atol %g", rtol, atol);
    if (!d->differ) {
        snprintf(buf, len, want_equal ? "equal%s: %" PRIu64 " of %" PRIu64 " elements"
                                      : "equal%s, but required to differ: %" PRIu64 " of %" PRIu64
                                        " elements",
                 how, d->compared, d->compared);
        return want_equal;
    }
    snprintf(buf, len, "%s%s: first difference at element %" PRIu64 ": %s vs %s; %" PRIu64
                       " of %" PRIu64 " elements differ",
             want_equal ? "not equal" : "not equal as required", how, d->first, d->first_a,
             d->first_b, d->differ, d->compared);
    return !want_equal;
}
