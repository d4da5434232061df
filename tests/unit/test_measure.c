/* SPDX-License-Identifier: MIT */
/* test_measure.c — the measurement record's one writer and one reader (runtime/ir/measure.c):
 * a record with pools and one without go over the wire and come back field for field (64-bit
 * byte counts, negative device deltas, seconds bit for bit); a truncated or garbled text and a
 * wrong field are refused with a message that says where; and trace of a run result written by
 * the real writer (report_emit, FMT_JSON) shows the torch backend's pool readings as the measured
 * 'torch allocated bytes' / 'torch reserved bytes'. */
#include "tu_series.h"
#include "ir/measure.h"
#include "report/report.h"
#include "visual/trace.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char yaml[] = "name: wire\n"
                           "world: 1\n"
                           "torch: {conf: \"\"}\n"
                           "steps:\n"
                           "  - alloc: {buf: a, bytes: 1000}\n"      /* line 5, op 0 */
                           "  - alloc: {buf: b, bytes: 3MiB}\n"      /* line 6, op 1 */
                           "  - free: a\n";                          /* line 7, op 2 */

/* A rank as the torch backend on a GPU leaves it: device read, PyTorch's pool after every op,
 * byte counts beyond 2^32, a device delta below the baseline, seconds that %g would round. */
static void torch_record(ml_measure *m) {
    memset(m, 0, sizeof *m);
    m->rank = 3;
    m->steady = 3u << 20;
    m->peak = (3u << 20) + 1000;
    m->has_device = true;
    m->device_steady = 20u << 20;
    m->device_peak = 5ull << 32;
    m->communicator_bytes = 1ull << 33;
    m->n_stages = 2;
    snprintf(m->stages[0].name, sizeof m->stages[0].name, "init");
    m->stages[0].bytes = 6u << 20;
    snprintf(m->stages[1].name, sizeof m->stages[1].name, "all_reduce");
    m->stages[1].bytes = (1ull << 33) - (6u << 20);
    m->has_pool = m->pool_caches = true;
    m->pool_used_current = 3u << 20;
    m->pool_used_high = (3u << 20) + 1024;
    m->pool_reserved_current = 22u << 20;
    m->pool_reserved_high = 7ull << 32;
    const uint64_t req[4] = {0, 1000, (3u << 20) + 1000, 3u << 20};
    for (int k = 0; k < 4; k++) {
        ml_sample *s = ml_measure_push_sample(m);
        s->op = k ? (size_t)(k - 1) : SIZE_MAX;
        s->requested = req[k];
        s->device = k == 3 ? -4096 : (int64_t)k << 21;
        s->t = k * 0.1 + 1.0 / 3.0;
        s->has_pool = true;
        s->pool_used = req[k] + 24u * (uint64_t)k;        /* rounded to 512-byte blocks */
        s->pool_reserved = (9ull << 32) + (uint64_t)k;
    }
    ml_measure_check *c = ml_measure_push_check(m, "exact-sum");
    c->pass = false;
    snprintf(c->detail, sizeof c->detail, "differs at element 7: 3 != 4");
}

static void assert_same(const ml_measure *a, const ml_measure *b) {
    assert_int_equal(a->rank, b->rank);
    assert_int_equal(a->steady, b->steady);
    assert_int_equal(a->peak, b->peak);
    assert_int_equal(a->has_device, b->has_device);
    assert_int_equal(a->device_steady, b->device_steady);
    assert_int_equal(a->device_peak, b->device_peak);
    assert_int_equal(a->communicator_bytes, b->communicator_bytes);
    assert_int_equal(a->n_stages, b->n_stages);
    for (uint32_t k = 0; k < a->n_stages; k++) {
        assert_string_equal(a->stages[k].name, b->stages[k].name);
        assert_int_equal(a->stages[k].bytes, b->stages[k].bytes);
    }
    assert_int_equal(a->has_pool, b->has_pool);
    assert_int_equal(a->pool_caches, b->pool_caches);
    assert_int_equal(a->pool_used_current, b->pool_used_current);
    assert_int_equal(a->pool_used_high, b->pool_used_high);
    assert_int_equal(a->pool_reserved_current, b->pool_reserved_current);
    assert_int_equal(a->pool_reserved_high, b->pool_reserved_high);
    assert_int_equal(a->n_samples, b->n_samples);
    for (size_t k = 0; k < a->n_samples; k++) {
        const ml_sample *x = &a->samples[k], *y = &b->samples[k];
        assert_true(x->op == y->op);
        assert_int_equal(x->requested, y->requested);
        assert_int_equal(x->device, y->device);
        assert_memory_equal(&x->t, &y->t, sizeof x->t);   /* bit for bit */
        assert_int_equal(x->has_pool, y->has_pool);
        assert_int_equal(x->pool_used, y->pool_used);
        assert_int_equal(x->pool_reserved, y->pool_reserved);
    }
    assert_int_equal(a->n_checks, b->n_checks);
    for (size_t k = 0; k < a->n_checks; k++) {
        assert_string_equal(a->checks[k].name, b->checks[k].name);
        assert_int_equal(a->checks[k].pass, b->checks[k].pass);
        assert_string_equal(a->checks[k].detail, b->checks[k].detail);
    }
}

