/* SPDX-License-Identifier: MIT */
/* test_lint_race.c — the race lint (analyzer/lint/lint_race.c): exact texts of a race in each
 * direction, whole views (the short way of one exact segment), the segment bookkeeping at slice
 * boundaries (one element of overlap races, touching slices do not), a read kept after a later
 * write of other elements, the parts of segments outside a write kept as they were, one of
 * several segments accessed exactly and a write over all of them (other_access's short ways), a
 * read of part of the one segment, a collective in place on one view (its read and write at once),
 * `races` off, the copy overlap at lint (bad_inplace, also as an expect_error contract), and init/check
 * as host accesses. The larger corpus is tests/races/
 * (tests/cli/races.sh). */
#include "plantest.h"

static size_t lint_with(pt_run *r, const char *yaml, int world, bool races) {
    pt_load(r, yaml, world);
    lint_options o;
    lint_options_default(&o);
    if (!races)
        assert_int_equal(lint_options_disable(&o, "races"), 0);   /* --no-lint races */
    r->lint_errors = lint_plans(r->plans, r->world, &o, &r->lint, &r->d);
    return r->lint_errors;
}

/* One error and its note (a race's other access, at its view; NULL: no note). */
static void says(const char *yaml, const char *want, const char *want_note) {
    pt_run r;
    size_t n = lint_with(&r, yaml, 0, true);
    if (n != 1 || r.d.items.n != (want_note ? 2u : 1u))
        pt_dump(&r.d);
    assert_int_equal(n, 1);
    assert_int_equal(r.d.items.n, want_note ? 2 : 1);
    assert_string_equal(pt_diag(&r, 0), want);
    if (want_note)
        assert_string_equal(pt_diag(&r, 1), want_note);
    pt_free(&r);
}

static void clean(const char *yaml) {
    pt_run r;
    size_t n = lint_with(&r, yaml, 0, true);
    if (n)
        pt_dump(&r.d);
    assert_int_equal(n, 0);
    pt_free(&r);
}

#define HEAD "world: 2\nstreams: [s1, s2]\nevents: [e]\nsteps:\n" \
             "  - alloc: {buf: x, count: 1000}\n  - alloc: {buf: y, count: 1000}\n"

/* read after write: the reader is the later access, the message names the writer's line 7 */
static void read_after_write(void **state) {
    says(HEAD "  - copy: {src: y, dst: x, stream: s1}\n"
              "  - compute: {reads: [\"x[10:5]\"], stream: s2}\n",
         "t.yaml:8:24: error: compute on 's2' reads x[10:5] while copy on 's1' writes "
         "x[0:1000]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:25: note: copy on 's1' writes x[0:1000] here");
}

/* write after read: a read on s1, then a write on default; the fix names s1 */
static void write_after_read(void **state) {
    says(HEAD "  - compute: {reads: [\"x[0:10]\"], stream: s1}\n"
              "  - compute: {writes: [\"x[9:1]\"]}\n",
         "t.yaml:8:25: error: compute on 'default' writes x[9:1] while compute on 's1' "
         "reads x[0:10]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:24: note: compute on 's1' reads x[0:10] here");
}

/* Whole views, the short way (one segment, covered exactly): the copy's write is x's first
 * access (its one segment made), the read on s2 meets it there unordered (line 8, x at column
 * 23), and after record/wait the same read is ordered after it. */
static void whole_buffer(void **state) {
    says(HEAD "  - copy: {src: y, dst: x, stream: s1}\n"
              "  - compute: {reads: [x], stream: s2}\n",
         "t.yaml:8:23: error: compute on 's2' reads x[0:1000] while copy on 's1' writes "
         "x[0:1000]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:25: note: copy on 's1' writes x[0:1000] here");
    clean(HEAD "  - copy: {src: y, dst: x, stream: s1}\n"
               "  - record: {event: e, stream: s1}\n"
               "  - wait: {event: e, stream: s2}\n"
               "  - compute: {reads: [x], stream: s2}\n"
               "  - sync: device\n");
}

