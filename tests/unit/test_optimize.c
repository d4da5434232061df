/* SPDX-License-Identifier: MIT */
/* test_optimize.c — memlife optimize (analyzer/optimize*.c), the floor (floor.c) and the YAML
 * writer (emit_yaml.c). Run from the repository root (tests/run.sh does), so the shipped
 * schedules are read from schedules/.
 *
 * Where the numbers come from:
 *   seed (chapter 07, 4 x V100, M = 256 MiB): naive RS+AG peak 576 MiB, the optimized plan
 *     (free the input before allocating the AllGather output) 320 MiB, RS-only 64 / 320 MiB;
 *   docs/design.md beyond the seed: in-place RS then in-place AG on one buffer M / M (256 MiB), in-place
 *     RS on world chunks then release M/N / M (64 / 256 MiB);
 *   schedules/fsdp_layers.yaml's own header: 128 / 256 MiB at world 4, peak at the backward
 *     compute (params + grads + both kept shard buffers), which is also its floor;
 *   schedules/fsdp_naive.yaml's header: the same step with every buffer allocated up front,
 *     128 / 704 MiB at world 4, floor 256 MiB (fsdp_layers.yaml's peak). */
#include "plantest.h"
#include "optimize/optimize.h"
#include "optimize/emit_yaml.h"

#include <inttypes.h>
#include <string.h>

static sched *load(const char *path) {
    ml_diags d;
    ml_diags_init(&d);
    sched *s = sched_load_file(path, NULL, &d);
    if (!s)
        ml_diags_print(&d, stderr);
    ml_diags_free(&d);
    assert_non_null(s);
    return s;
}

/* Optimizes s with the given transformations ("lifetimes,inplace", NULL for all); frees s. */
static void optimize_loaded(sched *s, const char *allow, opt_result *r) {
    opt_options o;
    opt_options_default(&o);
    if (allow) {
        for (int k = 0; k < OPT_KIND_COUNT; k++)
            o.allow[k] = strstr(allow, opt_kind_names[k]) != NULL;
    }
    ml_diags d;
    ml_diags_init(&d);
    int rc = optimize_sched(s, &o, r, &d);
    ml_diags_print(&d, stderr);
    ml_diags_free(&d);
    assert_int_equal(rc, 0);
    r->original = NULL;   /* s is freed below; the test reads only numbers and text */
    sched_free(s);
}

static void optimize(const char *path, const char *allow, opt_result *r) {
    optimize_loaded(load(path), allow, r);
}

static const opt_mem *final_mem(const opt_result *r, int rank) {
    const opt_plan_result *p = &r->plans[0];
    for (size_t k = p->n_stages; k-- > 0;)
        if (p->stages[k].kept)
            return &p->stages[k].after[rank];
    return &p->before[rank];
}

static const opt_stage *stage(const opt_result *r, opt_kind kind) {
    for (size_t k = 0; k < r->plans[0].n_stages; k++)
        if (r->plans[0].stages[k].kind == kind)
            return &r->plans[0].stages[k];
    return NULL;
}

/* seed: naive RS+AG at world 4 peaks at 576 MiB; lifetimes alone give the chapter's optimized
 * plan, 320 MiB (steady stays 256 MiB). */
static void test_naive_lifetimes_only(void **state) {
    (void)state;
    opt_result r;
    optimize("schedules/seed/03_rs_ag_naive.yaml", "lifetimes", &r);
    assert_int_equal(r.world, 4);
    for (int rank = 0; rank < 4; rank++) {
        assert_int_equal(r.plans[0].before[rank].peak[VIEW_REQUESTED], 576 * MiB);
        assert_int_equal(final_mem(&r, rank)->peak[VIEW_REQUESTED], 320 * MiB);
        assert_int_equal(final_mem(&r, rank)->peak[VIEW_DEVICE], 320 * MiB);
        assert_int_equal(final_mem(&r, rank)->steady[VIEW_REQUESTED], 256 * MiB);
        assert_int_equal(r.plans[0].floor[rank], 256 * MiB);
    }
    /* the free of 'full' follows the reduce_scatter on the default stream: stream order
     * completes it, no host sync is added */
    assert_non_null(strstr(r.yaml.s, "  - reduce_scatter: {send: full, recv: shard, op: sum}\n"
                                     "  # memlife optimize (line 29, rewritten): lifetimes: free of "
                                     "'full'"));
    assert_null(strstr(r.yaml.s, "sync: {stream"));
    assert_int_equal(r.plans[0].host_syncs_added, 0);
    opt_result_free(&r);
}

