/* SPDX-License-Identifier: MIT */
/* test_exec.c — the executor (runtime/exec.c) on a fake in-process backend: requested bytes per
 * op, chunk release, the runtime's own refusals under expect_error (never issued), data checks,
 * allocation failures with step, bytes and live bytes, and sequence divergence between local
 * ranks. The fake backend keeps buffers in malloc'd memory and runs collectives of n local ranks
 * directly (world = n), counting what it was asked to do. */
#include "testutil.h"
#include "exec/rt.h"
#include "exec/inject.h"

#include <stdlib.h>

static struct {
    int collectives;          /* collective() calls */
    int allocs;
    uint64_t limit;           /* alloc fails beyond this many bytes in one request (0: none) */
    uint64_t released;        /* bytes dropped by release() */
    bool lacks[COLL_COUNT];   /* collectives the fake has no launcher for */
} fake;

static bool f_launches(ml_coll c) { return !fake.lacks[c]; }

static int f_alloc(rt_rank *r, uint64_t bytes, uint32_t chunks, rt_mem *out, char *err,
                   size_t len) {
    memset(out, 0, sizeof *out);
    if (fake.limit && bytes > fake.limit) {
        snprintf(err, len, "fake: out of memory");
        return -1;
    }
    out->ptr = calloc(1, bytes ? bytes : 1);
    out->bytes = bytes;
    out->chunks = chunks ? chunks : 1;
    out->live_chunks = out->chunks;
    fake.allocs++;
    return 0;
}

static int f_free(rt_rank *r, rt_mem *m, char *err, size_t len) {
    free(m->ptr);
    m->ptr = NULL;
    return 0;
}

static int f_release(rt_rank *r, rt_mem *m, uint32_t keep, char *err, size_t len) {
    fake.released += m->bytes - rt_chunk_bytes(m->bytes, m->chunks, keep);
    m->live_chunks = 1;
    return 0;
}

/* Which group of its collective's communicator rank k of a call is in (0 for the world). */
static int f_group(rt_rank *const *ranks, const rt_coll_args *args, int k) {
    return args[k].comm ? ml_comms_group(ranks[k]->plan->comms, args[k].comm, ranks[k]->rank) : 0;
}

/* world = n local ranks; int64 sum only (what these tests use), plus the data movement of the
 * others. The n ranks of one call may be several groups of a communicator: each sums its own
 * members, as each group's communicator would. */
static int f_collective(rt_rank **ranks, const rt_coll_args *args, int n, char *err, size_t len) {
    fake.collectives++;
    uint64_t count = args[0].count;
    int64_t *tmp = calloc((size_t)n * count + 1, sizeof *tmp);
    /* AllReduce sum across the group's ranks among the n: every sum before any result is
     * written (in place, a result would be another rank's input). */
    if (args[0].coll == COLL_ALL_REDUCE) {
        for (int k = 0; k < n; k++)
            for (int j = 0; j < n; j++) {
                if (args[j].comm != args[k].comm || f_group(ranks, args, j) != f_group(ranks, args, k))
                    continue;
                const int64_t *send = (const int64_t *)((char *)args[j].send->ptr + args[j].send_off_bytes);
                for (uint64_t i = 0; i < count; i++)
                    tmp[(size_t)k * count + i] += send[i];
            }
        for (int k = 0; k < n; k++)
            memcpy((char *)args[k].recv->ptr + args[k].recv_off_bytes, tmp + (size_t)k * count,
                   count * 8);
    } else if (n == 1) {
        /* One rank: RS, AG, broadcast and reduce are copies of count elements. */
        size_t bytes = count * ml_dtypes[args[0].dtype].size;
        memmove((char *)args[0].recv->ptr + args[0].recv_off_bytes,
                (char *)args[0].send->ptr + args[0].send_off_bytes, bytes);
    }
    free(tmp);
    return 0;
}

static int f_nop_sync(rt_rank *r, sched_sync_kind kind, uint32_t stream, uint32_t event, char *err,
                      size_t len) { return 0; }
static int f_nop_event(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len) {
    return 0;
}

static int f_write(rt_rank *r, rt_mem *m, uint64_t off, const void *src, uint64_t bytes, char *err,
                   size_t len) {
    memcpy((char *)m->ptr + off, src, bytes);
    return 0;
}

