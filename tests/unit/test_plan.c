/* SPDX-License-Identifier: MIT */
/* test_plan.c — plan_expand: unrolled repeats, when, views, NCCL counts, in-place flags, free
 * lists, init, regions, expect_error markers, limits and expression errors. */
#include "plantest.h"

static const plan_op *op_at(const pt_run *r, int rank, size_t k) {
    assert_true(k < r->plans[rank].n_ops);
    return &r->plans[rank].ops[k];
}

static void repeat_unrolls_with_iterations(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 2\n"
            "steps:\n"
            "  - repeat:\n"
            "      count: 2\n"
            "      steps:\n"
            "        - alloc: {buf: a, bytes: 1KiB}\n"
            "        - repeat: {count: 3, steps: [{all_reduce: {buf: a}}]}\n"
            "        - free: a\n",
            0);
    /* 2 × (alloc + 3 all_reduce + free) = 10 ops; inner iterations 0,1,2 in both outer ones */
    const rank_plan *p = &r.plans[1];
    assert_int_equal(p->n_ops, 10);
    static const plan_op_kind kinds[10] = {OP_ALLOC, OP_COLL, OP_COLL, OP_COLL, OP_FREE,
                                           OP_ALLOC, OP_COLL, OP_COLL, OP_COLL, OP_FREE};
    static const uint32_t iters[10] = {0, 0, 1, 2, 0, 1, 0, 1, 2, 1};
    for (size_t k = 0; k < 10; k++) {
        assert_int_equal(p->ops[k].kind, kinds[k]);
        assert_int_equal(p->ops[k].iter, iters[k]);
    }
    assert_int_equal(plan_coll_count(&p->ops[6]), 256);   /* 1 KiB of float32 */
    pt_free(&r);
}

static void repeat_copies_keep_outer_iterations(void **state) {
    pt_run r;
    /* 5 outer iterations: iterations 2..4 are copies of 1, renumbered */
    pt_load(&r,
            "world: 1\n"
            "steps:\n"
            "  - repeat:\n"
            "      count: 5\n"
            "      steps:\n"
            "        - alloc: {buf: a, bytes: 4}\n"
            "        - repeat: {count: 2, steps: [{scale: {buf: a, by: 2}}]}\n"
            "        - free: a\n",
            0);
    const rank_plan *p = &r.plans[0];
    assert_int_equal(p->n_ops, 20);
    for (uint32_t it = 0; it < 5; it++) {
        assert_int_equal(p->ops[4 * it].iter, it);          /* alloc */
        assert_int_equal(p->ops[4 * it + 1].iter, 0);       /* inner scale, iteration 0 */
        assert_int_equal(p->ops[4 * it + 2].iter, 1);
        assert_int_equal(p->ops[4 * it + 3].iter, it);      /* free */
        assert_int_equal(p->ops[4 * it + 1].u.scale.factor, 2);
    }
    pt_free(&r);
}

static void repeat_first_iteration_sees_outer_alloc(void **state) {
    pt_run r;
    /* The first all_reduce sees the 1 KiB alloc before the repeat (256 floats); every later one
     * the body's 2 KiB alloc (512 floats). */
    pt_load(&r,
            "world: 1\n"
            "steps:\n"
            "  - alloc: {buf: a, bytes: 1KiB}\n"
            "  - repeat:\n"
            "      count: 3\n"
            "      steps:\n"
            "        - all_reduce: {buf: a}\n"
            "        - free: a\n"
            "        - alloc: {buf: a, bytes: 2KiB}\n",
            0);
    const rank_plan *p = &r.plans[0];
    assert_int_equal(p->n_ops, 10);
    assert_int_equal(plan_coll_count(&p->ops[1]), 256);
    assert_int_equal(plan_coll_count(&p->ops[4]), 512);
    assert_int_equal(plan_coll_count(&p->ops[7]), 512);
    pt_free(&r);
}

/* `index:`: each iteration's views and sizes see its value; nested repeats have their own slot;
 * a non-indexed repeat around an indexed one copies the index values with its ops. */
