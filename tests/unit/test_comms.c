/* SPDX-License-Identifier: MIT */
/* test_comms.c — runtime/ir/comms.c: a schedule's communicators resolved at a world. Each case
 * states the groups it expects and why: mesh ranks are row-major over the dimensions, outermost
 * first (docs/schedule.md); a color split is MPI_Comm_split's (groups by color, members by key
 * then rank, color < 0 in none), its groups numbered by least member; a rank list is one group
 * in the order written. */
#include "testutil.h"
#include "ir/comms.h"
#include "exec/rt.h"

#include <stdlib.h>

typedef struct {
    sched *s;
    const ml_comms *c;
    ml_diags d;
} loaded;

/* Loads yaml and resolves its communicators at world (0: the file's). */
static void load(loaded *t, const char *yaml, int world) {
    ml_diags_init(&t->d);
    t->s = tu_load(yaml, &t->d);
    if (!t->s)
        fail_msg("load: %s", tu_first_error(&t->d));
    sched_params p = {0};
    t->c = sched_comms(t->s, &p, world ? world : t->s->world, &t->d);
}

static void unload(loaded *t) {
    sched_free(t->s);
    ml_diags_free(&t->d);
}

static uint32_t comm_index(const loaded *t, const char *name) {
    for (uint32_t k = 0; k < ml_comms_count(t->c); k++)
        if (!strcmp(ml_comms_name(t->c, k), name))
            return k;
    fail_msg("no communicator '%s'", name);
    return 0;
}

/* Every rank's size, local rank and group on comm, and global(rank, local) back to itself. */
static void expect_ranks(const loaded *t, const char *name, int world, const int *size,
                         const int *local, const int *group) {
    uint32_t k = comm_index(t, name);
    for (int r = 0; r < world; r++) {
        assert_int_equal(ml_comms_size(t->c, k, r), size[r]);
        assert_int_equal(ml_comms_local(t->c, k, r), local[r]);
        assert_int_equal(ml_comms_group(t->c, k, r), group[r]);
        if (local[r] >= 0)
            assert_int_equal(ml_comms_global(t->c, k, r, local[r]), r);
    }
}

static const char mesh2x2[] = "world: 4\n"
                              "mesh: {dp: 2, tp: 2}\n"
                              "comms:\n"
                              "  tp: {mesh_dim: tp}\n"
                              "  dp: {mesh_dim: dp}\n"
                              "  all: {mesh_dim: [dp, tp]}\n"
                              "steps:\n"
                              "  - alloc: {buf: x, count: 4}\n";

/* dp 2 x tp 2: rank = 2 dp + tp. tp's groups {0,1} {2,3} (ranks differing in tp only), dp's
 * {0,2} {1,3}; [dp, tp] is the world in world order. */
static void mesh_2x2(void **state) {
    (void)state;
    loaded t;
    load(&t, mesh2x2, 0);
    assert_non_null(t.c);
    assert_int_equal(ml_comms_count(t.c), 4);   /* world, tp, dp, all */
    assert_string_equal(ml_comms_name(t.c, 0), "world");
    assert_false(ml_comms_world_only(t.c));
    expect_ranks(&t, "tp", 4, (int[]){2, 2, 2, 2}, (int[]){0, 1, 0, 1}, (int[]){0, 0, 1, 1});
    expect_ranks(&t, "dp", 4, (int[]){2, 2, 2, 2}, (int[]){0, 0, 1, 1}, (int[]){0, 1, 0, 1});
    expect_ranks(&t, "all", 4, (int[]){4, 4, 4, 4}, (int[]){0, 1, 2, 3}, (int[]){0, 0, 0, 0});
    uint32_t tp = comm_index(&t, "tp"), dp = comm_index(&t, "dp");
    assert_int_equal(ml_comms_groups(t.c, tp), 2);
    assert_int_equal(ml_comms_groups(t.c, dp), 2);
    assert_int_equal(ml_comms_global(t.c, tp, 2, 1), 3);   /* rank 2's tp peer */
    assert_int_equal(ml_comms_global(t.c, dp, 1, 1), 3);   /* rank 1's dp peer */
    assert_int_equal(ml_comms_global(t.c, tp, 2, 2), -1);  /* a group of 2 has no member 2 */
    assert_int_equal(ml_comms_global(t.c, tp, 2, -1), -1);
    assert_int_equal(ml_comms_size(t.c, tp, 4), 0);        /* outside the world */
    assert_int_equal(ml_comms_local(t.c, tp, -1), -1);
    /* the world, communicator 0: one group, every rank its own world rank */
    assert_int_equal(ml_comms_size(t.c, 0, 3), 4);
    assert_int_equal(ml_comms_local(t.c, 0, 3), 3);
    assert_int_equal(ml_comms_global(t.c, 0, 3, 1), 1);
    assert_int_equal(ml_comms_groups(t.c, 0), 1);
    unload(&t);
}

/* pp 2 x dp 2 x tp 2 at world 8: rank = 4 pp + 2 dp + tp. [dp, tp] groups by pp: {0..3}
 * {4..7}, local 2 dp + tp; [pp, tp] groups by dp, local 2 pp + tp: rank 6 (pp 1, dp 1, tp 0) is
 * member 2 of group 1 = {2, 3, 6, 7}. */