/* seed + docs/design.md: with in place as well, one buffer: 256 MiB, the floor. */
static void test_naive_all(void **state) {
    (void)state;
    opt_result r;
    optimize("schedules/seed/03_rs_ag_naive.yaml", NULL, &r);
    const opt_stage *lt = stage(&r, OPT_LIFETIMES), *ip = stage(&r, OPT_INPLACE);
    assert_true(lt && lt->kept && ip && ip->kept);
    assert_int_equal(lt->after[0].peak[VIEW_REQUESTED], 320 * MiB);
    assert_int_equal(ip->after[0].peak[VIEW_REQUESTED], 256 * MiB);
    assert_int_equal(final_mem(&r, 3)->peak[VIEW_REQUESTED], 256 * MiB);
    assert_int_equal(final_mem(&r, 3)->steady[VIEW_REQUESTED], 256 * MiB);
    assert_non_null(strstr(r.yaml.s, "reduce_scatter: {send: full, recv: 'full[rank * q : q]'"));
    assert_non_null(strstr(r.yaml.s, "all_gather: {send: 'full[rank * q : q]', recv: full}"));
    /* no step allocates it; the removed alloc's line says what it was */
    assert_null(strstr(r.yaml.s, "\n  - alloc: {buf: gathered"));
    assert_non_null(strstr(r.yaml.s, "\n  # memlife optimize (line 25, removed): "
                                     "- alloc: {buf: gathered, count: world * q}\n"));
    opt_result_free(&r);
}

/* seed RS-only 64 / 320 MiB; docs/design.md: in place then chunked release, 64 / 256 MiB. In place
 * alone trades the steady for the peak (256 / 256 MiB). */
static void test_rs_only_chunked(void **state) {
    (void)state;
    opt_result r;
    optimize("schedules/seed/02_rs_only.yaml", NULL, &r);
    const opt_stage *ip = stage(&r, OPT_INPLACE), *ch = stage(&r, OPT_CHUNKED);
    assert_true(ip && ip->kept && ch && ch->kept);
    for (int rank = 0; rank < 4; rank++) {
        assert_int_equal(r.plans[0].before[rank].peak[VIEW_REQUESTED], 320 * MiB);
        assert_int_equal(r.plans[0].before[rank].steady[VIEW_REQUESTED], 64 * MiB);
        assert_int_equal(ip->after[rank].peak[VIEW_REQUESTED], 256 * MiB);
        assert_int_equal(ip->after[rank].steady[VIEW_REQUESTED], 256 * MiB);
        assert_int_equal(ch->after[rank].peak[VIEW_REQUESTED], 256 * MiB);
        assert_int_equal(ch->after[rank].steady[VIEW_REQUESTED], 64 * MiB);
        assert_int_equal(ch->after[rank].steady[VIEW_DEVICE], 64 * MiB);
    }
    assert_non_null(strstr(r.yaml.s, "alloc: {buf: full, count: world * q, chunks: world}"));
    /* the user's sync line as written (its comment too), the free it guarded gone, the release */
    assert_non_null(strstr(r.yaml.s, "  - sync: device             # the chapter's safe lifetime "
                                     "boundary before freeing the input\n"
                                     "  # memlife optimize (line 27, removed): - free: full\n"
                                     "  # memlife optimize (added): chunked: added: releases every "
                                     "chunk of 'full' but this rank's\n"
                                     "  - release: {buf: full, keep: rank}\n"));
    opt_result_free(&r);
}

/* schedules/fsdp_layers.yaml: 128 / 256 MiB at world 4, and 256 MiB is its floor (the backward
 * compute needs params and grads, 64 MiB each, beside the two kept 64 MiB shard buffers): the
 * optimizer finds nothing to save, and says so. */
static void test_fsdp_at_floor(void **state) {
    (void)state;
    opt_result r;
    optimize("schedules/fsdp_layers.yaml", NULL, &r);
    for (int rank = 0; rank < 4; rank++) {
        assert_int_equal(r.plans[0].before[rank].peak[VIEW_REQUESTED], 256 * MiB);
        assert_int_equal(final_mem(&r, rank)->peak[VIEW_REQUESTED], 256 * MiB);
        assert_int_equal(final_mem(&r, rank)->steady[VIEW_REQUESTED], 128 * MiB);
        assert_int_equal(r.plans[0].floor[rank], 256 * MiB);
    }
    for (size_t k = 0; k < r.plans[0].n_stages; k++)
        assert_false(r.plans[0].stages[k].kept);
    opt_result_free(&r);
}