static void repeat_index_in_views_sizes_when(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 2\n"
            "let: {N: 8}\n"
            "steps:\n"
            "  - alloc: {buf: w, count: 3*N}\n"
            "  - repeat:\n"
            "      count: 2\n"                    /* copies: iteration 2.. of this one */
            "      steps:\n"
            "        - repeat:\n"
            "            count: 3\n"
            "            index: l\n"
            "            steps:\n"
            "              - all_reduce: {buf: \"w[l*N : N]\"}\n"
            "              - repeat:\n"
            "                  count: l\n"         /* 0, 1, 2 inner iterations */
            "                  index: j\n"
            "                  steps:\n"
            "                    - alloc: {buf: t, count: 10*l + j}\n"
            "                    - free: t\n"
            "              - when: l == 2\n"
            "                init: {buf: w, expr: l + i}\n",
            0);
    const rank_plan *p = &r.plans[1];
    /* per outer iteration: 3 all_reduce + (0+1+2) x (alloc, free) + 1 init = 10; + the alloc */
    assert_int_equal(p->n_ops, 1 + 2 * 10);
    assert_int_equal(r.s->n_index, 2);
    for (int outer = 0; outer < 2; outer++) {
        const plan_op *o = p->ops + 1 + 10 * outer;
        /* l = 0: all_reduce at 0; l = 1: all_reduce at 8, alloc 10*1+0; l = 2: at 16, allocs 20, 21 */
        assert_int_equal(o[0].kind, OP_COLL);
        assert_int_equal(o[0].u.coll.send.offset, 0);
        assert_int_equal(o[1].u.coll.send.offset, 8);
        assert_int_equal(o[2].u.alloc.count, 10);
        assert_int_equal(o[4].u.coll.send.offset, 16);
        assert_int_equal(o[5].u.alloc.count, 20);
        assert_int_equal(o[7].u.alloc.count, 21);
        assert_int_equal(o[9].kind, OP_INIT);
        /* the init runs with l = 2 (its data pattern reads the slot when it runs) */
        int64_t slots[16] = {0};
        assert_true(sched_n_slots(r.s) <= 16);
        plan_op_slots(p, &o[9], slots);
        assert_int_equal(slots[EXPR_SLOT_FIRST_LET + 1], 2);   /* after the one let N */
        plan_op_slots(p, &o[7], slots);
        assert_int_equal(slots[EXPR_SLOT_FIRST_LET + 2], 1);   /* j of the alloc of 21 */
    }
    pt_free(&r);
}

static void zero_repeat_and_when(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 2\n"
            "steps:\n"
            "  - repeat: {count: world - 2, steps: [{sync: device}]}\n"
            "  - alloc: {buf: a, bytes: 1KiB}\n"
            "    when: rank == 0\n"
            "  - sync: device\n",
            0);
    assert_int_equal(r.plans[0].n_ops, 2);
    assert_int_equal(op_at(&r, 0, 0)->kind, OP_ALLOC);
    assert_int_equal(r.plans[1].n_ops, 1);
    assert_int_equal(op_at(&r, 1, 0)->kind, OP_SYNC);
    pt_free(&r);
}