/* Encodes m with the fixture's plan, checks that the text holds every string of `has` (NULL
 * ended) and not `lacks`, decodes it and compares field for field. */
static void round_trip(const ml_measure *m, const char *const *has, const char *lacks) {
    series f;
    tu_series(&f, yaml, 0, NULL);
    ml_measure back;
    char *text = ml_measure_encode(m, &f.plans[0]), err[200] = "";
    for (; *has; has++)
        if (!strstr(text, *has))
            fail_msg("the wire text lacks %s: %s", *has, text);
    if (lacks)
        assert_null(strstr(text, lacks));
    assert_int_equal(ml_measure_decode(text, strlen(text), &back, err, sizeof err), 0);
    assert_same(m, &back);
    ml_measure_free(&back);
    free(text);
    series_free(&f);
}

static void test_round_trip_with_pool(void **state) {
    ml_measure m;
    torch_record(&m);
    /* the timeline names each op and its line from the plan; the baseline has neither */
    static const char *const has[] = {"{\"op\":\"baseline\",\"index\":null,\"line\":0,",
                                      "{\"op\":\"alloc\",\"index\":1,\"line\":6,",
                                      "\"caches\":true", NULL};
    round_trip(&m, has, NULL);
    /* a result written before `caches` (an unknown key instead): the pool reads, caches false */
    char *text = ml_measure_encode(&m, NULL), err[200] = "";
    memcpy(strstr(text, "\"caches\""), "\"cachex\"", 8);
    ml_measure back;
    assert_int_equal(ml_measure_decode(text, strlen(text), &back, err, sizeof err), 0);
    assert_true(back.has_pool);
    assert_false(back.pool_caches);
    assert_int_equal(back.pool_reserved_high, 7ull << 32);
    ml_measure_free(&back);
    free(text);
    ml_measure_free(&m);
}

/* The host backend: no device (null), no pool: no `pool` object and no pool keys per sample. */
static void test_round_trip_without_pool(void **state) {
    ml_measure m;
    torch_record(&m);
    m.has_device = m.has_pool = m.pool_caches = false;
    m.device_steady = m.device_peak = 0;
    m.pool_used_current = m.pool_used_high = m.pool_reserved_current = m.pool_reserved_high = 0;
    for (size_t k = 0; k < m.n_samples; k++) {
        m.samples[k].device = 0;
        m.samples[k].has_pool = false;
        m.samples[k].pool_used = m.samples[k].pool_reserved = 0;
    }
    static const char *const has[] = {"\"device\":null", NULL};
    round_trip(&m, has, "pool");
    ml_measure_free(&m);
}

/* Decodes text and expects a refusal whose message contains want; the record is left empty. */
static void refused(const char *text, size_t len, const char *want) {
    ml_measure m;
    char err[200] = "";
    assert_int_equal(ml_measure_decode(text, len, &m, err, sizeof err), -1);
    if (!strstr(err, want))
        fail_msg("message '%s' lacks '%s'", err, want);
    assert_int_equal(m.n_samples, 0);
    assert_null(m.samples);
}

/* Replaces the first `from` in text (which must hold it) by `to`, of the same length. */
static void garble(char *text, const char *from, const char *to) {
    char *at = strstr(text, from);
    assert_non_null(at);
    assert_int_equal(strlen(from), strlen(to));
    memcpy(at, to, strlen(to));
}

static void test_truncated_and_garbled(void **state) {
    series f;
    tu_series(&f, yaml, 0, NULL);
    ml_measure m;
    torch_record(&m);
    char *text = ml_measure_encode(&m, &f.plans[0]);
    size_t n = strlen(text);
    /* cut in half: jansson stops at the end of input, on line 1 */
    refused(text, n / 2, "a rank's measurement is not JSON: 1:");
    refused(text, n / 2, "premature end of input");
    /* each row changes one place of the text (same length): a letter inside a number is not
     * JSON at all; well-formed JSON with a wrong field names the key path */
    static const struct {
        const char *from, *to, *want;
    } rows[] = {
        {"\"communicator_bytes\":8", "\"communicator_bytes\":x", "not JSON"},
        {"\"requested\":1000", "\"requested\":-100", "measured.timeline[1].requested: not a byte count"},
        {"\"pool_reserved\"", "\"pool_reservex\"",
         "measured.timeline[0]: pool_used and pool_reserved come together"},
        {"\"t\":", "\"u\":", "measured.timeline[0].t: missing"},
        {"\"caches\":true", "\"caches\":1   ", "measured.pool.caches: not a boolean"},
        {"\"status\":\"fail\"", "\"status\":\"FAIL\"",
         "checks[0]: needs a name, a status pass or fail, and a detail"},
    };
    for (size_t k = 0; k < ML_ARRAY_LEN(rows); k++) {
        char *g = ml_xstrdup(text);
        garble(g, rows[k].from, rows[k].to);
        refused(g, n, rows[k].want);
        free(g);
    }
    refused("{\"rank\":0}", 10, "measured: missing");
    refused("[]", 2, "rank: missing");
    free(text);
    ml_measure_free(&m);
    series_free(&f);
}

