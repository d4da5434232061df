/* SPDX-License-Identifier: MIT */
/* test_lint_moved.c — lint_walk_rank_moved (analyzer/lint/lint.c) against lint_walk_rank on the
 * pipeline's middle path (analyzer/pipeline/rankshare.h, pipeline.c's plan_compact_pass): rank 0 expanded and
 * linted, then each other rank's offsets written into the same op array (plan_share,
 * plan_offsets_apply) and that rank linted, once with lint_walk_rank (the reference) and once
 * with lint_walk_rank_moved and plan_offsets_ops. The diagnostics (as printed, with rank, code
 * and level, in order), the error count and the contract rows must be identical; each case also
 * pins the reference's count and first diagnostic (so that it tests what its name says) and how
 * many ranks took the short way to its end (lint_walk_moved_ranks: 3 where rank 0 is clean and
 * nothing makes the walk unsure, fewer where it stops for lint_rank, 0 where rank 0 is not
 * clean). Schedules with a `when:` of rank take the groups of plan_shapes_new: each group's
 * first rank is linted whole, as the base of the ranks after it. */
#include "plantest.h"

typedef struct {
    const char *name;
    const char *yaml;
    size_t errors;         /* lint_walk_end's, both ways */
    const char *first;     /* the first diagnostic as printed; NULL: none */
    size_t rows;           /* contract rows */
    int short_ranks;       /* lint_walk_moved_ranks after ranks 1..3 */
} moved_case;

