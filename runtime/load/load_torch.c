/* SPDX-License-Identifier: MIT */
/* load_torch.c — what the schedule language says about PyTorch's caching allocator: the
 * top-level `torch: {conf: "...", limit: BYTES, capacity: BYTES}` key and the steps `record_stream: {buf, stream}`
 * and `empty_cache: {}`. Kept apart from the rest of the loader: only the torch view reads them.
 *
 * The conf string is checked by the caller's checker (sched_load_limits.torch_conf_check), so
 * that an unknown key or a bad value is reported at its own column inside the string; the
 * loader cannot know the allocator's keys (it sits below the analyzer). */
#include "load/load_int.h"

#include "base/checked.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { TORCH_CONF, TORCH_LIMIT, TORCH_CAPACITY, TORCH_ADDRESSES };
static const char *const torch_keys[] = {"conf", "limit", "capacity", "addresses"};
static const ld_schema torch_schema = LD_SCHEMA("torch", torch_keys);

/* `addresses: [N, ...]`: integers (decimal or 0x hex), where the cudaMalloc segments lie, in
 * the order they are made (an imported snapshot's: torchalloc_set_segment_addresses). */
static int torch_addresses(loader *l, sched_torch *t) {
    if (!ld_is(l, YAML_SEQUENCE_START_EVENT))
        return ld_fail(l, ld_mark(l), "'addresses' must be a list of integers");
    ml_vec v;
    ml_vec_init(&v, sizeof(uint64_t));
    int rc = 0;
    while (rc == 0 && (rc = ld_next(l)) == 0 && !ld_is(l, YAML_SEQUENCE_END_EVENT)) {
        if ((rc = ld_want_scalar(l, "addresses")))
            break;
        size_t len;
        const char *text = ld_text(l, &len);
        char buf[32], *end;
        uint64_t a = 0;
        bool okay = len > 0 && len < sizeof buf && text[0] >= '0' && text[0] <= '9';
        if (okay) {
            memcpy(buf, text, len);
            buf[len] = 0;
            errno = 0;
            a = strtoull(buf, &end, 0);
            okay = !*end && errno == 0 && a <= ML_BYTES_MAX;
        }
        if (!okay)
            rc = ld_fail(l, ld_mark(l), "'addresses' holds '%.*s', not an address (an integer "
                         "below 2^63)", (int)(len < 40 ? len : 40), text);
        else
            *(uint64_t *)ml_vec_push(&v) = a;
    }
    if (rc == 0 && v.n) {
        t->addresses = ml_arena_alloc(l->a, v.n * sizeof(uint64_t));
        memcpy(t->addresses, v.items, v.n * sizeof(uint64_t));
        t->n_addresses = v.n;
    }
    ml_vec_free(&v);
    return rc;
}

static int torch_value(loader *l, int key, void *obj) {
    sched_torch *t = obj;
    if (key == TORCH_ADDRESSES)
        return torch_addresses(l, t);
    if (key == TORCH_LIMIT)
        return ld_expr(l, CTX_PLAIN, "limit", &t->limit);
    if (key == TORCH_CAPACITY)
        return ld_expr(l, CTX_PLAIN, "capacity", &t->capacity);
    if (ld_want_scalar(l, "conf"))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    if (memchr(text, '\0', len))
        return ld_fail(l, ld_mark(l), "'conf' holds a NUL byte");
    t->conf = ml_arena_strndup(l->a, text, len);
    t->conf_mark = ld_text_mark(l);
    if (!l->lim.torch_conf_check)
        return 0;
    size_t at = 0;
    char msg[256];
    if (l->lim.torch_conf_check(t->conf, &at, msg, sizeof msg) == 0)
        return 0;
    return ld_fail(l, ld_scalar_mark(l, at), "%s", msg);
}

int ld_torch(loader *l, ml_mark key) {
    sched_torch *t = &l->s->torch;
    t->present = true;
    t->mark = key;
    if (ld_is(l, YAML_SCALAR_EVENT) && l->ev.data.scalar.length == 0 &&
        l->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
        return 0;   /* `torch:` alone: the default allocator */
    if (!ld_is(l, YAML_MAPPING_START_EVENT))
        return ld_fail(l, ld_mark(l), "'torch' must be a mapping {conf: STR, limit: BYTES, capacity: BYTES, addresses: [N, ...]}");
    ld_keys k;
    return ld_map(l, &torch_schema, torch_value, t, &k);
}

/* ---- record_stream, empty_cache --------------------------------------------------------------- */

enum { RS_BUF, RS_STREAM };
static const char *const rs_keys[] = {"buf", "stream"};
static const ld_schema rs_schema = LD_SCHEMA("record_stream", rs_keys);

static int rs_value(loader *l, int key, void *obj) {
    sched_step *st = obj;
    if (key == RS_BUF) {
        ld_at(l, st, SCHED_AT_BUF);
        return ld_sym(l, SYM_BUFFER, "buf", &st->u.record_stream.buf);
    }
    return ld_sym_declared(l, SYM_STREAM, "stream", &st->u.record_stream.stream);
}

int ld_record_stream(loader *l, sched_step *st) {
    if (!ld_is(l, YAML_MAPPING_START_EVENT))
        return ld_fail(l, ld_mark(l), "record_stream must be {buf: NAME, stream: S}");
    ld_keys k;
    if (ld_map(l, &rs_schema, rs_value, st, &k))
        return -1;
    for (int key = RS_BUF; key <= RS_STREAM; key++)
        if (!LD_HAS(&k, key))
            return ld_fail(l, k.map, "record_stream needs '%s'", rs_keys[key]);
    return 0;
}

/* `empty_cache: {}` (or `empty_cache:` with nothing): the step has no parameters. */
static const ld_schema ec_schema = {"empty_cache", NULL, 0, NULL};

static int ec_value(loader *l, int key, void *obj) { return 0; }

int ld_empty_cache(loader *l, sched_step *st) {
    if (ld_is(l, YAML_SCALAR_EVENT) && l->ev.data.scalar.length == 0 &&
        l->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
        return 0;
    if (!ld_is(l, YAML_MAPPING_START_EVENT))
        return ld_fail(l, ld_mark(l), "empty_cache takes no parameters: 'empty_cache: {}'");
    ld_keys k;
    return ld_map(l, &ec_schema, ec_value, st, &k);
}
