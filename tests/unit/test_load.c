/* SPDX-License-Identifier: MIT */
/* test_load.c — the schedule loader: a seed-like schedule builds the right IR (kinds, marks,
 * symbols, expressions); malformed schedules fail with the exact first error and position;
 * hostile input (deep nesting, aliases, huge numbers) fails cleanly. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int64_t eval(const sched *s, const expr *e, int world, int rank) {
    int64_t slots[64] = {0};
    ml_diags d;
    ml_diags_init(&d);
    assert_true(s->n_lets + EXPR_SLOT_FIRST_LET <= 64);
    assert_int_equal(sched_eval_lets(s, NULL, world, rank, slots, &d), 0);
    ml_diags_free(&d);
    int64_t v = 0;
    expr_error err;
    assert_int_equal(expr_eval(e, slots, &v, &err), 0);
    return v;
}

static void assert_mark(ml_mark m, uint32_t line, uint32_t col) {
    if (m.line != line || m.col != col)
        fail_msg("mark %u:%u, expected %u:%u", m.line, m.col, line, col);
}

/* The chapter's naive RS+AG lifetime schedule, with every other form the language has. */
static const char seed_yaml[] =
    "name: rs-ag-naive-lifetime\n"                                         /* 1 */
    "about: RS then AG with every buffer held to the end\n"                /* 2 */
    "world: 4\n"                                                           /* 3 */
    "dtype: float32\n"                                                     /* 4 */
    "let: {M: 256MiB, q: M / 4 / world}\n"                                 /* 5 */
    "streams: [comm]\n"                                                    /* 6 */
    "events: [done]\n"                                                     /* 7 */
    "expect:\n"                                                            /* 8 */
    "  requested: {steady: M, peak: 2*M + M/world}\n"                      /* 9 */
    "steps:\n"                                                             /* 10 */
    "  - alloc: {buf: full, bytes: M, init: rank_iota}\n"                  /* 11 */
    "  - alloc: {buf: shard, bytes: M/world}\n"                            /* 12 */
    "  - alloc: {buf: gathered, count: M / 4, dtype: int32, init: {expr: 600 + 4*i}}\n" /* 13 */
    "  - reduce_scatter: {send: full, recv: shard, op: max}\n"             /* 14 */
    "  - all_gather: {send: shard, recv: gathered, stream: comm}\n"        /* 15 */
    "  - record: {event: done, stream: comm}\n"                            /* 16 */
    "  - wait: {event: done}\n"                                            /* 17 */
    "  - sync: device\n"                                                   /* 18 */
    "  - sync: {event: done}\n"                                            /* 19 */
    "  - when: rank == 0\n"                                                /* 20 */
    "    check: {name: ag, equal: [gathered, {reduce: rank_iota, op: sum}], rtol: 1e-5}\n" /* 21 */
    "  - all_reduce: {buf: 'full[ rank*q :q ]'}\n"                         /* 22 */
    "  - broadcast: {send: shard, recv: 'full[0 : q]', root: world - 1}\n"   /* 23 */
    "  - repeat:\n"                                                        /* 24 */
    "      count: 3\n"                                                     /* 25 */
    "      steps:\n"                                                       /* 26 */
    "        - region: {name: inner, steps: [{scale: {buf: full, by: 2}}]}\n" /* 27 */
    "  - init: {buf: shard, pattern: rank_iota}\n"                         /* 28 */
    "  - copy: {src: shard, dst: 'full[0:q]'}\n"                           /* 29 */
    "  - compute: {reads: [full, shard], writes: gathered}\n"              /* 30 */
    "  - check: {name: roll, not_equal: [{buf: gathered, roll_shards: 1}, {expr: 600 + 4*i}]}\n" /* 31 */
    "  - expect_error: {name: bad-rs, error: size_mismatch, step: {reduce_scatter: {send: shard, recv: full}}}\n" /* 32 */
    "  - release: {buf: full, keep: rank}\n"                               /* 33 */
    "  - free: [full, shard]\n"                                            /* 34 */
    "  - free: gathered\n";                                                /* 35 */

