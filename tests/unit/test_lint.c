/* SPDX-License-Identifier: MIT */
/* test_lint.c — one test per diagnostic kind, asserting the exact text and line:col, plus the
 * expect_error contract rows, stream hazards and cross-rank divergence.
 *
 * Merging across ranks (documented in lint.c): a finding every rank makes is one diagnostic
 * without a rank; a finding only some ranks make is one diagnostic per such rank, with
 * " [rank N]". So the chapter's nondivisible 1003 case, rejected on all four ranks, is one
 * diagnostic when not wrapped, and four passing contract rows when wrapped in expect_error. */
#include "plantest.h"

/* Loads, expands and lints; checks the number of errors and of notes and returns the run for
 * more checks. */
static void lint_yaml_notes(pt_run *r, const char *yaml, int world, size_t want_errors,
                            size_t want_notes) {
    pt_load(r, yaml, world);
    pt_lint(r);
    if (r->lint_errors != want_errors || r->d.items.n != want_errors + want_notes)
        pt_dump(&r->d);
    assert_int_equal(r->lint_errors, want_errors);
    assert_int_equal(r->d.items.n, want_errors + want_notes);
}

static void lint_yaml(pt_run *r, const char *yaml, int world, size_t want_errors) {
    lint_yaml_notes(r, yaml, world, want_errors, 0);
}

/* The single diagnostic of a schedule. */
static void lint_says(const char *yaml, int world, const char *want) {
    pt_run r;
    lint_yaml(&r, yaml, world, 1);
    assert_string_equal(pt_diag(&r, 0), want);
    pt_free(&r);
}

/* The single error of a schedule and the note after it (its second place). */
static void lint_says_with_note(const char *yaml, int world, const char *want,
                                const char *want_note) {
    pt_run r;
    lint_yaml_notes(&r, yaml, world, 1, 1);
    assert_string_equal(pt_diag(&r, 0), want);
    assert_string_equal(pt_diag(&r, 1), want_note);
    pt_free(&r);
}

/* ---- lifetimes ---------------------------------------------------------------------------- */

static void use_after_free(void **state) {
    lint_says_with_note("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: full, bytes: 1KiB}\n"
              "  - alloc: {buf: shard, bytes: 512}\n"
              "  - reduce_scatter: {send: full, recv: shard}\n"
              "  - sync: device\n"
              "  - free: shard\n"
              "  - all_gather: {send: shard, recv: full}\n",
              0, "t.yaml:8:24: error: use of 'shard' after free",
              "t.yaml:7:11: note: 'shard' was freed here");
}

static void use_not_allocated(void **state) {
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: a, bytes: 1KiB}\n"
              "  - copy: {src: a, dst: b}\n"
              "  - alloc: {buf: b, bytes: 1KiB}\n",
              0, "t.yaml:4:25: error: use of 'b' which is not allocated");
}

static void free_not_allocated(void **state) {
    lint_says("world: 2\n"
              "steps:\n"
              "  - free: x\n"
              "  - alloc: {buf: x, bytes: 1KiB}\n",
              0, "t.yaml:3:11: error: free of 'x' which is not allocated");
}

static void double_free(void **state) {
    lint_says_with_note("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: x, bytes: 1KiB}\n"
              "  - free: x\n"
              "  - free: x\n",
              0, "t.yaml:5:11: error: 'x' freed twice", "t.yaml:4:11: note: 'x' was freed here");
}

static void alloc_of_live(void **state) {
    lint_says_with_note("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: x, bytes: 1KiB}\n"
              "  - alloc: {buf: x, bytes: 2KiB}\n",
              0, "t.yaml:4:18: error: alloc of 'x' which is still live",
              "t.yaml:3:18: note: 'x' was allocated here");
}

static void view_out_of_bounds(void **state) {
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: full, count: 1024}\n"
              "  - scale: {buf: 'full[768:512]', by: 2}\n",
              /* at the count 512 (4:28): 768 fits in 1024 elements, 768 + 512 does not */
              0, "t.yaml:4:28: error: view 'full[768:512]' is outside 'full' (1024 elements)");
    /* at the offset 2000 (4:24), which alone is past the end, spaces inside the brackets */
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: full, count: 1024}\n"
              "  - scale: {buf: 'full[2000 : 1]', by: 2}\n",
              0, "t.yaml:4:24: error: view 'full[2000:1]' is outside 'full' (1024 elements)");
}

static void finding_on_some_ranks_names_them(void **state) {
    pt_run r;
    /* only ranks 1 and 3 free a name they never allocated */
    lint_yaml(&r,
              "world: 4\n"
              "steps:\n"
              "  - free: x\n"
              "    when: rank % 2 == 1\n"
              "  - alloc: {buf: x, bytes: 1KiB}\n",
              0, 2);
    assert_string_equal(pt_diag(&r, 0), "t.yaml:3:11: error: free of 'x' which is not allocated [rank 1]");
    assert_string_equal(pt_diag(&r, 1), "t.yaml:3:11: error: free of 'x' which is not allocated [rank 3]");
    pt_free(&r);
}

