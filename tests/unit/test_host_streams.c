/* SPDX-License-Identifier: MIT */
/* test_host_streams.c — the host backend's stream queues (runtime/backends/host_streams.c): the
 * sequence each order runs queued work in, that record/wait is respected (also transitively and
 * across a flush), a failure stops the flush, and the --stream-order parser. Work items append
 * their id to a log, so each test states the exact expected sequence. */
#include "testutil.h"

#include "backends/host_streams.h"

static char run_log[64];

static int append(void *item, char *err, size_t len) {
    size_t n = strlen(run_log);
    run_log[n] = *(const char *)item;
    run_log[n + 1] = '\0';
    return 0;
}

static int fail_item(void *item, char *err, size_t len) {
    snprintf(err, len, "item %c failed", *(const char *)item);
    return -1;
}

static void push(uint32_t stream, char id) { hs_push(stream, append, &id, 1); }

static void begin(hs_order_kind kind, uint64_t seed) {
    hs_order o = {kind, seed};
    hs_begin(&o);
    run_log[0] = '\0';
}

static const char *flush(void) {
    char err[64];
    assert_int_equal(hs_flush(err, sizeof err), 0);
    return run_log;
}

/* Independent streams: A, B on stream 1, C on 0, D on 2. Program runs them as queued; reverse
 * takes the latest-queued head each time: D (stream 2), then C (0), then B, A (stream 1's order). */
static void orders_of_independent_streams(void **state) {
    begin(HS_REVERSE, 1);
    assert_true(hs_deferring());
    push(1, 'A'); push(1, 'B'); push(0, 'C'); push(2, 'D');
    assert_string_equal(flush(), "DCAB");
    hs_end();
    hs_order o = {HS_PROGRAM, 1};
    hs_begin(&o);
    assert_false(hs_deferring());
    hs_end();
}

/* A wait makes stream 0's C come after stream 1's A and B under reverse too: ABC, not CAB. */
static void wait_is_respected(void **state) {
    begin(HS_REVERSE, 1);
    push(1, 'A'); push(1, 'B');
    hs_record(0, 1);
    hs_wait(0, 0);
    push(0, 'C');
    assert_string_equal(flush(), "ABC");
    hs_end();
}

/* Transitive: 1 -> 2 -> 0 through two events; and an event recorded before the record's stream
 * got more work covers only the work before it (B may run after C). */
static void transitive_and_partial(void **state) {
    begin(HS_REVERSE, 1);
    push(1, 'A');
    hs_record(0, 1);
    hs_wait(0, 2);
    hs_record(1, 2);
    hs_wait(1, 0);
    push(1, 'B');      /* after the record: not covered */
    push(0, 'C');
    /* C waits (through stream 2) for A only: A, then C (queued last), then B */
    assert_string_equal(flush(), "ACB");
    hs_end();
}

/* Counts survive a flush: an event recorded before it is satisfied after it. */
static void event_across_flush(void **state) {
    begin(HS_REVERSE, 1);
    push(1, 'A');
    hs_record(0, 1);
    assert_string_equal(flush(), "A");
    run_log[0] = '\0';
    hs_wait(0, 0);
    push(0, 'B');
    assert_string_equal(flush(), "B");
    hs_end();
}

/* Shuffle is a function of the seed: the same seed gives the same sequence, and every sequence
 * keeps each stream's own order. */
static void shuffle_is_seeded(void **state) {
    char first[16];
    for (int rep = 0; rep < 2; rep++) {
        begin(HS_SHUFFLE, 42);
        push(0, 'a'); push(1, 'x'); push(0, 'b'); push(1, 'y'); push(0, 'c');
        const char *got = flush();
        if (rep == 0)
            snprintf(first, sizeof first, "%s", got);
        else
            assert_string_equal(got, first);
        assert_int_equal(strlen(got), 5);
        assert_true(strchr(got, 'a') < strchr(got, 'b') && strchr(got, 'b') < strchr(got, 'c'));
        assert_true(strchr(got, 'x') < strchr(got, 'y'));
        hs_end();
    }
}

/* F on stream 1 is queued first, A and B on stream 0 after it, C on stream 1 after F. Reverse
 * runs B's stream first (A, B), then F fails: C is dropped, not run, and the queues are empty. */
static void failure_stops(void **state) {
    begin(HS_REVERSE, 1);
    char id = 'F';
    hs_push(1, fail_item, &id, 1);
    push(0, 'A');
    push(0, 'B');
    push(1, 'C');
    char err[64];
    assert_int_equal(hs_flush(err, sizeof err), -1);
    assert_string_equal(err, "item F failed");
    assert_string_equal(run_log, "AB");
    assert_string_equal(flush(), "AB");   /* nothing more ran */
    hs_end();
}

static void parse(void **state) {
    hs_order o;
    char err[128];
    assert_int_equal(hs_parse("program", &o, err, sizeof err), 0);
    assert_int_equal(o.kind, HS_PROGRAM);
    assert_int_equal(hs_parse("reverse", &o, err, sizeof err), 0);
    assert_int_equal(o.kind, HS_REVERSE);
    assert_int_equal(hs_parse("shuffle", &o, err, sizeof err), 0);
    assert_int_equal(o.kind, HS_SHUFFLE);
    assert_int_equal(o.seed, 1);
    assert_int_equal(hs_parse("shuffle:18446744073709551615", &o, err, sizeof err), 0);
    assert_true(o.seed == UINT64_MAX);
    assert_int_equal(hs_parse("shuffle:-1", &o, err, sizeof err), -1);
    assert_string_equal(err, "--stream-order shuffle:SEED takes a decimal seed, not '-1'");
    assert_int_equal(hs_parse("shufflex", &o, err, sizeof err), -1);
    assert_string_equal(err, "--stream-order takes program, reverse or shuffle[:SEED], not 'shufflex'");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(orders_of_independent_streams),
        cmocka_unit_test(wait_is_respected),
        cmocka_unit_test(transitive_and_partial),
        cmocka_unit_test(event_across_flush),
        cmocka_unit_test(shuffle_is_seeded),
        cmocka_unit_test(failure_stops),
        cmocka_unit_test(parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
