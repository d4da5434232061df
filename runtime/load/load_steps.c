/* SPDX-License-Identifier: MIT */
/* load_steps.c — steps: one table row per step key (collectives share one row through the
 * collective table of coll.h), each with its key schema, value reader and final checks. */
#include "load/load_int.h"
#include "base/pages.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What a step's value readers and checks share. */
typedef struct {
    sched_step *st;
    ld_keys k;
    const ld_schema *sc;
} step_ctx;

typedef struct {
    const char *name;
    uint32_t len;                                    /* strlen(name): most rows differ there */
    sched_step_kind kind;
    const char *const *keys;
    uint32_t n_keys;
    ld_value_fn value;                               /* one key of the step's mapping */
    int (*finish)(loader *l, step_ctx *c);           /* checks once every key is read */
    int (*parse)(loader *l, sched_step *st);         /* forms that are not just a mapping */
} step_form;

static ml_mark later(ml_mark a, ml_mark b) {
    return (a.line > b.line || (a.line == b.line && a.col > b.col)) ? a : b;
}

static int conflict(loader *l, const step_ctx *c, int a, int b) {
    return ld_fail(l, later(c->k.key[a], c->k.key[b]), "'%s' and '%s' cannot both be given",
                   c->sc->keys[a], c->sc->keys[b]);
}

/* "alloc needs 'buf'" for the first key of mask not given. */
static int require(loader *l, const step_ctx *c, uint32_t mask) {
    if ((c->k.seen & mask) == mask)   /* all given: no scan of the keys */
        return 0;
    for (uint32_t k = 0; k < c->sc->n; k++)
        if ((mask >> k) & 1u && !LD_HAS(&c->k, k))
            return ld_fail(l, c->st->mark, "%s needs '%s'", c->sc->what, c->sc->keys[k]);
    return 0;
}

static int stream_of(loader *l, uint32_t *stream) {
    return ld_sym_declared(l, SYM_STREAM, "stream", stream);
}

/* A nested step list (repeat, region) or step (expect_error): bounded nesting. */
static int enter(loader *l, const sched_step *st) {
    if (++l->step_depth > l->lim.max_depth)
        return ld_fail(l, st->mark, "nesting deeper than %zu levels", l->lim.max_depth);
    return 0;
}

/* ---- alloc ------------------------------------------------------------------------------------ */

enum { ALLOC_BUF, ALLOC_BYTES, ALLOC_COUNT, ALLOC_DTYPE, ALLOC_CHUNKS, ALLOC_INIT, ALLOC_STREAM };
static const char *const alloc_keys[] = {"buf", "bytes", "count", "dtype", "chunks", "init", "stream"};

static int alloc_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    __typeof__(c->st->u.alloc) *a = &c->st->u.alloc;
    switch (key) {
    case ALLOC_BUF:
        ld_at(l, c->st, SCHED_AT_BUF);
        if (ld_sym(l, SYM_BUFFER, "buf", &a->buf))
            return -1;
        ML_VEC_AT(&l->buf_allocated, uint8_t, a->buf) = 1;
        return 0;
    case ALLOC_BYTES:
        ld_at(l, c->st, SCHED_AT_SIZE);
        return ld_expr(l, CTX_PLAIN, "bytes", &a->bytes);
    case ALLOC_COUNT:
        ld_at(l, c->st, SCHED_AT_SIZE);
        return ld_expr(l, CTX_PLAIN, "count", &a->count);
    case ALLOC_DTYPE: return ld_dtype(l, &a->dtype);
    case ALLOC_CHUNKS:
        ld_at(l, c->st, SCHED_AT_CHUNKS);
        return ld_expr(l, CTX_PLAIN, "chunks", &a->chunks);
    case ALLOC_STREAM: return stream_of(l, &a->stream);   /* the torch view's pool */
    default: return ld_init_value(l, &a->init);
    }
}

static int alloc_finish(loader *l, step_ctx *c) {
    if (require(l, c, 1u << ALLOC_BUF))
        return -1;
    if (LD_HAS(&c->k, ALLOC_BYTES) && LD_HAS(&c->k, ALLOC_COUNT))
        return conflict(l, c, ALLOC_BYTES, ALLOC_COUNT);
    if (!LD_HAS(&c->k, ALLOC_BYTES) && !LD_HAS(&c->k, ALLOC_COUNT))
        return ld_fail(l, c->st->mark, "alloc needs 'bytes' or 'count'");
    return 0;
}

/* ---- free: a name or a list of names ---------------------------------------------------------- */

static int free_name(loader *l) {
    ld_named *n = ml_vec_push(&l->scratch);
    n->mark = ld_mark(l);
    return ld_sym(l, SYM_BUFFER, "free", &n->sym);
}