/* x[0:500] and x[500:500] touch but share no element; x[499:2] shares element 499 with the first */
static void slice_boundaries(void **state) {
    clean(HEAD "  - compute: {writes: [\"x[0:500]\"], stream: s1}\n"
               "  - compute: {writes: [\"x[500:500]\"], stream: s2}\n");
    says(HEAD "  - compute: {writes: [\"x[0:500]\"], stream: s1}\n"
              "  - compute: {writes: [\"x[500:500]\"], stream: s2}\n"
              "  - compute: {reads: [\"x[499:2]\"]}\n",
         "t.yaml:9:24: error: compute on 'default' reads x[499:2] while compute on 's1' "
         "writes x[0:500]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:25: note: compute on 's1' writes x[0:500] here");
}

/* A read on s1 of x[0:10], then a write on s1 of x[100:10] (other elements): the read is still
 * what a write on s2 of x[5:1] races with, and a later ordered write of all of x ends it. */
static void read_survives_unrelated_write(void **state) {
    says(HEAD "  - compute: {reads: [\"x[0:10]\"], stream: s1}\n"
              "  - compute: {writes: [\"x[100:10]\"], stream: s1}\n"
              "  - compute: {writes: [\"x[5:1]\"], stream: s2}\n",
         "t.yaml:9:25: error: compute on 's2' writes x[5:1] while compute on 's1' reads "
         "x[0:10]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:24: note: compute on 's1' reads x[0:10] here");
    clean(HEAD "  - compute: {reads: [\"x[0:10]\"], stream: s1}\n"
               "  - record: {event: e, stream: s1}\n"
               "  - wait: {event: e, stream: s2}\n"
               "  - compute: {writes: [x], stream: s2}\n"
               "  - sync: {stream: s2}\n"
               "  - compute: {reads: [x], stream: s1}\n");
}

/* A write over part of a segment, or over several with partial ends, replaces what it covers
 * and leaves the parts outside it as they were (lint_race.c: write_over). s1 reads all of x,
 * default waits for it and writes x[400:200]: the part after it still holds s1's read alone, so
 * a write there on s2 races with that read (the note at line 7) when s2 has not waited, and with
 * nothing when it has. Then default writes x[300:400], across the write of line 11 and into both
 * parts: x[250:10] still has only s1's read (s2 waited for it), x[650:10] has line 13's write,
 * which s2 never waited for. */
static void write_keeps_outside_parts(void **state) {
#define READ_THEN_WAIT HEAD "  - compute: {reads: [x], stream: s1}\n" \
                            "  - record: {event: e, stream: s1}\n" \
                            "  - wait: {event: e}\n"
    says(READ_THEN_WAIT "  - compute: {writes: [\"x[400:200]\"]}\n"
                        "  - compute: {writes: [\"x[900:10]\"], stream: s2}\n",
         "t.yaml:11:25: error: compute on 's2' writes x[900:10] while compute on 's1' reads "
         "x[0:1000]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:23: note: compute on 's1' reads x[0:1000] here");
    says(READ_THEN_WAIT "  - wait: {event: e, stream: s2}\n"
                        "  - compute: {writes: [\"x[400:200]\"]}\n"
                        "  - compute: {writes: [\"x[900:10]\", \"x[0:10]\"], stream: s2}\n"
                        "  - compute: {writes: [\"x[300:400]\"]}\n"
                        "  - compute: {writes: [\"x[250:10]\"], stream: s2}\n"
                        "  - compute: {writes: [\"x[650:10]\"], stream: s2}\n",
         "t.yaml:15:25: error: compute on 's2' writes x[650:10] while compute on 'default' "
         "writes x[300:400]; add record/wait or sync: {stream: default}",
         "t.yaml:13:25: note: compute on 'default' writes x[300:400] here");
#undef READ_THEN_WAIT
}

/* The short ways of other_access (lint_race.c): an access of exactly one of several segments,
 * and a write over all of them. s1 writes x[100:100] and x[300:100] (two segments, a gap
 * between). A read of x[300:100] on s2 meets that segment's write; after record/wait it is
 * ordered, and is kept there for a later write of x[350:10] on default (which waited for s1,
 * so the read on s2 is what it races with). A write of all of x on s2 replaces both segments:
 * a read of x[0:10] on default then meets that write alone, not s1's. */
