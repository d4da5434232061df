/* SPDX-License-Identifier: MIT */
/* measure.c — the measurement record's one writer and one reader (measure.h). */
#include "ir/measure.h"
#include "base/checked.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void ml_measure_free(ml_measure *m) {
    for (size_t k = 0; k < m->n_checks; k++)
        free(m->checks[k].name);
    free(m->checks);
    free(m->samples);
    memset(m, 0, sizeof *m);
}

/* Capacity doubles at every power of two, so it needs no field of its own. */
static void *grow(void *a, size_t n, size_t item) {
    if (n & (n - 1))
        return a;
    size_t cap = n ? n * 2 : 1, bytes;
    if (cap < n || __builtin_mul_overflow(cap, item, &bytes))
        ml_out_of_memory(SIZE_MAX);
    return ml_xrealloc(a, bytes);
}

ml_sample *ml_measure_push_sample(ml_measure *m) {
    m->samples = grow(m->samples, m->n_samples, sizeof *m->samples);
    ml_sample *s = &m->samples[m->n_samples++];
    memset(s, 0, sizeof *s);
    return s;
}

ml_measure_check *ml_measure_push_check(ml_measure *m, const char *name) {
    m->checks = grow(m->checks, m->n_checks, sizeof *m->checks);
    ml_measure_check *c = &m->checks[m->n_checks++];
    memset(c, 0, sizeof *c);
    c->name = ml_xstrdup(name ? name : "");
    return c;
}

const char *ml_measure_op_label(const rank_plan *p, size_t op) {
    if (!p || op >= p->n_ops)
        return "-";
    const plan_op *o = plan_op_at(p, op);
    if (o->kind == OP_COLL)
        return ml_colls[o->u.coll.coll].name;
    return plan_op_names[o->kind];
}

/* ---- writer ------------------------------------------------------------------------------- */

/* Byte counts are below 2^63 (base/checked.h's ML_BYTES_MAX), so json_int_t holds them. */
static json_t *bytes_json(uint64_t v) { return json_integer((json_int_t)v); }

static json_t *pair_json(uint64_t steady, uint64_t peak) {
    return json_pack("{s:o, s:o}", "steady", bytes_json(steady), "peak", bytes_json(peak));
}

json_t *ml_measure_json(const ml_measure *m, const rank_plan *p) {
    json_t *o = json_object();
    json_object_set_new(o, "requested", pair_json(m->steady, m->peak));
    json_object_set_new(o, "device", m->has_device ? pair_json(m->device_steady, m->device_peak)
                                                   : json_null());
    json_object_set_new(o, "communicator_bytes", bytes_json(m->communicator_bytes));
    json_t *stages = json_array();
    for (uint32_t k = 0; k < m->n_stages; k++)
        json_array_append_new(stages, json_pack("{s:s, s:o}", "stage", m->stages[k].name, "bytes",
                                                bytes_json(m->stages[k].bytes)));
    json_object_set_new(o, "communicator_stages", stages);
    if (m->has_pool)
        json_object_set_new(o, "pool",
                            json_pack("{s:o, s:o, s:o, s:o, s:b}", "used_current",
                                      bytes_json(m->pool_used_current), "used_high",
                                      bytes_json(m->pool_used_high), "reserved_current",
                                      bytes_json(m->pool_reserved_current), "reserved_high",
                                      bytes_json(m->pool_reserved_high), "caches", m->pool_caches));
    json_t *tl = json_array();
    for (size_t k = 0; k < m->n_samples; k++) {
        const ml_sample *s = &m->samples[k];
        bool base = s->op == SIZE_MAX;
        bool named = p && s->op < p->n_ops;
        json_t *e = json_object();
        json_object_set_new(e, "op", json_string(base ? "baseline" : ml_measure_op_label(p, s->op)));
        json_object_set_new(e, "index", base ? json_null() : json_integer((json_int_t)s->op));
        json_object_set_new(e, "line", json_integer(named ? plan_op_mark(&p->ops[s->op]).line : 0));
        json_object_set_new(e, "requested", bytes_json(s->requested));
        json_object_set_new(e, "device", json_integer(s->device));
        json_object_set_new(e, "t", json_real(s->t));
        if (s->has_pool) {   /* torch: memory_allocated / memory_reserved after the op */
            json_object_set_new(e, "pool_used", bytes_json(s->pool_used));
            json_object_set_new(e, "pool_reserved", bytes_json(s->pool_reserved));
        }
        json_array_append_new(tl, e);
    }
    json_object_set_new(o, "timeline", tl);
    return o;
}