static int free_parse(loader *l, sched_step *st) {
    l->scratch.n = 0;
    if (ld_is(l, YAML_SCALAR_EVENT)) {
        if (free_name(l))
            return -1;
    } else if (ld_is(l, YAML_SEQUENCE_START_EVENT)) {
        ml_mark m = ld_mark(l);
        for (;;) {
            if (ld_next(l))
                return -1;
            if (ld_is(l, YAML_SEQUENCE_END_EVENT))
                break;
            if (free_name(l))
                return -1;
        }
        if (l->scratch.n == 0)
            return ld_fail(l, m, "'free' needs at least one buffer");
    } else {
        return ld_fail(l, ld_mark(l), "'free' must be a name or a list of names");
    }
    uint32_t n = (uint32_t)l->scratch.n;
    st->u.free.n = n;
    /* The marks and the names in one arena object, marks first (both 4-byte aligned): the arena
     * rounds every object to 16 bytes, so `free: x` takes 16, not 32 (3 of every 20 of gen
     * training's steps are frees). */
    _Static_assert(_Alignof(ml_mark) >= _Alignof(uint32_t), "free.bufs follows free.marks");
    st->u.free.marks = ml_arena_alloc(l->a, n * (sizeof(ml_mark) + sizeof(uint32_t)));
    st->u.free.bufs = (uint32_t *)(st->u.free.marks + n);
    for (uint32_t k = 0; k < n; k++) {
        st->u.free.bufs[k] = ML_VEC_AT(&l->scratch, ld_named, k).sym;
        st->u.free.marks[k] = ML_VEC_AT(&l->scratch, ld_named, k).mark;
    }
    return 0;
}

/* ---- release ---------------------------------------------------------------------------------- */

enum { RELEASE_BUF, RELEASE_KEEP };
static const char *const release_keys[] = {"buf", "keep"};

static int release_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    ld_at(l, c->st, key == RELEASE_BUF ? SCHED_AT_BUF : SCHED_AT_KEEP);
    if (key == RELEASE_BUF)
        return ld_sym(l, SYM_BUFFER, "buf", &c->st->u.release.buf);
    return ld_expr(l, CTX_PLAIN, "keep", &c->st->u.release.keep);
}

static int release_finish(loader *l, step_ctx *c) {
    return require(l, c, 1u << RELEASE_BUF | 1u << RELEASE_KEEP);
}

/* ---- collectives ------------------------------------------------------------------------------ */

enum { CKEY_BUF, CKEY_SEND, CKEY_RECV, CKEY_OP, CKEY_ROOT, CKEY_STREAM, CKEY_COMM };
static const char *const coll_keys[] = {"buf", "send", "recv", "op", "root", "stream", "comm"};

static int coll_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    __typeof__(c->st->u.coll) *co = &c->st->u.coll;
    switch (key) {
    case CKEY_BUF: return ld_view(l, "buf", &co->send);
    case CKEY_SEND: return ld_view(l, "send", &co->send);
    case CKEY_RECV: return ld_view(l, "recv", &co->recv);
    case CKEY_OP: {
        ld_at(l, c->st, SCHED_AT_OP);
        ml_redop op;
        if (ld_redop(l, &op))
            return -1;
        co->op = (uint8_t)op;
        return 0;
    }
    case CKEY_ROOT: ld_at(l, c->st, SCHED_AT_ROOT); return ld_expr(l, CTX_PLAIN, "root", &co->root);
    case CKEY_COMM: return ld_comm_ref(l, &co->comm);   /* load_comms.c */
    default: return stream_of(l, &co->stream);
    }
}

static int coll_finish(loader *l, step_ctx *c) {
    __typeof__(c->st->u.coll) *co = &c->st->u.coll;
    const ml_coll_info *ci = &ml_colls[co->coll];
    const ld_keys *k = &c->k;
    if (LD_HAS(k, CKEY_BUF) && (LD_HAS(k, CKEY_SEND) || LD_HAS(k, CKEY_RECV)))
        return conflict(l, c, CKEY_BUF, LD_HAS(k, CKEY_SEND) ? CKEY_SEND : CKEY_RECV);
    if (LD_HAS(k, CKEY_BUF))
        co->recv = co->send;
    else if (!LD_HAS(k, CKEY_SEND) && !LD_HAS(k, CKEY_RECV))
        return ld_fail(l, c->st->mark, "%s needs 'buf' or 'send' and 'recv'", ci->name);
    else if (require(l, c, 1u << CKEY_SEND | 1u << CKEY_RECV))
        return -1;
    if (LD_HAS(k, CKEY_OP) && !ci->has_op)
        return ld_fail(l, k->key[CKEY_OP], "'op' is not valid for %s", ci->name);
    if (LD_HAS(k, CKEY_ROOT) && !ci->has_root)
        return ld_fail(l, k->key[CKEY_ROOT], "'root' is not valid for %s", ci->name);
    if (ci->has_root)
        return require(l, c, 1u << CKEY_ROOT);
    return 0;
}