#define TWO_SLICES HEAD "  - compute: {writes: [\"x[100:100]\"], stream: s1}\n" \
                        "  - compute: {writes: [\"x[300:100]\"], stream: s1}\n"
static void exact_segment_and_whole_write(void **state) {
    says(TWO_SLICES "  - compute: {reads: [\"x[300:100]\"], stream: s2}\n",
         "t.yaml:9:24: error: compute on 's2' reads x[300:100] while compute on 's1' writes "
         "x[300:100]; add record/wait or sync: {stream: s1}",
         "t.yaml:8:25: note: compute on 's1' writes x[300:100] here");
    says(TWO_SLICES "  - record: {event: e, stream: s1}\n"
                    "  - wait: {event: e, stream: s2}\n"
                    "  - wait: {event: e}\n"
                    "  - compute: {reads: [\"x[300:100]\"], stream: s2}\n"
                    "  - compute: {writes: [\"x[350:10]\"]}\n",
         "t.yaml:13:25: error: compute on 'default' writes x[350:10] while compute on 's2' "
         "reads x[300:100]; add record/wait or sync: {stream: s2}",
         "t.yaml:12:24: note: compute on 's2' reads x[300:100] here");
    says(TWO_SLICES "  - record: {event: e, stream: s1}\n"
                    "  - wait: {event: e, stream: s2}\n"
                    "  - compute: {writes: [x], stream: s2}\n"
                    "  - compute: {reads: [\"x[0:10]\", \"x[150:10]\"]}\n",
         "t.yaml:12:24: error: compute on 'default' reads x[0:10] while compute on 's2' writes "
         "x[0:1000]; add record/wait or sync: {stream: s2}",
         "t.yaml:11:24: note: compute on 's2' writes x[0:1000] here");
}
#undef TWO_SLICES

/* A read of part of a buffer's one segment (lint_race.c: read_in_one). s1 reads all of x, then
 * default reads x[100:10]: s1's read is ordered before nothing, so it stays on both sides,
 * [0:100) and [110:1000), and x[100:10] holds both reads. A write on s2 inside the slice meets
 * default's read first (stream order), one outside it s1's, at either end. When what the
 * segment held is before every stream (s1's copy, waited for by default and s2), the slice
 * alone stays: a write on s2 outside it races with nothing, one inside with the read. */
#define READ_SLICE(w) HEAD "  - compute: {reads: [x], stream: s1}\n" \
                           "  - compute: {reads: [\"x[100:10]\"]}\n" \
                           "  - compute: {writes: [\"" w "\"], stream: s2}\n"
static void read_inside_one_segment(void **state) {
    says(READ_SLICE("x[105:1]"),
         "t.yaml:9:25: error: compute on 's2' writes x[105:1] while compute on 'default' reads "
         "x[100:10]; add record/wait or sync: {stream: default}",
         "t.yaml:8:24: note: compute on 'default' reads x[100:10] here");
    says(READ_SLICE("x[900:10]"),
         "t.yaml:9:25: error: compute on 's2' writes x[900:10] while compute on 's1' reads "
         "x[0:1000]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:23: note: compute on 's1' reads x[0:1000] here");
    says(READ_SLICE("x[50:1]"),
         "t.yaml:9:25: error: compute on 's2' writes x[50:1] while compute on 's1' reads "
         "x[0:1000]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:23: note: compute on 's1' reads x[0:1000] here");
    says(HEAD "  - copy: {src: y, dst: x, stream: s1}\n"
              "  - record: {event: e, stream: s1}\n"
              "  - wait: {event: e}\n"
              "  - wait: {event: e, stream: s2}\n"
              "  - compute: {reads: [\"x[100:10]\"]}\n"
              "  - compute: {writes: [\"x[500:1]\"], stream: s2}\n"
              "  - compute: {writes: [\"x[105:1]\"], stream: s2}\n",
         "t.yaml:13:25: error: compute on 's2' writes x[105:1] while compute on 'default' reads "
         "x[100:10]; add record/wait or sync: {stream: default}",
         "t.yaml:11:24: note: compute on 'default' reads x[100:10] here");
}
#undef READ_SLICE