char *ml_measure_encode(const ml_measure *m, const rank_plan *p) {
    json_t *checks = json_array();
    for (size_t k = 0; k < m->n_checks; k++)
        json_array_append_new(checks, json_pack("{s:s, s:i, s:s, s:s}", "name", m->checks[k].name,
                                                "rank", m->rank, "status",
                                                m->checks[k].pass ? "pass" : "fail", "detail",
                                                m->checks[k].detail));
    json_t *o = json_pack("{s:i, s:o, s:o}", "rank", m->rank, "measured", ml_measure_json(m, p),
                          "checks", checks);
    /* Full double precision for `t` (jansson's default is 17 digits: exact). */
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        ml_out_of_memory(0);   /* jansson fails only for want of memory here (names are ours) */
    return text;
}

/* ---- reader ------------------------------------------------------------------------------- */

typedef struct {
    char *err;
    size_t elen;
    bool failed;
} reader;

static int fail(reader *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(reader *rd, const char *fmt, ...) {
    if (!rd->failed) {   /* keep the first reason */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rd->err, rd->elen, fmt, ap);
        va_end(ap);
        rd->failed = true;
    }
    return -1;
}

/* A byte count: an integer in [0, ML_BYTES_MAX]. */
static int get_bytes(reader *rd, const json_t *o, const char *key, const char *at, uint64_t *out) {
    const json_t *v = json_object_get(o, key);
    if (!v)
        return fail(rd, "%s.%s: missing", at, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return fail(rd, "%s.%s: not a byte count (an integer >= 0)", at, key);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int get_pair(reader *rd, const json_t *o, const char *key, uint64_t *steady,
                    uint64_t *peak) {
    const json_t *v = json_object_get(o, key);
    char at[48];
    snprintf(at, sizeof at, "measured.%s", key);
    if (!json_is_object(v))
        return fail(rd, "%s: %s", at, v ? "not an object" : "missing");
    if (get_bytes(rd, v, "steady", at, steady) || get_bytes(rd, v, "peak", at, peak))
        return -1;
    return 0;
}

static int read_stages(reader *rd, const json_t *stages, ml_measure *m) {
    if (!stages)
        return 0;
    if (!json_is_array(stages))
        return fail(rd, "measured.communicator_stages: not an array");
    if (json_array_size(stages) > ML_MEASURE_STAGES)
        return fail(rd, "measured.communicator_stages: %zu stages, at most %d",
                    json_array_size(stages), ML_MEASURE_STAGES);
    for (size_t k = 0; k < json_array_size(stages); k++) {
        const json_t *e = json_array_get(stages, k);
        char at[64];
        snprintf(at, sizeof at, "measured.communicator_stages[%zu]", k);
        const char *name = json_string_value(json_object_get(e, "stage"));
        if (!name || strlen(name) >= sizeof m->stages[0].name)
            return fail(rd, "%s.stage: not a stage name", at);
        if (get_bytes(rd, e, "bytes", at, &m->stages[k].bytes))
            return -1;
        snprintf(m->stages[k].name, sizeof m->stages[k].name, "%s", name);
        m->n_stages++;
    }
    return 0;
}

static int read_pool(reader *rd, const json_t *pool, ml_measure *m) {
    if (!pool)
        return 0;
    const char *at = "measured.pool";
    if (!json_is_object(pool))
        return fail(rd, "%s: not an object", at);
    /* `caches` came after the pool itself: a result written before it reads as false, and the
     * one reader of saved results (series.c) decides from the result's backend instead. */
    const json_t *caches = json_object_get(pool, "caches");
    if (caches && !json_is_boolean(caches))
        return fail(rd, "%s.caches: not a boolean", at);
    if (get_bytes(rd, pool, "used_current", at, &m->pool_used_current) ||
        get_bytes(rd, pool, "used_high", at, &m->pool_used_high) ||
        get_bytes(rd, pool, "reserved_current", at, &m->pool_reserved_current) ||
        get_bytes(rd, pool, "reserved_high", at, &m->pool_reserved_high))
        return -1;
    m->has_pool = true;
    m->pool_caches = json_is_true(caches);
    return 0;
}

static int read_sample(reader *rd, const json_t *e, size_t k, ml_measure *m) {
    char at[64];
    snprintf(at, sizeof at, "measured.timeline[%zu]", k);
    if (!json_is_object(e))
        return fail(rd, "%s: not an object", at);
    ml_sample *s = ml_measure_push_sample(m);
    const json_t *index = json_object_get(e, "index"), *dev = json_object_get(e, "device"),
                 *t = json_object_get(e, "t");
    /* The baseline has a null index; an op's index is its place in the rank's plan. */
    if (json_is_null(index))
        s->op = SIZE_MAX;
    else if (json_is_integer(index) && json_integer_value(index) >= 0)
        s->op = (size_t)json_integer_value(index);
    else
        return fail(rd, "%s.index: %s", at, index ? "not an op index (an integer >= 0 or null)"
                                                  : "missing");
    if (get_bytes(rd, e, "requested", at, &s->requested))
        return -1;
    if (!json_is_integer(dev))   /* a delta to the baseline: may be negative */
        return fail(rd, "%s.device: %s", at, dev ? "not an integer" : "missing");
    s->device = json_integer_value(dev);
    if (!json_is_number(t))
        return fail(rd, "%s.t: %s", at, t ? "not a number" : "missing");
    s->t = json_number_value(t);
    bool used = json_object_get(e, "pool_used"), reserved = json_object_get(e, "pool_reserved");
    if (used != reserved)
        return fail(rd, "%s: pool_used and pool_reserved come together", at);
    if (used) {
        if (get_bytes(rd, e, "pool_used", at, &s->pool_used) ||
            get_bytes(rd, e, "pool_reserved", at, &s->pool_reserved))
            return -1;
        s->has_pool = true;
    }
    return 0;
}

static int read_measured(reader *rd, const json_t *o, ml_measure *m) {
    if (!json_is_object(o))
        return fail(rd, "measured: %s", o ? "not an object" : "missing");
    if (get_pair(rd, o, "requested", &m->steady, &m->peak))
        return -1;
    const json_t *dev = json_object_get(o, "device");
    if (!dev)
        return fail(rd, "measured.device: missing");
    if (!json_is_null(dev)) {
        if (get_pair(rd, o, "device", &m->device_steady, &m->device_peak))
            return -1;
        m->has_device = true;
    }
    if (get_bytes(rd, o, "communicator_bytes", "measured", &m->communicator_bytes) ||
        read_stages(rd, json_object_get(o, "communicator_stages"), m) ||
        read_pool(rd, json_object_get(o, "pool"), m))
        return -1;
    const json_t *tl = json_object_get(o, "timeline");
    if (!json_is_array(tl))
        return fail(rd, "measured.timeline: %s", tl ? "not an array" : "missing");
    for (size_t k = 0; k < json_array_size(tl); k++)
        if (read_sample(rd, json_array_get(tl, k), k, m))
            return -1;
    return 0;
}

int ml_measure_from_json(const json_t *o, ml_measure *m, char *err, size_t elen) {
    memset(m, 0, sizeof *m);
    reader rd = {err, elen, false};
    if (read_measured(&rd, o, m)) {
        ml_measure_free(m);
        return -1;
    }
    return 0;
}

static int read_checks(reader *rd, const json_t *checks, ml_measure *m) {
    if (!json_is_array(checks))
        return fail(rd, "checks: %s", checks ? "not an array" : "missing");
    for (size_t k = 0; k < json_array_size(checks); k++) {
        const json_t *e = json_array_get(checks, k);
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *status = json_string_value(json_object_get(e, "status"));
        const char *detail = json_string_value(json_object_get(e, "detail"));
        if (!name || !detail || !status || (strcmp(status, "pass") && strcmp(status, "fail")))
            return fail(rd, "checks[%zu]: needs a name, a status pass or fail, and a detail", k);
        ml_measure_check *c = ml_measure_push_check(m, name);
        c->pass = !strcmp(status, "pass");
        snprintf(c->detail, sizeof c->detail, "%s", detail);
    }
    return 0;
}

int ml_measure_decode(const char *text, size_t len, ml_measure *m, char *err, size_t elen) {
    memset(m, 0, sizeof *m);
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    if (!o) {
        snprintf(err, elen, "a rank's measurement is not JSON: %d:%d: %s", je.line, je.column,
                 je.text);
        return -1;
    }
    reader rd = {err, elen, false};
    const json_t *rank = json_object_get(o, "rank");
    int rc = 0;
    if (!json_is_integer(rank) || json_integer_value(rank) < 0 ||
        json_integer_value(rank) > INT32_MAX)
        rc = fail(&rd, "rank: %s", rank ? "not a rank (an integer >= 0)" : "missing");
    else
        m->rank = (int)json_integer_value(rank);
    if (!rc)
        rc = read_measured(&rd, json_object_get(o, "measured"), m);
    if (!rc)
        rc = read_checks(&rd, json_object_get(o, "checks"), m);
    json_decref(o);
    if (rc)
        ml_measure_free(m);
    return rc;
}

/* ---- provenance text ---------------------------------------------------------------------- */

const char *ml_provenance_get(const char *prov, const char *key, char *buf, size_t len) {
    size_t k = strlen(key);
    buf[0] = '\0';
    for (const char *line = prov; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (n > k && !strncmp(line, key, k) && line[k] == '=') {
            snprintf(buf, len, "%.*s", (int)(n - k - 1), line + k + 1);
            break;
        }
        line = end ? end + 1 : NULL;
    }
    return buf;
}

void ml_provenance_summary(const char *prov, char *buf, size_t len) {
    char v[512], c[128];
    ml_str o = {0};
    ml_str_printf(&o, "memlife %s (%s)", ml_provenance_get(prov, "memlife", v, sizeof v),
                  ml_provenance_get(prov, "commit", c, sizeof c));
    static const struct {
        const char *key, *label;
    } parts[] = {{"backend", ""}, {"nccl_version", "NCCL "}, {"cuda_runtime_version", "CUDA "},
                 {"cuda_driver_version", "driver "}, {"gpu_count", "GPUs "}, {"gpu0", ""},
                 {"mpi", ""}, {"world", "world "}, {"hosts", "hosts "}, {"date", ""}};
    for (size_t k = 0; k < ML_ARRAY_LEN(parts); k++)
        if (*ml_provenance_get(prov, parts[k].key, v, sizeof v))
            ml_str_printf(&o, " | %s%s", parts[k].label, v);
    for (const char *line = prov; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (!strncmp(line, "NCCL_", 5))
            ml_str_printf(&o, " | %.*s", (int)n, line);
        line = end ? end + 1 : NULL;
    }
    snprintf(buf, len, "%s", o.s ? o.s : "");
    ml_str_free(&o);
}