/* ---- send, recv: {buf: V, peer: EXPR, stream: S} (rows COLL_SEND, COLL_RECV of coll.h) --------- */

enum { P2P_BUF, P2P_PEER, P2P_STREAM, P2P_COMM };
static const char *const p2p_keys[] = {"buf", "peer", "stream", "comm"};

static int p2p_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    __typeof__(c->st->u.coll) *co = &c->st->u.coll;
    if (key == P2P_BUF)
        return ld_view(l, "buf", &co->send);
    if (key == P2P_PEER) {
        ld_at(l, c->st, SCHED_AT_ROOT);
        return ld_expr(l, CTX_PLAIN, "peer", &co->root);
    }
    if (key == P2P_COMM)
        return ld_comm_ref(l, &co->comm);
    return stream_of(l, &co->stream);
}

static int p2p_finish(loader *l, step_ctx *c) {
    c->st->u.coll.recv = c->st->u.coll.send;
    return require(l, c, 1u << P2P_BUF | 1u << P2P_PEER);
}

/* ---- group: [send and recv steps] ------------------------------------------------------------- */

static int group_parse(loader *l, sched_step *st) {
    if (enter(l, st))
        return -1;
    int rc = ld_steps(l, "group", &st->u.group.steps, &st->u.group.n);
    l->step_depth--;
    for (uint32_t k = 0; rc == 0 && k < st->u.group.n; k++) {
        const sched_step *in = &st->u.group.steps[k];
        if (in->kind != ST_COLL || !ml_colls[in->u.coll.coll].p2p)
            rc = ld_fail(l, in->mark, "a group holds send and recv steps, not '%s'",
                         in->kind == ST_COLL ? ml_colls[in->u.coll.coll].name : sched_step_names[in->kind]);
    }
    return rc;
}

/* ---- sync: `device`, {stream: S} or {event: E} ------------------------------------------------ */

enum { SYNC_KEY_STREAM, SYNC_KEY_EVENT };
static const char *const sync_keys[] = {"stream", "event"};
static const ld_schema sync_schema = LD_SCHEMA("sync", sync_keys);

static int sync_value(loader *l, int key, void *obj) {
    sched_step *st = obj;
    if (key == SYNC_KEY_STREAM) {
        st->u.sync.kind = SYNC_STREAM;
        return stream_of(l, &st->u.sync.stream);
    }
    st->u.sync.kind = SYNC_EVENT;
    ld_at(l, st, SCHED_AT_EVENT);
    return ld_sym_declared(l, SYM_EVENT, "event", &st->u.sync.event);
}

static int sync_parse(loader *l, sched_step *st) {
    static const char form[] = "sync must be 'device', {stream: S} or {event: E}";
    st->u.sync.stream = SCHED_DEFAULT_STREAM;
    st->u.sync.event = SCHED_NO_SYM;
    if (ld_is(l, YAML_SCALAR_EVENT)) {
        size_t len;
        const char *t = ld_text(l, &len);
        if (len != 6 || memcmp(t, "device", 6) != 0)
            return ld_fail(l, ld_mark(l), "%s", form);
        st->u.sync.kind = SYNC_DEVICE;
        return 0;
    }
    if (!ld_is(l, YAML_MAPPING_START_EVENT))
        return ld_fail(l, ld_mark(l), "%s", form);
    ld_keys k;
    if (ld_map(l, &sync_schema, sync_value, st, &k))
        return -1;
    if (k.seen == 3u)
        return ld_fail(l, later(k.key[0], k.key[1]), "'stream' and 'event' cannot both be given");
    if (!k.seen)
        return ld_fail(l, k.map, "%s", form);
    return 0;
}

/* ---- record, wait ----------------------------------------------------------------------------- */

enum { EVENT_EVENT, EVENT_STREAM };
static const char *const event_keys[] = {"event", "stream"};

static int event_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    if (key == EVENT_EVENT) {
        ld_at(l, c->st, SCHED_AT_EVENT);
        return ld_sym_declared(l, SYM_EVENT, "event", &c->st->u.event.event);
    }
    return stream_of(l, &c->st->u.event.stream);
}

static int event_finish(loader *l, step_ctx *c) { return require(l, c, 1u << EVENT_EVENT); }

/* ---- repeat, region --------------------------------------------------------------------------- */

enum { REPEAT_COUNT, REPEAT_INDEX, REPEAT_STEPS };
static const char *const repeat_keys[] = {"count", "index", "steps"};
enum { REGION_NAME, REGION_STEPS };
static const char *const region_keys[] = {"name", "steps"};

static int nested_steps(loader *l, step_ctx *c, sched_step **steps, uint32_t *n) {
    if (enter(l, c->st))
        return -1;
    int rc = ld_steps(l, "steps", steps, n);
    l->step_depth--;
    return rc;
}

/* `index: NAME`: an identifier that names nothing else in scope (fixed names, units, functions,
 * lets, the indices of enclosing repeats). It is in scope in the body, not in `count`. */