static void repeat_reports_once(void **state) {
    /* 1000 iterations of the same double free: one diagnostic */
    lint_says_with_note("world: 2\n"
                        "steps:\n"
                        "  - alloc: {buf: x, bytes: 1KiB}\n"
                        "  - free: x\n"
                        "  - repeat: {count: 1000, steps: [{free: x}]}\n",
                        0, "t.yaml:5:42: error: 'x' freed twice",
                        "t.yaml:4:11: note: 'x' was freed here");
}

/* ---- chunks ------------------------------------------------------------------------------- */

static void release_errors(void **state) {
    lint_says_with_note("world: 4\n"
                        "steps:\n"
                        "  - alloc: {buf: a, bytes: 1MiB}\n"
                        "  - release: {buf: a, keep: rank}\n",
                        0, "t.yaml:4:20: error: release of 'a' which was not allocated in chunks",
                        "t.yaml:3:18: note: 'a' was allocated here, without 'chunks'");
    /* chunks: 1 (chunks: world at world 1) is a chunked buffer of one chunk: keeping chunk 0
     * releases nothing and is clean; chunk 1 does not exist. */
    pt_run r;
    lint_yaml(&r, "world: 1\n"
                  "steps:\n"
                  "  - alloc: {buf: a, bytes: 1MiB, chunks: world}\n"
                  "  - release: {buf: a, keep: rank}\n"
                  "  - free: a\n", 0, 0);
    pt_free(&r);
    /* the error at the keep expression, the note at the alloc that made the chunks */
    lint_says_with_note("world: 4\n"
                        "steps:\n"
                        "  - alloc: {buf: a, bytes: 1MiB, chunks: 1}\n"
                        "  - release: {buf: a, keep: 1}\n",
                        0, "t.yaml:4:29: error: release of 'a' keeps chunk 1 but it has 1 chunks",
                        "t.yaml:3:18: note: 'a' was allocated here in 1 chunks");
    lint_says_with_note("world: 4\n"
                        "steps:\n"
                        "  - alloc: {buf: a, bytes: 1MiB, chunks: world}\n"
                        "  - release: {buf: a, keep: rank + 1}\n"
                        "    when: rank == 3\n",
                        0, "t.yaml:4:29: error: release of 'a' keeps chunk 4 but it has 4 chunks "
                           "[rank 3]",
                        "t.yaml:3:18: note: 'a' was allocated here in 4 chunks [rank 3]");
    lint_says_with_note("world: 4\n"
                        "steps:\n"
                        "  - alloc: {buf: a, bytes: 1MiB, chunks: world}\n"
                        "  - release: {buf: a, keep: rank}\n"
                        "  - release: {buf: a, keep: rank}\n",
                        0, "t.yaml:5:20: error: release of 'a' which was already released",
                        "t.yaml:4:20: note: 'a' was released here");
}

static void use_after_release(void **state) {
    pt_run r;
    /* 1024 floats in 4 chunks of 256: after keeping chunk `rank`, only [256*rank, +256) is
     * mapped; the all_reduce of the whole buffer touches released chunks on every rank, the
     * view of chunk 0 only on ranks 1..3. */
    lint_yaml_notes(&r,
              "world: 4\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 1024, chunks: world}\n"
              "  - release: {buf: a, keep: rank}\n"
              "  - all_reduce: {buf: a}\n"
              "  - scale: {buf: 'a[0:256]', by: 3}\n"
              "  - scale: {buf: 'a[rank*256:256]', by: 3}\n",
              0, 7, 7);
    /* each rank's text names its own chunk: 4 findings at 5:23 (the view), 3 at 6:19, in rank
     * order, each followed by its note at the release's buffer name (4:20) */
    assert_string_equal(pt_diag(&r, 0), "t.yaml:5:23: error: use of 'a' outside chunk 0, the only "
                                        "one kept by its release [rank 0]");
    assert_string_equal(pt_diag(&r, 1), "t.yaml:4:20: note: 'a' was released here, keeping "
                                        "chunk 0 [rank 0]");
    assert_string_equal(pt_diag(&r, 2), "t.yaml:5:23: error: use of 'a' outside chunk 1, the only "
                                        "one kept by its release [rank 1]");
    assert_string_equal(pt_diag(&r, 4), "t.yaml:6:19: error: use of 'a[0:256]' outside chunk 1, "
                                        "the only one kept by its release [rank 1]");
    pt_free(&r);
}

/* ---- collective contracts ----------------------------------------------------------------- */

static const char nondivisible[] =
    "world: 4\n"
    "dtype: int64\n"
    "let: {L: 1003}\n"
    "steps:\n"
    "  - alloc: {buf: input, count: L, init: rank_iota}\n"
    "  - alloc: {buf: output, count: L / world}\n"
    "  - reduce_scatter: {send: input, recv: output}\n";

static void reduce_scatter_size(void **state) {
    /* seed: 1003 int64 on 4 ranks, recv 1003/4 = 250; all four ranks refuse: one diagnostic */
    lint_says(nondivisible, 0,
              "t.yaml:7:28: error: reduce_scatter send count 1003 is not world (4) × recv count "
              "250 (1000)");
}