static void test_seed_schedule(void **state) {
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(seed_yaml, &d);
    if (!s)
        fail_msg("%s", tu_first_error(&d));
    assert_string_equal(s->name, "rs-ag-naive-lifetime");
    assert_string_equal(s->about, "RS then AG with every buffer held to the end");
    assert_int_equal(s->world, 4);
    assert_mark(s->world_mark, 3, 8);
    assert_int_equal(s->dtype, DT_FLOAT32);
    assert_int_equal(s->n_lets, 2);
    assert_string_equal(s->lets[1].name, "q");
    /* seed: M/N = 64 MiB at world 4, q = 16 MiB */
    assert_int_equal(eval(s, s->lets[1].value, 4, 0), 16 << 20);
    assert_int_equal(s->n_expects, 1);
    assert_int_equal(s->expects[0].view, VIEW_REQUESTED);
    /* seed: naive RS+AG, steady 256 MiB, peak 576 MiB at world 4 */
    assert_int_equal(eval(s, s->expects[0].steady, 4, 0), (int64_t)256 << 20);
    assert_int_equal(eval(s, s->expects[0].peak, 4, 0), (int64_t)576 << 20);
    assert_mark(s->expects[0].mark, 9, 3);
    assert_int_equal(s->n_plans, 1);
    assert_string_equal(s->plans[0].name, "");
    const sched_step *st = s->plans[0].steps;
    assert_int_equal(s->plans[0].n, 21);
    /* 21 top-level steps + repeat body (region) + region body (scale) + expect_error's step */
    assert_int_equal(s->n_steps_total, 24);

    static const sched_step_kind kinds[] = {
        ST_ALLOC, ST_ALLOC, ST_ALLOC, ST_COLL, ST_COLL, ST_RECORD, ST_WAIT, ST_SYNC, ST_SYNC,
        ST_CHECK, ST_COLL, ST_COLL, ST_REPEAT, ST_INIT, ST_COPY, ST_COMPUTE, ST_CHECK,
        ST_EXPECT_ERROR, ST_RELEASE, ST_FREE, ST_FREE};
    for (size_t k = 0; k < ML_ARRAY_LEN(kinds); k++)
        assert_int_equal(st[k].kind, kinds[k]);
    assert_mark(st[0].mark, 11, 5);
    assert_mark(st[9].mark, 21, 5);   /* the step key, not the `when:` before it */
    assert_mark(st[12].mark, 24, 5);

    /* symbols */
    assert_int_equal(s->syms[SYM_BUFFER].n, 3);
    assert_string_equal(sched_sym_name(s, SYM_BUFFER, st[1].u.alloc.buf), "shard");
    assert_mark(s->syms[SYM_BUFFER].first_mark[2], 13, 18);
    assert_int_equal(s->syms[SYM_STREAM].n, 2);
    assert_string_equal(sched_sym_name(s, SYM_STREAM, SCHED_DEFAULT_STREAM), "default");
    assert_string_equal(sched_sym_name(s, SYM_STREAM, 1), "comm");
    assert_string_equal(sched_sym_name(s, SYM_EVENT, 0), "done");
    assert_string_equal(sched_sym_name(s, SYM_REGION, 0), "inner");
    assert_string_equal(sched_sym_name(s, SYM_BUFFER, 99), "?");

    /* alloc */
    assert_int_equal(st[0].u.alloc.init.kind, INIT_RANK_IOTA);
    assert_int_equal(st[0].u.alloc.dtype, DT_FLOAT32);
    assert_null(st[0].u.alloc.count);
    assert_int_equal(eval(s, st[1].u.alloc.bytes, 4, 0), 64 << 20);
    assert_int_equal(st[2].u.alloc.dtype, DT_INT32);
    assert_null(st[2].u.alloc.bytes);
    assert_int_equal(st[2].u.alloc.init.kind, INIT_EXPR);
    assert_true(expr_uses_slot(st[2].u.alloc.init.value, EXPR_SLOT_INDEX));
    /* collectives */
    assert_int_equal(st[3].u.coll.coll, COLL_REDUCE_SCATTER);
    assert_int_equal(st[3].u.coll.op, RED_MAX);
    assert_int_equal(st[3].u.coll.stream, SCHED_DEFAULT_STREAM);
    assert_int_equal(st[4].u.coll.op, RED_SUM);
    assert_int_equal(st[4].u.coll.stream, 1);
    assert_int_equal(st[10].u.coll.coll, COLL_ALL_REDUCE);
    assert_int_equal(st[10].u.coll.send.buf, st[10].u.coll.recv.buf);
    assert_string_equal(expr_text(st[10].u.coll.recv.offset), " rank*q ");
    assert_int_equal(eval(s, st[10].u.coll.recv.offset, 4, 3), 48 << 20);
    assert_int_equal(eval(s, st[10].u.coll.recv.count, 4, 3), 16 << 20);
    assert_mark(st[10].u.coll.send.mark, 22, 24);
    assert_null(st[11].u.coll.send.offset);
    assert_int_equal(eval(s, st[11].u.coll.root, 4, 0), 3);
    /* events and syncs */
    assert_int_equal(st[5].u.event.event, 0);
    assert_int_equal(st[5].u.event.stream, 1);
    assert_int_equal(st[6].u.event.stream, SCHED_DEFAULT_STREAM);
    assert_int_equal(st[7].u.sync.kind, SYNC_DEVICE);
    assert_int_equal(st[8].u.sync.kind, SYNC_EVENT);
    /* checks */
    assert_non_null(st[9].when);
    assert_int_equal(eval(s, st[9].when, 4, 0), 1);
    assert_int_equal(eval(s, st[9].when, 4, 1), 0);
    assert_string_equal(st[9].u.check->name, "ag");
    assert_int_equal(st[9].u.check->kind, CHECK_EQUAL);
    assert_int_equal(st[9].u.check->a.kind, OPD_VIEW);
    assert_int_equal(st[9].u.check->b.kind, OPD_REDUCED_PATTERN);
    assert_int_equal(st[9].u.check->b.pattern.kind, INIT_RANK_IOTA);
    assert_true(st[9].u.check->rtol == 1e-5);
    assert_int_equal(st[16].u.check->kind, CHECK_NOT_EQUAL);
    assert_non_null(st[16].u.check->a.roll_shards);
    assert_int_equal(st[16].u.check->b.kind, OPD_EXPR);
    /* nesting */
    assert_int_equal(st[12].u.repeat.n, 1);
    const sched_step *region = &st[12].u.repeat.steps[0];
    assert_int_equal(region->kind, ST_REGION);
    assert_int_equal(region->u.region.n, 1);
    assert_int_equal(region->u.region.steps[0].kind, ST_SCALE);
    assert_mark(region->u.region.steps[0].mark, 27, 42);
    /* the rest */
    assert_int_equal(st[13].u.init.init.kind, INIT_RANK_IOTA);
    assert_non_null(st[14].u.copy.dst.count);
    assert_int_equal(st[15].u.compute.n_reads, 2);
    assert_int_equal(st[15].u.compute.n_writes, 1);
    assert_int_equal(st[17].u.expect_error.error, ERR_SIZE_MISMATCH);
    assert_string_equal(st[17].u.expect_error.name, "bad-rs");
    assert_int_equal(st[17].u.expect_error.step->kind, ST_COLL);
    assert_mark(st[17].u.expect_error.step->mark, 32, 63);
    assert_int_equal(st[19].u.free.n, 2);
    assert_mark(st[19].u.free.marks[1], 34, 18);
    assert_int_equal(st[20].u.free.n, 1);
    sched_free(s);
    ml_diags_free(&d);
}

static void test_plans_and_sweep(void **state) {
    const char *yaml = "let: {M: 16MiB}\n"
                       "sweep: {let: M, values: [1KiB, 16 MiB, 256MiB]}\n"
                       "expect: [{rank: 0, requested: {peak: M}, device: {steady: 0}}]\n"
                       "plans:\n"
                       "  direct:\n"
                       "    steps: [{alloc: {buf: x, bytes: M}}, {all_reduce: {buf: x}}, {free: x}]\n"
                       "  decomposed:\n"
                       "    expect: {requested: {peak: M + M/world}}\n"
                       "    steps: [{alloc: {buf: x, bytes: M}}, {free: x}]\n";
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    if (!s)
        fail_msg("%s", tu_first_error(&d));
    assert_string_equal(s->name, "t");
    assert_int_equal(s->world, 0);
    assert_int_equal(s->sweep_let, 0);
    assert_int_equal(s->n_sweep, 3);
    assert_int_equal(eval(s, s->sweep_values[2], 2, 0), 256 << 20);
    assert_int_equal(s->n_expects, 2);
    assert_int_equal(s->expects[1].view, VIEW_DEVICE);
    assert_non_null(s->expects[1].rank);
    assert_int_equal(s->n_plans, 2);
    assert_string_equal(s->plans[1].name, "decomposed");
    assert_int_equal(s->plans[0].n, 3);
    assert_int_equal(s->plans[0].n_expects, 0);
    assert_int_equal(s->plans[1].n_expects, 1);
    assert_mark(s->plans[1].mark, 7, 3);
    /* world: none in the file; --world gives it */
    assert_int_equal(sched_world(s, NULL, &d), -1);
    assert_string_equal(tu_first_error(&d), "t.yaml: error: no world size: the schedule sets no 'world' and none was given");
    sched_params p = {.world = 8};
    assert_int_equal(sched_world(s, &p, &d), 8);
    sched_free(s);
    ml_diags_free(&d);
}