static void views_counts_and_in_place(void **state) {
    pt_run r;
    /* 1 KiB of float32 = 256 elements, q = 64 at world 4 */
    pt_load(&r,
            "world: 4\n"
            "let: {N: 256, q: N / world}\n"
            "steps:\n"
            "  - alloc: {buf: full, count: N}\n"
            "  - alloc: {buf: shard, count: q}\n"
            "  - reduce_scatter: {send: full, recv: shard}\n"
            "  - reduce_scatter: {send: full, recv: 'full[rank*q : q]'}\n"
            "  - all_gather: {send: 'full[rank*q : q]', recv: full}\n"
            "  - all_gather: {send: shard, recv: full}\n"
            "  - all_reduce: {buf: full}\n"
            "  - reduce_scatter: {send: full, recv: 'full[0 : q]'}\n"
            "  - broadcast: {buf: 'full[8:248]', root: world - 1}\n",
            0);
    for (int rank = 0; rank < 4; rank++) {
        const plan_op *rs = op_at(&r, rank, 2), *rs_in = op_at(&r, rank, 3);
        const plan_op *ag_in = op_at(&r, rank, 4), *ag = op_at(&r, rank, 5);
        const plan_op *ar = op_at(&r, rank, 6), *rs_bad = op_at(&r, rank, 7);
        const plan_op *bc = op_at(&r, rank, 8);
        assert_int_equal(plan_coll_count(rs), 64);          /* RS: recvcount */
        assert_int_equal(rs->u.coll.send.count, 256);
        assert_true(rs->u.coll.send.whole);
        assert_false(rs->u.coll.in_place);
        assert_int_equal(rs_in->u.coll.recv.offset, 64 * (uint64_t)rank);
        assert_int_equal(rs_in->u.coll.recv.count, 64);
        assert_false(rs_in->u.coll.recv.whole);
        assert_true(rs_in->u.coll.in_place);             /* recv == send + rank*recvcount */
        assert_int_equal(plan_coll_count(ag_in), 64);       /* AG: sendcount */
        assert_true(ag_in->u.coll.in_place);             /* send == recv + rank*sendcount */
        assert_false(ag->u.coll.in_place);
        assert_int_equal(plan_coll_count(ar), 256);         /* AR: elements of send */
        assert_true(ar->u.coll.in_place);
        /* recv at offset 0 is in place on rank 0 only */
        assert_int_equal(rs_bad->u.coll.in_place, rank == 0);
        assert_int_equal(plan_coll_count(bc), 248);
        assert_int_equal(bc->u.coll.root, 3);
        assert_int_equal(bc->u.coll.send.dtype, DT_FLOAT32);
    }
    pt_free(&r);
}

static void alloc_bytes_count_dtype_chunks(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 4\n"
            "dtype: int64\n"
            "steps:\n"
            "  - alloc: {buf: a, count: 1003}\n"
            "  - alloc: {buf: b, bytes: 1MiB + 1, dtype: uint8}\n"
            "  - alloc: {buf: c, bytes: 256MiB, dtype: float32, chunks: world}\n",
            0);
    const plan_op *a = op_at(&r, 0, 0), *b = op_at(&r, 0, 1), *c = op_at(&r, 0, 2);
    assert_int_equal(a->u.alloc.bytes, 8024);            /* 1003 × 8 */
    assert_int_equal(a->u.alloc.count, 1003);
    assert_int_equal(a->u.alloc.dtype, DT_INT64);
    assert_int_equal(a->u.alloc.chunks, 0);
    assert_int_equal(b->u.alloc.bytes, MiB + 1);
    assert_int_equal(b->u.alloc.count, MiB + 1);
    assert_int_equal(c->u.alloc.count, 64 * MiB);
    assert_int_equal(c->u.alloc.chunks, 4);
    pt_free(&r);
}