static void all_gather_and_all_reduce_size(void **state) {
    lint_says("world: 4\n"
              "steps:\n"
              "  - alloc: {buf: s, count: 64}\n"
              "  - alloc: {buf: g, count: 200}\n"
              "  - all_gather: {send: s, recv: g}\n",
              0, "t.yaml:5:33: error: all_gather recv count 200 is not world (4) × send count 64 (256)");
    lint_says("world: 4\n"
              "steps:\n"
              "  - alloc: {buf: s, count: 64}\n"
              "  - alloc: {buf: g, count: 200}\n"
              "  - all_reduce: {send: s, recv: g}\n",
              0, "t.yaml:5:33: error: all_reduce recv count 200 is not send count 64");
}

static void dtype_mismatch(void **state) {
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: s, count: 64, dtype: int64}\n"
              "  - alloc: {buf: r, count: 64, dtype: float32}\n"
              "  - all_reduce: {send: s, recv: r}\n",
              0, "t.yaml:5:33: error: all_reduce send dtype int64 differs from recv dtype float32");
}

static void root_outside_world(void **state) {
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: b, count: 64}\n"
              "  - broadcast: {buf: b, root: world}\n",
              0, "t.yaml:4:31: error: broadcast root 2 is outside the world (2 ranks)");
}

static void bad_in_place(void **state) {
    /* recv at shard 0 of the send buffer: NCCL's in-place offset only on rank 0 */
    pt_run r;
    lint_yaml(&r,
              "world: 2\n"
              "steps:\n"
              "  - alloc: {buf: full, count: 128}\n"
              "  - reduce_scatter: {send: full, recv: 'full[0:64]'}\n",
              0, 1);
    assert_string_equal(pt_diag(&r, 0),
                        "t.yaml:4:41: error: reduce_scatter send [0:128] and recv [0:64] overlap in "
                        "one buffer, but nccl runs in place only at recv - send = 64 elements on "
                        "rank 1 [rank 1]");
    pt_free(&r);
}

static void copy_and_check_shapes(void **state) {
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 64}\n"
              "  - alloc: {buf: b, count: 32}\n"
              "  - copy: {src: a, dst: b}\n",
              0, "t.yaml:5:25: error: copy from 'a' (64 elements) into 'b' (32 elements)");
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 64}\n"
              "  - alloc: {buf: b, count: 32}\n"
              "  - check: {name: same, equal: [a, b]}\n",
              0, "t.yaml:5:36: error: check 'same' compares 64 elements with 32");
}

static void contract_bad_op_direct(void **state) {
    /* The loader refuses `op:` on a collective that does not reduce, so only a hand-made op can
     * carry one; the contract still names it (for IR built by other front ends). */
    plan_op op = {.kind = OP_COLL};
    op.u.coll.coll = COLL_ALL_GATHER;
    op.u.coll.send = (plan_view){.buf = 0, .offset = 0, .count = 64, .dtype = DT_INT64};
    op.u.coll.recv = (plan_view){.buf = 1, .offset = 0, .count = 256, .dtype = DT_INT64};
    op.u.coll.op = RED_MAX;
    char detail[240];
    assert_int_equal(lint_coll_contract(&op, NULL, 4, 0, detail, sizeof detail, NULL), ERR_BAD_OP);
    assert_string_equal(detail, "max is not valid for all_gather: it does not reduce");
    op.u.coll.op = RED_SUM;
    assert_int_equal(lint_coll_contract(&op, NULL, 4, 0, detail, sizeof detail, NULL), ERR_NONE);
    assert_string_equal(detail, "");
}

static void more_shapes_and_lifetimes(void **state) {
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 64, dtype: int64}\n"
              "  - alloc: {buf: b, count: 64, dtype: float32}\n"
              "  - copy: {src: a, dst: b}\n",
              0, "t.yaml:5:25: error: copy from 'a' (int64) into 'b' (float32)");
    /* 10 elements do not split into 4 rank-major shards */
    lint_says("world: 4\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 10}\n"
              "  - alloc: {buf: b, count: 10}\n"
              "  - check: {name: roll, not_equal: [a, {buf: b, roll_shards: 1}]}\n",
              0, "t.yaml:5:46: error: check 'roll' rolls the shards of 'b', but 10 elements do "
                 "not split into world (4) shards");
    lint_says_with_note("world: 2\n"
                        "steps:\n"
                        "  - alloc: {buf: a, bytes: 1MiB, chunks: world}\n"
                        "  - free: a\n"
                        "  - release: {buf: a, keep: rank}\n",
                        0, "t.yaml:5:20: error: release of 'a' after free",
                        "t.yaml:4:11: note: 'a' was freed here");
    lint_says("world: 2\n"
              "steps:\n"
              "  - release: {buf: a, keep: rank}\n"
              "  - alloc: {buf: a, bytes: 1MiB, chunks: world}\n",
              0, "t.yaml:3:20: error: release of 'a' which is not allocated");
    /* never recorded: no second place */
    lint_says("world: 2\n"
              "events: [e]\n"
              "steps:\n"
              "  - sync: {event: e}\n",
              0, "t.yaml:4:19: error: sync on event 'e' before any record of it");
}

static void cross_rank_reference_ends_early(void **state) {
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 128}\n"
              "  - broadcast: {buf: a, root: 0}\n"
              "    when: rank == 1\n",
              0, "t.yaml:4:5: error: rank 0 ends after 0 collectives while rank 1 issues "
                 "broadcast here [rank 1]");
}

/* ---- expect_error ------------------------------------------------------------------------- */