static void test_eval_lets_and_set(void **state) {
    const char *yaml = "world: 4\nlet: {M: 256MiB, q: M / world, r: q * rank}\nsteps: []\n";
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    assert_non_null(s);
    assert_int_equal(sched_world(s, NULL, &d), 4);
    int64_t slots[EXPR_SLOT_FIRST_LET + 3];
    assert_int_equal(sched_eval_lets(s, NULL, 4, 2, slots, &d), 0);
    assert_int_equal(slots[EXPR_SLOT_FIRST_LET + 1], 64 << 20);
    assert_int_equal(slots[EXPR_SLOT_FIRST_LET + 2], 128 << 20);
    /* --set M=16MiB: later lets follow */
    const char *set1[] = {"M=16 MiB"};
    sched_params p = {.set = set1, .n_set = 1};
    assert_int_equal(sched_eval_lets(s, &p, 4, 1, slots, &d), 0);
    assert_int_equal(slots[EXPR_SLOT_FIRST_LET + 1], 4 << 20);
    /* an override may use world, rank and earlier lets */
    const char *set2[] = {"q = M / 2 + rank"};
    p.set = set2;
    assert_int_equal(sched_eval_lets(s, &p, 4, 1, slots, &d), 0);
    assert_int_equal(slots[EXPR_SLOT_FIRST_LET + 1], (128 << 20) + 1);
    assert_int_equal(d.errors, 0);
    const char *set3[] = {"X=1"};
    p.set = set3;
    assert_int_equal(sched_eval_lets(s, &p, 4, 0, slots, &d), -1);
    assert_string_equal(tu_first_error(&d), "error: unknown let 'X' in --set");
    ml_diags_free(&d);
    ml_diags_init(&d);
    const char *set4[] = {"M=r"};   /* r is defined after M */
    p.set = set4;
    assert_int_equal(sched_eval_lets(s, &p, 4, 0, slots, &d), -1);
    assert_string_equal(tu_first_error(&d), "error: --set M=r: undefined name 'r'");
    ml_diags_free(&d);
    ml_diags_init(&d);
    const char *set5[] = {"M"};
    p.set = set5;
    assert_int_equal(sched_eval_lets(s, &p, 4, 0, slots, &d), -1);
    assert_string_equal(tu_first_error(&d), "error: --set needs NAME=VALUE, got 'M'");
    sched_free(s);
    ml_diags_free(&d);

    /* An evaluation error in a let points into its text. */
    ml_diags_init(&d);
    s = tu_load("let: {M: 4 GiB, q: M * M}\nsteps: []\n", &d);
    assert_non_null(s);
    int64_t slots2[EXPR_SLOT_FIRST_LET + 2];
    assert_int_equal(sched_eval_lets(s, NULL, 2, 0, slots2, &d), -1);
    assert_string_equal(tu_first_error(&d), "t.yaml:1:22: error: integer overflow in let 'q'");
    sched_free(s);
    ml_diags_free(&d);
}

/* ---- Malformed schedules: {yaml, exact first error} ------------------------------------------- */

typedef struct {
    const char *yaml;
    const char *error;
} bad_case;

#define A "steps:\n  - alloc: {buf: x, bytes: 4}\n"   /* line 2 allocates x */