/* schedules/fsdp_naive.yaml at world 4, L = 4 layers of P = 64 MiB, s = P/4 = 16 MiB:
 *   before: kept flat shards 2*L*s (128) + the pool: L params (256), L grads (256), L grad
 *     shards (L*s = 64) = 704 MiB; steady 128 MiB.
 *   floor: at a backward compute, the flat shards 2*L*s + that layer's params P + grads P
 *     = 128 + 64 + 64 = 256 MiB (the forward's gathered params are dead once read: the backward
 *     gathers them again).
 *   lifetimes alone reach it: params0..2 are split at their backward all_gather (freed after
 *     the forward compute, allocated again before the gather; params3's gather follows its
 *     forward compute with no alloc between, so it is not split), every buffer lives from
 *     its first to its last use (grad_shards from the first fold): forward param_shards + P =
 *     128 MiB; backward compute of layer 3, 64 + 2*P = 192 MiB; of layers 2..0, with
 *     grad_shards too, 2*L*s + 2*P = 256 MiB.
 *   In place (the ReduceScatter into its gradient's rank slice) is valid but saves nothing at
 *   the peak, which is the compute: not kept. Steady stays 128 MiB. */
static void test_fsdp_naive(void **state) {
    (void)state;
    opt_result r;
    optimize("schedules/fsdp_naive.yaml", NULL, &r);
    const opt_stage *lt = stage(&r, OPT_LIFETIMES), *ip = stage(&r, OPT_INPLACE);
    assert_true(lt && lt->kept && ip && !ip->kept);
    for (int rank = 0; rank < 4; rank++) {
        assert_int_equal(r.plans[0].before[rank].peak[VIEW_REQUESTED], 704 * MiB);
        assert_int_equal(r.plans[0].before[rank].steady[VIEW_REQUESTED], 128 * MiB);
        assert_int_equal(r.plans[0].floor[rank], 256 * MiB);
        assert_int_equal(final_mem(&r, rank)->peak[VIEW_REQUESTED], 256 * MiB);
        assert_int_equal(final_mem(&r, rank)->peak[VIEW_DEVICE], 256 * MiB);
        assert_int_equal(final_mem(&r, rank)->steady[VIEW_REQUESTED], 128 * MiB);
    }
    /* params0 ends its forward lifetime (right after its compute, by stream order) before
     * params1 exists */
    assert_non_null(strstr(r.yaml.s, "  - compute: {reads: [params0]}\n"
                                     "  # memlife optimize (added): lifetimes: free of 'params0' "
                                     "added right after its last use"));
    assert_non_null(strstr(r.yaml.s, "  - free: params0\n"
                                     "  # memlife optimize (line 51): lifetimes: alloc of 'params1' "
                                     "moved down"));
    assert_non_null(strstr(r.yaml.s, "  # memlife optimize (added): lifetimes: 'params2' allocated "
                                     "again for the all_gather at line "));
    /* params3's forward compute is followed by its backward gather: nothing is allocated in
     * between, so splitting it would save nothing and cost a sync */
    assert_null(strstr(r.yaml.s, "'params3' allocated again"));
    opt_result_free(&r);
}

/* Split at an overwrite (optimize_lifetimes.c), on a 1 MiB src, a 4 MiB x and an 8 MiB y that
 * lives between two writes of x. STEP is the second write of x:
 *   split: x is freed after its first read, so y meets only src: 1 + 8 = 9 MiB (the floor);
 *   no split: x, src and y together: 1 + 4 + 8 = 13 MiB.
 * Not an overwrite: a write that reads x too (in-place AllGather), a part of x, a write on some
 * ranks only (when:), a Reduce (its recv is written on the root only). */