static void expect_error_rows_pass(void **state) {
    pt_run r;
    /* seed: nondivisible-without-padding-rejected, 4 rank rows PASS and no diagnostic */
    lint_yaml(&r,
              "world: 4\n"
              "dtype: int64\n"
              "let: {L: 1003}\n"
              "steps:\n"
              "  - alloc: {buf: input, count: L, init: rank_iota}\n"
              "  - alloc: {buf: output, count: L / world}\n"
              "  - expect_error:\n"
              "      name: nondivisible-without-padding-rejected\n"
              "      error: size_mismatch\n"
              "      step: {reduce_scatter: {send: input, recv: output}}\n"
              "  - free: [input, output]\n",
              0, 0);
    assert_int_equal(r.lint.n_rows, 4);
    for (int k = 0; k < 4; k++) {
        const lint_contract_row *row = &r.lint.rows[k];
        assert_string_equal(row->name, "nondivisible-without-padding-rejected");
        assert_int_equal(row->rank, k);
        assert_true(row->pass);
        assert_string_equal(row->detail, "refused before any collective: reduce_scatter send "
                                         "count 1003 is not world (4) × recv count 250 (1000)");
    }
    pt_free(&r);
}

static void expect_error_no_error(void **state) {
    lint_says_with_note("world: 4\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 1024}\n"
              "  - alloc: {buf: b, count: 256}\n"
              "  - expect_error:\n"
              "      name: divisible\n"
              "      error: size_mismatch\n"
              "      step: {reduce_scatter: {send: a, recv: b}}\n",
              0,
              /* at the wrapped step's key (8:14), the note at the expected name (7:14) */
              "t.yaml:8:14: error: expect_error 'divisible' expected size_mismatch but "
              "reduce_scatter raised no error",
              "t.yaml:7:14: note: expect_error 'divisible' expects size_mismatch here");
}

static void expect_error_other_error(void **state) {
    pt_run r;
    lint_yaml_notes(&r,
              "world: 4\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 1024}\n"
              "  - alloc: {buf: b, count: 256}\n"
              "  - expect_error:\n"
              "      name: oob\n"
              "      error: size_mismatch\n"
              "      step: {reduce_scatter: {send: 'a[512:1024]', recv: b}}\n",
              0, 1, 1);
    /* at the other error's own offending character: the count 1024 that goes past the end (8:44), not the expect_error key */
    assert_string_equal(pt_diag(&r, 0),
                        "t.yaml:8:44: error: expect_error 'oob' expected size_mismatch but "
                        "reduce_scatter raised: view 'a[512:1024]' is outside 'a' (1024 elements)");
    assert_string_equal(pt_diag(&r, 1),
                        "t.yaml:7:14: note: expect_error 'oob' expects size_mismatch here");
    assert_false(r.lint.rows[0].pass);
    pt_free(&r);
}

static void expect_error_refused_op_has_no_effect(void **state) {
    pt_run r;
    /* the refused all_reduce on stream comm never ran: freeing its buffers without a sync is no
     * hazard, and it is no collective for the cross-rank comparison */
    lint_yaml(&r,
              "world: 2\n"
              "streams: [comm]\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 16}\n"
              "  - alloc: {buf: b, count: 8}\n"
              "  - expect_error:\n"
              "      name: x\n"
              "      error: size_mismatch\n"
              "      step: {all_reduce: {send: a, recv: b, stream: comm}}\n"
              "  - free: [a, b]\n",
              0, 0);
    assert_int_equal(r.lint.n_rows, 2);
    assert_true(r.lint.rows[1].pass);
    assert_string_equal(r.lint.rows[1].detail,
                        "refused before any collective: all_reduce recv count 8 is not send count 16");
    pt_free(&r);
}

static void expect_error_in_repeat_one_row_per_rank(void **state) {
    pt_run r;
    lint_yaml(&r,
              "world: 2\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 16}\n"
              "  - repeat:\n"
              "      count: 5\n"
              "      steps:\n"
              "        - expect_error:\n"
              "            name: oob\n"
              "            error: out_of_bounds\n"
              "            step: {scale: {buf: 'a[8:16]', by: 2}}\n",
              0, 0);
    assert_int_equal(r.lint.n_rows, 2);
    assert_int_equal(r.lint.rows[0].rank, 0);
    assert_int_equal(r.lint.rows[1].rank, 1);
    assert_string_equal(r.lint.rows[1].detail, "refused: view 'a[8:16]' is outside 'a' (16 elements)");
    pt_free(&r);
}

/* ---- hazards ------------------------------------------------------------------------------ */

static const char hazard_head[] =
    "world: 4\n"
    "streams: [comm]\n"
    "events: [done]\n"
    "steps:\n"
    "  - alloc: {buf: full, bytes: 1MiB}\n"
    "  - alloc: {buf: shard, bytes: 256KiB}\n"
    "  - reduce_scatter: {send: full, recv: shard, stream: comm}\n";

static void hazard_free_unsynchronized(void **state) {
    char yaml[1024];
    snprintf(yaml, sizeof yaml, "%s  - free: full\n", hazard_head);
    lint_says_with_note(yaml, 0,
                        "t.yaml:8:11: error: free of 'full' while reduce_scatter on stream 'comm' "
                        "may still use it: a race under stream-ordered allocators "
                        "(cudaFreeAsync); under plain cudaFree a hidden device-wide "
                        "synchronization — add sync: {stream: comm} or wait on an event",
                        "t.yaml:7:28: note: reduce_scatter uses 'full' here on stream 'comm'");
}