static void free_list_init_region_expect(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 4\n"
            "dtype: int64\n"
            "steps:\n"
            "  - alloc: {buf: x, count: 8, init: rank_iota}\n"
            "  - region:\n"
            "      name: phase\n"
            "      steps:\n"
            "        - alloc: {buf: y, count: 2}\n"
            "        - init: {buf: 'y[0:2]', copy: 'x[2:2]'}\n"
            "  - expect_error:\n"
            "      name: bad\n"
            "      error: size_mismatch\n"
            "      step: {reduce_scatter: {send: x, recv: y}}\n"
            "  - free: [x, y]\n",
            0);
    const rank_plan *p = &r.plans[2];
    assert_int_equal(p->n_ops, 10);
    static const plan_op_kind kinds[10] = {OP_ALLOC, OP_INIT, OP_REGION_BEGIN, OP_ALLOC, OP_INIT,
                                           OP_REGION_END, OP_EXPECT_BEGIN, OP_COLL, OP_FREE,
                                           OP_FREE};
    for (size_t k = 0; k < 10; k++)
        assert_int_equal(p->ops[k].kind, kinds[k]);
    assert_true(p->ops[1].u.init.dst.whole);
    assert_int_equal(p->ops[1].u.init.dst.count, 8);
    uint32_t phase = p->ops[2].u.region.region;
    assert_string_equal(sched_sym_name(r.s, SYM_REGION, phase), "phase");
    assert_int_equal(p->ops[0].region, SCHED_NO_SYM);
    assert_int_equal(p->ops[3].region, phase);
    assert_int_equal(p->ops[4].u.init.src.offset, 2);
    assert_int_equal(p->ops[4].u.init.src.count, 2);
    assert_int_equal(p->ops[6].u.expect.error, ERR_SIZE_MISMATCH);
    assert_ptr_equal(p->ops[7].step, p->ops[6].step->u.expect_error.step);
    assert_string_equal(sched_sym_name(r.s, SYM_BUFFER, p->ops[8].u.free.buf), "x");
    assert_string_equal(sched_sym_name(r.s, SYM_BUFFER, p->ops[9].u.free.buf), "y");
    /* each freed name keeps its own mark: line 14, `x` at col 12, `y` at col 15 */
    assert_int_equal(p->ops[8].u.free.mark.line, 14);
    assert_int_equal(p->ops[8].u.free.mark.col, 12);
    assert_int_equal(p->ops[9].u.free.mark.col, 15);
    pt_free(&r);
}

static void streams_events_compute(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 2\n"
            "streams: [comm]\n"
            "events: [done]\n"
            "steps:\n"
            "  - alloc: {buf: a, bytes: 64}\n"
            "  - alloc: {buf: b, bytes: 64}\n"
            "  - all_reduce: {buf: a, stream: comm}\n"
            "  - record: {event: done, stream: comm}\n"
            "  - wait: {event: done, stream: default}\n"
            "  - compute: {reads: [a, 'b[0:4]'], writes: [b], stream: comm}\n"
            "  - sync: {stream: comm}\n",
            0);
    const rank_plan *p = &r.plans[0];
    assert_int_equal(p->n_ops, 7);
    assert_string_equal(sched_sym_name(r.s, SYM_STREAM, p->ops[2].u.coll.stream), "comm");
    assert_int_equal(p->ops[3].kind, OP_RECORD);
    assert_int_equal(p->ops[4].u.event.stream, SCHED_DEFAULT_STREAM);
    uint32_t nr, nw;
    const plan_view *v = plan_compute_views(p, &p->ops[5], &nr, &nw);
    assert_int_equal(nr, 2);
    assert_int_equal(nw, 1);
    assert_int_equal(v[1].count, 4);
    assert_int_equal(v[2].count, 16);
    assert_int_equal(p->ops[6].u.sync.kind, SYNC_STREAM);
    pt_free(&r);
}

/* plan_timed_compute answers from the expansion (no pass over the ops) while every op it
 * emitted is there: a compute with `time:` or `flops:` on rank 0 only (`when: rank == 0`) makes
 * rank 0's true and rank 1's false; one without either is no timed compute. Each answer is the
 * one the pass over the ops gives (timed_known off). */
static void timed_compute_from_expansion(void **state) {
    (void)state;
    static const char *const yaml[] = {
        "world: 2\nsteps:\n  - alloc: {buf: a, bytes: 64}\n"
        "  - when: rank == 0\n    compute: {reads: [a], writes: [a], time: 5}\n",
        "world: 2\nsteps:\n  - alloc: {buf: a, bytes: 64}\n"
        "  - when: rank == 0\n    compute: {reads: [a], writes: [a], flops: 1000}\n",
        "world: 2\nsteps:\n  - alloc: {buf: a, bytes: 64}\n"
        "  - compute: {reads: [a], writes: [a]}\n",
    };
    static const bool want[][2] = {{true, false}, {true, false}, {false, false}};
    for (size_t k = 0; k < sizeof yaml / sizeof *yaml; k++) {
        pt_run r;
        pt_load(&r, yaml[k], 0);
        for (int rank = 0; rank < 2; rank++) {
            rank_plan *p = &r.plans[rank];
            assert_true(p->timed_known);
            assert_int_equal(plan_timed_compute(p), want[k][rank]);
            p->timed_known = false;   /* the pass over the ops */
            assert_int_equal(plan_timed_compute(p), want[k][rank]);
        }
        pt_free(&r);
    }
}