static void mesh_2x2x2(void **state) {
    (void)state;
    loaded t;
    load(&t,
         "world: 8\n"
         "mesh: {pp: 2, dp: 2, tp: 2}\n"
         "comms:\n"
         "  dptp: {mesh_dim: [dp, tp]}\n"
         "  pptp: {mesh_dim: [pp, tp]}\n"
         "  pp: {mesh_dim: pp}\n"
         "steps:\n"
         "  - alloc: {buf: x, count: 4}\n",
         0);
    assert_non_null(t.c);
    expect_ranks(&t, "dptp", 8, (int[]){4, 4, 4, 4, 4, 4, 4, 4},
                 (int[]){0, 1, 2, 3, 0, 1, 2, 3}, (int[]){0, 0, 0, 0, 1, 1, 1, 1});
    expect_ranks(&t, "pptp", 8, (int[]){4, 4, 4, 4, 4, 4, 4, 4},
                 (int[]){0, 1, 0, 1, 2, 3, 2, 3}, (int[]){0, 0, 1, 1, 0, 0, 1, 1});
    expect_ranks(&t, "pp", 8, (int[]){2, 2, 2, 2, 2, 2, 2, 2},
                 (int[]){0, 0, 0, 0, 1, 1, 1, 1}, (int[]){0, 1, 2, 3, 0, 1, 2, 3});
    uint32_t pptp = comm_index(&t, "pptp");
    int want[4] = {2, 3, 6, 7};
    for (int j = 0; j < 4; j++)
        assert_int_equal(ml_comms_global(t.c, pptp, 6, j), want[j]);
    assert_int_equal(ml_comms_global(t.c, comm_index(&t, "dptp"), 5, 3), 7);
    assert_int_equal(ml_comms_groups(t.c, pptp), 2);
    assert_int_equal(ml_comms_groups(t.c, comm_index(&t, "pp")), 4);
    unload(&t);
}

/* color rank % 3 - 1 at world 6: ranks 0 and 3 have -1 (in no group), 1 and 4 color 0, 2 and 5
 * color 1. key -rank puts the larger rank first: {4, 1} and {5, 2}, numbered by least member
 * (1 before 2). */
static void color_negative_and_key(void **state) {
    (void)state;
    loaded t;
    load(&t,
         "world: 6\n"
         "comms:\n"
         "  c: {color: rank % 3 - 1, key: -rank}\n"
         "steps:\n"
         "  - alloc: {buf: x, count: 4}\n",
         0);
    assert_non_null(t.c);
    expect_ranks(&t, "c", 6, (int[]){0, 2, 2, 0, 2, 2}, (int[]){-1, 1, 1, -1, 0, 0},
                 (int[]){-1, 0, 1, -1, 0, 1});
    uint32_t c = comm_index(&t, "c");
    assert_int_equal(ml_comms_groups(t.c, c), 2);
    assert_int_equal(ml_comms_global(t.c, c, 1, 0), 4);
    assert_int_equal(ml_comms_global(t.c, c, 2, 0), 5);
    assert_int_equal(ml_comms_global(t.c, c, 0, 0), -1);   /* rank 0 is in none */
    unload(&t);
}

/* Groups are numbered by least member, not by color: color 1 - rank / 2 gives {0,1} color 1 and
 * {2,3} color 0; group 0 is {0,1}. Without a key, members are in rank order. */
static void color_groups_by_least_member(void **state) {
    (void)state;
    loaded t;
    load(&t,
         "world: 4\n"
         "comms:\n"
         "  c: {color: 1 - rank / 2}\n"
         "steps:\n"
         "  - alloc: {buf: x, count: 4}\n",
         0);
    assert_non_null(t.c);
    expect_ranks(&t, "c", 4, (int[]){2, 2, 2, 2}, (int[]){0, 1, 0, 1}, (int[]){0, 0, 1, 1});
    unload(&t);
}

/* ranks [3, 1]: one group, rank 3 member 0 and rank 1 member 1; 0 and 2 in none. */
static void rank_list(void **state) {
    (void)state;
    loaded t;
    load(&t,
         "world: 4\n"
         "comms:\n"
         "  pair: {ranks: [3, 1]}\n"
         "steps:\n"
         "  - alloc: {buf: x, count: 4}\n",
         0);
    assert_non_null(t.c);
    expect_ranks(&t, "pair", 4, (int[]){0, 2, 0, 2}, (int[]){-1, 1, -1, 0},
                 (int[]){-1, 0, -1, 0});
    uint32_t pair = comm_index(&t, "pair");
    assert_int_equal(ml_comms_groups(t.c, pair), 1);
    assert_int_equal(ml_comms_global(t.c, pair, 1, 0), 3);
    assert_int_equal(ml_comms_global(t.c, pair, 3, 1), 1);
    assert_int_equal(ml_comms_def(t.c, pair)->kind, COMM_RANKS);
    unload(&t);
}

