/* SPDX-License-Identifier: MIT */
/* test_torchtree.c — the torch model's ordered free-block sets (analyzer/torch/torchtree.c)
 * against a plain reference: after random inserts and erases of blocks with few distinct sizes,
 * the in-order walk must be the blocks sorted by (stream, size, address), and every lower bound
 * on (stream, size) the first such block in that order.  Few sizes make long runs of equal
 * 64-bit hi words that span leaves and groups of leaves, where the searches' hi-word compares
 * must step on by the address (the low word); set sizes past TT_GROUP * TT_NSUM leaves take the
 * search by halves.  The expected values are computed here by sorting, not written in. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "torch/torchalloc_int.h"

static uint64_t rng;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const torchalloc *cmp_ta;
static int by_key(const void *pa, const void *pb) {
    const tblk *a = &cmp_ta->b[*(const int32_t *)pa], *b = &cmp_ta->b[*(const int32_t *)pb];
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->size != b->size)
        return a->size < b->size ? -1 : 1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* the set holds exactly the blocks marked in[] and walks them in key order; every lower bound
 * on (stream, size) is the first such block at or after that key in the sorted reference */
static void check(torchalloc *ta, const ttree *t, const uint8_t *in, const int32_t *ids, size_t n,
                  int32_t *ref) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (in[i])
            ref[m++] = ids[i];
    cmp_ta = ta;
    qsort(ref, m, sizeof *ref, by_key);
    size_t got = tt_collect(ta, t, 0);
    assert_int_equal(got, m);
    for (size_t i = 0; i < m; i++)
        assert_int_equal(ta->scratch[i], ref[i]);
    for (int q = 0; q < 8; q++) {
        uint32_t stream = (uint32_t)(next_rand() % 3);
        uint64_t size = 512 * (1 + next_rand() % 6);
        int32_t want = -1;
        for (size_t i = 0; i < m && want < 0; i++) {
            const tblk *b = &ta->b[ref[i]];
            if (b->stream > stream || (b->stream == stream && b->size >= size))
                want = ref[i];
        }
        assert_int_equal(tt_lower_size(ta, t, stream, size), want);
        tcur c;
        assert_int_equal(tt_lower_size_cur(ta, t, stream, size, &c), want);
    }
}

/* n blocks of 3 streams and 4 sizes at distinct addresses, ops random inserts and erases (an
 * erase by the lower bound's cursor or by the block), checked every `every` ops */
static size_t run(size_t n, size_t ops, size_t every, uint64_t seed) {
    rng = seed;
    torchalloc *ta = torchalloc_new(NULL, 0);
    assert_non_null(ta);
    ttree *t = &ta->pool[1].blocks;
    int32_t *ids = calloc(n, sizeof *ids), *ref = calloc(n, sizeof *ref);
    uint8_t *in = calloc(n, 1);
    assert_true(ids && ref && in);
    for (size_t i = 0; i < n; i++) {
        ids[i] = ta_new_block(ta);
        tblk *b = &ta->b[ids[i]];
        b->stream = (uint32_t)(next_rand() % 3);
        b->size = 512 * (1 + next_rand() % 4);
        b->addr = ((uint64_t)1 << 40) + 512 * (uint64_t)(next_rand() % (64 * n)) * n + 512 * i;
        b->large = 1;
    }
    size_t live = 0, max_leaves = 0;
    for (size_t op = 0; op < ops; op++) {
        size_t i = (size_t)(next_rand() % n);
        /* fill to about 3/4 first, then keep it there */
        int grow = live < n / 2 || next_rand() % 4 < 3 - (live > 3 * n / 4);
        if (!in[i] && grow) {
            tt_insert(ta, t, ids[i]);
            in[i] = 1;
            live++;
        } else if (in[i] && next_rand() % 2) {
            tt_erase(ta, t, ids[i]);
            in[i] = 0;
            live--;
        } else if (live > 0) {
            tcur c;
            const tblk *b = &ta->b[ids[i]];
            int32_t x = tt_lower_size_cur(ta, t, b->stream, b->size, &c);
            if (x >= 0) {
                tt_erase_cur(ta, t, &c, x);
                for (size_t k = 0; k < n; k++)
                    if (ids[k] == x)
                        in[k] = 0;
                live--;
            }
        }
        if (t->nleaf > max_leaves)
            max_leaves = t->nleaf;
        if (op % every == 0 || op + 1 == ops)
            check(ta, t, in, ids, n, ref);
    }
    print_message("%zu blocks: up to %zu leaves\n", n, max_leaves);
    free(ids);
    free(ref);
    free(in);
    torchalloc_destroy(ta);
    return max_leaves;
}

/* at most TT_SUM_FIXED groups of leaves throughout: the search's fixed count over the sums,
 * the sentinel sums past the groups in use among them; the leaves emptied and split again
 * come from the set's spares */
static void few_groups(void **state) {
    (void)state;
    size_t leaves = run(240, 20000, 1, 0xd1b54a32d192ed03ull);
    assert_true(leaves > TT_GROUP && leaves <= TT_GROUP * TT_SUM_FIXED);
}

/* about 150 leaves at most: the grouped search, a few groups */
static void grouped_leaves(void **state) {
    (void)state;
    size_t leaves = run(600, 30000, 1, 0x9e3779b97f4a7c15ull);
    assert_true(leaves > 2 * TT_GROUP && leaves <= TT_GROUP * TT_NSUM);
}

/* past TT_GROUP * TT_NSUM (256) leaves: the search by halves, and back below */
static void many_leaves(void **state) {
    (void)state;
    assert_true(run(4000, 60000, 97, 0x2545f4914f6cdd1dull) > TT_GROUP * TT_NSUM);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(few_groups),
        cmocka_unit_test(grouped_leaves),
        cmocka_unit_test(many_leaves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
