/* SPDX-License-Identifier: MIT */
/* load_data.c — the loader's value forms: views (`name`, `name[off : count]`), data patterns
 * (INIT), check operands (OPD) and memory expectations. */
#include "load/load_int.h"

#include <string.h>

/* ---- Views ------------------------------------------------------------------------------------ */

static bool view_space(char c) { return c == ' ' || c == '\t'; }

/* The bytes that end a view's name: a blank or '['. A table, one test a byte: the name's scan
 * was a tenth of the loader's own instructions per view (callgrind, 100 k training steps). */
static const bool name_end[256] = {[' '] = true, ['\t'] = true, ['['] = true};

/* `[offset : count]` of a view, from t[k] (its '[') to t[end) (its ']', where a view ends
 * right): t is the current scalar's value; ascii: its bytes are its columns from t0
 * (ld_text_ascii). Out of parse_view_text, which most views (a bare name) end before. */
static __attribute__((noinline)) int view_range(loader *l, const char *t, size_t k, size_t end, size_t name0,
                                                bool ascii, sched_view *v) {
    static const char form[] = "expected 'name' or 'name[offset : count]'";
    if (t[end - 1] != ']')
        return ld_fail(l, ld_scalar_mark(l, end), "expected ']' to close the view");
    const char *colon = memchr(t + k + 1, ':', end - 1 - (k + 1));
    if (!colon)
        return ld_fail(l, ld_scalar_mark(l, k), "%s", form);
    size_t off0 = k + 1, off1 = (size_t)(colon - t), cnt0 = off1 + 1, cnt1 = end - 1;
    if (ascii) {   /* the expressions' columns, for errors at their tokens */
        if (cnt0 - name0 <= UINT16_MAX) {
            v->offset_col = (uint16_t)(off0 - name0);
            v->count_col = (uint16_t)(cnt0 - name0);
        }
    } else if (ld_text_linear(l)) {
        ml_mark mo = ld_scalar_mark(l, off0), mc = ld_scalar_mark(l, cnt0);
        if (mc.line == v->mark.line && mc.col - v->mark.col <= UINT16_MAX) {
            v->offset_col = (uint16_t)(mo.col - v->mark.col);
            v->count_col = (uint16_t)(mc.col - v->mark.col);
        }
    }
    if (ld_expr_at(l, CTX_PLAIN, t + off0, off1 - off0, off0, &v->offset))
        return -1;
    return ld_expr_at(l, CTX_PLAIN, t + cnt0, cnt1 - cnt0, cnt0, &v->count);
}

/* Parses `name` or `name[offset : count]` (spaces allowed anywhere between the parts): t is the
 * current scalar's value, so its byte k is at ld_scalar_mark(l, k). */
static int parse_view_text(loader *l, const char *t, size_t len, sched_view *v) {
    static const char form[] = "expected 'name' or 'name[offset : count]'";
    size_t k = 0;
    while (k < len && view_space(t[k]))
        k++;
    size_t name0 = k;
    while (k < len && !name_end[(uint8_t)t[k]])
        k++;
    size_t name1 = k;
    while (k < len && view_space(t[k]))
        k++;
    size_t end = len;
    while (end > k && view_space(t[end - 1]))
        end--;
    if (k < end && t[k] != '[')
        return ld_fail(l, ld_scalar_mark(l, k), "%s", form);
    /* A view with a range (`"p0[rank*e : e]"`, quoted) asks three marks of its text: where it is
     * ASCII and its own source, each is its start's column plus the offset (ld_text_ascii),
     * not a count of the characters before it (value_is_source): that was 7 of the loader's
     * 90 M instructions above libyaml's at 100 k training steps (callgrind). */
    ml_mark t0;
    bool ascii = k < end && ld_text_ascii(l, &t0);
    v->mark = ascii ? (ml_mark){t0.line, t0.col + (uint32_t)name0} : ld_scalar_mark(l, name0);
    if (ld_intern(l, SYM_BUFFER, t + name0, name1 - name0, v->mark, &v->buf))
        return -1;
    return k == end ? 0 : view_range(l, t, k, end, name0, ascii, v);
}

int ld_view(loader *l, const char *what, sched_view *v) {
    if (ld_want_scalar(l, what))
        return -1;
    size_t len;
    const char *t = ld_text(l, &len);
    return parse_view_text(l, t, len, v);
}