/* A collective in place on one view whose buffer is that view's one segment: its read (send,
 * view 0) and its write (recv, view 1) in one pass (lint_race.c: read_then_write). The read meets
 * an unordered write (the race is the read's), the write an unordered read (the write's); after
 * record/wait it races with nothing and holds the write, which a later unordered access meets;
 * a slice that is the one segment takes it too. */
static void in_place_one_view(void **state) {
    says(HEAD "  - copy: {src: y, dst: x, stream: s1}\n"
              "  - all_reduce: {buf: x, op: sum}\n",
         "t.yaml:8:23: error: all_reduce on 'default' reads x[0:1000] while copy on 's1' writes "
         "x[0:1000]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:25: note: copy on 's1' writes x[0:1000] here");
    says(HEAD "  - compute: {reads: [x], stream: s1}\n"
              "  - all_reduce: {buf: x, op: sum}\n",
         "t.yaml:8:23: error: all_reduce on 'default' writes x[0:1000] while compute on 's1' "
         "reads x[0:1000]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:23: note: compute on 's1' reads x[0:1000] here");
    says(HEAD "  - compute: {reads: [x], stream: s1}\n"
              "  - record: {event: e, stream: s1}\n"
              "  - wait: {event: e}\n"
              "  - all_reduce: {buf: x, op: sum}\n"
              "  - compute: {reads: [x], stream: s2}\n",
         "t.yaml:11:23: error: compute on 's2' reads x[0:1000] while all_reduce on 'default' "
         "writes x[0:1000]; add record/wait or sync: {stream: default}",
         "t.yaml:10:23: note: all_reduce on 'default' writes x[0:1000] here");
    says(HEAD "  - compute: {writes: [\"x[0:500]\"], stream: s1}\n"
              "  - all_reduce: {buf: \"x[0:500]\", op: sum}\n",
         "t.yaml:8:24: error: all_reduce on 'default' reads x[0:500] while compute on 's1' "
         "writes x[0:500]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:25: note: compute on 's1' writes x[0:500] here");
    says(HEAD "  - compute: {writes: [\"x[0:500]\"], stream: s1}\n"
              "  - record: {event: e, stream: s1}\n"
              "  - wait: {event: e}\n"
              "  - broadcast: {buf: \"x[0:500]\", root: 1}\n"
              "  - compute: {writes: [\"x[100:1]\"], stream: s1}\n",
         "t.yaml:11:25: error: compute on 's1' writes x[100:1] while broadcast on 'default' "
         "writes x[0:500]; add record/wait or sync: {stream: default}",
         "t.yaml:10:23: note: broadcast on 'default' writes x[0:500] here");
}

/* concurrent reads on three streams never race; a write after them races with one of them */
static void concurrent_reads(void **state) {
    clean(HEAD "  - compute: {reads: [x], stream: s1}\n"
               "  - compute: {reads: [x], stream: s2}\n"
               "  - compute: {reads: [x]}\n");
}

/* `--no-lint races` (races = false) lets the race through; the free hazard still works */
static void races_off(void **state) {
    pt_run r;
    assert_int_equal(lint_with(&r, HEAD "  - copy: {src: y, dst: x, stream: s1}\n"
                                        "  - compute: {reads: [x], stream: s2}\n"
                                        "  - sync: device\n", 0, false), 0);
    pt_free(&r);
    assert_int_equal(lint_with(&r, HEAD "  - copy: {src: y, dst: x, stream: s1}\n"
                                        "  - free: x\n", 0, false), 1);
    assert_true(strstr(pt_diag(&r, 0), "t.yaml:8:11: error: free of 'x' while copy on stream 's1'"));
    assert_string_equal(pt_diag(&r, 1), "t.yaml:7:25: note: copy uses 'x' here on stream 's1'");
    pt_free(&r);
}

/* copy between overlapping views of one buffer: an error at lint, as run refuses it
 * (runtime/exec/exec.c: bad_inplace); a copy onto itself is allowed there and here */