static int f_read(rt_rank *r, const rt_mem *m, uint64_t off, void *dst, uint64_t bytes, char *err,
                  size_t len) {
    memcpy(dst, (const char *)m->ptr + off, bytes);
    return 0;
}

static int f_copy(rt_rank *r, rt_mem *dst, uint64_t dst_off, const rt_mem *src, uint64_t src_off,
                  uint64_t bytes, uint32_t stream, char *err, size_t len) {
    memmove((char *)dst->ptr + dst_off, (const char *)src->ptr + src_off, bytes);
    return 0;
}

static int f_allgather(rt_rank *r, const void *mine, size_t len, void *all, char *err, size_t elen) {
    memcpy(all, mine, len);   /* world 1 */
    return 0;
}

static const rt_backend_ops fake_backend = {
    .name = "fake",
    .available = true,
    .alloc = f_alloc,
    .free = f_free,
    .release = f_release,
    .collective = f_collective,
    .launches = f_launches,
    .sync = f_nop_sync,
    .record = f_nop_event,
    .wait = f_nop_event,
    .write = f_write,
    .read = f_read,
    .copy = f_copy,
    .allgather_blob = f_allgather,
};

typedef struct {
    sched *s;
    rank_plan plans[4];
    rt_rank ranks[4];
    rt_rank *ptrs[4];
    rt_options opt;
    ml_diags d;
    int world;
} fixture;

/* Loads yaml, expands it for `world` ranks and runs all of them in this process. Returns rt_run's
 * result. */
/* Runs yaml on `world` local ranks with the faults of `inject` (SPEC syntax, or NULL). */
static int run_yaml_inject(fixture *f, const char *yaml, int world, const char *inject) {
    memset(&fake, 0, sizeof fake);
    memset(f, 0, sizeof *f);
    ml_diags_init(&f->d);
    f->world = world;
    f->s = tu_load(yaml, &f->d);
    if (!f->s)
        fail_msg("load: %s", tu_first_error(&f->d));
    sched_params p = {.world = world};
    rt_options_default(&f->opt);
    f->opt.params = NULL;
    char err[200] = "";
    if (inject && rt_inject_parse(inject, &f->opt, err, sizeof err) != 0)
        fail_msg("inject: %s", err);
    for (int r = 0; r < world; r++) {
        if (plan_expand(f->s, 0, &p, world, r, NULL, &f->plans[r], &f->d) != 0)
            fail_msg("expand: %s", tu_first_error(&f->d));
        assert_int_equal(rt_rank_init(&f->ranks[r], &fake_backend, &f->opt, &f->plans[r], r), 0);
        f->ptrs[r] = &f->ranks[r];
    }
    return rt_run(f->ptrs, world);
}

static int run_yaml(fixture *f, const char *yaml, int world) {
    return run_yaml_inject(f, yaml, world, NULL);
}

static void fixture_free(fixture *f) {
    for (int r = 0; r < f->world; r++) {
        rt_rank_free(&f->ranks[r]);
        plan_free(&f->plans[r]);
    }
    sched_free(f->s);
    ml_diags_free(&f->d);
}

static uint64_t sample_after(const rt_rank *r, size_t op) {
    const rt_sample *s = &ML_VEC_AT(&r->acct.samples, rt_sample, op + 1);
    assert_int_equal(s->op, op);
    return s->requested;
}

/* seed (naive RS+AG, scaled down): full 4096 B, shard 4096/world, gathered 4096; at world 1
 * the shard is the whole tensor: peak 3 * 4096 = 12288, steady 4096 (gathered). */
static void test_lifetime_bytes(void **state) {
    fixture f;
    assert_int_equal(run_yaml(&f,
                              "world: 1\n"
                              "dtype: int64\n"
                              "steps:\n"
                              "  - alloc: {buf: full, bytes: 4096}\n"
                              "  - alloc: {buf: shard, bytes: 4096 / world}\n"
                              "  - alloc: {buf: gathered, bytes: 4096}\n"
                              "  - reduce_scatter: {send: full, recv: shard}\n"
                              "  - all_gather: {send: shard, recv: gathered}\n"
                              "  - sync: device\n"
                              "  - free: [full, shard]\n",
                              1),
                     0);
    rt_rank *r = &f.ranks[0];
    assert_int_equal(r->acct.samples.n, f.plans[0].n_ops + 1);   /* baseline + one per op */
    assert_int_equal(sample_after(r, 0), 4096);
    assert_int_equal(sample_after(r, 2), 12288);
    assert_int_equal(r->acct.peak, 12288);
    assert_int_equal(r->acct.peak_op, 2);
    assert_int_equal(r->acct.live, 4096);
    assert_int_equal(r->n_collectives, 2);
    assert_int_equal(fake.collectives, 2);
    fixture_free(&f);
}