/* A view or a list of views (compute reads/writes). */
int ld_views(loader *l, const char *what, sched_view **out, uint32_t *n) {
    if (ld_is(l, YAML_SCALAR_EVENT)) {
        *out = ml_arena_alloc(l->a, sizeof(sched_view));
        *n = 1;
        return ld_view(l, what, *out);
    }
    if (!ld_is(l, YAML_SEQUENCE_START_EVENT))
        return ld_fail(l, ld_mark(l), "'%s' must be a view or a list of views", what);
    /* The loader's one list of views, reused: a view holds no list, and a malloc and free per
     * compute step were a tenth of the loader's own instructions (callgrind, 100 k steps). */
    ml_vec *views = &l->views;
    views->n = 0;
    int rc = 0;
    while (rc == 0 && (rc = ld_next(l)) == 0 && !ld_is(l, YAML_SEQUENCE_END_EVENT)) {
        sched_view *v = LD_PUSH(views, sched_view);
        *v = (sched_view){0};
        rc = ld_view(l, what, v);
    }
    if (rc == 0) {
        *n = (uint32_t)views->n;
        *out = ml_arena_alloc(l->a, views->n * sizeof(sched_view));
        if (views->n)   /* `reads: []`: items is NULL, and memcpy from NULL is undefined */
            memcpy(*out, views->items, views->n * sizeof(sched_view));
    }
    return rc;
}

/* ---- Data patterns (INIT) --------------------------------------------------------------------- */

enum { INIT_KEY_CONST, INIT_KEY_EXPR, INIT_KEY_COPY, INIT_KEY_RANDOM, INIT_KEY_IDENTITY,
       INIT_KEY_PATTERN };
const char *const ld_init_keys[LD_INIT_KEY_COUNT] = {"const", "expr", "copy", "random", "identity",
                                                     "pattern"};
static const ld_schema init_schema = LD_SCHEMA("init", ld_init_keys);

static int pattern_name(loader *l, sched_init *init) {
    if (ld_want_scalar(l, "pattern"))
        return -1;
    size_t len;
    const char *t = ld_text(l, &len);
    static const char *const patterns[] = {"rank_iota"};
    if (len != 9 || memcmp(t, "rank_iota", 9) != 0)
        return ld_fail_choice(l, ld_mark(l), "data pattern", t, len, patterns, 1, NULL);
    init->kind = INIT_RANK_IOTA;
    return 0;
}

/* One INIT key of a mapping (an INIT mapping, or the init step's mapping which also has buf). */
int ld_init_key(loader *l, int which, sched_init *init, ml_mark key_mark) {
    if (init->kind != INIT_NONE)
        return ld_fail(l, key_mark, "only one data pattern may be given");
    init->mark = key_mark;
    switch (which) {
    case INIT_KEY_CONST:
        init->kind = INIT_CONST;
        return ld_expr(l, CTX_PLAIN, "const", &init->value);
    case INIT_KEY_EXPR:
        init->kind = INIT_EXPR;
        return ld_expr(l, CTX_INDEX, "expr", &init->value);
    case INIT_KEY_COPY:
        init->kind = INIT_COPY;
        init->src = ml_arena_alloc(l->a, sizeof *init->src);
        return ld_view(l, "copy", init->src);
    case INIT_KEY_RANDOM:
        init->kind = INIT_RANDOM;
        return ld_expr(l, CTX_PLAIN, "random", &init->value);
    case INIT_KEY_IDENTITY:
        init->kind = INIT_IDENTITY;
        return ld_redop(l, &init->op);
    default:
        return pattern_name(l, init);
    }
}

/* ld_map's value functions get one object; an INIT mapping needs the key marks too. */
typedef struct {
    sched_init *init;
    ld_keys *k;
} init_map_ctx;

static int init_map_value(loader *l, int key, void *obj) {
    init_map_ctx *c = obj;
    return ld_init_key(l, key, c->init, c->k->key[key]);
}