static const bad_case bad_cases[] = {
    /* the file */
    {"", "t.yaml:1:1: error: empty file"},
    {"# nothing here\n", "t.yaml:1:1: error: empty file"},
    {"- a\n- b\n", "t.yaml:1:1: error: a schedule must be a mapping"},
    {"world: 4\n", "t.yaml:1:1: error: missing 'steps'"},
    {"steps: []\n---\nsteps: []\n", "t.yaml:2:1: error: only one yaml document is allowed"},
    /* YAML syntax, from libyaml */
    {"steps:\n  - alloc: {buf: x\n", "t.yaml:3:1: error: did not find expected ',' or '}' (while parsing a flow mapping)"},
    {"steps: [\n", "t.yaml:2:1: error: did not find expected node content (while parsing a flow node)"},
    {"steps:\n\t- alloc: {}\n", "t.yaml:2:1: error: found character that cannot start any token (while scanning for the next token)"},
    {"\xff", "t.yaml:1:1: error: invalid leading UTF-8 octet #FF"},
    {A "   free: x\n", "t.yaml:3:4: error: did not find expected '-' indicator (while parsing a block collection)"},
    /* aliases and anchors */
    {"let: {M: &a 4}\nsteps: []\n", "t.yaml:1:10: error: yaml anchors are not supported"},
    {"steps:\n  - alloc: {buf: x, bytes: *a}\n", "t.yaml:2:28: error: yaml aliases are not supported"},
    /* unknown keys at every level */
    {"steps: []\nbogus: 1\n", "t.yaml:2:1: error: unknown key 'bogus' in schedule: expected one of name, about, world, dtype, let, streams, events, expect, steps, plans, sweep, requires, torch, link, mesh, comms"},
    {"steps:\n  - alloc: {buf: x, sise: 4}\n", "t.yaml:2:21: error: unknown key 'sise' in alloc: expected one of buf, bytes, count, dtype, chunks, init, stream"},
    {A "  - all_gather: {send: x, recv: x, strem: s}\n", "t.yaml:3:36: error: unknown key 'strem' in all_gather: expected one of buf, send, recv, op, root, stream, comm"},
    {"expect: {requested: {stedy: 1}}\nsteps: []\n", "t.yaml:1:22: error: unknown key 'stedy' in requested: expected one of steady, peak"},
    {"expect: {reqested: {steady: 1}}\nsteps: []\n", "t.yaml:1:10: error: unknown key 'reqested' in expect: expected one of rank, requested, device, torch"},
    {"plans: {a: {stps: []}}\n", "t.yaml:1:13: error: unknown key 'stps' in plan: expected one of steps, expect"},
    {"sweep: {lt: M}\nsteps: []\n", "t.yaml:1:9: error: unknown key 'lt' in sweep: expected one of let, values"},
    {A "  - check: {name: c, equal: [x, {bf: x}]}\n", "t.yaml:3:34: error: unknown key 'bf' in operand: expected one of buf, roll_shards, expr, reduce, op, comm"},
    {"steps:\n  - alloc: {buf: x, bytes: 4, init: {cnst: 1}}\n", "t.yaml:2:38: error: unknown key 'cnst' in init: expected one of const, expr, copy, random, identity, pattern"},
    {A "  - sync: {steam: s}\n", "t.yaml:3:12: error: unknown key 'steam' in sync: expected one of stream, event"},
    /* steps */
    {"steps:\n  - alreduce: {buf: x}\n", "t.yaml:2:5: error: unknown step 'alreduce': expected one of when, alloc, free, release, sync, record, wait, repeat, region, init, copy, scale, compute, check, expect_error, send, recv, group, record_stream, empty_cache, all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all"},
    {"steps: [alloc]\n", "t.yaml:1:9: error: a step must be a mapping"},
    {"steps: {alloc: 1}\n", "t.yaml:1:8: error: 'steps' must be a list"},
    {A "    free: x\n", "t.yaml:3:5: error: a step has one step key: 'free' after 'alloc'"},
    {"steps:\n  - when: rank == 0\n", "t.yaml:2:5: error: a step needs a step key such as 'alloc' or 'all_reduce'"},
    {A "  - free: x\n    when: i == 0\n", "t.yaml:4:11: error: name 'i' is only defined in data patterns and checks"},
    /* alloc */
    {"steps:\n  - alloc: {buf: x, count: [1]}\n", "t.yaml:2:28: error: 'count' must be a scalar"},
    {"steps:\n  - alloc: {buf: x, bytes: 4, count: 1}\n", "t.yaml:2:31: error: 'bytes' and 'count' cannot both be given"},
    {"steps:\n  - alloc: {buf: x}\n", "t.yaml:2:5: error: alloc needs 'bytes' or 'count'"},
    {"steps:\n  - alloc: {bytes: 4}\n", "t.yaml:2:5: error: alloc needs 'buf'"},
    {"steps:\n  - alloc: {buf: x, bytes: 4, bytes: 5}\n", "t.yaml:2:31: error: duplicate key 'bytes' in alloc"},
    {"steps:\n  - alloc: x\n", "t.yaml:2:12: error: 'alloc' must be a mapping"},
    {"steps:\n  - alloc: {buf: x, bytes: 4, dtype: float33}\n", "t.yaml:2:38: error: unknown dtype 'float33': expected one of int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, float64"},
    {"steps:\n  - alloc: {buf: x, bytes: 4, init: iota}\n", "t.yaml:2:37: error: unknown data pattern 'iota': expected one of rank_iota"},
    {"steps:\n  - alloc: {buf: x, bytes: 4, init: {const: 1, expr: i}}\n", "t.yaml:2:48: error: only one data pattern may be given"},
    {"steps:\n  - alloc: {buf: 'x y', bytes: 4}\n", "t.yaml:2:18: error: invalid buffer name 'x y'"},
    /* expressions: the column is the offending character */
    {"steps:\n  - alloc: {buf: x, bytes: q * 2}\n", "t.yaml:2:28: error: undefined name 'q'"},
    {"steps:\n  - alloc: {buf: x, bytes: \"4 * q\"}\n", "t.yaml:2:33: error: undefined name 'q'"},
    /* a quoted one-line scalar is its source when its two quotes are all the source has more
     * (in characters: the é after the error, two bytes, counts one): 'q' at column 28 + 1 */
    {"steps:\n  - alloc: {buf: x, bytes: \"q + \xC3\xA9\"}\n", "t.yaml:2:29: error: undefined name 'q'"},
    {"steps:\n  - alloc: {buf: x, bytes: i}\n", "t.yaml:2:28: error: name 'i' is only defined in data patterns and checks"},
    {"steps:\n  - alloc: {buf: x, bytes: 9223372036854775807 + 1}\n", "t.yaml:2:48: error: integer overflow"},
    {"steps:\n  - alloc: {buf: x, bytes: 4 GiB * 4 GiB * 4 GiB}\n", "t.yaml:2:34: error: integer overflow"},
    {"steps:\n  - alloc: {buf: x, bytes: 1 / (2 - 2)}\n", "t.yaml:2:30: error: division by zero"},
    /* ... also where the scalar goes on over lines: the byte in the (folded) value is walked back
     * to its line and column in the source. A flow mapping's scalar folds its next line into
     * 'bytes' ("1MiB - nope"): 'nope' is at 3:9, not at 2:35 (column 28 + offset 7). */
    {"steps:\n  - alloc: {buf: x, bytes: 1MiB\n      - nope}\n", "t.yaml:3:9: error: undefined name 'nope'"},
    /* An unclosed one folds the next step in the same way ("1MiB - free"), but the file is not
     * YAML: the missing '}' is the error, where libyaml finds it (the ':' after 'free'). */
    {"steps:\n  - alloc: {buf: x, bytes: 1MiB\n  - free: x\n", "t.yaml:3:9: error: did not find expected ',' or '}' (while parsing a flow mapping)"},
    {"steps:\n  - alloc: {buf: x, bytes: 4 *\n\n       q}\n", "t.yaml:4:8: error: undefined name 'q'"},
    {"steps:\n  - alloc: {buf: x, bytes: 'q''\n    + 1'}\n", "t.yaml:2:29: error: undefined name 'q'"},
    {"steps:\n  - alloc: {buf: x, bytes: '4'' +\n    q'}\n", "t.yaml:2:30: error: unexpected '''"},
    {"steps:\n  - alloc: {buf: x, bytes: \"4 *\\\n     \\x34 * q\"}\n", "t.yaml:3:13: error: undefined name 'q'"},
    {"steps:\n  - alloc:\n      buf: x\n      bytes: |\n        4 *\n          q\n", "t.yaml:6:11: error: undefined name 'q'"},
    {A "  - all_reduce: {buf: 'x[0 :\n      q]'}\n", "t.yaml:4:7: error: undefined name 'q'"},
    {"steps:\n  - alloc: {buf: x, bytes: 4 +\n    }\n", "t.yaml:2:31: error: unexpected end of expression"},
    /* libyaml's marks count characters after the byte order mark, not bytes */
    {"\xEF\xBB\xBF" "about: \xC3\xA9\xC3\xA9\nsteps:\n  - alloc: {buf: x, bytes: \"4 +\\\n    q\"}\n", "t.yaml:4:5: error: undefined name 'q'"},
    {"world: 99999999999999999999999\nsteps: []\n", "t.yaml:1:8: error: number too large"},
    {"world: 0\nsteps: []\n", "t.yaml:1:8: error: 'world' must be between 1 and 1048576"},
    {"world: rank\nsteps: []\n", "t.yaml:1:8: error: undefined name 'rank'"},
    {"dtype: float33\nsteps: []\n", "t.yaml:1:8: error: unknown dtype 'float33': expected one of int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, float64"},
    /* lets */
    {"let: {M: 1, M: 2}\nsteps: []\n", "t.yaml:1:13: error: duplicate let 'M'"},
    {"let: {world: 1}\nsteps: []\n", "t.yaml:1:7: error: 'world' is reserved and cannot be a let name"},
    {"let: {MiB: 1}\nsteps: []\n", "t.yaml:1:7: error: 'MiB' is reserved and cannot be a let name"},
    {"let: {M: M + 1}\nsteps: []\n", "t.yaml:1:10: error: undefined name 'M'"},
    {"let: {A: C, C: 1}\nsteps: []\n", "t.yaml:1:10: error: undefined name 'C'"},
    {"let: {A: B}\nsteps: []\n", "t.yaml:1:10: error: unit 'B' must follow a number"},
    {"let: {a-b: 1}\nsteps: []\n", "t.yaml:1:7: error: invalid let name 'a-b'"},
    {"let: [M]\nsteps: []\n", "t.yaml:1:6: error: 'let' must be a mapping"},
    {"steps: []\nlet: {M: 1}\n", "t.yaml:2:1: error: 'let' must come before 'steps'"},
    /* streams, events */
    {"streams: [a, a]\nsteps: []\n", "t.yaml:1:14: error: duplicate stream 'a'"},
    {A "  - all_reduce: {buf: x, stream: s1}\n", "t.yaml:3:34: error: unknown stream 's1'"},
    {A "  - sync: {event: e}\n", "t.yaml:3:19: error: unknown event 'e'"},
    {"events: [e]\n" A "  - record: {stream: default}\n", "t.yaml:4:5: error: record needs 'event'"},
    {"events: [e]\nstreams: [s]\n" A "  - sync: {stream: s, event: e}\n", "t.yaml:5:23: error: 'stream' and 'event' cannot both be given"},
    {A "  - sync: host\n", "t.yaml:3:11: error: sync must be 'device', {stream: S} or {event: E}"},
    /* buffers and views */
    {"steps:\n  - free: y\n", "t.yaml:2:11: error: undefined buffer 'y'"},
    {A "  - all_reduce: {send: x, recv: z}\n", "t.yaml:3:33: error: undefined buffer 'z'"},
    {A "  - free: {a: 1}\n", "t.yaml:3:11: error: 'free' must be a name or a list of names"},
    {A "  - free: []\n", "t.yaml:3:11: error: 'free' needs at least one buffer"},
    {A "  - all_reduce: {buf: \"x[0 : ]\"}\n", "t.yaml:3:30: error: empty expression"},
    {A "  - all_reduce: {buf: 'x[4]'}\n", "t.yaml:3:25: error: expected 'name' or 'name[offset : count]'"},
    /* in a flow mapping a view with brackets must be quoted: YAML reads [ as a list */
    {A "  - all_reduce: {buf: x[0 : 4]}\n", "t.yaml:3:24: error: did not find expected ',' or '}' (while parsing a flow mapping)"},
    {A "  - all_reduce: {buf: 'x[0 : 4'}\n", "t.yaml:3:31: error: expected ']' to close the view"},
    {A "  - all_reduce: {buf: 'x[0 : q]'}\n", "t.yaml:3:30: error: undefined name 'q'"},
    /* an escape before the range: the value is not its source, so its marks are walked (not
     * ld_text_ascii's column + offset): \x30 is four characters for one byte, q at 29 + 4 */
    {A "  - all_reduce: {buf: \"x[\\x30 : q]\"}\n", "t.yaml:3:33: error: undefined name 'q'"},
    /* non-ASCII in or after the range: a character is not a byte, the marks are counted (é is
     * two bytes, one column: the view's end after it is at 33, not 34) */
    {A "  - all_reduce: {buf: \"x[0 : q]\xC3\xA9\"}\n", "t.yaml:3:33: error: expected ']' to close the view"},
    {A "  - all_reduce: {buf: \"x[0\xC3\xA9 : q]\"}\n", "t.yaml:3:27: error: unexpected '\xC3\xA9'"},
    {A "  - all_reduce: {buf: x y}\n", "t.yaml:3:25: error: expected 'name' or 'name[offset : count]'"},
    /* collectives */
    {A "  - all_reduce: {buf: x, op: avgg}\n", "t.yaml:3:30: error: unknown op 'avgg': expected one of sum, prod, max, min, avg"},
    {A "  - all_gather: {send: x, recv: x, op: sum}\n", "t.yaml:3:36: error: 'op' is not valid for all_gather"},
    {A "  - broadcast: {buf: x}\n", "t.yaml:3:5: error: broadcast needs 'root'"},
    {A "  - all_reduce: {buf: x, root: 0}\n", "t.yaml:3:26: error: 'root' is not valid for all_reduce"},
    {A "  - all_reduce: {buf: x, send: x}\n", "t.yaml:3:26: error: 'buf' and 'send' cannot both be given"},
    {A "  - reduce_scatter: {send: x}\n", "t.yaml:3:5: error: reduce_scatter needs 'recv'"},
    {A "  - all_reduce: {op: sum}\n", "t.yaml:3:5: error: all_reduce needs 'buf' or 'send' and 'recv'"},
    /* checks and expect_error */
    {A "  - check: {name: c, equal: [x]}\n", "t.yaml:3:29: error: 'equal' needs exactly 2 operands"},
    {A "  - check: {name: c, equal: [x, x, x]}\n", "t.yaml:3:29: error: 'equal' needs exactly 2 operands"},
    {A "  - check: {name: c, equal: [x, x], rtol: abc}\n", "t.yaml:3:43: error: 'rtol' must be a non-negative number"},
    {A "  - check: {equal: [x, x]}\n", "t.yaml:3:5: error: check needs 'name'"},
    {A "  - check: {name: c, equal: [x, {buf: x, expr: 1}]}\n", "t.yaml:3:33: error: an operand needs exactly one of 'buf', 'expr', 'reduce'"},
    {A "  - check: {name: c, equal: [x, {expr: 1, roll_shards: 1}]}\n", "t.yaml:3:43: error: 'roll_shards' needs 'buf'"},
    {A "  - check: {name: c, equal: [x, {reduce: {copy: x}}]}\n", "t.yaml:3:43: error: a reduced pattern must be rank_iota, const, expr or random"},
    {A "  - expect_error: {name: e, error: nope, step: {free: x}}\n", "t.yaml:3:36: error: unknown error code 'nope': expected one of size_mismatch, dtype_mismatch, bad_op, out_of_bounds, bad_inplace"},
    {A "  - expect_error: {name: e, error: bad_op}\n", "t.yaml:3:5: error: expect_error needs 'step'"},
    {A "  - expect_error: {name: e, error: bad_op, step: {all_reduc: {buf: x}}}\n", "t.yaml:3:51: error: unknown step 'all_reduc': expected one of when, alloc, free, release, sync, record, wait, repeat, region, init, copy, scale, compute, check, expect_error, send, recv, group, record_stream, empty_cache, all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all"},
    /* top level */
    {"steps: []\nplans: {a: {steps: []}}\n", "t.yaml:2:1: error: 'steps' and 'plans' cannot both be given"},
    {"plans: {a: {steps: []}, a: {steps: []}}\n", "t.yaml:1:25: error: duplicate plan 'a'"},
    {"plans: {a: {expect: {requested: {peak: 1}}}}\n", "t.yaml:1:9: error: plan 'a' needs 'steps'"},
    {"steps: []\nsteps: []\n", "t.yaml:2:1: error: duplicate key 'steps' in schedule"},
    {"let: {M: 1}\nsweep: {let: N, values: [1]}\nsteps: []\n", "t.yaml:2:14: error: sweep of 'N', which is not a let"},
    {"let: {M: 1}\nsweep: {let: M, values: []}\nsteps: []\n", "t.yaml:2:25: error: 'values' must not be empty"},
    {"expect: [{rank: 0}]\nsteps: []\n", "t.yaml:1:10: error: expect needs 'requested' or 'device'"},
    {"expect: {requested: {}}\nsteps: []\n", "t.yaml:1:21: error: 'requested' needs 'steady' or 'peak'"},
    {"{[a]: 1}\n", "t.yaml:1:2: error: keys of 'schedule' must be scalars"},
    /* hostile */
    {"steps: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
     "t.yaml:1:9: error: a step must be a mapping"},
};