static void copy_overlap(void **state) {
    says(HEAD "  - copy: {src: \"x[0:100]\", dst: \"x[50:100]\"}\n",
         "t.yaml:7:35: error: copy from 'x[0:100]' into 'x[50:100]': source and destination "
         "overlap in 'x'", NULL);
    clean(HEAD "  - copy: {src: \"x[0:100]\", dst: \"x[100:100]\"}\n"
               "  - copy: {src: \"x[0:100]\", dst: \"x[0:100]\"}\n");
    pt_run r;
    assert_int_equal(lint_with(&r, HEAD "  - expect_error:\n      name: overlap\n"
                                        "      error: bad_inplace\n"
                                        "      step: {copy: {src: \"x[0:100]\", dst: \"x[1:100]\"}}\n",
                               0, true), 0);
    assert_int_equal(r.lint.n_rows, 2);
    assert_true(r.lint.rows[0].pass);
    pt_free(&r);
}

/* inits (patterns) and checks wait for the device and are done when the host goes on */
static void host_accesses(void **state) {
    clean(HEAD "  - copy: {src: y, dst: x, stream: s1}\n"
               "  - init: {buf: x, const: 3}\n"
               "  - compute: {reads: [x], stream: s2}\n"
               "  - sync: device\n");
    clean(HEAD "  - copy: {src: y, dst: x, stream: s1}\n"
               "  - check: {name: c, equal: [x, y]}\n"
               "  - compute: {writes: [x], stream: s2}\n"
               "  - sync: device\n");
    /* a copy-init is a copy on the default stream, not a host write: its destination y is
     * still read by the copy on s1 (write after read, the first of its two races) */
    says(HEAD "  - copy: {src: y, dst: x, stream: s1}\n"
              "  - init: {buf: y, copy: x}\n",
         "t.yaml:8:17: error: init on 'default' writes y[0:1000] while copy on 's1' reads "
         "y[0:1000]; add record/wait or sync: {stream: s1}",
         "t.yaml:7:17: note: copy on 's1' reads y[0:1000] here");
}

/* Many disjoint slices on two streams, then one whole read: every slice becomes a segment, and
 * the whole read after a device sync merges them back. 2000 slices of 1 element each. */
static void many_slices(void **state) {
    ml_str b = {0};
    ml_str_printf(&b, "world: 1\nstreams: [s1, s2]\nsteps:\n  - alloc: {buf: x, count: 4000}\n");
    for (int k = 0; k < 2000; k++)
        ml_str_printf(&b, "  - compute: {writes: [\"x[%d:1]\"], stream: %s}\n", 2 * k,
                      k % 2 ? "s1" : "s2");
    ml_str_printf(&b, "  - sync: device\n  - compute: {writes: [x], stream: s1}\n"
                      "  - compute: {reads: [\"x[3998:1]\"], stream: s2}\n");
    pt_run r;
    assert_int_equal(lint_with(&r, b.s, 0, true), 1);
    /* the writer is the whole-buffer compute of line 2006, its view at column 24 */
    assert_true(strstr(pt_diag(&r, 0), "reads x[3998:1] while compute on 's1' writes x[0:4000]"));
    assert_string_equal(pt_diag(&r, 1), "t.yaml:2006:24: note: compute on 's1' writes x[0:4000] here");
    pt_free(&r);
    ml_str_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(read_after_write),
        cmocka_unit_test(whole_buffer),
        cmocka_unit_test(write_after_read),
        cmocka_unit_test(slice_boundaries),
        cmocka_unit_test(read_survives_unrelated_write),
        cmocka_unit_test(write_keeps_outside_parts),
        cmocka_unit_test(exact_segment_and_whole_write),
        cmocka_unit_test(read_inside_one_segment),
        cmocka_unit_test(in_place_one_view),
        cmocka_unit_test(concurrent_reads),
        cmocka_unit_test(races_off),
        cmocka_unit_test(copy_overlap),
        cmocka_unit_test(host_accesses),
        cmocka_unit_test(many_slices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