static const moved_case cases[] = {
    /* tests/bench/gen.c training's step, clean: B is p (the optimizer's slice, the all_gather's send and
     * its in-place flag); the coarse race lint of rank 1 finds p clean, ranks 2 and 3 skip it */
    {"clean_training",
     "world: 4\nlet: {P: 64, e: P / world}\nstreams: [comm]\n"
     "events: [grads, reduced, stepped, gathered]\nsteps:\n"
     "  - alloc: {buf: p, count: P, init: rank_iota}\n  - alloc: {buf: act, count: 3 * P}\n"
     "  - compute: {reads: [p], writes: [act]}\n  - alloc: {buf: gr, count: P}\n"
     "  - compute: {reads: [act, p], writes: [gr]}\n  - free: act\n"
     "  - record: {event: grads}\n  - wait: {event: grads, stream: comm}\n"
     "  - alloc: {buf: sh, count: e}\n"
     "  - reduce_scatter: {send: gr, recv: sh, op: avg, stream: comm}\n"
     "  - record: {event: reduced, stream: comm}\n  - wait: {event: reduced}\n  - free: gr\n"
     "  - compute: {reads: [sh], writes: ['p[rank*e : e]']}\n"
     "  - record: {event: stepped}\n  - wait: {event: stepped, stream: comm}\n"
     "  - all_gather: {send: 'p[rank*e : e]', recv: p, stream: comm}\n"
     "  - record: {event: gathered, stream: comm}\n  - wait: {event: gathered}\n"
     "  - free: [sh, p]\n",
     0, NULL, 0, 3},
    /* x[rank*16 : 16] meets comm's x[32 : 16] on rank 2 alone: rank 1's coarse lint marks x,
     * whose race lint ranks 2 and 3 then run */
    {"race_on_rank_2",
     "world: 4\nstreams: [comm]\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 64}\n"
     "  - compute: {reads: [y], writes: ['x[32 : 16]'], stream: comm}\n"
     "  - compute: {reads: [y], writes: ['x[rank*16 : 16]']}\n"
     "  - sync: device\n  - free: [x, y]\n",
     1,
     "t.yaml:7:37: error: compute on 'default' writes x[32:16] while compute on 'comm' writes "
     "x[32:16]; add record/wait or sync: {stream: comm} [rank 2]",
     0, 3},
    /* the generated mix's cycle (tests/bench/gen.c), clean: B is w (the all_reduce in place on
     * w[rank*16 : 16]); the coarse lint takes that all_reduce's read and write, and the
     * broadcast's, in one pass each (lint_race.c: read_then_write) and finds w clean */
    {"clean_mix_cycle",
     "world: 4\nstreams: [comm]\nevents: [ready, scattered]\nsteps:\n"
     "  - alloc: {buf: w, count: 64, init: rank_iota}\n  - alloc: {buf: g, count: 16}\n"
     "  - reduce_scatter: {send: w, recv: g, op: sum}\n"
     "  - record: {event: scattered}\n  - wait: {event: scattered, stream: comm}\n"
     "  - all_gather: {send: g, recv: w, stream: comm}\n"
     "  - record: {event: ready, stream: comm}\n  - wait: {event: ready}\n"
     "  - all_reduce: {buf: 'w[rank*16 : 16]', op: max}\n"
     "  - broadcast: {buf: g, root: 3}\n  - sync: device\n  - free: [w, g]\n",
     0, NULL, 0, 3},
    /* an all_reduce in place on x[rank*16 : 16] meets comm's write of x[32 : 16] on rank 2
     * alone: its read, in one pass with its write (the coarse lint's and rank 2's own) */
    {"in_place_race_on_rank_2",
     "world: 4\nstreams: [comm]\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 64}\n"
     "  - compute: {reads: [y], writes: ['x[32 : 16]'], stream: comm}\n"
     "  - all_reduce: {buf: 'x[rank*16 : 16]', op: sum}\n"
     "  - sync: device\n  - free: [x, y]\n",
     1,
     "t.yaml:7:24: error: all_reduce on 'default' reads x[32:16] while compute on 'comm' writes "
     "x[32:16]; add record/wait or sync: {stream: comm} [rank 2]",
     0, 3},
    /* 3 * 20 + 20 > 64 on rank 3; the scale has no other view: the short way to the end */
    {"out_of_bounds_on_rank_3",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - scale: {buf: 'x[rank*20 : 20]', by: 3}\n  - free: x\n",
     1, "t.yaml:4:31: error: view 'x[60:20]' is outside 'x' (64 elements) [rank 3]", 0, 3},
    /* the same past the end, in a copy into y (not in B): the whole walk would not check y's
     * race either, so rank 3's walk stops there for lint_rank, after its race on x (found
     * again, not twice) */
    {"out_of_bounds_beside_another_buffer",
     "world: 4\nstreams: [comm]\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 20}\n"
     "  - compute: {writes: ['x[50 : 10]'], stream: comm}\n"
     "  - compute: {writes: ['x[rank*16 : 16]']}\n  - sync: device\n"
     "  - copy: {src: 'x[rank*20 : 20]', dst: y}\n  - sync: device\n  - free: [x, y]\n",
     2,
     "t.yaml:7:25: error: compute on 'default' writes x[48:16] while compute on 'comm' writes "
     "x[50:10]; add record/wait or sync: {stream: comm} [rank 3]",
     0, 2},
    /* no race anywhere: ranks 2 and 3 check the copy alone (moved_snap_pass), and rank 3's
     * check of it stops that walk too, for lint_rank */
    {"out_of_bounds_beside_another_buffer_alone",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 20}\n"
     "  - copy: {src: 'x[rank*20 : 20]', dst: y}\n  - sync: device\n  - free: [x, y]\n",
     1, "t.yaml:5:30: error: view 'x[60:20]' is outside 'x' (64 elements) [rank 3]", 0, 2},
    /* 4 chunks of 16: rank r's x[r*16 : 16] lies in chunk 0, the one kept, on rank 0 alone;
     * ranks 2 and 3 see x released at the scale through what rank 1 recorded there */
    {"outside_the_kept_chunk",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64, chunks: 4}\n"
     "  - release: {buf: x, keep: 0}\n  - scale: {buf: 'x[rank*16 : 16]', by: 3}\n"
     "  - free: x\n",
     3,
     "t.yaml:5:19: error: use of 'x[16:16]' outside chunk 0, the only one kept by its release "
     "[rank 1]",
     0, 3},
    /* rank 1, the first the short way walks (the coarse race lint, the race lint off), races
     * on x and then copies past its end beside y: its walk is taken back for lint_rank, which
     * finds the race before the copy; rank 3 stops at the copy too, rank 2 goes to the end */
    {"out_of_bounds_on_the_first_rank",
     "world: 4\nstreams: [comm]\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 20}\n"
     "  - compute: {writes: ['x[20 : 8]'], stream: comm}\n"
     "  - compute: {writes: ['x[rank*16 : 16]']}\n  - sync: device\n"
     "  - copy: {src: 'x[rank % 2 * 60 : 20]', dst: y}\n  - sync: device\n  - free: [x, y]\n",
     3,
     "t.yaml:7:25: error: compute on 'default' writes x[16:16] while compute on 'comm' writes "
     "x[20:8]; add record/wait or sync: {stream: comm} [rank 1]",
     0, 1},
    /* recv at 0, 16, 40, 48: NCCL's in-place slot (rank * 16) on every rank but 2, where it
     * overlaps the send side elsewhere */
    {"in_place_on_rank_2",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - reduce_scatter: {send: 'x[0 : 64]', recv: 'x[rank*16 + rank/2*(3-rank)*8 : 16]'}\n"
     "  - sync: device\n  - free: x\n",
     1,
     "t.yaml:4:48: error: reduce_scatter send [0:64] and recv [40:16] overlap in one buffer, but "
     "nccl runs in place only at recv - send = 32 elements on rank 2 [rank 2]",
     0, 3},
    /* no rank in the file: recv x[0 : 16] is NCCL's in-place slot (rank * 16) on rank 0
     * alone, so only the in-place flag moves (x is in B for it and for the written view) */
    {"in_place_flag_alone",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - reduce_scatter: {send: x, recv: 'x[0 : 16]'}\n  - sync: device\n  - free: x\n",
     3,
     "t.yaml:4:38: error: reduce_scatter send [0:64] and recv [0:16] overlap in one buffer, but "
     "nccl runs in place only at recv - send = 16 elements on rank 1 [rank 1]",
     0, 3},
    /* NCCL's reduce writes recv on its root alone: x races with comm's read on rank 2; x is no
     * moved view's buffer, B takes it for the reduce */
    {"reduce_root_race",
     "world: 4\nstreams: [comm]\nsteps:\n"
     "  - alloc: {buf: x, count: 16}\n  - alloc: {buf: y, count: 16}\n"
     "  - alloc: {buf: z, count: 64}\n  - reduce: {send: y, recv: x, root: 2}\n"
     "  - compute: {reads: [x], stream: comm}\n  - scale: {buf: 'z[rank*16 : 16]', by: 2}\n"
     "  - sync: device\n  - free: [x, y, z]\n",
     1,
     "t.yaml:8:23: error: compute on 'comm' reads x[0:16] while reduce on 'default' writes "
     "x[0:16]; add record/wait or sync: {stream: default} [rank 2]",
     0, 3},
    /* a race on y, no moved view's buffer, on every rank: rank 0 is not clean, lint_rank walks
     * them all */
    {"race_on_every_rank",
     "world: 4\nstreams: [comm]\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 64}\n"
     "  - compute: {writes: [y], stream: comm}\n"
     "  - compute: {reads: [y], writes: ['x[rank*16 : 16]']}\n"
     "  - sync: device\n  - free: [x, y]\n",
     1,
     "t.yaml:7:23: error: compute on 'default' reads y[0:64] while compute on 'comm' writes "
     "y[0:64]; add record/wait or sync: {stream: comm}",
     0, 0},
    /* groups (plan_shapes_new): rank 0 its own shape for its `when:`, ranks 2 and 3 rank 1's
     * ops with their own offsets, after rank 1's walk as their base */
    {"group_clean",
     "world: 4\nstreams: [comm]\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: rank == 0\n    compute: {writes: [x]}\n  - sync: device\n"
     "  - compute: {writes: ['x[rank*16 : 16]'], stream: comm}\n  - sync: device\n"
     "  - free: x\n",
     0, NULL, 0, 2},
    /* x[rank*16 : 16] meets comm's x[56 : 8] on rank 3 alone: its base, rank 1, is clean */
    {"group_race_on_rank_3",
     "world: 4\nstreams: [comm]\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: rank == 0\n    compute: {writes: [x]}\n  - sync: device\n"
     "  - compute: {writes: ['x[56 : 8]'], stream: comm}\n"
     "  - compute: {writes: ['x[rank*16 : 16]']}\n  - sync: device\n  - free: x\n",
     1,
     "t.yaml:9:25: error: compute on 'default' writes x[48:16] while compute on 'comm' writes "
     "x[56:8]; add record/wait or sync: {stream: comm} [rank 3]",
     0, 2},
    /* two groups, {0, 1} and {2, 3} (`when: rank < 2`): each member after its own base, whose
     * coarse verdicts and records are not the other group's; x[56 : 8] races on rank 3 */
    {"two_groups",
     "world: 4\nstreams: [comm]\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: rank < 2\n    compute: {writes: [x]}\n  - sync: device\n"
     "  - compute: {writes: ['x[rank*16 : 16]'], stream: comm}\n"
     "  - compute: {writes: ['x[56 : 8]']}\n  - sync: device\n  - free: x\n",
     1,
     "t.yaml:9:25: error: compute on 'default' writes x[56:8] while compute on 'comm' writes "
     "x[48:16]; add record/wait or sync: {stream: comm} [rank 3]",
     0, 2},
    /* the same B, x, in two groups: rank 1 finds it race-free on its group's ops, which the
     * group of ranks 2 and 3 does not share (its comm write): rank 3 races */
    {"two_groups_one_buffer",
     "world: 4\nstreams: [comm]\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: rank >= 2\n    compute: {writes: ['x[56 : 8]'], stream: comm}\n"
     "  - compute: {writes: ['x[rank*16 : 16]']}\n  - sync: device\n  - free: x\n",
     1,
     "t.yaml:7:25: error: compute on 'default' writes x[48:16] while compute on 'comm' writes "
     "x[56:8]; add record/wait or sync: {stream: comm} [rank 3]",
     0, 2},
    /* the base, rank 1, races (x[16 : 16] and x[16 : 8]): ranks 2 and 3 take the whole walk */
    {"group_base_not_clean",
     "world: 4\nstreams: [comm]\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: rank == 0\n    compute: {writes: [x]}\n  - sync: device\n"
     "  - compute: {writes: ['x[16 : 8]'], stream: comm}\n"
     "  - compute: {writes: ['x[rank*16 : 16]']}\n  - sync: device\n  - free: x\n",
     1,
     "t.yaml:9:25: error: compute on 'default' writes x[16:16] while compute on 'comm' writes "
     "x[16:8]; add record/wait or sync: {stream: comm} [rank 1]",
     0, 0},
    /* expect_error: rank 0 has contract rows, so lint_rank walks every rank for its own */
    {"expect_error_rows",
     "world: 4\ndtype: int64\nlet: {L: 1003}\nsteps:\n"
     "  - alloc: {buf: input, count: L, init: rank_iota}\n"
     "  - alloc: {buf: output, count: L / world}\n"
     "  - expect_error:\n      name: nd\n      error: size_mismatch\n"
     "      step: {reduce_scatter: {send: input, recv: output}}\n"
     "  - scale: {buf: 'input[rank*8 : 8]', by: 2}\n  - free: [input, output]\n",
     0, NULL, 4, 0},
};