static void test_split_at_overwrite(void **state) {
    (void)state;
    static const struct {
        const char *step;
        uint64_t peak;
    } rows[] = {
        {"  - all_gather: {send: src, recv: x}\n", 9},
        {"  - init: {buf: x, const: 1}\n", 9},
        {"  - broadcast: {send: x4, recv: x, root: 0}\n", 9},
        {"  - all_gather: {send: \"x[rank * q : q]\", recv: x}\n", 13},
        {"  - init: {buf: \"x[0 : q]\", const: 1}\n", 13},
        {"  - {init: {buf: x, const: 1}, when: rank == 0}\n", 13},
        {"  - reduce: {send: x4, recv: x, root: 0}\n", 13},
    };
    for (size_t k = 0; k < ML_ARRAY_LEN(rows); k++) {
        char yaml[1024];
        snprintf(yaml, sizeof yaml,
                 "world: 4\n"
                 "let: {q: 256 * 1024}\n"          /* float32 elements of 1 MiB */
                 "steps:\n"
                 "  - alloc: {buf: src, count: q, init: rank_iota}\n"
                 "  - alloc: {buf: x, count: 4 * q}\n"
                 "  - alloc: {buf: x4, count: 4 * q, init: {const: 1}}\n"
                 "  - all_gather: {send: src, recv: x}\n"
                 "  - compute: {reads: [x, x4]}\n"
                 "  - sync: device\n"
                 "  - free: x4\n"
                 "  - alloc: {buf: y, count: 8 * q}\n"
                 "  - compute: {writes: [y]}\n"
                 "  - sync: device\n"
                 "  - free: y\n"
                 "  - alloc: {buf: x4, count: 4 * q, init: {const: 2}}\n"
                 "%s"
                 "  - compute: {reads: [x, x4, src]}\n"
                 "  - sync: device\n"
                 "  - free: [x, x4, src]\n",
                 rows[k].step);
        ml_diags d;
        ml_diags_init(&d);
        sched *s = tu_load(yaml, &d);
        ml_diags_free(&d);
        assert_non_null(s);
        opt_result r;
        optimize_loaded(s, "lifetimes", &r);
        if (final_mem(&r, 1)->peak[VIEW_REQUESTED] != rows[k].peak * MiB)
            fail_msg("row %zu (%s): peak %" PRIu64 " MiB, want %" PRIu64, k, rows[k].step,
                     final_mem(&r, 1)->peak[VIEW_REQUESTED] / MiB, rows[k].peak);
        assert_int_equal(strstr(r.yaml.s, "allocated again for") != NULL, rows[k].peak == 9);
        opt_result_free(&r);
    }
}

/* The rewritten text loads back, lints clean and predicts what the report says. */
static void test_output_loads_back(void **state) {
    (void)state;
    static const char *const files[] = {
        "schedules/seed/02_rs_only.yaml", "schedules/seed/03_rs_ag_naive.yaml",
        "schedules/optimize/rs_ag_checked.yaml", "schedules/optimize/rs_only_checked.yaml",
        "schedules/seed/05_contract_padding_trim.yaml", "schedules/fsdp_naive.yaml",
    };
    for (size_t f = 0; f < ML_ARRAY_LEN(files); f++) {
        opt_result r;
        optimize(files[f], NULL, &r);
        ml_diags d;
        ml_diags_init(&d);
        sched *s = sched_load_buffer("out.yaml", r.yaml.s, r.yaml.n, NULL, &d);
        assert_non_null(s);
        rank_plan plans[4];
        for (int k = 0; k < 4; k++)
            assert_int_equal(plan_expand(s, 0, NULL, 4, k, NULL, &plans[k], &d), 0);
        lint_options lo;
        lint_options_default(&lo);
        lint_result lr = {0};
        assert_int_equal(lint_plans(plans, 4, &lo, &lr, &d), 0);
        assert_int_equal(d.warnings, 0);
        for (int k = 0; k < 4; k++) {
            pred_rank p;
            assert_int_equal(predict_rank(&plans[k], &p, &d), 0);
            assert_int_equal(p.peak[VIEW_REQUESTED], final_mem(&r, k)->peak[VIEW_REQUESTED]);
            assert_int_equal(p.steady[VIEW_REQUESTED], final_mem(&r, k)->steady[VIEW_REQUESTED]);
            pred_rank_free(&p);
            plan_free(&plans[k]);
        }
        lint_result_free(&lr);
        sched_free(s);
        ml_diags_free(&d);
        opt_result_free(&r);
    }
}

/* ---- the floor ------------------------------------------------------------------------------- */