/* `rank_iota` or an INIT mapping with exactly one pattern key. */
int ld_init_value(loader *l, sched_init *init) {
    if (ld_is(l, YAML_SCALAR_EVENT)) {
        init->mark = ld_mark(l);
        return pattern_name(l, init);
    }
    if (!ld_is(l, YAML_MAPPING_START_EVENT))
        return ld_fail(l, ld_mark(l), "'init' must be a pattern name or a mapping");
    ld_keys k;
    init_map_ctx c = {init, &k};
    if (ld_map(l, &init_schema, init_map_value, &c, &k))
        return -1;
    if (init->kind == INIT_NONE)
        return ld_fail(l, k.map, "init needs one of const, expr, copy, random, identity, pattern");
    return 0;
}

/* ---- Check operands (OPD) --------------------------------------------------------------------- */

enum { OPD_KEY_BUF, OPD_KEY_ROLL, OPD_KEY_EXPR, OPD_KEY_REDUCE, OPD_KEY_OP, OPD_KEY_COMM };
static const char *const opd_keys[] = {"buf", "roll_shards", "expr", "reduce", "op", "comm"};
static const ld_schema opd_schema = LD_SCHEMA("operand", opd_keys);

static int opd_value(loader *l, int key, void *obj) {
    sched_operand *o = obj;
    switch (key) {
    case OPD_KEY_BUF: return ld_view(l, "buf", &o->view);
    case OPD_KEY_ROLL: return ld_expr(l, CTX_PLAIN, "roll_shards", &o->roll_shards);
    case OPD_KEY_EXPR: return ld_expr(l, CTX_INDEX, "expr", &o->value);
    case OPD_KEY_OP: return ld_redop(l, &o->op);
    case OPD_KEY_COMM: return ld_comm_ref(l, &o->comm);   /* load_comms.c */
    default:
        if (ld_init_value(l, &o->pattern))
            return -1;
        if (o->pattern.kind == INIT_COPY || o->pattern.kind == INIT_IDENTITY)
            return ld_fail(l, o->pattern.mark, "a reduced pattern must be rank_iota, const, expr or random");
        return 0;
    }
}

int ld_operand(loader *l, sched_operand *o) {
    o->mark = ld_mark(l);
    o->op = RED_SUM;
    if (ld_is(l, YAML_SCALAR_EVENT)) {
        o->kind = OPD_VIEW;
        return ld_view(l, "operand", &o->view);
    }
    if (!ld_is(l, YAML_MAPPING_START_EVENT))
        return ld_fail(l, o->mark, "an operand must be a view or a mapping");
    ld_keys k;
    if (ld_map(l, &opd_schema, opd_value, o, &k))
        return -1;
    int forms = LD_HAS(&k, OPD_KEY_BUF) + LD_HAS(&k, OPD_KEY_EXPR) + LD_HAS(&k, OPD_KEY_REDUCE);
    if (forms != 1)
        return ld_fail(l, k.map, "an operand needs exactly one of 'buf', 'expr', 'reduce'");
    if (LD_HAS(&k, OPD_KEY_ROLL) && !LD_HAS(&k, OPD_KEY_BUF))
        return ld_fail(l, k.key[OPD_KEY_ROLL], "'roll_shards' needs 'buf'");
    if (LD_HAS(&k, OPD_KEY_OP) && !LD_HAS(&k, OPD_KEY_REDUCE))
        return ld_fail(l, k.key[OPD_KEY_OP], "'op' needs 'reduce'");
    if (LD_HAS(&k, OPD_KEY_COMM) && !LD_HAS(&k, OPD_KEY_REDUCE) && !LD_HAS(&k, OPD_KEY_ROLL))
        return ld_fail(l, k.key[OPD_KEY_COMM], "'comm' needs 'reduce' or 'roll_shards'");
    o->kind = LD_HAS(&k, OPD_KEY_BUF) ? OPD_VIEW : LD_HAS(&k, OPD_KEY_EXPR) ? OPD_EXPR : OPD_REDUCED_PATTERN;
    return 0;
}

/* ---- Expectations ----------------------------------------------------------------------------- */

/* The keys of an expectation: `rank` and one per view of the view table (views.h); a view of
 * one series takes {steady, peak}, a view of several a mapping of its series' keys to that. */