typedef struct {
    ml_diags d;
    lint_result lr;
    size_t errors;
    int short_ranks;
} walked;

/* The middle path's ranks: base[r] is the first rank of r's shape (0 for every rank with
 * plan_offsets_new's one shape), plans[b] each base's whole expansion and po[b] the entries that
 * rewrite it into the later ranks of its shape (NULL: none). */
typedef struct {
    int world;
    int base[4];
    rank_plan plans[4];
    plan_offsets *po[4];
} middle;

/* Lints every rank the middle path's way, a later rank of a shape with lint_walk_rank_moved or
 * not. */
static void walk(sched *s, middle *m, bool moved, walked *out) {
    ml_diags_init(&out->d);
    lint_walk *w = lint_walk_new(s, m->world, NULL, &out->lr);
    for (int r = 0; r < m->world; r++) {
        int b = m->base[r];
        if (b == r) {
            lint_walk_rank(w, &m->plans[r]);
            continue;
        }
        rank_plan pl;
        plan_share(&m->plans[b], r, &pl);
        assert_int_equal(plan_offsets_apply(m->po[b], &pl, r, &out->d), 0);
        size_t n;
        const size_t *ops = plan_offsets_ops(m->po[b], &n);
        if (moved)
            lint_walk_rank_moved(w, &pl, ops, n);
        else
            lint_walk_rank(w, &pl);
        plan_free(&pl);
    }
    for (int b = 0; b < m->world; b++)   /* each base's own again */
        if (m->po[b])
            assert_int_equal(plan_offsets_apply(m->po[b], &m->plans[b], b, &out->d), 0);
    out->short_ranks = lint_walk_moved_ranks(w);
    out->errors = lint_walk_end(w, m->plans, true, &out->d);
}