static char *repeat_str(const char *s, size_t n) {
    size_t len = strlen(s);
    char *out = malloc(len * n + 1);
    for (size_t k = 0; k < n; k++)
        memcpy(out + k * len, s, len);
    out[len * n] = '\0';
    return out;
}

static void test_bad_schedules(void **state) {
    int failures = 0;
    for (size_t k = 0; k < ML_ARRAY_LEN(bad_cases); k++) {
        ml_diags d;
        ml_diags_init(&d);
        sched *s = tu_load(bad_cases[k].yaml, &d);
        const char *got = tu_first_error(&d);
        if (s || strcmp(got, bad_cases[k].error) != 0) {
            /* Every failing row is shown, with its yaml, not just the first. */
            print_error("row %zu: %s\n  yaml: %s\n  want: %s\n  got:  %s\n", k, s ? "loaded" : "wrong error",
                        bad_cases[k].yaml, bad_cases[k].error, got);
            failures++;
        }
        sched_free(s);
        ml_diags_free(&d);
    }
    assert_int_equal(failures, 0);
    assert_true(ML_ARRAY_LEN(bad_cases) >= 40);
}

static void expect_load_error(const char *yaml, const char *error) {
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    assert_null(s);
    assert_string_equal(tu_first_error(&d), error);
    ml_diags_free(&d);
}