static int repeat_index(loader *l, step_ctx *c) {
    __typeof__(c->st->u.repeat) *r = &c->st->u.repeat;
    if (LD_HAS(&c->k, REPEAT_STEPS))
        return ld_fail(l, c->k.key[REPEAT_INDEX], "'index' must come before 'steps'");
    if (ld_want_scalar(l, "index"))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    ml_mark m = ld_text_mark(l);
    if (ld_check_name(l, text, len, m, "index", true))
        return -1;
    if (expr_reserved_name(text, len))
        return ld_fail(l, m, "'%.*s' is reserved and cannot be an index name", (int)len, text);
    if (ld_hash_find(&l->lets, text, len, NULL) != UINT32_MAX)
        return ld_fail(l, m, "index '%.*s' shadows the let '%.*s'", (int)len, text, (int)len, text);
    for (size_t d = 0; d < l->indices.n; d++) {
        const ld_index *x = &ML_VEC_AT(&l->indices, ld_index, d);
        if (x->len == len && memcmp(x->name, text, len) == 0)
            return ld_fail(l, m, "index '%.*s' shadows the index of an enclosing repeat (%u:%u)", (int)len, text,
                           x->mark.line, x->mark.col);
    }
    r->index = ml_arena_strndup(l->a, text, len);
    r->index_mark = m;
    r->index_slot = (int32_t)(EXPR_SLOT_FIRST_LET + l->let_v.n + l->indices.n);
    return 0;
}

static int repeat_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    __typeof__(c->st->u.repeat) *r = &c->st->u.repeat;
    if (key == REPEAT_COUNT) {
        ld_at(l, c->st, SCHED_AT_COUNT);
        return ld_expr(l, CTX_PLAIN, "count", &r->count);
    }
    if (key == REPEAT_INDEX)
        return repeat_index(l, c);
    if (!r->index)
        return nested_steps(l, c, &r->steps, &r->n);
    ld_index *x = ml_vec_push(&l->indices);
    *x = (ld_index){r->index, strlen(r->index), r->index_mark};
    if (l->indices.n > l->s->n_index)
        l->s->n_index = (uint32_t)l->indices.n;
    int rc = nested_steps(l, c, &r->steps, &r->n);
    l->indices.n--;
    return rc;
}

static int repeat_finish(loader *l, step_ctx *c) {
    return require(l, c, 1u << REPEAT_COUNT | 1u << REPEAT_STEPS);
}

static int region_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    if (key == REGION_NAME)
        return ld_sym(l, SYM_REGION, "name", &c->st->u.region.name);
    return nested_steps(l, c, &c->st->u.region.steps, &c->st->u.region.n);
}

static int region_finish(loader *l, step_ctx *c) {
    return require(l, c, 1u << REGION_NAME | 1u << REGION_STEPS);
}

/* ---- init: {buf: V, <one INIT key>} ----------------------------------------------------------- */

static const char *const init_step_keys[] = {"buf", "const", "expr", "copy", "random", "identity",
                                             "pattern"};

static int init_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    if (key == 0)
        return ld_view(l, "buf", &c->st->u.init.dst);
    return ld_init_key(l, key - 1, &c->st->u.init.init, c->k.key[key]);
}

static int init_finish(loader *l, step_ctx *c) {
    if (require(l, c, 1u))
        return -1;
    if (c->st->u.init.init.kind == INIT_NONE)
        return ld_fail(l, c->st->mark, "init needs one of const, expr, copy, random, identity, pattern");
    return 0;
}

/* ---- copy, scale, compute --------------------------------------------------------------------- */

enum { COPY_SRC, COPY_DST, COPY_STREAM };
static const char *const copy_keys[] = {"src", "dst", "stream"};

static int copy_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    if (key == COPY_SRC)
        return ld_view(l, "src", &c->st->u.copy.src);
    if (key == COPY_DST)
        return ld_view(l, "dst", &c->st->u.copy.dst);
    return stream_of(l, &c->st->u.copy.stream);
}

static int copy_finish(loader *l, step_ctx *c) { return require(l, c, 1u << COPY_SRC | 1u << COPY_DST); }

enum { SCALE_BUF, SCALE_BY, SCALE_STREAM };
static const char *const scale_keys[] = {"buf", "by", "stream"};

/* A decimal `0.25`, `-1.5`: the exact fraction 25/100, -15/10 (plan.c reduces it). Up to 18
 * digits, so that both parts are int64. Returns 1 when the text is not a decimal. */