/* Errors: the expression's text and the step's line:col. */
static void expect_expand_error(const char *yaml, int world, const plan_limits *limits,
                                const char *want) {
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    if (!s)
        pt_dump(&d);
    assert_non_null(s);
    sched_params p = {.world = world};
    rank_plan plan;
    assert_int_equal(plan_expand(s, 0, &p, world, 0, limits, &plan, &d), -1);
    assert_string_equal(tu_first_error(&d), want);
    assert_null(plan.ops);
    sched_free(s);
    ml_diags_free(&d);
}

static void division_by_zero_names_expression(void **state) {
    expect_expand_error("let: {M: 256MiB}\n"
                        "steps:\n"
                        "  - alloc: {buf: a, bytes: M / (world - 4)}\n",
                        4, NULL, "t.yaml:3:30: error: division by zero in 'M / (world - 4)'");
}

static void negative_sizes_refused(void **state) {
    expect_expand_error("steps:\n"
                        "  - repeat: {count: world - 5, steps: [{sync: device}]}\n",
                        4, NULL, "t.yaml:2:21: error: repeat count is negative (-1): 'world - 5'");
    expect_expand_error("steps:\n"
                        "  - alloc: {buf: a, count: 2 - world}\n",
                        4, NULL, "t.yaml:2:28: error: alloc count is negative (-2): '2 - world'");
    /* a view's offset and count inside the brackets: the offset's first token (4:26, after the
     * space), the count's (4:33); rank 0 of the expansion makes 'rank - 1' negative */
    expect_expand_error("steps:\n"
                        "  - alloc: {buf: a, count: 64}\n"
                        "  - all_reduce: {buf: 'a[ rank - 1 : 8]'}\n",
                        4, NULL, "t.yaml:3:27: error: view offset is negative (-1): ' rank - 1 '");
    expect_expand_error("steps:\n"
                        "  - alloc: {buf: a, count: 64}\n"
                        "  - all_reduce: {buf: 'a[0:3 - world]'}\n",
                        4, NULL, "t.yaml:3:28: error: view count is negative (-1): '3 - world'");
    /* an evaluation error at its token inside the brackets: the '/' (3:30) */
    expect_expand_error("steps:\n"
                        "  - alloc: {buf: a, count: 64}\n"
                        "  - all_reduce: {buf: 'a[0:8 / (world - 4)]'}\n",
                        4, NULL, "t.yaml:3:30: error: division by zero in '8 / (world - 4)'");
}

static void repeat_over_max_ops(void **state) {
    plan_limits lim = {.max_ops = 100};
    /* 1000 iterations of 2 ops: more than 100, reported at its count */
    expect_expand_error("steps:\n"
                        "  - sync: device\n"
                        "  - repeat:\n"
                        "      count: 1000\n"
                        "      steps: [{sync: device}, {sync: device}]\n",
                        1, &lim,
                        "t.yaml:4:14: error: repeat of 1000 iterations of at least 2 ops each "
                        "expands to more than 100 ops");
    /* beyond 2^63 iterations of a body: refused, not wrapped */
    expect_expand_error("steps:\n"
                        "  - repeat: {count: 9223372036854775807, steps: [{sync: device}]}\n",
                        1, NULL,
                        "t.yaml:2:21: error: repeat of 9223372036854775807 iterations expands to "
                        "more than 50000000 ops");
    /* 7 nested repeats of 2 around one op: 128 ops, refused at the outer count (3:14), whose
     * body is at least 2^6 = 64 ops, before any iteration is walked */
    char nested[1024] = "steps:\n";
    for (int k = 0; k < 7; k++)
        snprintf(nested + strlen(nested), sizeof nested - strlen(nested),
                 "%*s- repeat:\n%*s    count: 2\n%*s    steps:\n", 2 + 6 * k, "", 2 + 6 * k,
                 "", 2 + 6 * k, "");
    snprintf(nested + strlen(nested), sizeof nested - strlen(nested), "%*s- sync: device\n",
             2 + 6 * 7, "");
    expect_expand_error(nested, 1, &lim,
                        "t.yaml:3:14: error: repeat of 2 iterations of at least 64 ops each "
                        "expands to more than 100 ops");
    /* an inner count that names the outer index is not known before the outer body is walked:
     * iterations 0 and 1 (0 and 50 ops) fit, the inner repeat of iteration 2 (100 more) is
     * refused at its own count (3:59) */
    expect_expand_error("steps:\n"
                        "  - sync: device\n"
                        "  - repeat: {count: 3, index: j, steps: [{repeat: {count: j * 50, "
                        "steps: [{sync: device}]}}]}\n",
                        1, &lim,
                        "t.yaml:3:59: error: repeat of 100 iterations expands to more than 100 "
                        "ops");
}