/* DESIGN: in-place RS on N chunks, then releasing the chunks not owned: M/N steady. 4 chunks of
 * 1000 B, keep chunk 2: 1000 B remain. */
static void test_release(void **state) {
    fixture f;
    assert_int_equal(run_yaml(&f,
                              "world: 1\n"
                              "steps:\n"
                              "  - alloc: {buf: x, bytes: 4000, chunks: 4}\n"
                              "  - release: {buf: x, keep: 2}\n",
                              1),
                     0);
    assert_int_equal(sample_after(&f.ranks[0], 1), 1000);
    assert_int_equal(fake.released, 3000);
    assert_int_equal(f.ranks[0].acct.peak, 4000);
    fixture_free(&f);
}

/* seed: nondivisible RS (1003 into 1003/4 = 250 per rank at world 4; at world 1 a recv of 1000)
 * is refused by the runtime before any collective, as a passing row; never issued. */
static void test_expect_error_refused(void **state) {
    fixture f;
    assert_int_equal(run_yaml(&f,
                              "world: 1\n"
                              "dtype: int64\n"
                              "steps:\n"
                              "  - alloc: {buf: input, count: 1003}\n"
                              "  - alloc: {buf: output, count: 1000}\n"
                              "  - expect_error:\n"
                              "      name: nondivisible\n"
                              "      error: size_mismatch\n"
                              "      step:\n"
                              "        reduce_scatter: {send: input, recv: output}\n"
                              "  - free: [input, output]\n",
                              1),
                     0);
    rt_rank *r = &f.ranks[0];
    assert_int_equal(fake.collectives, 0);
    assert_int_equal(r->checks.n, 1);
    rt_check_row *row = &ML_VEC_AT(&r->checks, rt_check_row, 0);
    assert_string_equal(row->name, "nondivisible");
    assert_true(row->pass);
    assert_string_equal(row->detail, "refused before any collective: size_mismatch: reduce_scatter "
                                     "needs send = world x recv = 1000 elements, got 1003");
    assert_int_equal(r->acct.samples.n, f.plans[0].n_ops + 1);   /* skipped op still sampled */
    fixture_free(&f);
}

/* expect_error rows for each refusal the runtime makes, and a failing row when it accepts. */
static void test_expect_error_codes(void **state) {
    fixture f;
    assert_int_equal(run_yaml(&f,
                              "world: 1\n"
                              "dtype: int64\n"
                              "steps:\n"
                              "  - alloc: {buf: a, count: 8}\n"
                              "  - alloc: {buf: f, count: 8, dtype: float32}\n"
                              "  - expect_error: {name: dt, error: dtype_mismatch,\n"
                              "                   step: {all_reduce: {send: a, recv: f}}}\n"
                              "  - expect_error: {name: inplace, error: bad_inplace,\n"
                              "                   step: {all_reduce: {send: 'a[0 : 4]', recv: 'a[2 : 4]'}}}\n"
                              "  - expect_error: {name: oob, error: out_of_bounds,\n"
                              "                   step: {all_reduce: {send: 'a[6 : 4]', recv: 'f[0 : 4]'}}}\n"
                              "  - expect_error: {name: accepted, error: size_mismatch,\n"
                              "                   step: {all_reduce: {buf: a}}}\n"
                              "  - free: [a, f]\n",
                              1),
                     0);
    rt_rank *r = &f.ranks[0];
    assert_int_equal(r->checks.n, 4);
    const char *names[] = {"dt", "inplace", "oob", "accepted"};
    bool pass[] = {true, true, true, false};
    for (int k = 0; k < 4; k++) {
        rt_check_row *row = &ML_VEC_AT(&r->checks, rt_check_row, k);
        assert_string_equal(row->name, names[k]);
        assert_int_equal(row->pass, pass[k]);
    }
    assert_string_equal(ML_VEC_AT(&r->checks, rt_check_row, 3).detail,
                        "expected size_mismatch, but the runtime accepted the collective");
    assert_int_equal(fake.collectives, 0);
    fixture_free(&f);
}