static int scale_decimal(loader *l, const char *t, size_t len, expr **num, expr **den) {
    size_t k = t[0] == '-' || t[0] == '+', digits = 0, point = 0, frac = 0;
    for (size_t j = k; j < len; j++) {
        if (t[j] == '.' && !point)
            point = j + 1;
        else if (t[j] >= '0' && t[j] <= '9')
            digits++, frac += point != 0;
        else
            return 1;
    }
    if (!point || !frac || digits == frac)
        return 1;
    if (digits > 18)
        return ld_fail(l, ld_text_mark(l), "'by' has more than 18 digits");
    char nt[24], dt[24];
    size_t n = 0;
    if (t[0] == '-')
        nt[n++] = '-';
    for (size_t j = k; j < len; j++)
        if (t[j] != '.')
            nt[n++] = t[j];
    nt[n] = '\0';
    dt[0] = '1';
    memset(dt + 1, '0', frac);
    dt[frac + 1] = '\0';
    if (ld_expr_at(l, CTX_CONST, ml_arena_strndup(l->a, nt, n), n, 0, num))
        return -1;
    return ld_expr_at(l, CTX_CONST, ml_arena_strndup(l->a, dt, frac + 1), frac + 1, 0, den);
}

/* `by:` a decimal, or an expression whose outermost '/' is an exact fraction (`1/world`). */
static int scale_by(loader *l, step_ctx *c) {
    __typeof__(c->st->u.scale) *sc = &c->st->u.scale;
    if (ld_want_scalar(l, "by"))
        return -1;
    size_t len;
    const char *t = ld_text(l, &len);
    sc->by = ml_arena_strndup(l->a, t, len);
    sc->by_mark = ld_text_mark(l);
    int rc = len ? scale_decimal(l, t, len, &sc->factor, &sc->den) : 1;
    if (rc <= 0)
        return rc;
    if (ld_expr(l, CTX_PLAIN, "by", &sc->factor))
        return -1;
    const expr *num, *den;
    if (expr_split_div(sc->factor, &num, &den)) {
        sc->factor = (expr *)num;
        sc->den = (expr *)den;
    }
    return 0;
}

static int scale_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    if (key == SCALE_BUF)
        return ld_view(l, "buf", &c->st->u.scale.buf);
    if (key == SCALE_BY)
        return scale_by(l, c);
    return stream_of(l, &c->st->u.scale.stream);
}

static int scale_finish(loader *l, step_ctx *c) { return require(l, c, 1u << SCALE_BUF | 1u << SCALE_BY); }

enum { COMPUTE_READS, COMPUTE_WRITES, COMPUTE_STREAM, COMPUTE_TIME, COMPUTE_FLOPS };
static const char *const compute_keys[] = {"reads", "writes", "stream", "time", "flops"};

static int compute_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    __typeof__(c->st->u.compute) *cp = &c->st->u.compute;
    if (key == COMPUTE_READS)
        return ld_views(l, "reads", &cp->reads, &cp->n_reads);
    if (key == COMPUTE_WRITES)
        return ld_views(l, "writes", &cp->writes, &cp->n_writes);
    if (key == COMPUTE_TIME || key == COMPUTE_FLOPS) {
        if (LD_HAS(&c->k, key == COMPUTE_TIME ? COMPUTE_FLOPS : COMPUTE_TIME))
            return ld_fail(l, c->k.key[key], "'time' and 'flops' cannot both be given");
        return ld_expr(l, CTX_PLAIN, compute_keys[key],
                       key == COMPUTE_TIME ? &cp->time_us : &cp->flops);
    }
    return stream_of(l, &cp->stream);
}

/* ---- check ------------------------------------------------------------------------------------ */

enum { CHECK_NAME, CHECK_EQUAL_KEY, CHECK_NOT_EQUAL_KEY, CHECK_RTOL, CHECK_ATOL };
static const char *const check_keys[] = {"name", "equal", "not_equal", "rtol", "atol"};

static int tolerance(loader *l, const char *what, double *out) {
    if (ld_want_scalar(l, what))
        return -1;
    /* libyaml scalars are NUL-terminated. */
    const char *t = (const char *)l->ev.data.scalar.value;
    char *end;
    double v = strtod(t, &end);
    if (end == t || *end != '\0' || !isfinite(v) || v < 0)
        return ld_fail(l, ld_mark(l), "'%s' must be a non-negative number", what);
    *out = v;
    return 0;
}

static int check_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    sched_check *ck = c->st->u.check;
    switch (key) {
    case CHECK_NAME: return ld_name(l, "name", &ck->name);
    case CHECK_RTOL: return tolerance(l, "rtol", &ck->rtol);
    case CHECK_ATOL: return tolerance(l, "atol", &ck->atol);
    default: break;
    }
    const char *what = check_keys[key];
    ck->kind = key == CHECK_EQUAL_KEY ? CHECK_EQUAL : CHECK_NOT_EQUAL;
    if (ld_want(l, YAML_SEQUENCE_START_EVENT, what))
        return -1;
    ml_mark m = ld_mark(l);
    sched_operand *opd[2] = {&ck->a, &ck->b};
    for (int n = 0;; n++) {
        if (ld_next(l))
            return -1;
        if (ld_is(l, YAML_SEQUENCE_END_EVENT)) {
            if (n == 2)
                return 0;
            break;
        }
        if (n == 2 || ld_operand(l, opd[n]))
            return n == 2 ? ld_fail(l, m, "'%s' needs exactly 2 operands", what) : -1;
    }
    return ld_fail(l, m, "'%s' needs exactly 2 operands", what);
}