static uint64_t floor_of(const char *yaml, int rank) {
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    assert_non_null(s);
    rank_plan p;
    assert_int_equal(plan_expand(s, 0, NULL, 4, rank, NULL, &p, &d), 0);
    uint64_t f = floor_rank(&p, NULL);
    plan_free(&p);
    sched_free(s);
    ml_diags_free(&d);
    return f;
}

/* seed lifetimes at M = 256 MiB, world 4: every one needs 256 MiB by its data (the AllReduce
 * tensor; RS-only: the input while it is reduced, the shard in its rank slice as NCCL allows;
 * RS+AG: the same, then the gathered result with the shard in its slice). */
static void test_floor_seed(void **state) {
    (void)state;
    char yaml[1024];
    for (int k = PT_ALLREDUCE_FULL; k <= PT_RS_AG_OPTIMIZED; k++) {
        snprintf(yaml, sizeof yaml, pt_seed(k), "256MiB");
        assert_int_equal(floor_of(yaml, 0), 256 * MiB);
        assert_int_equal(floor_of(yaml, 3), 256 * MiB);
    }
}

/* The in-place allowance holds only where the rank slice is dead after the ReduceScatter: when
 * the input is read again, input and shard must both exist (4 + 1 MiB). A compute's writes are
 * accesses, not overwrites: the buffer it writes keeps its earlier data needed. */
static void test_floor_rules(void **state) {
    (void)state;
    assert_int_equal(floor_of("world: 4\n"
                              "steps:\n"
                              "  - alloc: {buf: x, bytes: 4MiB}\n"
                              "  - alloc: {buf: s, bytes: 1MiB}\n"
                              "  - reduce_scatter: {send: x, recv: s}\n"
                              "  - compute: {reads: [x, s]}\n"
                              "  - free: [x, s]\n", 1),
                     5 * MiB);
    assert_int_equal(floor_of("world: 4\n"
                              "steps:\n"
                              "  - alloc: {buf: x, bytes: 4MiB}\n"
                              "  - alloc: {buf: s, bytes: 1MiB}\n"
                              "  - reduce_scatter: {send: x, recv: s}\n"
                              "  - free: x\n"
                              "  - compute: {reads: [s]}\n", 1),
                     4 * MiB);
    /* acc is the result; the compute that writes it must not make its earlier value dead */
    assert_int_equal(floor_of("world: 4\n"
                              "steps:\n"
                              "  - alloc: {buf: acc, bytes: 2MiB}\n"
                              "  - alloc: {buf: t, bytes: 3MiB}\n"
                              "  - compute: {writes: [t]}\n"
                              "  - compute: {reads: [t], writes: [acc]}\n"
                              "  - free: t\n", 0),
                     5 * MiB);
}

/* ---- the YAML writer -------------------------------------------------------------------------- */

static void emit(const sched *s, ml_str *out) {
    ml_diags d;
    ml_diags_init(&d);
    assert_int_equal(emit_yaml(s, NULL, out, &d), 0);
    ml_diags_free(&d);
}

/* Every shipped schedule: written, read back and written again gives the same text, and the
 * read-back predicts the same memory on every rank. */
static void test_emit_round_trip(void **state) {
    (void)state;
    static const char *const files[] = {
        "schedules/seed/01_allreduce_full.yaml", "schedules/seed/02_rs_only.yaml",
        "schedules/seed/03_rs_ag_naive.yaml", "schedules/seed/04_rs_ag_optimized.yaml",
        "schedules/seed/05_contract_exact_sum.yaml", "schedules/seed/05_contract_nondivisible.yaml",
        "schedules/seed/05_contract_padding_trim.yaml", "schedules/seed/05_contract_wrong_op.yaml",
        "schedules/seed/05_contract_wrong_shard_order.yaml",
        "schedules/seed/06_bench_direct_decomposed.yaml", "schedules/chunked_rs_only.yaml",
        "schedules/fsdp_layers.yaml", "schedules/fsdp_naive.yaml", "schedules/inplace_rs_ag.yaml",
        "schedules/page_stress.yaml",
        "schedules/optimize/rs_ag_checked.yaml", "schedules/optimize/rs_only_checked.yaml",
    };
    for (size_t f = 0; f < ML_ARRAY_LEN(files); f++) {
        sched *s = load(files[f]);
        ml_str a = {0}, b = {0};
        emit(s, &a);
        ml_diags d;
        ml_diags_init(&d);
        sched *t = sched_load_buffer("again.yaml", a.s, a.n, NULL, &d);
        if (!t)
            ml_diags_print(&d, stderr);
        assert_non_null(t);
        emit(t, &b);
        assert_string_equal(a.s, b.s);
        int world = s->world;
        for (uint32_t k = 0; k < s->n_plans; k++)
            for (int rank = 0; rank < world; rank++) {
                rank_plan p1, p2;
                pred_rank r1, r2;
                assert_int_equal(plan_expand(s, (int)k, NULL, world, rank, NULL, &p1, &d), 0);
                assert_int_equal(plan_expand(t, (int)k, NULL, world, rank, NULL, &p2, &d), 0);
                assert_int_equal(p1.n_ops, p2.n_ops);
                predict_rank(&p1, &r1, &d);
                predict_rank(&p2, &r2, &d);
                assert_memory_equal(r1.peak, r2.peak, sizeof r1.peak);
                assert_memory_equal(r1.steady, r2.steady, sizeof r1.steady);
                pred_rank_free(&r1);
                pred_rank_free(&r2);
                plan_free(&p1);
                plan_free(&p2);
            }
        sched_free(t);
        sched_free(s);
        ml_diags_free(&d);
        ml_str_free(&a);
        ml_str_free(&b);
    }
}