/* `time_us:` beside a step's key, before or after it: the step's recorded time, found by the
 * step; a negative or non-constant one is refused at its value. */
static void test_step_times(void **state) {
    (void)state;
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load("world: 1\nsteps:\n  - alloc: {buf: a, bytes: 4}\n    time_us: 17\n"
                       "  - time_us: 2 * 21\n    free: a\n  - alloc: {buf: b, bytes: 4}\n", &d);
    assert_non_null(s);
    const sched_plan *p = &s->plans[0];
    int64_t us = -1;
    assert_true(sched_step_time(s, &p->steps[0], &us));
    assert_int_equal(us, 17);
    assert_true(sched_step_time(s, &p->steps[1], &us));
    assert_int_equal(us, 42);
    assert_false(sched_step_time(s, &p->steps[2], &us));
    sched_free(s);
    ml_diags_free(&d);
    expect_load_error("steps:\n  - alloc: {buf: a, bytes: 4}\n    time_us: -1\n",
                      "t.yaml:3:14: error: 'time_us' must be a constant number of microseconds >= 0");
    expect_load_error("let: {T: 3}\nsteps:\n  - free: a\n    time_us: T\n",
                      "t.yaml:4:14: error: undefined name 'T'");
}

static void test_deep_nesting(void **state) {
    /* 10,000 nested flow sequences: refused at the first level where a list cannot be. */
    char *open = repeat_str("[", 10000), *close = repeat_str("]", 10000);
    size_t n = strlen(open) * 2 + 64;
    char *yaml = malloc(n);
    snprintf(yaml, n, "steps: %s%s\n", open, close);
    expect_load_error(yaml, "t.yaml:1:9: error: a step must be a mapping");
    snprintf(yaml, n, "let: {M: %s%s}\n", open, close);
    expect_load_error(yaml, "t.yaml:1:10: error: 'M' must be a scalar");
    free(yaml);
    free(open);
    free(close);

    /* 100 nested repeats: deeper than the 64 levels allowed. */
    char *head = repeat_str("{repeat: {count: 1, steps: [", 100);
    char *tail = repeat_str("]}}", 100);
    n = strlen(head) + strlen(tail) + 64;
    yaml = malloc(n);
    snprintf(yaml, n, "steps: [%s%s]\n", head, tail);
    /* the 65th repeat: 8 + 64 * 28 columns in */
    char want[128];
    snprintf(want, sizeof want, "t.yaml:1:%d: error: nesting deeper than 64 levels", 8 + 64 * 28 + 2);
    expect_load_error(yaml, want);
    free(yaml);
    free(head);
    free(tail);

    /* 64 levels are fine. */
    head = repeat_str("{region: {name: r, steps: [", 64);
    tail = repeat_str("]}}", 64);
    n = strlen(head) + strlen(tail) + 64;
    yaml = malloc(n);
    snprintf(yaml, n, "steps: [%s%s]\n", head, tail);
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    if (!s)
        fail_msg("%s", tu_first_error(&d));
    assert_int_equal(s->n_steps_total, 64);
    sched_free(s);
    ml_diags_free(&d);
    free(yaml);
    free(head);
    free(tail);
}

static void test_limits(void **state) {
    /* names over 128 bytes */
    char *name = repeat_str("b", 129);
    char yaml[512];
    snprintf(yaml, sizeof yaml, "steps:\n  - alloc: {buf: %s, bytes: 4}\n", name);
    expect_load_error(yaml, "t.yaml:2:18: error: buffer name longer than 128 bytes");
    name[128] = '\0';
    snprintf(yaml, sizeof yaml, "steps:\n  - alloc: {buf: %s, bytes: 4}\n", name);
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    assert_non_null(s);
    sched_free(s);
    free(name);

    /* max_steps */
    const char *three = "steps: [{alloc: {buf: x, bytes: 1}}, {free: x}, {alloc: {buf: x, bytes: 1}}]\n";
    sched_load_limits lim = {.max_steps = 2};
    s = sched_load_buffer("t.yaml", three, strlen(three), &lim, &d);
    assert_null(s);
    assert_string_equal(tu_first_error(&d), "t.yaml:1:49: error: more than 2 steps");
    ml_diags_free(&d);

    /* a file that does not exist */
    ml_diags_init(&d);
    assert_null(sched_load_file("/nonexistent/x.yaml", NULL, &d));
    assert_string_equal(tu_first_error(&d),
                        "/nonexistent/x.yaml: error: cannot open file: No such file or directory");
    ml_diags_free(&d);
}