static int check_finish(loader *l, step_ctx *c) {
    if (require(l, c, 1u << CHECK_NAME))
        return -1;
    if (LD_HAS(&c->k, CHECK_EQUAL_KEY) && LD_HAS(&c->k, CHECK_NOT_EQUAL_KEY))
        return conflict(l, c, CHECK_EQUAL_KEY, CHECK_NOT_EQUAL_KEY);
    if (!LD_HAS(&c->k, CHECK_EQUAL_KEY) && !LD_HAS(&c->k, CHECK_NOT_EQUAL_KEY))
        return ld_fail(l, c->st->mark, "check needs 'equal' or 'not_equal'");
    return 0;
}

/* ---- expect_error ----------------------------------------------------------------------------- */

enum { XERR_NAME, XERR_ERROR, XERR_STEP };
static const char *const xerr_keys[] = {"name", "error", "step"};

static int xerr_value(loader *l, int key, void *obj) {
    step_ctx *c = obj;
    __typeof__(c->st->u.expect_error) *x = &c->st->u.expect_error;
    if (key == XERR_NAME)
        return ld_name(l, "name", &x->name);
    if (key == XERR_ERROR) {
        ld_at(l, c->st, SCHED_AT_ERROR);
        if (ld_want_scalar(l, "error"))
            return -1;
        size_t len;
        const char *t = ld_text(l, &len);
        for (int e = ERR_NONE + 1; e < ERR_COUNT_; e++)
            if (strncmp(sched_error_names[e], t, len) == 0 && sched_error_names[e][len] == '\0') {
                x->error = (sched_error_code)e;
                return 0;
            }
        return ld_fail_choice(l, ld_mark(l), "error code", t, len, sched_error_names + 1, ERR_COUNT_ - 1,
                              NULL);
    }
    if (enter(l, c->st))
        return -1;
    x->step = ml_arena_alloc(l->a, sizeof(sched_step));
    int rc = ld_step(l, x->step);
    l->step_depth--;
    return rc;
}

static int xerr_finish(loader *l, step_ctx *c) {
    return require(l, c, 1u << XERR_NAME | 1u << XERR_ERROR | 1u << XERR_STEP);
}

/* ---- The table -------------------------------------------------------------------------------- */

#define FORM(name, kind, keys, value, finish) \
    {name, sizeof name - 1, kind, keys, ML_ARRAY_LEN(keys), value, finish, NULL}
#define PARSED(name, kind, parse) {name, sizeof name - 1, kind, NULL, 0, NULL, NULL, parse}
static const step_form step_forms[] = {
    FORM("alloc", ST_ALLOC, alloc_keys, alloc_value, alloc_finish),
    PARSED("free", ST_FREE, free_parse),
    FORM("release", ST_RELEASE, release_keys, release_value, release_finish),
    PARSED("sync", ST_SYNC, sync_parse),
    FORM("record", ST_RECORD, event_keys, event_value, event_finish),
    FORM("wait", ST_WAIT, event_keys, event_value, event_finish),
    FORM("repeat", ST_REPEAT, repeat_keys, repeat_value, repeat_finish),
    FORM("region", ST_REGION, region_keys, region_value, region_finish),
    FORM("init", ST_INIT, init_step_keys, init_value, init_finish),
    FORM("copy", ST_COPY, copy_keys, copy_value, copy_finish),
    FORM("scale", ST_SCALE, scale_keys, scale_value, scale_finish),
    FORM("compute", ST_COMPUTE, compute_keys, compute_value, NULL),
    FORM("check", ST_CHECK, check_keys, check_value, check_finish),
    FORM("expect_error", ST_EXPECT_ERROR, xerr_keys, xerr_value, xerr_finish),
    FORM("send", ST_COLL, p2p_keys, p2p_value, p2p_finish),
    FORM("recv", ST_COLL, p2p_keys, p2p_value, p2p_finish),
    PARSED("group", ST_GROUP, group_parse),
    PARSED("record_stream", ST_RECORD_STREAM, ld_record_stream),   /* load_torch.c */
    PARSED("empty_cache", ST_EMPTY_CACHE, ld_empty_cache),
};
/* Every collective of coll.h is a step key of its own, read by one row. */
static const step_form coll_form = FORM("collective", ST_COLL, coll_keys, coll_value, coll_finish);

/* The row of step key t: step_forms[k] is row k, collective c row ML_ARRAY_LEN(step_forms) + c.
 * The memo (loader.step_memo) remembers each key's row, so most steps find theirs with one
 * compare: the scan below tried a dozen rows before `compute` and all nineteen, then the
 * collective table, before `all_gather` (callgrind, 100 k training steps: 4.4 M in the scan). */