static void hazard_wait_on_other_stream_is_not_enough(void **state) {
    char yaml[1024];
    /* the event is recorded before the collective: waiting on it orders nothing after it */
    snprintf(yaml, sizeof yaml,
             "world: 2\n"
             "streams: [comm]\n"
             "events: [done]\n"
             "steps:\n"
             "  - alloc: {buf: full, bytes: 1MiB}\n"
             "  - record: {event: done, stream: comm}\n"
             "  - all_reduce: {buf: full, stream: comm}\n"
             "  - wait: {event: done, stream: default}\n"
             "  - free: full\n");
    pt_run r;
    lint_yaml_notes(&r, yaml, 0, 1, 1);
    assert_true(strstr(pt_diag(&r, 0), "t.yaml:9:11: error: free of 'full' while all_reduce on"));
    assert_string_equal(pt_diag(&r, 1), "t.yaml:7:23: note: all_reduce uses 'full' here on stream "
                                        "'comm'");
    pt_free(&r);
}

static void no_hazard_variants(void **state) {
    static const char *const tails[] = {
        "  - sync: {stream: comm}\n  - free: full\n",
        "  - sync: device\n  - free: full\n",
        "  - record: {event: done, stream: comm}\n  - sync: {event: done}\n  - free: full\n",
        "  - record: {event: done, stream: comm}\n  - wait: {event: done, stream: default}\n"
        "  - free: full\n",
    };
    for (size_t k = 0; k < ML_ARRAY_LEN(tails); k++) {
        char yaml[1024];
        snprintf(yaml, sizeof yaml, "%s%s", hazard_head, tails[k]);
        pt_run r;
        lint_yaml(&r, yaml, 0, 0);
        pt_free(&r);
    }
    /* same stream: stream order */
    pt_run r;
    lint_yaml(&r,
              "world: 2\n"
              "steps:\n"
              "  - alloc: {buf: full, bytes: 1MiB}\n"
              "  - all_reduce: {buf: full}\n"
              "  - free: full\n",
              0, 0);
    pt_free(&r);
}

static void wait_on_unrecorded_event(void **state) {
    lint_says("world: 2\n"
              "streams: [comm]\n"
              "events: [done]\n"
              "steps:\n"
              "  - wait: {event: done, stream: comm}\n",
              0, "t.yaml:5:19: error: wait on event 'done' before any record of it");
}

/* ---- cross-rank --------------------------------------------------------------------------- */

static void cross_rank_divergence(void **state) {
    pt_run r;
    lint_yaml_notes(&r,
              "world: 2\n"
              "steps:\n"
              "  - alloc: {buf: full, count: 128}\n"
              "  - alloc: {buf: shard, count: 64}\n"
              "  - all_gather: {send: shard, recv: full}\n"
              "    when: rank == 0\n"
              "  - reduce_scatter: {send: full, recv: shard}\n",
              0, 1, 1);
    /* another collective: both places at the step keys */
    assert_string_equal(pt_diag(&r, 0),
                        "t.yaml:7:5: error: rank 1 issues reduce_scatter (count 64) where rank 0 "
                        "issues all_gather (count 64) [rank 1]");
    assert_string_equal(pt_diag(&r, 1),
                        "t.yaml:5:5: note: rank 0 issues all_gather (count 64) here [rank 1]");
    assert_int_equal(ML_VEC_AT(&r.d.items, ml_diag, 0).rank, 1);
    pt_free(&r);
}

static void cross_rank_ends_early(void **state) {
    pt_run r;
    lint_yaml(&r,
              "world: 3\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 128}\n"
              "  - repeat: {count: 3, steps: [{all_reduce: {buf: a}}]}\n"
              "  - all_reduce: {buf: a, op: max}\n"
              "    when: rank != 1\n",
              0, 1);
    assert_string_equal(pt_diag(&r, 0),
                        "t.yaml:5:5: error: rank 1 ends after 3 collectives while rank 0 issues "
                        "all_reduce here [rank 1]");
    pt_free(&r);
}

static void cross_rank_attributes(void **state) {
    pt_run r;
    lint_yaml_notes(&r,
              "world: 2\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 128}\n"
              "  - all_reduce: {buf: a, op: sum}\n"
              "    when: rank == 0\n"
              "  - all_reduce: {buf: a, op: max}\n"
              "    when: rank == 1\n",
              0, 1, 1);
    /* only the op differs: both places at the ops */
    assert_string_equal(pt_diag(&r, 0),
                        "t.yaml:6:30: error: rank 1 issues all_reduce (count 128, op max) where "
                        "rank 0 issues all_reduce (count 128, op sum) [rank 1]");
    assert_string_equal(pt_diag(&r, 1),
                        "t.yaml:4:30: note: rank 0 issues all_reduce (count 128, op sum) here "
                        "[rank 1]");
    pt_free(&r);
}