/* Many steps load, and identical expression text is parsed once (shared trees). */
static void test_many_steps(void **state) {
    ml_str y = {0};
    ml_str_printf(&y, "let: {M: 1MiB}\nsteps:\n");
    int n = 20000;
    for (int k = 0; k < n; k++)
        ml_str_printf(&y, "  - alloc: {buf: b%d, bytes: M / 4}\n  - all_reduce: {buf: b%d}\n  - free: b%d\n",
                      k, k, k);
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(y.s, &d);
    assert_non_null(s);
    assert_int_equal(s->plans[0].n, 3 * n);
    assert_int_equal(s->syms[SYM_BUFFER].n, n);
    assert_ptr_equal(s->plans[0].steps[0].u.alloc.bytes, s->plans[0].steps[3 * (n - 1)].u.alloc.bytes);
    assert_string_equal(sched_sym_name(s, SYM_BUFFER, n - 1), "b19999");
    sched_free(s);
    ml_diags_free(&d);
    ml_str_free(&y);
}

/* Names looked up again after their table grew (64 slots hold 32 names; 100 buffers regrow it
 * twice, and each regrowth empties the memo) resolve to their own symbols, whether a lookup finds
 * them through the memo (LD_MEMO: b%d and b%d+1 were just named) or in the table. Buffers b0..b99 are allocated in
 * order, so b%d is symbol %d; the compute steps read them backwards, each with the buffer
 * after it. */
static void test_names_after_regrowth(void **state) {
    ml_str y = {0};
    ml_str_printf(&y, "steps:\n");
    int n = 100;
    for (int k = 0; k < n; k++)
        ml_str_printf(&y, "  - alloc: {buf: b%d, bytes: 8}\n", k);
    for (int k = n - 1; k >= 0; k--)
        ml_str_printf(&y, "  - compute: {reads: [b%d, b%d]}\n", k, (k + 1) % n);
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(y.s, &d);
    assert_non_null(s);
    assert_int_equal(s->syms[SYM_BUFFER].n, n);
    assert_int_equal(s->plans[0].n, 2 * n);
    for (int k = 0; k < n; k++)
        assert_int_equal(s->plans[0].steps[k].u.alloc.buf, k);
    for (int j = 0; j < n; j++) {
        const sched_step *st = &s->plans[0].steps[n + j];
        int k = n - 1 - j;
        assert_int_equal(st->u.compute.n_reads, 2);
        assert_int_equal(st->u.compute.reads[0].buf, k);
        assert_int_equal(st->u.compute.reads[1].buf, (k + 1) % n);
    }
    assert_string_equal(sched_sym_name(s, SYM_BUFFER, 99), "b99");
    sched_free(s);
    ml_diags_free(&d);
    ml_str_free(&y);
}

/* Two names with the same hash stay two symbols: a slot's hash is only a filter, the key decides.
 * "b99755" and "b100399" have the same FNV-1a hash, 0x04d66a0f (found by hashing b0..b399999,
 * cursor.c's hash_bytes). Two other buffers named in between take both memo slots (ld_memo_index,
 * 3 * length + first byte + 9 * last byte, mod 64: "ch" 17 as b99755, "ee" 56 as b100399), so the
 * free looks each up through the table: b100399's probe meets b99755's slot first, hash equal,
 * and must go on to its own. */
static void test_names_same_hash(void **state) {
    const char *yaml = "steps:\n"
                       "  - alloc: {buf: b99755, bytes: 8}\n"
                       "  - alloc: {buf: b100399, bytes: 8}\n"
                       "  - alloc: {buf: ch, bytes: 8}\n"
                       "  - alloc: {buf: ee, bytes: 8}\n"
                       "  - alloc: {buf: x2, bytes: 8}\n"
                       "  - alloc: {buf: x3, bytes: 8}\n"
                       "  - free: [b100399, b99755]\n";
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    assert_non_null(s);
    assert_int_equal(s->syms[SYM_BUFFER].n, 6);
    const sched_step *fr = &s->plans[0].steps[6];
    assert_int_equal(fr->u.free.n, 2);
    assert_int_equal(fr->u.free.bufs[0], 1);   /* b100399: the second buffer named */
    assert_int_equal(fr->u.free.bufs[1], 0);   /* b99755: the first */
    assert_string_equal(sched_sym_name(s, SYM_BUFFER, 1), "b100399");
    sched_free(s);
    ml_diags_free(&d);
}

/* Names that share a memo slot (ld_memo_index: 3 * length + first byte + 9 * last byte, mod 64)
 * take it in turn and each still finds its own symbol, as do step keys that share one:
 * p0 and act1 are both 550 (38 mod 64), broadcast and reduce 1169 and 1041 (both 17). Every
 * lookup below meets the other name in the slot and goes on to the table. */
static void test_memo_slot_shared(void **state) {
    const char *yaml = "steps:\n"
                       "  - alloc: {buf: p0, bytes: 8}\n"
                       "  - alloc: {buf: act1, bytes: 8}\n"
                       "  - compute: {reads: [p0, act1, p0, act1], writes: [act1, p0]}\n"
                       "  - broadcast: {buf: p0, root: 0}\n"
                       "  - reduce: {buf: act1, root: 0}\n"
                       "  - broadcast: {buf: act1, root: 0}\n"
                       "  - reduce: {buf: p0, root: 0}\n";
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load(yaml, &d);
    if (!s)
        fail_msg("%s", tu_first_error(&d));
    assert_int_equal(s->syms[SYM_BUFFER].n, 2);
    const sched_step *st = s->plans[0].steps;
    const sched_view *r = st[2].u.compute.reads, *w = st[2].u.compute.writes;
    assert_int_equal(st[2].u.compute.n_reads, 4);
    assert_int_equal(r[0].buf, 0);   /* p0: the first buffer named */
    assert_int_equal(r[1].buf, 1);   /* act1 */
    assert_int_equal(r[2].buf, 0);
    assert_int_equal(r[3].buf, 1);
    assert_int_equal(w[0].buf, 1);
    assert_int_equal(w[1].buf, 0);
    static const ml_coll colls[] = {COLL_BROADCAST, COLL_REDUCE, COLL_BROADCAST, COLL_REDUCE};
    static const uint32_t bufs[] = {0, 1, 1, 0};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(st[3 + k].kind, ST_COLL);
        assert_int_equal(st[3 + k].u.coll.coll, colls[k]);
        assert_int_equal(st[3 + k].u.coll.send.buf, bufs[k]);
    }
    sched_free(s);
    ml_diags_free(&d);
    /* A key of reduce's length, first and last byte has its slot: the bytes decide. */
    expect_load_error(A "  - reduce: {buf: x, root: 0}\n  - rexxce: {buf: x}\n",
                      "t.yaml:4:5: error: unknown step 'rexxce': expected one of when, alloc, free, release, sync, "
                      "record, wait, repeat, region, init, copy, scale, compute, check, expect_error, send, recv, "
                      "group, record_stream, empty_cache, all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all");
}