/* The bound is a lower bound: exactly max_ops ops expand (1 + 3 x 33 = 100), and steps with a
 * `when:` count as none (a `when:` false on this rank emits nothing). */
static void nested_repeats_at_max_ops(void **state) {
    plan_limits lim = {.max_ops = 100};
    static const char *const yaml[] = {
        "steps:\n  - sync: device\n"
        "  - repeat: {count: 3, steps: [{repeat: {count: 33, steps: [{sync: device}]}}]}\n",
        "steps:\n  - sync: device\n"
        "  - repeat: {count: 1000000, steps: [{when: rank == 1, sync: device}]}\n",
    };
    static const size_t want[] = {100, 1};
    for (size_t k = 0; k < sizeof yaml / sizeof *yaml; k++) {
        ml_diags d;
        ml_diags_init(&d);
        sched *s = tu_load(yaml[k], &d);
        assert_non_null(s);
        sched_params p = {.world = 2};
        rank_plan plan;
        if (plan_expand(s, 0, &p, 2, 0, &lim, &plan, &d) != 0)
            pt_dump(&d);
        assert_int_equal(plan.n_ops, want[k]);
        plan_free(&plan);
        sched_free(s);
        ml_diags_free(&d);
    }
}

static void million_ops_expand(void **state) {
    pt_run r;
    /* 1000 × 1000 × (alloc + free) = 2,000,000 ops per rank, 2 ranks. Linear by construction
     * (copies of iteration 2); not timed here. */
    pt_load(&r,
            "world: 2\n"
            "steps:\n"
            "  - repeat:\n"
            "      count: 1000\n"
            "      steps:\n"
            "        - repeat:\n"
            "            count: 1000\n"
            "            steps:\n"
            "              - alloc: {buf: t, bytes: 1KiB}\n"
            "              - free: t\n",
            0);
    assert_int_equal(r.plans[1].n_ops, 2000000);
    const plan_op *last = op_at(&r, 1, 1999999);
    assert_int_equal(last->kind, OP_FREE);
    assert_int_equal(last->iter, 999);
    pt_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(repeat_unrolls_with_iterations),
        cmocka_unit_test(repeat_copies_keep_outer_iterations),
        cmocka_unit_test(repeat_first_iteration_sees_outer_alloc),
        cmocka_unit_test(repeat_index_in_views_sizes_when),
        cmocka_unit_test(zero_repeat_and_when),
        cmocka_unit_test(views_counts_and_in_place),
        cmocka_unit_test(alloc_bytes_count_dtype_chunks),
        cmocka_unit_test(free_list_init_region_expect),
        cmocka_unit_test(streams_events_compute),
        cmocka_unit_test(timed_compute_from_expansion),
        cmocka_unit_test(division_by_zero_names_expression),
        cmocka_unit_test(negative_sizes_refused),
        cmocka_unit_test(repeat_over_max_ops),
        cmocka_unit_test(nested_repeats_at_max_ops),
        cmocka_unit_test(million_ops_expand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