enum { EXP_RANK, EXP_FIRST_VIEW };
static const char *const *expect_keys(void) {
    static const char *keys[1 + MV_COUNT];
    keys[0] = "rank";
    for (int v = 0; v < MV_COUNT; v++)
        keys[EXP_FIRST_VIEW + v] = ml_views[v].name;
    return keys;
}
enum { BOUND_STEADY, BOUND_PEAK };
static const char *const bound_keys[] = {"steady", "peak"};

typedef struct {
    expr *rank;
    sched_expect series[VIEW_COUNT];
    bool given[VIEW_COUNT];
    ld_keys *k;
    int view;           /* the view whose series mapping is being read */
    ld_keys *sk;        /* its keys */
} expect_item;

static int bound_value(loader *l, int key, void *obj) {
    sched_expect *e = obj;
    return ld_expr(l, CTX_PLAIN, bound_keys[key], key == BOUND_STEADY ? &e->steady : &e->peak);
}

static int series_bounds(loader *l, expect_item *it, ml_mem_view v, ml_mark mark) {
    sched_expect *e = &it->series[v];
    e->view = v;
    e->mark = mark;
    ld_schema sc = {ml_series[v].key ? ml_series[v].key : ml_series[v].name, bound_keys, 2, NULL};
    ld_keys bk;
    if (ld_map(l, &sc, bound_value, e, &bk))
        return -1;
    if (!bk.seen)
        return ld_fail(l, bk.map, "'%s' needs 'steady' or 'peak'", sc.what);
    it->given[v] = true;
    return 0;
}

static int series_value(loader *l, int key, void *obj) {
    expect_item *it = obj;
    return series_bounds(l, it, ml_views[it->view].series[key], it->sk->key[key]);
}

static int expect_value(loader *l, int key, void *obj) {
    expect_item *it = obj;
    if (key == EXP_RANK)
        return ld_expr(l, CTX_PLAIN, "rank", &it->rank);
    const ml_view_info *vi = &ml_views[key - EXP_FIRST_VIEW];
    if (vi->n_series == 1)
        return series_bounds(l, it, vi->series[0], it->k->key[key]);
    const char *keys[ML_VIEW_MAX_SERIES];
    for (int s = 0; s < vi->n_series; s++)
        keys[s] = ml_series[vi->series[s]].key;
    ld_schema sc = {vi->name, keys, vi->n_series, NULL};
    it->view = key - EXP_FIRST_VIEW;
    ld_keys sk;
    it->sk = &sk;
    if (ld_map(l, &sc, series_value, it, &sk))
        return -1;
    if (!sk.seen)
        return ld_fail(l, sk.map, "'%s' needs '%s' or '%s'", vi->name, keys[0], keys[1]);
    return 0;
}

static int expect_one(loader *l, ml_vec *out) {
    ld_keys k;
    expect_item it = {.k = &k};
    ld_schema sc = {"expect", expect_keys(), 1 + MV_COUNT, NULL};
    if (ld_map(l, &sc, expect_value, &it, &k))
        return -1;
    if (!(k.seen & ~1u))
        return ld_fail(l, k.map, "expect needs 'requested' or 'device'");
    for (int v = 0; v < VIEW_COUNT; v++) {
        if (!it.given[v])
            continue;
        sched_expect *e = ml_vec_push(out);
        *e = it.series[v];
        e->rank = it.rank;
    }
    return 0;
}

/* A mapping (every rank) or a list of mappings that may name a rank. */
int ld_expects(loader *l, sched_expect **out, uint32_t *n) {
    ml_vec items;
    ml_vec_init(&items, sizeof(sched_expect));
    int rc = 0;
    if (ld_is(l, YAML_SEQUENCE_START_EVENT)) {
        while (rc == 0 && (rc = ld_next(l)) == 0 && !ld_is(l, YAML_SEQUENCE_END_EVENT))
            rc = expect_one(l, &items);
    } else if (ld_is(l, YAML_MAPPING_START_EVENT)) {
        rc = expect_one(l, &items);
    } else {
        rc = ld_fail(l, ld_mark(l), "'expect' must be a mapping or a list");
    }
    if (rc == 0) {
        *n = (uint32_t)items.n;
        *out = ml_arena_alloc(l->a, items.n * sizeof(sched_expect));
        memcpy(*out, items.items, items.n * sizeof(sched_expect));
    }
    ml_vec_free(&items);
    return rc;
}