#define N_FORMS ML_ARRAY_LEN(step_forms)
_Static_assert(N_FORMS + COLL_COUNT < UINT16_MAX, "a row + 1 fits a step_memo slot's low half");
_Static_assert(N_FORMS + 1 <= LD_STEP_FORMS && LD_STEP_FORMS <= 32, "a row of step_key_lens each, a bit each");
static const char *row_name(size_t row) {
    return row < N_FORMS ? step_forms[row].name : ml_colls[row - N_FORMS].name;
}

static const step_form *form_lookup(loader *l, const char *t, size_t len, int *coll, size_t *rowp) {
    uint32_t *memo = &l->step_memo[ld_memo_index(t, len)];
    size_t row = SIZE_MAX;
    if (*memo && *memo >> 16 == len && ld_same_bytes(row_name((*memo & 0xFFFFu) - 1u), t, len)) {
        row = (*memo & 0xFFFFu) - 1u;
    } else {
        for (size_t k = 0; k < N_FORMS && row == SIZE_MAX; k++)
            if (step_forms[k].len == len && ld_key_eq(step_forms[k].name, t, len))
                row = k;
        int c = row == SIZE_MAX ? ml_coll_lookup(t, len) : -1;
        if (c >= 0)
            row = N_FORMS + (size_t)c;
        if (row == SIZE_MAX)
            return NULL;
        *memo = (uint32_t)len << 16 | (uint32_t)(row + 1);   /* len: a row name's, short */
    }
    *coll = row < N_FORMS ? -1 : (int)(row - N_FORMS);
    *rowp = row < N_FORMS ? row : N_FORMS;   /* coll_form's: the last */
    return row < N_FORMS ? &step_forms[row] : &coll_form;
}

/* "unknown step 'x': expected one of when, alloc, ..., all_reduce, ...". */
static int unknown_step(loader *l, ml_mark m, const char *t, size_t len) {
    const char *names[1 + ML_ARRAY_LEN(step_forms) + COLL_COUNT];
    size_t n = 0;
    names[n++] = "when";
    for (size_t k = 0; k < ML_ARRAY_LEN(step_forms); k++)
        names[n++] = step_forms[k].name;
    for (int k = 0; k < COLL_COUNT; k++)
        if (!ml_colls[k].p2p)   /* send and recv are rows of step_forms */
            names[n++] = ml_colls[k].name;
    return ld_fail_choice(l, m, "step", t, len, names, n, NULL);
}

/* row: f's, as form_lookup gives it (step_key_lens). */
static int step_body(loader *l, const step_form *f, int coll, size_t row, sched_step *st) {
    st->kind = f->kind;
    if (f->parse)
        return f->parse(l, st);
    step_ctx c;   /* not zeroed: ld_map clears c.k.seen, and nothing reads c.k before */
    c.st = st;
    uint16_t *lens = l->step_key_lens[row];
    if (!(l->step_key_lens_set >> row & 1u)) {   /* the form's first step */
        for (uint32_t k = 0; k < f->n_keys; k++)
            lens[k] = (uint16_t)strlen(f->keys[k]);   /* a few bytes */
        l->step_key_lens_set |= 1u << row;
    }
    ld_schema sc = {f->name, f->keys, f->n_keys, lens};
    if (f->kind == ST_ALLOC) {
        st->u.alloc.dtype = l->s->dtype;
        st->u.alloc.stream = SCHED_DEFAULT_STREAM;
    }
    if (f->kind == ST_REPEAT)
        st->u.repeat.index_slot = -1;
    if (f->kind == ST_CHECK)
        st->u.check = ml_arena_alloc(l->a, sizeof *st->u.check);
    if (f->kind == ST_COLL) {
        if (coll < 0)   /* send, recv: forms of their own, rows of the collective table */
            coll = ml_coll_lookup(f->name, strlen(f->name));
        st->u.coll.coll = (ml_coll)coll;
        st->u.coll.op = RED_SUM;
        sc.what = ml_colls[coll].name;
    }
    c.sc = &sc;
    if (ld_map(l, &sc, f->value, &c, &c.k))
        return -1;
    return f->finish ? f->finish(l, &c) : 0;
}

/* text[0..len) as a decimal without a sign or leading zeros, up to 18 digits (no overflow). */
static bool plain_decimal(const char *text, size_t len, int64_t *v) {
    if (len == 0 || len > 18 || (len > 1 && text[0] == '0'))
        return false;
    int64_t x = 0;
    for (size_t k = 0; k < len; k++) {
        if (text[k] < '0' || text[k] > '9')
            return false;
        x = x * 10 + (text[k] - '0');
    }
    *v = x;
    return true;
}

/* `time_us: N`, a constant >= 0 (sched.h sched_time), appended to l->times at *at; its step's
 * mark is set once the step key is read. */