static void clean_seed_schedule(void **state) {
    pt_run r;
    /* seed: the optimized RS+AG lifetime lints clean at every world */
    char yaml[2048];
    snprintf(yaml, sizeof yaml, pt_seed(PT_RS_AG_OPTIMIZED), "256MiB");
    for (int world = 2; world <= 8; world *= 2) {
        lint_yaml(&r, yaml, world, 0);
        pt_free(&r);
    }
}

/* ---- point-to-point (lint_p2p.c) ---------------------------------------------------------------- */

/* A ring in one group and a hop outside one: every send pairs, no cycle: no diagnostic. */
static void p2p_ring_in_group_is_clean(void **state) {
    pt_run r;
    lint_yaml(&r,
              "world: 4\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 8}\n"
              "  - alloc: {buf: b, count: 8}\n"
              "  - group:\n"
              "      - send: {buf: a, peer: (rank + 1) % world}\n"
              "      - recv: {buf: b, peer: (rank + world - 1) % world}\n"
              "  - when: rank == 0\n"
              "    send: {buf: a, peer: 3}\n"
              "  - when: rank == 3\n"
              "    recv: {buf: b, peer: 0}\n"
              "  - all_reduce: {buf: a}\n",
              0, 0);
    pt_free(&r);
}

/* The same ring outside a group: each rank's send waits for its successor's recv, which comes
 * after that rank's own send: the cycle 0 -> 1 -> 2 -> 0 at world 3. */
static void p2p_ring_outside_group_deadlocks(void **state) {
    pt_run r;
    lint_yaml_notes(&r,
                    "world: 3\n"
                    "steps:\n"
                    "  - alloc: {buf: a, count: 8}\n"
                    "  - alloc: {buf: b, count: 8}\n"
                    "  - send: {buf: a, peer: (rank + 1) % world}\n"
                    "  - recv: {buf: b, peer: (rank + world - 1) % world}\n",
                    0, 1, 3);
    assert_string_equal(pt_diag(&r, 0),
                        "t.yaml:5:5: error: deadlock: a cycle of blocking waits (rank 0 -> 1 -> 2 "
                        "-> 0): a send or recv outside a group blocks until its peer's partner "
                        "runs: put the pair's ops in one group [rank 0]");
    /* one note per participant, in the order of the waits, each at its rank's send (5:5) */
    assert_string_equal(pt_diag(&r, 1), "t.yaml:5:5: note: rank 0 send to rank 1 waits for rank 1 [rank 0]");
    assert_string_equal(pt_diag(&r, 2), "t.yaml:5:5: note: rank 1 send to rank 2 waits for rank 2 [rank 1]");
    assert_string_equal(pt_diag(&r, 3), "t.yaml:5:5: note: rank 2 send to rank 0 waits for rank 0 [rank 2]");
    pt_free(&r);
}

/* A send with no recv, and a recv with no send, each at its peer (5:26), the rank it names. */
static void p2p_unpaired(void **state) {
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 8}\n"
              "  - when: rank == 0\n"
              "    send: {buf: a, peer: 1}\n",
              0,
              "t.yaml:5:26: error: send to rank 1 has no matching recv: rank 1 posts fewer than 1 "
              "recvs from rank 0 [rank 0]");
    lint_says("world: 2\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 8, dtype: int32}\n"
              "  - when: rank == 1\n"
              "    recv: {buf: a, peer: 0}\n",
              0,
              "t.yaml:5:26: error: recv from rank 0 has no matching send: rank 0 sends fewer than 1 "
              "to rank 1 [rank 1]");
    /* paired, but 8 elements against 4: at the send's view, the recv's view as the note */
    lint_says_with_note("world: 2\n"
                        "steps:\n"
                        "  - alloc: {buf: a, count: 8}\n"
                        "  - when: rank == 0\n"
                        "    send: {buf: a, peer: 1}\n"
                        "  - when: rank == 1\n"
                        "    recv: {buf: 'a[0:4]', peer: 0}\n",
                        0,
                        "t.yaml:5:17: error: send of 8 float32 to rank 1 pairs with a recv of 4 "
                        "float32 on rank 1 [rank 0]",
                        "t.yaml:7:18: note: rank 1's recv of 4 float32 is here [rank 0]");
}

/* A rank that waits at a collective while its peer waits in a recv: the wait ends at a rank that
 * is at the all_reduce, which needs every rank. */
static void p2p_recv_before_collective(void **state) {
    pt_run r;
    lint_yaml_notes(&r,
              "world: 2\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 8}\n"
              "  - when: rank == 1\n"
              "    recv: {buf: a, peer: 0}\n"
              "  - all_reduce: {buf: a}\n"
              "  - when: rank == 0\n"
              "    send: {buf: a, peer: 1}\n",
              0, 1, 2);
    assert_non_null(strstr(pt_diag(&r, 0), "deadlock: a cycle of blocking waits (rank 0 -> 1 -> 0)"));
    /* each participant at its own op: rank 0 at the all_reduce (6:5), rank 1 at its recv (5:5) */
    assert_string_equal(pt_diag(&r, 1), "t.yaml:6:5: note: rank 0 at all_reduce waits for rank 1 [rank 0]");
    assert_string_equal(pt_diag(&r, 2), "t.yaml:5:5: note: rank 1 recv from rank 0 waits for rank 0 [rank 1]");
    pt_free(&r);
}