/* Data: x_i = 100*rank + i; AllReduce over one rank keeps it; checks against the closed form,
 * the reduce-over-ranks form, and a not_equal that must see the difference. */
static void test_checks(void **state) {
    fixture f;
    assert_int_equal(run_yaml(&f,
                              "world: 1\n"
                              "dtype: int64\n"
                              "steps:\n"
                              "  - alloc: {buf: x, count: 20, init: rank_iota}\n"
                              "  - all_reduce: {buf: x}\n"
                              "  - check: {name: closed, equal: [x, {expr: 'i'}]}\n"
                              "  - check: {name: closed, equal: [x, {reduce: rank_iota, op: sum}]}\n"
                              "  - scale: {buf: x, by: 3}\n"
                              "  - check: {name: scaled, equal: [x, {expr: '3 * i'}]}\n"
                              "  - check: {name: differs, not_equal: [x, {expr: 'i'}]}\n"
                              "  - check: {name: wrong, equal: [x, {expr: 'i + 1'}]}\n"
                              "  - free: x\n",
                              1),
                     0);
    rt_rank *r = &f.ranks[0];
    assert_int_equal(r->checks.n, 4);   /* the two 'closed' checks fold into one row */
    rt_check_row *rows = (rt_check_row *)r->checks.items;
    assert_string_equal(rows[0].name, "closed");
    assert_true(rows[0].pass);
    assert_string_equal(rows[0].detail, "equal: 20 of 20 elements; equal: 20 of 20 elements");
    assert_true(rows[1].pass);
    assert_true(rows[2].pass);
    assert_string_equal(rows[2].detail, "not equal as required: first difference at element 1: "
                                        "3 vs 1; 19 of 20 elements differ");
    assert_false(rows[3].pass);
    assert_string_equal(rows[3].detail, "not equal: first difference at element 0: 0 vs 1; "
                                        "20 of 20 elements differ");
    fixture_free(&f);
}

/* A failed allocation names the step, the bytes asked and the live requested bytes. */
static void test_alloc_failure(void **state) {
    fixture f;
    memset(&fake, 0, sizeof fake);
    const char *yaml = "world: 1\n"
                       "steps:\n"
                       "  - alloc: {buf: small, bytes: 1024}\n"
                       "  - alloc: {buf: big, bytes: 1MiB}\n"
                       "  - free: [small, big]\n";
    memset(&f, 0, sizeof f);
    ml_diags_init(&f.d);
    f.world = 1;
    f.s = tu_load(yaml, &f.d);
    assert_non_null(f.s);
    sched_params p = {.world = 1};
    rt_options_default(&f.opt);
    assert_int_equal(plan_expand(f.s, 0, &p, 1, 0, NULL, &f.plans[0], &f.d), 0);
    assert_int_equal(rt_rank_init(&f.ranks[0], &fake_backend, &f.opt, &f.plans[0], 0), 0);
    f.ptrs[0] = &f.ranks[0];
    fake.limit = 4096;
    assert_int_equal(rt_run(f.ptrs, 1), -1);
    assert_int_equal(f.ranks[0].failed, ML_EXIT_RUNTIME);
    assert_string_equal(f.ranks[0].error, "t.yaml:4:5: error: alloc of 'big' (1048576 bytes) "
                                          "failed: fake: out of memory; live requested bytes 1024");
    fixture_free(&f);
}

/* Fault injection: alloc 1 fails, with the step, the bytes asked, the fault and the live bytes
 * (10, from alloc 0). */
static void test_fail_alloc_injection(void **state) {
    fixture f;
    assert_int_equal(run_yaml_inject(&f,
                                     "world: 1\nsteps:\n  - alloc: {buf: a, bytes: 10}\n"
                                     "  - alloc: {buf: b, bytes: 20}\n",
                                     1, "fail-alloc=1"),
                     -1);
    assert_string_equal(f.ranks[0].error,
                        "t.yaml:4:5: error: alloc of 'b' (20 bytes) failed: injected fault "
                        "fail-alloc=1 (alloc 1 of rank 0); live requested bytes 10");
    /* No sequence exchange at world 1: the rank's own place, op 1. */
    char *own = rt_failure_state(&f.ranks[0], 16);
    assert_string_equal(own, "t.yaml:4:5: note: rank 0 failed at op 1 (alloc); live requested bytes 10\n");
    free(own);
    fixture_free(&f);
}