/* ---- trace of a saved run result ---------------------------------------------------------- */

/* The args of every sample of counter `name` in the trace, in order. */
static size_t counter_args(json_t *trace, const char *name, json_t **out, size_t max) {
    size_t n = 0, k;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), k, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (ph && nm && !strcmp(ph, "C") && !strcmp(nm, name) && n < max)
            out[n++] = json_object_get(e, "args");
    }
    return n;
}

/* Writes the schedule and a run result (the real writer: report_emit as JSON) into dir, the
 * result's one rank measured as torch_record's pool readings with pool_caches as given, reads it
 * back as plot and trace do (series_load) and renders the trace. */
static json_t *trace_of_result(const char *dir, bool caches) {
    char ypath[512], rpath[512];
    snprintf(ypath, sizeof ypath, "%s/wire.yaml", dir);
    snprintf(rpath, sizeof rpath, "%s/run.json", dir);
    FILE *fp = fopen(ypath, "w");
    assert_non_null(fp);
    fputs(yaml, fp);
    fclose(fp);
    ml_diags d;
    ml_diags_init(&d);
    sched *s = sched_load_file(ypath, NULL, &d);
    assert_non_null(s);
    series pred = {0};
    pred.owns_sched = true;
    sched_params p = {.world = 1};
    assert_int_equal(series_from_sched(s, 0, 1, &p, &pred, &d), 0);
    report_measured m;
    ml_measure rec;
    torch_record(&rec);
    rec.rank = 0;
    rec.pool_caches = caches;
    /* the run's requested bytes are the prediction's (series_load holds them to it) */
    rec.steady = pred.pred[0].steady[VIEW_REQUESTED];
    rec.peak = pred.pred[0].peak[VIEW_REQUESTED];
    report_measured_set(&m, &rec);
    m.match = true;
    report_schedule rs = {.s = s, .world = 1, .plans = pred.plans, .pred = pred.pred,
                          .expect_failures = -1, .measured = &m};
    report rep = {.items = &rs, .n = 1, .command = "run"};
    assert_int_equal(report_emit(&rep, FMT_JSON, rpath), 0);
    report_measured_free(&m);
    series_free(&pred);

    ml_vec items = {0};
    if (series_load(rpath, &p, &items, &d) != 0)
        fail_msg("series_load: %s", tu_first_error(&d));
    assert_int_equal(items.n, 1);
    ml_str out = {0};
    trace_options o = {0};
    assert_int_equal(trace_json(&ML_VEC_AT(&items, series, 0), 1, &o, &out, &d), 0);
    json_error_t je;
    json_t *trace = json_loads(out.s, 0, &je);
    assert_non_null(trace);
    ml_str_free(&out);
    series_vec_free(&items);
    ml_diags_free(&d);
    unlink(ypath);
    unlink(rpath);
    return trace;
}

static void test_trace_torch_counters(void **state) {
    char dir[] = "/tmp/test_measure.XXXXXX";
    assert_non_null(mkdtemp(dir));
    ml_measure want;
    torch_record(&want);
    json_t *trace = trace_of_result(dir, true);
    json_t *alloc[8], *res[8], *req[8];
    /* one sample per op (3), then the closing one repeating the last op's (trace.c) */
    assert_int_equal(counter_args(trace, "torch allocated bytes", alloc, 8), 4);
    assert_int_equal(counter_args(trace, "torch reserved bytes", res, 8), 4);
    assert_int_equal(counter_args(trace, "requested bytes", req, 8), 4);
    for (int k = 0; k < 4; k++) {
        const ml_sample *s = &want.samples[(k < 3 ? k : 2) + 1];   /* samples[0]: the baseline */
        assert_int_equal(json_integer_value(json_object_get(alloc[k], "measured")), s->pool_used);
        assert_int_equal(json_integer_value(json_object_get(res[k], "measured")), s->pool_reserved);
        assert_int_equal(json_integer_value(json_object_get(req[k], "measured")), s->requested);
    }
    /* op 1: 1000 + 3 MiB requested, 3146728 + 48 allocated, 9 * 2^32 + 2 reserved */
    assert_int_equal(json_integer_value(json_object_get(alloc[1], "measured")), 3146728 + 48);
    assert_int_equal(json_integer_value(json_object_get(res[1], "measured")), 38654705666ll);
    json_decref(trace);

    /* the async allocator's pool is CUDA's, not PyTorch's: the torch counters stay predicted */
    trace = trace_of_result(dir, false);
    assert_int_equal(counter_args(trace, "torch allocated bytes", alloc, 8), 4);
    for (int k = 0; k < 4; k++)
        assert_null(json_object_get(alloc[k], "measured"));
    json_decref(trace);
    ml_measure_free(&want);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_with_pool),
        cmocka_unit_test(test_round_trip_without_pool),
        cmocka_unit_test(test_truncated_and_garbled),
        cmocka_unit_test(test_trace_torch_counters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