/* ---- communicators (`comm:`): the rules in terms of the rank's group ------------------------ */

/* color rank / 3 at world 4: groups {0,1,2} and {3}. An all_gather of 4 into 12 is right for a
 * group of 3 and wrong for rank 3's group of 1 (1 x 4 = 4), which alone is refused. */
static void comm_count_per_group_size(void **state) {
    lint_says("world: 4\n"
              "comms:\n"
              "  c: {color: rank / 3}\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 4}\n"
              "  - alloc: {buf: b, count: 12}\n"
              "  - all_gather: {send: a, recv: b, comm: c}\n",
              0,
              "t.yaml:7:33: error: all_gather recv count 12 is not c's size (1) × send count 4 (4) "
              "[rank 3]");
}

/* all_to_all splits its count into one block per member: 6 elements do not split into tp's 4
 * members (a dp 2 x tp 4 mesh at world 8), at the send view. */
static void comm_per_rank_division(void **state) {
    lint_says("world: 8\n"
              "mesh: {dp: 2, tp: 4}\n"
              "comms:\n"
              "  tp: {mesh_dim: tp}\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 6}\n"
              "  - alloc: {buf: b, count: 6}\n"
              "  - all_to_all: {send: a, recv: b, comm: tp}\n",
              0,
              "t.yaml:8:24: error: all_to_all count 6 does not divide by tp's size (4): each member "
              "gets count/4 elements");
}

/* A rank list of 10 ranks at world 12: ranks 0 and 11 are in none; the message lists eight
 * members, in the list's order, then "...". */
static void comm_not_member_list_cut(void **state) {
    pt_run r;
    lint_yaml(&r,
              "world: 12\n"
              "comms:\n"
              "  ten: {ranks: [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]}\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 4}\n"
              "  - all_reduce: {buf: a, comm: ten}\n",
              0, 2);
    assert_string_equal(pt_diag(&r, 0),
                        "t.yaml:6:5: error: rank 0 is not in communicator 'ten' (ranks 10, 9, 8, 7, "
                        "6, 5, 4, 3, ...) [rank 0]");
    assert_string_equal(pt_diag(&r, 1),
                        "t.yaml:6:5: error: rank 11 is not in communicator 'ten' (ranks 10, 9, 8, "
                        "7, 6, 5, 4, 3, ...) [rank 11]");
    pt_free(&r);
}

/* World 2 as one tp group of 2, and a buffer of 8 elements: the start of the cases below. */
#define TP2_STEPS                                                                                  \
    "world: 2\n"                                                                                    \
    "mesh: {tp: 2}\n"                                                                               \
    "comms:\n"                                                                                      \
    "  tp: {mesh_dim: tp}\n"                                                                        \
    "steps:\n"                                                                                      \
    "  - alloc: {buf: a, count: 8}\n"

/* The world's collectives are still compared across every rank, beside the groups': rank 1's
 * world all_reduce differs from rank 0's while the tp ones agree. */
static void comm_world_still_compared(void **state) {
    pt_run r;
    lint_yaml_notes(&r,
                    TP2_STEPS
                    "  - all_reduce: {buf: a, comm: tp}\n"
                    "  - all_reduce: {buf: \"a[0 : 4 * (rank + 1)]\"}\n",
                    0, 1, 1);
    assert_string_equal(pt_diag(&r, 0),
                        "t.yaml:8:24: error: rank 1 issues all_reduce (count 8) where rank 0 "
                        "issues all_reduce (count 4) [rank 1]");
    pt_free(&r);
}

/* Different collectives on different communicators are not a divergence: rank 0's tp collectives
 * are compared with tp's, its dp ones with dp's. On a dp 2 x tp 2 mesh each rank does an
 * all_reduce on tp and a broadcast on dp (root: its dp group's member 1). */
static void comm_groups_separate(void **state) {
    pt_run r;
    lint_yaml(&r,
              "world: 4\n"
              "mesh: {dp: 2, tp: 2}\n"
              "comms:\n"
              "  tp: {mesh_dim: tp}\n"
              "  dp: {mesh_dim: dp}\n"
              "steps:\n"
              "  - alloc: {buf: a, count: 8}\n"
              "  - all_reduce: {buf: a, comm: tp}\n"
              "  - broadcast: {buf: a, root: 1, comm: dp}\n",
              0, 0);
    pt_free(&r);
}

/* lint_coll_contract with the plan's communicators: the root is a rank within the group. */
static void comm_contract_root(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 4\n"
            "mesh: {dp: 2, tp: 2}\n"
            "comms:\n"
            "  tp: {mesh_dim: tp}\n"
            "steps:\n"
            "  - alloc: {buf: a, count: 8}\n"
            "  - broadcast: {buf: a, root: 2, comm: tp}\n",
            0);
    const rank_plan *p = &r.plans[3];
    const plan_op *op = NULL;
    for (size_t k = 0; k < p->n_ops && !op; k++)
        if (p->ops[k].kind == OP_COLL)
            op = &p->ops[k];
    assert_non_null(op);
    char detail[240];
    lint_contract_at at;
    assert_int_equal(lint_coll_contract(op, p->comms, 4, 3, detail, sizeof detail, &at),
                     ERR_OUT_OF_BOUNDS);
    assert_int_equal(at, LINT_AT_ROOT);
    assert_string_equal(detail, "broadcast root 2 is outside communicator 'tp' (2 ranks)");
    /* without the communicators (the world's view) root 2 of 4 ranks is inside */
    assert_int_equal(lint_coll_contract(op, NULL, 4, 3, detail, sizeof detail, &at), ERR_NONE);
    pt_free(&r);
}

