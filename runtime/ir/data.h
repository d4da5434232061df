/* SPDX-License-Identifier: MIT */
/* data.h — the data side of schedules, on the host: init patterns, reduction identities, the
 * arithmetic of reductions, shard rolls and element comparison.
 *
 * Every backend moves bytes between its buffers and host arrays (rt_backend_ops write/read);
 * everything a value means is computed here, once, so host and cuda runs generate and judge data
 * identically. Nothing here calls a collective: a reduce-over-ranks closed form is computed by
 * generating each rank's pattern and combining them in the dtype's own arithmetic, which is the
 * independent side of a data contract. */
#ifndef MEMLIFE_DATA_H
#define MEMLIFE_DATA_H

#include "ir/sched.h"

/* Fills dst[0..count) (of dtype dt) with elements first .. first+count-1 of the pattern `init`
 * (RANK_IOTA, CONST, EXPR, RANDOM, IDENTITY). slots holds world, rank and the let-values of the
 * rank the data is for; slots[EXPR_SLOT_INDEX] is overwritten. Integer values are stored modulo
 * 2^bits of the dtype (as a cast in two's complement), floats rounded to nearest even.
 * INIT_NONE and INIT_COPY move no pattern: -1 with err. Returns 0, or -1 with err (a failed
 * expression names its text). */
int data_fill(void *dst, ml_dtype dt, uint64_t count, uint64_t first, const sched_init *init,
              int64_t *slots, char *err, size_t len);

/* The random pattern: splitmix64 of (seed, rank, i); integers take value % 1000, floats
 * (value >> 11) * 2^-53 * 2 - 1, in [-1, 1). Same on every backend. */
uint64_t data_random_bits(int64_t seed, int64_t rank, uint64_t i);

/* The identity of op in dt: SUM 0, PROD 1, MAX the dtype's minimum (-inf for floats), MIN its
 * maximum (+inf for floats). Writes one element of ml_dtypes[dt].size bytes. */
void data_identity(ml_dtype dt, ml_redop op, void *elem);

/* Whether op is a valid reduction for dt (the table of NCCL 2.28: every op on every type). */
bool data_redop_valid(ml_dtype dt, ml_redop op);

/* acc[k] = acc[k] op src[k] in dt's own arithmetic: integers wrap modulo 2^bits, floats round in
 * the dtype's precision after each operation (float16/bfloat16 through float32: a sum or product
 * of two 16-bit values rounded to float32 and then to the 16-bit type equals the correctly
 * rounded 16-bit result, since float32 has at least 2p+2 bits, so each step is NCCL's). RED_AVG
 * combines as a sum: the division is data_avg_premul's (floats, before) or data_avg_postdiv's
 * (integers, after). */
void data_combine(ml_dtype dt, ml_redop op, void *acc, const void *src, uint64_t count);

/* ncclAvg as NCCL computes it (src/enqueue.cc, src/device/reduce_kernel.h): integer types sum
 * then divide by world truncating toward zero (FuncSumPostDiv); float types multiply each
 * input by 1/world rounded to the dtype, then sum (FuncPreMulSum). */
bool data_avg_divides_after(ml_dtype dt);   /* integers */
void data_avg_premul(ml_dtype dt, void *buf, uint64_t count, int world);
void data_avg_postdiv(ml_dtype dt, void *buf, uint64_t count, int world);

/* Fills dst with the pattern reduced over all ranks with op: rank 0's elements combined with
 * rank 1's, and so on in rank order. rank_slots[r] are the slots of rank r (as for data_fill).
 * Returns 0 or -1 with err. */
int data_fill_reduced(void *dst, ml_dtype dt, uint64_t count, uint64_t first,
                      const sched_init *pattern, ml_redop op, int world, int64_t *const *rank_slots,
                      char *err, size_t len);

/* buf[k] *= num/den (den > 0) in dt's arithmetic. Floats: the factor num/den rounded to the
 * dtype, the product rounded once. Integers: num alone multiplies and wraps modulo 2^bits (den 1);
 * a fraction is x*num/den exactly, truncated toward zero, then stored modulo 2^bits. */
void data_scale(ml_dtype dt, void *buf, uint64_t count, int64_t num, int64_t den);

/* Shard roll as torch's x.reshape(world, -1).roll(k, dims=0).reshape(-1): element i of the
 * result is element data_roll_source(i) of x. n must be divisible by world. */
uint64_t data_roll_source(uint64_t n, int world, int64_t k, uint64_t i);
int data_roll_shards(void *dst, const void *src, uint64_t n, size_t elem_size, int world,
                     int64_t k, char *err, size_t len);

/* Element comparison, accumulated over blocks. Integers compare exactly by value; floats
 * bitwise when rtol and atol are both 0, else |a - b| <= atol + rtol * |b| (equal infinities
 * are equal; NaN is never within a tolerance). */
typedef struct {
    uint64_t compared, differ;
    uint64_t first;          /* index of the first difference, valid when differ > 0 */
    char first_a[48], first_b[48];
} data_diff;
void data_diff_init(data_diff *d);
void data_compare(const void *a, ml_dtype da, const void *b, ml_dtype db, uint64_t count,
                  uint64_t base_index, double rtol, double atol, data_diff *acc);
/* The verdict and detail text of a check: "equal: 20 of 20 elements", "not equal as required:
 * first difference at element 0: 660 vs 600", ... Returns pass. */
bool data_check_verdict(bool want_equal, const data_diff *d, double rtol, double atol, char *buf,
                        size_t len);

/* Element k of an array of dt as a double (for difference statistics; integers beyond 2^53
 * round). Added for `memlife equiv` (analyzer/equiv_data.c). */
double data_as_double(ml_dtype dt, const void *base, uint64_t k);

/* One element as text: integers in decimal, floats with enough digits to round-trip. */
void data_format(ml_dtype dt, const void *elem, char *buf, size_t len);

/* IEEE half and bfloat16 conversions (round to nearest even; NaN stays NaN). */
uint16_t data_f32_to_f16(float f);
float data_f16_to_f32(uint16_t h);
uint16_t data_f32_to_bf16(float f);
float data_bf16_to_f32(uint16_t h);

#endif