/* fail-alloc=1@1 on two local ranks: only rank 1's second alloc fails (rank 0 reaches the
 * all_reduce at op 2 holding a and b, 2 x 32 B); the table every rank judged says where each
 * stood, for the notes rank 0 prints. */
static const char two_allocs_yaml[] = "world: 2\n"
                                     "dtype: int64\n"
                                     "steps:\n"
                                     "  - alloc: {buf: a, count: 4}\n"
                                     "  - alloc: {buf: b, count: 4}\n"
                                     "  - all_reduce: {buf: a}\n"
                                     "  - free: [a, b]\n";

static void test_fail_alloc_one_rank(void **state) {
    fixture f;
    assert_int_equal(run_yaml_inject(&f, two_allocs_yaml, 2, "fail-alloc=1@1"), -1);
    assert_int_equal(fake.collectives, 0);
    assert_int_equal(f.ranks[0].failed, ML_EXIT_RUNTIME);
    assert_true(f.ranks[0].failure_known_to_all);
    assert_false(f.ranks[0].error_print_here);
    assert_string_equal(f.ranks[1].error,
                        "t.yaml:5:5: error: alloc of 'b' (32 bytes) failed: injected fault "
                        "fail-alloc=1@1 (alloc 1 of rank 1); live requested bytes 32");
    char *state_text = rt_failure_state(&f.ranks[0], 16);
    assert_non_null(state_text);
    assert_string_equal(state_text,
                        "t.yaml:6:5: note: rank 0 was at op 2 (all_reduce), in the sequence check "
                        "before it; live requested bytes 64\n"
                        "t.yaml:5:5: note: rank 1 failed at op 1 (alloc); live requested bytes 32\n");
    free(state_text);
    /* At most one line per rank asked for, and one for the rest. */
    state_text = rt_failure_state(&f.ranks[0], 1);
    assert_non_null(strstr(state_text, "rank 0 was at op 2"));
    assert_non_null(strstr(state_text, "\nt.yaml: note: and 1 more ranks\n"));
    free(state_text);
    fixture_free(&f);
}

/* A delay within the deadline is no failure: the run completes (the delay is 0.01 s, far inside
 * the 60 s default). */
static void test_delay_within_deadline(void **state) {
    fixture f;
    assert_int_equal(run_yaml_inject(&f, two_allocs_yaml, 2, "delay=1@2:0.01"), 0);
    assert_int_equal(fake.collectives, 1);
    assert_null(rt_failure_state(&f.ranks[0], 16));
    fixture_free(&f);
}

/* Runs yaml on `world` local ranks, which must diverge after `collectives` calls: every rank
 * fails with the message `want`, known to all, printed once (by rank 0). */
static void diverges(const char *yaml, int world, int collectives, const char *want) {
    fixture f;
    assert_int_equal(run_yaml(&f, yaml, world), -1);
    assert_int_equal(fake.collectives, collectives);
    for (int r = 0; r < world; r++) {
        assert_string_equal(f.ranks[r].error, want);
        assert_int_equal(f.ranks[r].error_print_here, r == 0);
        assert_true(f.ranks[r].failure_known_to_all);
    }
    fixture_free(&f);
}

/* Two ranks in one process: rank 0 issues an all_gather the other does not. Detected locally,
 * before anything is issued (the AllReduce only went); reported once (rank 0), known to both. */
static void test_divergence_local(void **state) {
    diverges("world: 2\n"
             "dtype: int64\n"
             "steps:\n"
             "  - alloc: {buf: a, count: 4}\n"
             "  - alloc: {buf: b, count: 4 * world}\n"
             "  - all_reduce: {buf: a}\n"
             "  - all_gather: {send: a, recv: b}\n"
             "    when: rank == 0\n"
             "  - free: [a, b]\n",
             2, 1,
             "t.yaml:7:5: error: collective sequence diverges at collective 2: rank 0 issues "
             "all_gather (count 4, int64) at t.yaml:7:5, rank 1 has ended after 1 collective");
}

/* A dp 2 x tp 2 mesh: the all_reduce on tp sums each group, {0,1} to 100 + 2i and {2,3} to
 * 500 + 2i (x_i = 100 r + i): a check reduced over the group (comm: tp) passes, one over the
 * world (600 + 4i) differs, and shards rolled within the group (2 shards of 4) are detected. */