/* The loaded file's own name defaults the schedule name; a file on disk loads like a buffer. */
static void test_load_file(void **state) {
    char path[] = "/tmp/memlife-load-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    const char *text = "steps:\n  - alloc: {buf: x, bytes: 4}\n  - free: x\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ml_diags d;
    ml_diags_init(&d);
    sched *s = sched_load_file(path, NULL, &d);
    assert_non_null(s);
    assert_string_equal(s->file, path);
    char want[64];
    snprintf(want, sizeof want, "%s", strrchr(path, '/') + 1);
    want[strlen(want) - 5] = '\0';
    assert_string_equal(s->name, want);
    sched_free(s);
    ml_diags_free(&d);
    unlink(path);
}

/* The side table of where each step's parts are (sched_part_mark): a buffer name, an
 * expression, `when:` before and after the step key, a repeat's count after its body, and the
 * mark of a byte inside a quoted expression (sched_part_offset_mark); a part a step does not
 * have is the step's key. Columns are counted on the lines as written below. */
static void test_part_marks(void **state) {
    static const char yaml[] =
        "world: 2\n"                                                     /* 1 */
        "events: [e]\n"                                                  /* 2 */
        "steps:\n"                                                       /* 3 */
        "  - alloc: {buf: x, bytes: \"4 * (1MiB + 2)\"}\n"               /* 4 */
        "  - when: rank == 0\n"                                          /* 5 */
        "    release: {buf: x, keep: 0}\n"                               /* 6 */
        "  - repeat: {steps: [{record: {event: e}, when: rank}], count: 3}\n" /* 7 */
        "  - free: x\n";                                                 /* 8 */
    ml_diags d;
    ml_diags_init(&d);
    sched *s = sched_load_buffer("t.yaml", yaml, strlen(yaml), NULL, &d);
    assert_non_null(s);
    const sched_step *st = s->plans[0].steps;
    assert_mark(sched_part_mark(s, &st[0], SCHED_AT_BUF), 4, 18);
    assert_mark(sched_part_mark(s, &st[0], SCHED_AT_SIZE), 4, 29);   /* after the quote */
    /* byte 10 of "4 * (1MiB + 2)" is its '+': 10 characters after the text's start */
    assert_mark(sched_part_offset_mark(s, &st[0], SCHED_AT_SIZE, expr_text(st[0].u.alloc.bytes), 10),
                4, 39);
    assert_mark(sched_part_mark(s, &st[0], SCHED_AT_CHUNKS), 4, 5);  /* none: the key */
    assert_mark(sched_part_mark(s, &st[1], SCHED_AT_WHEN), 5, 11);   /* before the key */
    assert_mark(sched_part_mark(s, &st[1], SCHED_AT_BUF), 6, 20);
    assert_mark(sched_part_mark(s, &st[1], SCHED_AT_KEEP), 6, 29);
    const sched_step *rec = &st[2].u.repeat.steps[0];
    assert_mark(sched_part_mark(s, rec, SCHED_AT_EVENT), 7, 39);
    assert_mark(sched_part_mark(s, rec, SCHED_AT_WHEN), 7, 49);      /* after the key */
    assert_mark(sched_part_mark(s, &st[2], SCHED_AT_COUNT), 7, 64);  /* after the body */
    assert_mark(sched_part_mark(s, &st[2], SCHED_AT_WHEN), 7, 5);    /* the body's is not its */
    sched_free(s);
    ml_diags_free(&d);
}

/* A step is 104 bytes (sched.h): an init's copy source is an arena view of its own, NULL for the
 * inits that copy nothing, and a collective's op and kind are two bytes each. The copy's view
 * keeps its text's marks: src[1 : 2] starts at column 47 of line 4 (after the quote), its
 * offset's text at 51 (the byte after '['), its count's at 54 (after ':'): 4 and 7 after it. */
static void test_compact_steps(void **state) {
    (void)state;
    static const char yaml[] =
        "steps:\n"                                                          /* 1 */
        "  - alloc: {buf: src, count: 4, init: {const: 7}}\n"               /* 2 */
        "  - alloc: {buf: dst, count: 2, init: {copy: \"src[1 : 2]\"}}\n"   /* 3 */
        "  - reduce_scatter: {send: src, recv: dst, op: max, stream: s}\n"; /* 4 */
    ml_diags d;
    ml_diags_init(&d);
    static const char with_stream[] = "streams: [s]\n";
    char text[sizeof with_stream + sizeof yaml];
    snprintf(text, sizeof text, "%s%s", with_stream, yaml);
    sched *s = sched_load_buffer("t.yaml", text, strlen(text), NULL, &d);
    assert_non_null(s);
    assert_true(sizeof(sched_step) <= 104);
    const sched_step *st = s->plans[0].steps;
    assert_int_equal(st[0].u.alloc.init.kind, INIT_CONST);
    assert_null(st[0].u.alloc.init.src);
    const sched_view *v = st[1].u.alloc.init.src;
    assert_int_equal(st[1].u.alloc.init.kind, INIT_COPY);
    assert_non_null(v);
    assert_int_equal(v->buf, st[0].u.alloc.buf);
    assert_mark(v->mark, 4, 47);   /* line 4: the streams line comes first */
    assert_int_equal(v->offset_col, 4);
    assert_int_equal(v->count_col, 7);
    assert_int_equal(st[2].u.coll.coll, COLL_REDUCE_SCATTER);
    assert_int_equal(st[2].u.coll.op, RED_MAX);
    assert_int_equal(st[2].u.coll.stream, 1);   /* stream 0 is "default" */
    assert_int_equal(st[2].u.coll.recv.buf, st[1].u.alloc.buf);
    sched_free(s);
    ml_diags_free(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_schedule),  cmocka_unit_test(test_plans_and_sweep),
        cmocka_unit_test(test_eval_lets_and_set), cmocka_unit_test(test_bad_schedules),
        cmocka_unit_test(test_deep_nesting),   cmocka_unit_test(test_limits),
        cmocka_unit_test(test_many_steps),     cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_step_times),
        cmocka_unit_test(test_part_marks),     cmocka_unit_test(test_compact_steps),     cmocka_unit_test(test_names_after_regrowth),
        cmocka_unit_test(test_names_same_hash), cmocka_unit_test(test_memo_slot_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