/* Without `comms:` the world is the only communicator. */
static void world_only(void **state) {
    (void)state;
    loaded t;
    load(&t, "world: 4\nsteps:\n  - alloc: {buf: x, count: 4}\n", 0);
    assert_non_null(t.c);
    assert_true(ml_comms_world_only(t.c));
    assert_int_equal(ml_comms_count(t.c), 1);
    assert_int_equal(ml_comms_size(t.c, 0, 2), 4);
    unload(&t);
}

/* The same schedule at another world (--world): the answer is for that world, not the cached
 * one; at world 8 the 2 x 2 mesh is not the world, an error at `mesh:`'s value. */
static void resolved_per_world(void **state) {
    (void)state;
    loaded t;
    load(&t, mesh2x2, 0);
    assert_non_null(t.c);
    sched_params p = {0};
    assert_null(sched_comms(t.s, &p, 8, &t.d));
    assert_string_equal(tu_first_error(&t.d),
                        "t.yaml:2:7: error: the mesh (dp 2 x tp 2) is not the world (8 ranks)");
    unload(&t);
    /* sizes from a let: tp = world / 2 at world 8 gives dp 2 x tp 4 */
    load(&t,
         "world: 4\n"
         "let: {n: world / 2}\n"
         "mesh: {dp: 2, tp: n}\n"
         "comms:\n"
         "  tp: {mesh_dim: tp}\n"
         "steps:\n"
         "  - alloc: {buf: x, count: 4}\n",
         8);
    assert_non_null(t.c);
    assert_int_equal(ml_comms_size(t.c, comm_index(&t, "tp"), 5), 4);
    assert_int_equal(ml_comms_local(t.c, comm_index(&t, "tp"), 5), 1);
    unload(&t);
}

/* The resolution's errors: each NULL, with its message. */
static void expect_error(const char *yaml, const char *want) {
    loaded t;
    load(&t, yaml, 0);
    assert_null(t.c);
    assert_string_equal(tu_first_error(&t.d), want);
    unload(&t);
}

static void errors(void **state) {
    (void)state;
    /* 3 x 2 = 6 ranks at world 4 */
    expect_error("world: 4\nmesh: {dp: 3, tp: 2}\ncomms:\n  tp: {mesh_dim: tp}\n"
                 "steps:\n  - alloc: {buf: x, count: 4}\n",
                 "t.yaml:2:7: error: the mesh (dp 3 x tp 2) is not the world (4 ranks)");
    /* a size past the world, at the dimension's name */
    expect_error("world: 4\nmesh: {dp: 8, tp: 2}\ncomms:\n  tp: {mesh_dim: tp}\n"
                 "steps:\n  - alloc: {buf: x, count: 4}\n",
                 "t.yaml:2:8: error: mesh dimension 'dp' has size 8 at world 4 (1 to the world)");
    expect_error("world: 4\ncomms:\n  pair: {ranks: [0, 4]}\n"
                 "steps:\n  - alloc: {buf: x, count: 4}\n",
                 "t.yaml:3:3: error: communicator 'pair': member 1 is rank 4, outside the world "
                 "(0 to 3)");
    expect_error("world: 4\ncomms:\n  pair: {ranks: [-1, 2]}\n"
                 "steps:\n  - alloc: {buf: x, count: 4}\n",
                 "t.yaml:3:3: error: communicator 'pair': member 0 is rank -1, outside the world "
                 "(0 to 3)");
    expect_error("world: 4\ncomms:\n  trio: {ranks: [1, 2, 1]}\n"
                 "steps:\n  - alloc: {buf: x, count: 4}\n",
                 "t.yaml:3:3: error: communicator 'trio': rank 1 is listed twice");
}

/* NCCL shares a split's resources by its parent's splitShare: the world is made with it only
 * where every communicator split from it asks to share (rt_sched_splits_share); none split, or
 * the asks mixed, and it is not. */
static void splits_share(void **state) {
    (void)state;
    static const char *const cases[][2] = {
        {"world: 2\nsteps:\n  - alloc: {buf: x, count: 4}\n", "no"},
        {"world: 2\ncomms:\n  a: {ranks: [0], share: true}\n  b: {ranks: [1], share: true}\n"
         "steps:\n  - alloc: {buf: x, count: 4}\n", "yes"},
        {"world: 2\ncomms:\n  a: {ranks: [0], share: true}\n  b: {ranks: [1]}\n"
         "steps:\n  - alloc: {buf: x, count: 4}\n", "no"},
        {"world: 2\ncomms:\n  a: {ranks: [0]}\n"
         "steps:\n  - alloc: {buf: x, count: 4}\n", "no"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        loaded t;
        load(&t, cases[k][0], 0);
        assert_int_equal(rt_sched_splits_share(t.s), !strcmp(cases[k][1], "yes"));
        unload(&t);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mesh_2x2),
        cmocka_unit_test(mesh_2x2x2),
        cmocka_unit_test(color_negative_and_key),
        cmocka_unit_test(color_groups_by_least_member),
        cmocka_unit_test(rank_list),
        cmocka_unit_test(world_only),
        cmocka_unit_test(resolved_per_world),
        cmocka_unit_test(errors),
        cmocka_unit_test(splits_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