static void test_comm_groups(void **state) {
    fixture f;
    assert_int_equal(run_yaml(&f,
                              "world: 4\n"
                              "dtype: int64\n"
                              "mesh: {dp: 2, tp: 2}\n"
                              "comms: {tp: {mesh_dim: tp}}\n"
                              "steps:\n"
                              "  - alloc: {buf: x, count: 8, init: rank_iota}\n"
                              "  - all_reduce: {buf: x, comm: tp}\n"
                              "  - check: {name: group, equal: [x, {reduce: rank_iota, op: sum, comm: tp}]}\n"
                              "  - check: {name: form, equal: [x, {expr: '100 * (2 * (rank - rank % 2) + 1) + 2 * i'}]}\n"
                              "  - check: {name: world, not_equal: [x, {reduce: rank_iota, op: sum}]}\n"
                              "  - check: {name: roll, not_equal: [x, {buf: x, roll_shards: 1, comm: tp}]}\n"
                              "  - free: x\n",
                              4),
                     0);
    assert_int_equal(fake.collectives, 1);   /* both groups in one round */
    static const char *const world_detail[4] = {
        "not equal as required: first difference at element 0: 100 vs 600; 8 of 8 elements differ",
        "not equal as required: first difference at element 0: 100 vs 600; 8 of 8 elements differ",
        "not equal as required: first difference at element 0: 500 vs 600; 8 of 8 elements differ",
        "not equal as required: first difference at element 0: 500 vs 600; 8 of 8 elements differ",
    };
    for (int r = 0; r < 4; r++) {
        assert_int_equal(f.ranks[r].checks.n, 4);
        for (size_t k = 0; k < 4; k++)
            assert_true(ML_VEC_AT(&f.ranks[r].checks, rt_check_row, k).pass);
        assert_string_equal(ML_VEC_AT(&f.ranks[r].checks, rt_check_row, 2).detail, world_detail[r]);
        /* shard 1 of the group's 2 starts at element 4: 100 + 8 on {0,1} */
        assert_string_equal(ML_VEC_AT(&f.ranks[r].checks, rt_check_row, 3).detail,
                            r < 2 ? "not equal as required: first difference at element 0: 100 vs "
                                    "108; 8 of 8 elements differ"
                                  : "not equal as required: first difference at element 0: 500 vs "
                                    "508; 8 of 8 elements differ");
    }
    fixture_free(&f);
}

/* Ranks in no group of a communicator skip its collective: ranks 2 and 3 sum on `upper` while 0
 * and 1, already at the world's all_reduce, wait a round; then all four sum on the world:
 * 0 + 100 + 2 * (200 + 300) = 1100 at element 0, 1100 + 6i. Two calls, no divergence. */
static void test_comm_group_waits(void **state) {
    fixture f;
    assert_int_equal(run_yaml(&f,
                              "world: 4\n"
                              "dtype: int64\n"
                              "comms: {upper: {color: 'rank / 2 - 1'}}\n"
                              "steps:\n"
                              "  - alloc: {buf: x, count: 4, init: rank_iota}\n"
                              "  - all_reduce: {buf: x, comm: upper}\n"
                              "    when: rank >= 2\n"
                              "  - all_reduce: {buf: x}\n"
                              "  - check: {name: sum, equal: [x, {expr: '1100 + 6 * i'}]}\n"
                              "  - free: x\n",
                              4),
                     0);
    assert_int_equal(fake.collectives, 2);
    for (int r = 0; r < 4; r++)
        assert_true(ML_VEC_AT(&f.ranks[r].checks, rt_check_row, 0).pass);
    fixture_free(&f);
}

/* Part of a group skips its collective: rank 1 never issues the tp all_reduce that rank 0
 * waits in (group {2,3} is whole and goes, the only call). A divergence, named with the
 * communicator. */
static void test_comm_divergence(void **state) {
    diverges("world: 4\n"
             "dtype: int64\n"
             "mesh: {dp: 2, tp: 2}\n"
             "comms: {tp: {mesh_dim: tp}}\n"
             "steps:\n"
             "  - alloc: {buf: x, count: 4}\n"
             "  - all_reduce: {buf: x, comm: tp}\n"
             "    when: rank != 1\n"
             "  - free: x\n",
             4, 1,
             "t.yaml:7:5: error: collective sequence diverges at collective 1: rank 0 issues "
             "all_reduce (count 4, int64, sum, comm tp) at t.yaml:7:5, rank 1 has ended after 0 "
             "collectives");
}