/* A root that differs inside one tp group (dp 2 x tp 2): rank 3 broadcasts from root 3 / 3 = 1,
 * rank 2, its group's reference, from 2 / 3 = 0; ranks 0 and 1 agree (0). The error is at rank
 * 3's root, the note at rank 2's; both texts name the root, the attribute that differs. */
static void comm_root_diverges_in_group(void **state) {
    lint_says_with_note("world: 4\n"
                        "mesh: {dp: 2, tp: 2}\n"
                        "comms:\n"
                        "  tp: {mesh_dim: tp}\n"
                        "steps:\n"
                        "  - alloc: {buf: a, count: 8}\n"
                        "  - broadcast: {buf: a, root: \"rank / 3\", comm: tp}\n",
                        0,
                        "t.yaml:7:32: error: rank 3 issues broadcast (count 8, root 1) where rank 2 "
                        "issues broadcast (count 8, root 0) in their group of communicator 'tp' "
                        "(ranks 2, 3) [rank 3]",
                        "t.yaml:7:32: note: rank 2 issues broadcast (count 8, root 0) here [rank 3]");
}

/* The world's collectives wait for every rank: rank 0 all-reduces on the world then on tp, rank
 * 1 (its tp peer) on tp then on the world. Each sequence agrees within its communicator's group,
 * but rank 0 waits on the world for rank 1, which waits on tp for rank 0. */
static void comm_order_with_world(void **state) {
    pt_run r;
    lint_yaml_notes(&r,
                    TP2_STEPS
                    "  - when: rank == 0\n"
                    "    all_reduce: {buf: a}\n"
                    "  - all_reduce: {buf: a, comm: tp}\n"
                    "  - when: rank == 1\n"
                    "    all_reduce: {buf: a}\n",
                    0, 1, 2);
    assert_string_equal(pt_diag(&r, 0),
                        "t.yaml:8:5: error: deadlock: a cycle of collectives on different "
                        "communicators (rank 0 -> 1 -> 0): a collective waits for every member of "
                        "its group; issue them in one order on every rank [rank 0]");
    assert_string_equal(pt_diag(&r, 1),
                        "t.yaml:8:5: note: rank 0 at all_reduce on 'world' waits for rank 1 [rank 0]");
    assert_string_equal(pt_diag(&r, 2),
                        "t.yaml:9:5: note: rank 1 at all_reduce on 'tp' waits for rank 0 [rank 1]");
    pt_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(p2p_ring_in_group_is_clean),
        cmocka_unit_test(p2p_ring_outside_group_deadlocks),
        cmocka_unit_test(p2p_unpaired),
        cmocka_unit_test(p2p_recv_before_collective),
        cmocka_unit_test(use_after_free),
        cmocka_unit_test(use_not_allocated),
        cmocka_unit_test(free_not_allocated),
        cmocka_unit_test(double_free),
        cmocka_unit_test(alloc_of_live),
        cmocka_unit_test(view_out_of_bounds),
        cmocka_unit_test(finding_on_some_ranks_names_them),
        cmocka_unit_test(repeat_reports_once),
        cmocka_unit_test(release_errors),
        cmocka_unit_test(use_after_release),
        cmocka_unit_test(reduce_scatter_size),
        cmocka_unit_test(all_gather_and_all_reduce_size),
        cmocka_unit_test(dtype_mismatch),
        cmocka_unit_test(root_outside_world),
        cmocka_unit_test(bad_in_place),
        cmocka_unit_test(copy_and_check_shapes),
        cmocka_unit_test(more_shapes_and_lifetimes),
        cmocka_unit_test(cross_rank_reference_ends_early),
        cmocka_unit_test(contract_bad_op_direct),
        cmocka_unit_test(expect_error_rows_pass),
        cmocka_unit_test(expect_error_no_error),
        cmocka_unit_test(expect_error_other_error),
        cmocka_unit_test(expect_error_refused_op_has_no_effect),
        cmocka_unit_test(expect_error_in_repeat_one_row_per_rank),
        cmocka_unit_test(hazard_free_unsynchronized),
        cmocka_unit_test(hazard_wait_on_other_stream_is_not_enough),
        cmocka_unit_test(no_hazard_variants),
        cmocka_unit_test(wait_on_unrecorded_event),
        cmocka_unit_test(cross_rank_divergence),
        cmocka_unit_test(comm_count_per_group_size),
        cmocka_unit_test(comm_per_rank_division),
        cmocka_unit_test(comm_not_member_list_cut),
        cmocka_unit_test(comm_world_still_compared),
        cmocka_unit_test(comm_groups_separate),
        cmocka_unit_test(comm_contract_root),
        cmocka_unit_test(comm_root_diverges_in_group),
        cmocka_unit_test(comm_order_with_world),
        cmocka_unit_test(cross_rank_ends_early),
        cmocka_unit_test(cross_rank_attributes),
        cmocka_unit_test(clean_seed_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