/* The torch key keeps its sizes as written and its addresses as decimal integers (0x hex read
 * back the same), and a second write gives the same text. */
static void test_emit_torch_key(void **state) {
    (void)state;
    static const char text[] = "name: t\nworld: 1\n"
                               "torch: {conf: \"max_split_size_mb:32\", limit: 2GiB, "
                               "capacity: 150MiB, addresses: [0x40000000, 2147483648]}\n"
                               "steps:\n  - alloc: {buf: a, bytes: 1}\n";
    ml_diags d;
    ml_diags_init(&d);
    sched *s = sched_load_buffer("t.yaml", text, sizeof text - 1, NULL, &d);
    assert_non_null(s);
    ml_str a = {0}, b = {0};
    emit(s, &a);
    assert_non_null(strstr(a.s, "torch: {conf: 'max_split_size_mb:32', limit: 2GiB, "
                                "capacity: 150MiB, addresses: [1073741824, 2147483648]}\n"));
    sched *t = sched_load_buffer("again.yaml", a.s, a.n, NULL, &d);
    assert_non_null(t);
    assert_int_equal(t->torch.n_addresses, 2);
    assert_true(t->torch.addresses[0] == 1073741824u);
    emit(t, &b);
    assert_string_equal(a.s, b.s);
    sched_free(t);
    sched_free(s);
    ml_diags_free(&d);
    ml_str_free(&a);
    ml_str_free(&b);
}

/* libyaml decides the quoting: a view with brackets and ' : ' is quoted in a flow mapping,
 * a function call with a comma too, a plain expression is not. */
static void test_emit_quoting(void **state) {
    (void)state;
    ml_str o = {0};
    assert_int_equal(emit_yaml_scalar("full[rank*q : q]", true, &o), 0);
    assert_string_equal(o.s, "'full[rank*q : q]'");
    o.n = 0;
    assert_int_equal(emit_yaml_scalar("ceil_div(M / E, world)", true, &o), 0);
    assert_string_equal(o.s, "'ceil_div(M / E, world)'");
    o.n = 0;
    assert_int_equal(emit_yaml_scalar("ceil_div(M / E, world)", false, &o), 0);
    assert_string_equal(o.s, "ceil_div(M / E, world)");
    o.n = 0;
    assert_int_equal(emit_yaml_scalar("world * q", true, &o), 0);
    assert_string_equal(o.s, "world * q");
    o.n = 0;
    assert_int_equal(emit_yaml_scalar("it's: #1", false, &o), 0);
    assert_string_equal(o.s, "'it''s: #1'");
    ml_str_free(&o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_naive_lifetimes_only),
        cmocka_unit_test(test_naive_all),
        cmocka_unit_test(test_rs_only_chunked),
        cmocka_unit_test(test_fsdp_at_floor),
        cmocka_unit_test(test_fsdp_naive),
        cmocka_unit_test(test_split_at_overwrite),
        cmocka_unit_test(test_output_loads_back),
        cmocka_unit_test(test_floor_seed),
        cmocka_unit_test(test_floor_rules),
        cmocka_unit_test(test_emit_round_trip),
        cmocka_unit_test(test_emit_torch_key),
        cmocka_unit_test(test_emit_quoting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