/* Two ranks summing: the AllReduce result checked against the reduce-over-ranks closed form
 * 100 + 2i (ranks 0 and 1 of x_i = 100 r + i). */
static void test_two_rank_sum(void **state) {
    fixture f;
    assert_int_equal(run_yaml(&f,
                              "world: 2\n"
                              "dtype: int64\n"
                              "steps:\n"
                              "  - alloc: {buf: x, count: 6, init: rank_iota}\n"
                              "  - all_reduce: {buf: x}\n"
                              "  - check: {name: sum, equal: [x, {expr: '100 + 2 * i'}]}\n"
                              "  - check: {name: sum, equal: [x, {reduce: rank_iota, op: sum}]}\n"
                              "  - free: x\n",
                              2),
                     0);
    for (int r = 0; r < 2; r++) {
        rt_check_row *row = &ML_VEC_AT(&f.ranks[r].checks, rt_check_row, 0);
        assert_int_equal(f.ranks[r].checks.n, 1);
        assert_int_equal(row->rank, r);
        assert_true(row->pass);
    }
    fixture_free(&f);
}

static void test_chunk_bytes(void **state) {
    assert_int_equal(rt_chunk_bytes(4000, 4, 3), 1000);
    assert_int_equal(rt_chunk_bytes(10, 4, 0), 3);      /* ceil(10/4) */
    assert_int_equal(rt_chunk_bytes(10, 4, 3), 1);      /* the remainder */
    assert_int_equal(rt_chunk_bytes(10, 1, 0), 10);
    assert_int_equal(rt_chunk_bytes(2, 4, 3), 0);
}

/* A backend without a launcher for a collective refuses the plan by name when the rank is set
 * up: the error names the collective, the backend and the step (line 4, column 5: the
 * all_gather), and nothing ran (no allocation). An all_gather under expect_error is never issued,
 * so it needs no launcher. */
static void test_backend_without_launcher(void **state) {
    memset(&fake, 0, sizeof fake);
    fake.lacks[COLL_ALL_GATHER] = true;
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load("world: 1\nsteps:\n  - alloc: {buf: x, count: 8, dtype: int64}\n"
                       "  - all_gather: {send: x, recv: x}\n", &d);
    assert_non_null(s);
    sched_params p = {.world = 1};
    rank_plan plan;
    assert_int_equal(plan_expand(s, 0, &p, 1, 0, NULL, &plan, &d), 0);
    rt_options opt;
    rt_options_default(&opt);
    rt_rank r;
    assert_int_equal(rt_rank_init(&r, &fake_backend, &opt, &plan, 0), -1);
    assert_non_null(strstr(r.error, ":4:5: error: backend 'fake' has no launcher for 'all_gather'"));
    assert_int_equal(fake.allocs, 0);
    rt_rank_free(&r);
    plan_free(&plan);
    sched_free(s);

    s = tu_load("world: 1\nsteps:\n  - alloc: {buf: x, count: 8, dtype: int64}\n"
                "  - expect_error: {name: e, error: size_mismatch,\n"
                "                   step: {all_gather: {send: x, recv: 'x[0:4]'}}}\n", &d);
    assert_non_null(s);
    assert_int_equal(plan_expand(s, 0, &p, 1, 0, NULL, &plan, &d), 0);
    assert_int_equal(rt_rank_init(&r, &fake_backend, &opt, &plan, 0), 0);
    rt_rank_free(&r);
    plan_free(&plan);
    sched_free(s);
    ml_diags_free(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backend_without_launcher),
        cmocka_unit_test(test_lifetime_bytes),     cmocka_unit_test(test_release),
        cmocka_unit_test(test_expect_error_refused), cmocka_unit_test(test_expect_error_codes),
        cmocka_unit_test(test_checks),             cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_fail_alloc_injection), cmocka_unit_test(test_fail_alloc_one_rank),
        cmocka_unit_test(test_delay_within_deadline), cmocka_unit_test(test_divergence_local),
        cmocka_unit_test(test_two_rank_sum),       cmocka_unit_test(test_chunk_bytes),
        cmocka_unit_test(test_comm_groups),        cmocka_unit_test(test_comm_group_waits),
        cmocka_unit_test(test_comm_divergence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