static int step_time(loader *l, size_t *at) {
    ml_mark m = ld_mark(l);
    if (ld_want_scalar(l, "time_us"))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    int64_t v = -1;
    /* A plain decimal, as an imported trace writes on every step, is read here: the expression
     * parser, its node and its text copy were a tenth of predict's time on
     * tests/bench/import_bench.sh's schedule (perf). Anything else is an expression. */
    if (!plain_decimal(text, len, &v)) {
        expr *e;
        if (ld_expr_at(l, CTX_CONST, text, len, 0, &e))
            return -1;
        if (!expr_const_value(e, &v))
            v = -1;
    }
    if (v < 0)
        return ld_fail(l, m, "'time_us' must be a constant number of microseconds >= 0");
    *at = l->times.n;
    *LD_PUSH(&l->times, sched_time) = (sched_time){{0, 0}, v};
    return 0;
}

/* One step: a mapping with one step key and optionally `when:` and `time_us:`. */
int ld_step(loader *l, sched_step *st) {
    if (!ld_is(l, YAML_MAPPING_START_EVENT))
        return ld_fail(l, ld_mark(l), "a step must be a mapping");
    ml_mark start = ld_mark(l);
    if (++l->s->n_steps_total > l->lim.max_steps)
        return ld_fail(l, start, "more than %zu steps", l->lim.max_steps);
    const char *step_key = NULL;
    bool have_when = false;
    size_t when_at = SIZE_MAX;   /* its part, when it comes before the step key (no mark yet) */
    size_t time_at = SIZE_MAX;   /* its `time_us:` in l->times, marked with the step's key */
    for (;;) {
        if (ld_next(l))
            return -1;
        if (ld_is(l, YAML_MAPPING_END_EVENT))
            break;
        if (!ld_is(l, YAML_SCALAR_EVENT))
            return ld_fail(l, ld_mark(l), "keys of a step must be scalars");
        size_t len;
        const char *t = ld_text(l, &len);
        ml_mark m = ld_mark(l);
        if (len == 4 && memcmp(t, "when", 4) == 0) {
            if (have_when)
                return ld_fail(l, m, "duplicate key 'when' in step");
            have_when = true;
            if (ld_next(l))
                return -1;
            if (!step_key)
                when_at = l->ats.n;
            ld_at(l, st, SCHED_AT_WHEN);
            if (ld_expr(l, CTX_PLAIN, "when", &st->when))
                return -1;
            continue;
        }
        if (len == 7 && memcmp(t, "time_us", 7) == 0) {
            if (time_at != SIZE_MAX)
                return ld_fail(l, m, "duplicate key 'time_us' in step");
            if (ld_next(l) || step_time(l, &time_at))
                return -1;
            continue;
        }
        int coll;
        size_t row;
        const step_form *f = form_lookup(l, t, len, &coll, &row);
        if (!f)
            return unknown_step(l, m, t, len);
        const char *name = coll >= 0 ? ml_colls[coll].name : f->name;
        if (step_key)
            return ld_fail(l, m, "a step has one step key: '%s' after '%s'", name, step_key);
        step_key = name;
        st->mark = m;
        if (ld_next(l) || step_body(l, f, coll, row, st))
            return -1;
    }
    if (!step_key)
        return ld_fail(l, start, "a step needs a step key such as 'alloc' or 'all_reduce'");
    if (when_at < l->ats.n)
        ML_VEC_AT(&l->ats, sched_at, when_at).step = st->mark;
    if (time_at < l->times.n)
        ML_VEC_AT(&l->times, sched_time, time_at).step = st->mark;
    return 0;
}

/* A list of steps, built in a growing array that the schedule then owns. A million steps are
 * 104 MB: the array's pages are populated a little ahead of the steps written (pages.h). */
#define STEPS_AHEAD (((size_t)2 << 20) / sizeof(sched_step))
int ld_steps(loader *l, const char *what, sched_step **out, uint32_t *n) {
    if (ld_want(l, YAML_SEQUENCE_START_EVENT, what))
        return -1;
    ml_vec v;
    ml_vec_init(&v, sizeof(sched_step));
    size_t populated = 0;
    for (;;) {
        if (ld_next(l))
            break;
        if (ld_is(l, YAML_SEQUENCE_END_EVENT)) {
            *out = v.items;
            *n = (uint32_t)v.n;
            if (v.items)
                ld_own(l, v.items);
            return 0;
        }
        sched_step *st = LD_PUSH(&v, sched_step);
        *st = (sched_step){0};
        if (v.n >= populated) {
            size_t end = v.n + STEPS_AHEAD < v.cap ? v.n + STEPS_AHEAD : v.cap;
            ml_prefault((sched_step *)v.items + v.n, (sched_step *)v.items + end);
            populated = end;
        }
        if (ld_step(l, st))
            break;
    }
    ml_vec_free(&v);
    return -1;
}