static void run_case(const moved_case *c) {
    print_message("case %s\n", c->name);
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(c->yaml, &d);
    if (!s)
        pt_dump(&d);
    assert_non_null(s);
    sched_params p = {0};
    p.world = sched_world(s, &p, &d);
    assert_int_equal(p.world, 4);
    middle m = {.world = 4};
    assert_int_equal(plan_expand(s, 0, &p, p.world, 0, NULL, &m.plans[0], &d), 0);
    assert_false(plan_rank_invariant(&m.plans[0], &p));
    /* the middle path: one shape, or groups of ranks (rankshare.h, pipeline.c's plan_compact_pass) */
    plan_offsets *po = plan_offsets_new(&m.plans[0], &p);
    plan_shapes *sh = po ? NULL : plan_shapes_new(&m.plans[0], &p);
    assert_true(po || sh);
    for (int r = 0; r < 4; r++) {
        m.base[r] = sh ? plan_shape(sh, r) : 0;
        if (r > 0 && m.base[r] == r)
            assert_int_equal(plan_expand(s, 0, &p, p.world, r, NULL, &m.plans[r], &d), 0);
    }
    for (int b = 0; b < 4; b++)
        if (m.base[b] == b && b + 1 < 4 && m.base[b + 1] == b)
            m.po[b] = po && b == 0 ? po : plan_shapes_offsets(sh, &m.plans[b]);
    if (po && !m.po[0])
        plan_offsets_free(po);
    walked ref, got;
    walk(s, &m, false, &ref);
    walk(s, &m, true, &got);
    if (ref.errors != c->errors)
        pt_dump(&ref.d);
    assert_int_equal(ref.errors, c->errors);
    assert_int_equal(got.errors, ref.errors);
    assert_int_equal(ref.short_ranks, 0);
    assert_int_equal(got.short_ranks, c->short_ranks);
    assert_int_equal(got.d.items.n, ref.d.items.n);
    char a[1024], b[1024];
    for (size_t k = 0; k < ref.d.items.n; k++) {
        const ml_diag *x = &ML_VEC_AT(&ref.d.items, ml_diag, k);
        const ml_diag *y = &ML_VEC_AT(&got.d.items, ml_diag, k);
        ml_diag_format(x, a, sizeof a);
        ml_diag_format(y, b, sizeof b);
        assert_string_equal(b, a);
        assert_int_equal(y->level, x->level);
        assert_int_equal(y->rank, x->rank);
        assert_string_equal(y->code, x->code);
        if (k == 0 && c->first)
            assert_string_equal(a, c->first);
    }
    if (!c->first)
        assert_int_equal(ref.d.items.n, 0);
    assert_int_equal(ref.lr.n_rows, c->rows);
    assert_int_equal(got.lr.n_rows, ref.lr.n_rows);
    for (size_t k = 0; k < ref.lr.n_rows; k++) {
        const lint_contract_row *x = &ref.lr.rows[k], *y = &got.lr.rows[k];
        assert_string_equal(y->name, x->name);
        assert_int_equal(y->rank, x->rank);
        assert_int_equal(y->pass, x->pass);
        assert_string_equal(y->detail, x->detail);
        assert_ptr_equal(y->step, x->step);
    }
    lint_result_free(&ref.lr);
    lint_result_free(&got.lr);
    ml_diags_free(&ref.d);
    ml_diags_free(&got.d);
    for (int r = 0; r < 4; r++) {
        plan_offsets_free(m.po[r]);
        plan_free(&m.plans[r]);
    }
    plan_shapes_free(sh);
    sched_free(s);
    ml_diags_free(&d);
}

static void moved_walk_is_the_whole_walk(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        run_case(&cases[k]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(moved_walk_is_the_whole_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
