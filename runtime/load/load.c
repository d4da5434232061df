/* SPDX-License-Identifier: MIT */
/* load.c — the schedule loader: libyaml events, shared helpers, the top level of a schedule.
 * Steps are in load_steps.c; views, data patterns, operands and expectations in load_data.c. */
#include "load/load_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The schedule and what it owns outside its arena (step arrays grow with realloc, which moves
 * big arrays without copying them; an arena would have to copy). */
typedef struct {
    sched s;              /* first: a sched* is a sched_box* */
    ml_vec owned;         /* of void* */
} sched_box;

/* ---- String tables ---------------------------------------------------------------------------- */

static uint32_t hash_bytes(const char *s, size_t len) {
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (size_t k = 0; k < len; k++)
        h = (h ^ (uint8_t)s[k]) * 16777619u;
    return h | 1u;              /* 0 marks an empty slot */
}

/* Returns the slot index of key, or UINT32_MAX; *val set when found. */
uint32_t ld_hash_find(const ld_hash *h, const char *key, size_t len, uintptr_t *val) {
    if (!h->cap)
        return UINT32_MAX;
    uint32_t hv = hash_bytes(key, len), mask = h->cap - 1;
    for (uint32_t k = hv & mask;; k = (k + 1) & mask) {
        const ld_entry *e = &h->e[k];
        if (!e->hash)
            return UINT32_MAX;
        if (e->hash == hv && e->len == len && memcmp(e->key, key, len) == 0) {
            if (val)
                *val = e->val;
            return k;
        }
    }
}

static void hash_insert(ld_hash *h, const ld_entry *in) {
    uint32_t mask = h->cap - 1;
    uint32_t k = in->hash & mask;
    while (h->e[k].hash)
        k = (k + 1) & mask;
    h->e[k] = *in;
}

/* key must outlive the table (an arena copy). Keys are not replaced: callers find first. */
void ld_hash_put(ld_hash *h, const char *key, size_t len, uintptr_t val) {
    if ((h->n + 1) * 2 > h->cap) {
        ld_hash bigger = {.cap = h->cap ? h->cap * 2 : 64};
        bigger.e = ml_xcalloc(bigger.cap, sizeof(ld_entry));
        for (uint32_t k = 0; k < h->cap; k++)
            if (h->e[k].hash)
                hash_insert(&bigger, &h->e[k]);
        bigger.n = h->n;
        free(h->e);
        *h = bigger;
    }
    ld_entry e = {key, (uint32_t)len, hash_bytes(key, len), val};
    hash_insert(h, &e);
    h->n++;
}

static void hash_free(ld_hash *h) {
    free(h->e);
    h->e = NULL;
    h->cap = h->n = 0;
}

/* ---- Events ----------------------------------------------------------------------------------- */

static ml_mark mark_of(yaml_mark_t m) { return (ml_mark){(uint32_t)m.line + 1, (uint32_t)m.column + 1}; }


int ld_fail(loader *l, ml_mark m, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    ml_diag_add(l->d, ML_DIAG_ERROR, l->file, m, -1, NULL, "%s", text);
    return -1;
}

/* The length of the line break at p[k] (before end), 0 when there is none. Lines are counted as
 * libyaml counts them: CR LF, CR, LF, NEL, LS, PS. */
size_t ld_break_len(const uint8_t *p, size_t k, size_t end) {
    if (k >= end)
        return 0;
    if (p[k] == '\r' && k + 1 < end && p[k + 1] == '\n')
        return 2;
    if (p[k] == '\r' || p[k] == '\n')
        return 1;
    if (p[k] == 0xC2 && k + 1 < end && p[k + 1] == 0x85)
        return 2;
    if (p[k] == 0xE2 && k + 2 < end && p[k + 1] == 0x80 && (p[k + 2] == 0xA8 || p[k + 2] == 0xA9))
        return 3;
    return 0;
}

/* Reader errors (bad UTF-8, control characters) carry a byte offset, not a mark. Columns are
 * counted in characters. */
static ml_mark offset_mark(const loader *l, size_t offset) {
    ml_mark m = {1, 1};
    const uint8_t *p = (const uint8_t *)l->data;
    size_t end = offset < l->len ? offset : l->len;
    for (size_t k = 0; k < end; k++) {
        size_t brk = ld_break_len(p, k, end);
        if (brk) {
            m.line++;
            m.col = 1;
            k += brk - 1;
        } else if ((p[k] & 0xC0) != 0x80) {
            m.col++;
        }
    }
    return m;
}

/* libyaml counts a mark's index in characters after any byte order mark (CR LF counts 2), not
 * in bytes. Marks are asked for in input order, so one forward cursor converts them all: O(input)
 * for the whole load. */
size_t ld_index_byte(loader *l, size_t index) {
    const uint8_t *p = (const uint8_t *)l->data;
    if (index < l->cursor_index || (!l->cursor_index && !l->cursor_byte)) {
        bool bom = l->len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF;
        l->cursor_index = 0;
        l->cursor_byte = bom ? 3 : 0;
    }
    while (l->cursor_index < index && l->cursor_byte < l->len) {
        l->cursor_byte++;
        while (l->cursor_byte < l->len && (p[l->cursor_byte] & 0xC0) == 0x80)
            l->cursor_byte++;
        l->cursor_index++;
    }
    return l->cursor_byte;
}

static bool ends_with_break(const char *data, size_t len) {
    const uint8_t *p = (const uint8_t *)data;
    if (len >= 1 && (p[len - 1] == '\n' || p[len - 1] == '\r'))
        return true;
    if (len >= 2 && p[len - 2] == 0xC2 && p[len - 1] == 0x85)
        return true;
    return len >= 3 && p[len - 3] == 0xE2 && p[len - 2] == 0x80 && (p[len - 1] == 0xA8 || p[len - 1] == 0xA9);
}

/* At the end of a file without a final newline, libyaml's mark is on the line after the last:
 * point at the end of the last line instead, where the text is. */
static ml_mark mark_in_input(const loader *l, yaml_mark_t m) {
    ml_mark at = mark_of(m);
    return at.line > l->end.line ? l->end : at;
}

ml_mark ld_mark(const loader *l) { return mark_in_input(l, l->ev.start_mark); }

static int yaml_error(loader *l) {
    const yaml_parser_t *p = &l->yp;
    if (p->error == YAML_MEMORY_ERROR)
        return ld_fail(l, (ml_mark){1, 1}, "out of memory while parsing yaml");
    const char *problem = p->problem ? p->problem : "invalid yaml";
    char value[16] = "";
    if (p->error == YAML_READER_ERROR && p->problem_value != -1)
        snprintf(value, sizeof value, " #%02X", (unsigned)p->problem_value);
    ml_mark m = p->error == YAML_READER_ERROR ? offset_mark(l, p->problem_offset)
                                              : mark_in_input(l, p->problem_mark);
    if (p->context)
        return ld_fail(l, m, "%s%s (%s)", problem, value, p->context);
    return ld_fail(l, m, "%s%s", problem, value);
}

static const char *anchor_of(const yaml_event_t *ev) {
    switch (ev->type) {
    case YAML_SCALAR_EVENT: return (const char *)ev->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT: return (const char *)ev->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT: return (const char *)ev->data.mapping_start.anchor;
    default: return NULL;
    }
}

/* Advances to the next event. Aliases and anchors are refused here, once for the whole file, and
 * collection nesting is bounded before anything recurses on it. */
int ld_next(loader *l) {
    if (l->have_ev) {
        yaml_event_delete(&l->ev);
        l->have_ev = false;
    }
    if (!yaml_parser_parse(&l->yp, &l->ev))
        return yaml_error(l);
    l->have_ev = true;
    switch (l->ev.type) {
    case YAML_ALIAS_EVENT:
        return ld_fail(l, ld_mark(l), "yaml aliases are not supported");
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (++l->yaml_depth > l->yaml_max_depth)
            return ld_fail(l, ld_mark(l), "nesting deeper than %zu levels", l->lim.max_depth);
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        l->yaml_depth--;
        break;
    default:
        break;
    }
    if (anchor_of(&l->ev))
        return ld_fail(l, ld_mark(l), "yaml anchors are not supported");
    return 0;
}

bool ld_is(const loader *l, yaml_event_type_t t) { return l->ev.type == t; }

const char *ld_text(const loader *l, size_t *len) {
    *len = l->ev.data.scalar.length;
    return (const char *)l->ev.data.scalar.value;
}

int ld_want_scalar(loader *l, const char *what) {
    if (ld_is(l, YAML_SCALAR_EVENT))
        return 0;
    return ld_fail(l, ld_mark(l), "'%s' must be a scalar", what);
}

int ld_want(loader *l, yaml_event_type_t t, const char *what) {
    if (ld_is(l, t))
        return 0;
    return ld_fail(l, ld_mark(l), "'%s' must be a %s", what,
                   t == YAML_MAPPING_START_EVENT ? "mapping" : t == YAML_SEQUENCE_START_EVENT ? "list" : "scalar");
}

bool ld_key_is(const char *key, const char *text, size_t len) {
    /* First characters first: most keys differ there, and strncmp is a call. */
    return key[0] == (len ? text[0] : '\0') && strncmp(key, text, len) == 0 && key[len] == '\0';
}

int ld_map(loader *l, const ld_schema *sc, ld_value_fn fn, void *obj, ld_keys *k) {
    memset(k, 0, sizeof *k);
    if (ld_want(l, YAML_MAPPING_START_EVENT, sc->what))
        return -1;
    k->map = ld_mark(l);
    for (;;) {
        if (ld_next(l))
            return -1;
        if (ld_is(l, YAML_MAPPING_END_EVENT))
            return 0;
        if (!ld_is(l, YAML_SCALAR_EVENT))
            return ld_fail(l, ld_mark(l), "keys of '%s' must be scalars", sc->what);
        size_t len;
        const char *text = ld_text(l, &len);
        uint32_t key = 0;
        while (key < sc->n && !ld_key_is(sc->keys[key], text, len))
            key++;
        if (key == sc->n)
            return ld_fail(l, ld_mark(l), "unknown key '%.*s' in %s", len > 64 ? 64 : (int)len, text,
                           sc->what);
        if (LD_HAS(k, key))
            return ld_fail(l, ld_mark(l), "duplicate key '%s' in %s", sc->keys[key], sc->what);
        k->seen |= 1u << key;
        k->key[key] = ld_mark(l);
        if (ld_next(l) || fn(l, (int)key, obj))
            return -1;
    }
}

/* ---- Top level -------------------------------------------------------------------------------- */

enum { TOP_NAME, TOP_ABOUT, TOP_WORLD, TOP_DTYPE, TOP_LET, TOP_STREAMS, TOP_EVENTS, TOP_EXPECT,
       TOP_STEPS, TOP_PLANS, TOP_SWEEP, TOP_REQUIRES, TOP_LINK };
static const char *const top_keys[] = {"name", "about", "world", "dtype", "let", "streams",
                                       "events", "expect", "steps", "plans", "sweep", "requires",
                                       "link"};
static const ld_schema top_schema = LD_SCHEMA("schedule", top_keys);

typedef struct {
    ld_keys *k;
    int first_user;       /* first of expect/steps/plans/sweep given, -1 before */
} top_state;

static int parse_lets(loader *l) {
    if (ld_want(l, YAML_MAPPING_START_EVENT, "let"))
        return -1;
    for (;;) {
        if (ld_next(l))
            return -1;
        if (ld_is(l, YAML_MAPPING_END_EVENT))
            return 0;
        if (ld_want_scalar(l, "let name"))
            return -1;
        size_t len;
        const char *text = ld_text(l, &len);
        ml_mark m = ld_mark(l);
        if (ld_check_name(l, text, len, m, "let", true))
            return -1;
        if (expr_reserved_name(text, len))
            return ld_fail(l, m, "'%.*s' is reserved and cannot be a let name", (int)len, text);
        if (ld_hash_find(&l->lets, text, len, NULL) != UINT32_MAX)
            return ld_fail(l, m, "duplicate let '%.*s'", (int)len, text);
        const char *name = ml_arena_strndup(l->a, text, len);
        if (ld_next(l))
            return -1;
        sched_let *let = ml_vec_push(&l->let_v);
        let->name = name;
        let->mark = ld_is(l, YAML_SCALAR_EVENT) ? ld_text_mark(l) : ld_mark(l);
        if (ld_expr(l, CTX_LET, name, &let->value))
            return -1;
        /* Defined only now: a let cannot use itself. */
        ld_hash_put(&l->lets, name, len, l->let_v.n - 1);
    }
}

static int parse_decls(loader *l, sched_sym_kind kind, const char *what) {
    if (ld_want(l, YAML_SEQUENCE_START_EVENT, what))
        return -1;
    for (;;) {
        if (ld_next(l))
            return -1;
        if (ld_is(l, YAML_SEQUENCE_END_EVENT))
            return 0;
        if (ld_want_scalar(l, ld_sym_kind_names[kind]))
            return -1;
        size_t len;
        const char *text = ld_text(l, &len);
        if (ld_hash_find(&l->syms[kind], text, len, NULL) != UINT32_MAX)
            return ld_fail(l, ld_mark(l), "duplicate %s '%.*s'", ld_sym_kind_names[kind], (int)len, text);
        uint32_t sym;
        if (ld_intern(l, kind, text, len, ld_mark(l), &sym))
            return -1;
    }
}

enum { SWEEP_LET, SWEEP_VALUES };
static const char *const sweep_keys[] = {"let", "values"};
static const ld_schema sweep_schema = LD_SCHEMA("sweep", sweep_keys);

static int sweep_value(loader *l, int key, void *obj) {
    sched *s = l->s;
    if (key == SWEEP_LET) {
        if (ld_want_scalar(l, "let"))
            return -1;
        size_t len;
        const char *text = ld_text(l, &len);
        uintptr_t v;
        if (ld_hash_find(&l->lets, text, len, &v) == UINT32_MAX)
            return ld_fail(l, ld_mark(l), "sweep of '%.*s', which is not a let", (int)len, text);
        s->sweep_let = (int)v;
        return 0;
    }
    if (ld_want(l, YAML_SEQUENCE_START_EVENT, "values"))
        return -1;
    ml_mark start = ld_mark(l);
    ml_vec vals;
    ml_vec_init(&vals, sizeof(expr *));
    int rc = 0;
    while (rc == 0 && (rc = ld_next(l)) == 0 && !ld_is(l, YAML_SEQUENCE_END_EVENT))
        rc = ld_expr(l, CTX_PLAIN, "values", (expr **)ml_vec_push(&vals));
    if (rc == 0 && vals.n == 0)
        rc = ld_fail(l, start, "'values' must not be empty");
    if (rc == 0) {
        s->n_sweep = (uint32_t)vals.n;
        s->sweep_values = ml_arena_alloc(l->a, vals.n * sizeof(expr *));
        memcpy(s->sweep_values, vals.items, vals.n * sizeof(expr *));
    }
    ml_vec_free(&vals);
    return rc;
}

static int parse_sweep(loader *l) {
    ld_keys k;
    if (ld_map(l, &sweep_schema, sweep_value, NULL, &k))
        return -1;
    if (!LD_HAS(&k, SWEEP_LET))
        return ld_fail(l, k.map, "sweep needs 'let'");
    if (!LD_HAS(&k, SWEEP_VALUES))
        return ld_fail(l, k.map, "sweep needs 'values'");
    return 0;
}

/* `link: {alpha_us: EXPR, busbw_gbps: EXPR}`: the time model's link (timemodel.h). */
enum { LINK_ALPHA, LINK_BUSBW };
static const char *const link_keys[] = {"alpha_us", "busbw_gbps"};
static const ld_schema link_schema = LD_SCHEMA("link", link_keys);

static int link_value(loader *l, int key, void *obj) {
    sched *s = l->s;
    return ld_expr(l, CTX_PLAIN, link_keys[key],
                   key == LINK_ALPHA ? &s->link_alpha_us : &s->link_busbw_gbps);
}

static int parse_link(loader *l) {
    ld_keys k;
    l->s->link_mark = ld_mark(l);
    return ld_map(l, &link_schema, link_value, NULL, &k);
}

enum { PLAN_STEPS, PLAN_EXPECT };
static const char *const plan_keys[] = {"steps", "expect"};
static const ld_schema plan_schema = LD_SCHEMA("plan", plan_keys);

static int plan_value(loader *l, int key, void *obj) {
    sched_plan *p = obj;
    if (key == PLAN_STEPS)
        return ld_steps(l, "steps", &p->steps, &p->n);
    return ld_expects(l, &p->expects, &p->n_expects);
}

static int parse_plans(loader *l) {
    if (ld_want(l, YAML_MAPPING_START_EVENT, "plans"))
        return -1;
    ml_mark start = ld_mark(l);
    ml_vec plans;
    ml_vec_init(&plans, sizeof(sched_plan));
    ld_hash names = {0};
    int rc = 0;
    while (rc == 0 && (rc = ld_next(l)) == 0 && !ld_is(l, YAML_MAPPING_END_EVENT)) {
        if ((rc = ld_want_scalar(l, "plan name")))
            break;
        size_t len;
        const char *text = ld_text(l, &len);
        ml_mark m = ld_mark(l);
        if ((rc = ld_check_name(l, text, len, m, "plan", false)))
            break;
        if (ld_hash_find(&names, text, len, NULL) != UINT32_MAX) {
            rc = ld_fail(l, m, "duplicate plan '%.*s'", (int)len, text);
            break;
        }
        sched_plan *p = ml_vec_push(&plans);
        p->name = ml_arena_strndup(l->a, text, len);
        p->mark = m;
        ld_hash_put(&names, p->name, len, 0);
        ld_keys k;
        if ((rc = ld_next(l)) || (rc = ld_map(l, &plan_schema, plan_value, p, &k)))
            break;
        if (!LD_HAS(&k, PLAN_STEPS))
            rc = ld_fail(l, m, "plan '%s' needs 'steps'", p->name);
    }
    if (rc == 0 && plans.n == 0)
        rc = ld_fail(l, start, "'plans' must not be empty");
    if (rc == 0) {
        l->s->n_plans = (uint32_t)plans.n;
        l->s->plans = ml_arena_alloc(l->a, plans.n * sizeof(sched_plan));
        memcpy(l->s->plans, plans.items, plans.n * sizeof(sched_plan));
    }
    ml_vec_free(&plans);
    hash_free(&names);
    return rc;
}

static int parse_world(loader *l) {
    expr *e;
    l->s->world_mark = ld_mark(l);
    if (ld_expr(l, CTX_CONST, "world", &e))
        return -1;
    int64_t v = 0;
    expr_const_value(e, &v);
    if (v < 1 || v > (1 << 20))
        return ld_fail(l, l->s->world_mark, "'world' must be between 1 and %d", 1 << 20);
    l->s->world = (int)v;
    return 0;
}

/* requires: {world: EXPR}: the worlds a file is meant for, as a condition on world and the lets
 * (a contract that needs two ranks, a size that must not divide). Checked by sched_world, where
 * the world of a run is decided; a mapping so that other requirements can join it as rows. */
enum { REQ_WORLD };
static const char *const requires_keys[] = {"world"};
static const ld_schema requires_schema = LD_SCHEMA("requires", requires_keys);

static int requires_value(loader *l, int key, void *obj) {
    (void)key;
    (void)obj;
    ml_mark m = ld_text_mark(l);
    expr *e;
    if (ld_expr(l, CTX_PLAIN, "requires world", &e))
        return -1;
    if (expr_uses_slot(e, EXPR_SLOT_RANK))
        return ld_fail(l, m, "'requires' holds for the whole run: it cannot depend on rank");
    l->s->requires_world = e;
    l->s->requires_mark = m;
    return 0;
}

static int parse_requires(loader *l) {
    ld_keys k;
    if (ld_map(l, &requires_schema, requires_value, NULL, &k))
        return -1;
    if (!LD_HAS(&k, REQ_WORLD))
        return ld_fail(l, k.map, "requires needs 'world'");
    return 0;
}

static int top_value(loader *l, int key, void *obj) {
    top_state *t = obj;
    sched *s = l->s;
    /* Names are resolved as the events stream by: what a step uses must be defined above it. */
    bool defines = key == TOP_LET || key == TOP_STREAMS || key == TOP_EVENTS || key == TOP_DTYPE;
    bool uses = key == TOP_EXPECT || key == TOP_STEPS || key == TOP_PLANS || key == TOP_SWEEP ||
                key == TOP_REQUIRES || key == TOP_LINK;
    if (defines && t->first_user >= 0)
        return ld_fail(l, t->k->key[key], "'%s' must come before '%s'", top_keys[key],
                       top_keys[t->first_user]);
    if (uses && t->first_user < 0)
        t->first_user = key;
    switch (key) {
    case TOP_NAME: return ld_name(l, "name", &s->name);
    case TOP_ABOUT:
        if (ld_want_scalar(l, "about"))
            return -1;
        s->about = ml_arena_strndup(l->a, (const char *)l->ev.data.scalar.value, l->ev.data.scalar.length);
        return 0;
    case TOP_WORLD: return parse_world(l);
    case TOP_DTYPE: return ld_dtype(l, &s->dtype);
    case TOP_LET: return parse_lets(l);
    case TOP_STREAMS: return parse_decls(l, SYM_STREAM, "streams");
    case TOP_EVENTS: return parse_decls(l, SYM_EVENT, "events");
    case TOP_EXPECT: return ld_expects(l, &s->expects, &s->n_expects);
    case TOP_SWEEP: return parse_sweep(l);
    case TOP_REQUIRES: return parse_requires(l);
    case TOP_LINK: return parse_link(l);
    case TOP_PLANS:
        if (LD_HAS(t->k, TOP_STEPS))
            return ld_fail(l, t->k->key[key], "'steps' and 'plans' cannot both be given");
        return parse_plans(l);
    case TOP_STEPS: {
        if (LD_HAS(t->k, TOP_PLANS))
            return ld_fail(l, t->k->key[key], "'steps' and 'plans' cannot both be given");
        sched_plan *p = ml_arena_alloc(l->a, sizeof *p);
        p->name = "";
        p->mark = t->k->key[key];
        s->plans = p;
        s->n_plans = 1;
        return ld_steps(l, "steps", &p->steps, &p->n);
    }
    }
    return 0;
}

static const char *default_name(ml_arena *a, const char *file) {
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".yaml") == 0)
        n -= 5;
    else if (n > 4 && strcmp(base + n - 4, ".yml") == 0)
        n -= 4;
    return ml_arena_strndup(a, base, n);
}

static int parse_stream(loader *l) {
    if (ld_next(l))   /* STREAM-START */
        return -1;
    if (ld_next(l))
        return -1;
    if (ld_is(l, YAML_STREAM_END_EVENT))
        return ld_fail(l, (ml_mark){1, 1}, "empty file");
    if (ld_next(l))   /* past DOCUMENT-START */
        return -1;
    if (ld_is(l, YAML_SCALAR_EVENT) && l->ev.data.scalar.length == 0 &&
        l->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
        return ld_fail(l, ld_mark(l), "empty file");
    if (!ld_is(l, YAML_MAPPING_START_EVENT))
        return ld_fail(l, ld_mark(l), "a schedule must be a mapping");
    ld_keys k;
    top_state t = {&k, -1};
    if (ld_map(l, &top_schema, top_value, &t, &k))
        return -1;
    if (!LD_HAS(&k, TOP_STEPS) && !LD_HAS(&k, TOP_PLANS))
        return ld_fail(l, k.map, "missing 'steps'");
    if (ld_next(l))   /* DOCUMENT-END */
        return -1;
    if (ld_next(l))
        return -1;
    if (ld_is(l, YAML_DOCUMENT_START_EVENT))
        return ld_fail(l, ld_mark(l), "only one yaml document is allowed");
    return 0;
}

/* A buffer named somewhere that no alloc in the file creates; the first by first appearance. */
static int check_buffers(loader *l) {
    const sched_symtab *t = &l->s->syms[SYM_BUFFER];
    const uint8_t *alloc = l->buf_allocated.items;
    for (uint32_t k = 0; k < t->n; k++)
        if (!alloc[k])
            return ld_fail(l, t->first_mark[k], "undefined buffer '%s'", t->names[k]);
    return 0;
}

static void default_limits(const sched_load_limits *in, sched_load_limits *out) {
    *out = (sched_load_limits){64, 128, 20000000};
    if (in && in->max_depth)
        out->max_depth = in->max_depth;
    if (in && in->max_name_len)
        out->max_name_len = in->max_name_len;
    if (in && in->max_steps)
        out->max_steps = in->max_steps;
}

sched *sched_load_buffer(const char *name, const char *data, size_t len,
                         const sched_load_limits *limits, ml_diags *d) {
    sched_box *box = ml_xcalloc(1, sizeof *box);
    ml_vec_init(&box->owned, sizeof(void *));
    sched *s = &box->s;
    s->arena = ml_arena_new();
    s->file = ml_arena_strndup(s->arena, name, strlen(name));
    s->dtype = DT_FLOAT32;
    s->sweep_let = -1;

    /* Diagnostics keep the caller's name: on an error the schedule (and its arena) is freed. */
    loader l = {.data = data, .len = len, .file = name, .s = s, .a = s->arena, .d = d,
                .owned = &box->owned};
    default_limits(limits, &l.lim);
    /* Only a file that does not end in a line break has marks past its last line (libyaml adds
     * the break at the stream end); sparing the others the scan keeps big loads one pass. */
    l.end = ends_with_break(data, len) ? (ml_mark){UINT32_MAX, UINT32_MAX} : offset_mark(&l, len);
    /* Every step level costs three YAML levels (list, step, body); room for the top and the
     * deepest step body (a check's operand pattern is five levels below its step). */
    l.yaml_max_depth = 3 * l.lim.max_depth + 16;
    ml_vec_init(&l.let_v, sizeof(sched_let));
    ml_vec_init(&l.buf_allocated, 1);
    ml_vec_init(&l.scratch, sizeof(ld_named));
    uint32_t dflt;
    ld_intern(&l, SYM_STREAM, "default", 7, (ml_mark){0, 0}, &dflt);

    yaml_parser_initialize(&l.yp);
    yaml_parser_set_input_string(&l.yp, (const unsigned char *)data, len);
    int rc = parse_stream(&l);
    if (rc == 0)
        rc = check_buffers(&l);
    if (rc == 0) {
        if (!s->name)
            s->name = default_name(s->arena, name);
        s->n_lets = (uint32_t)l.let_v.n;
        s->lets = ml_arena_alloc(s->arena, l.let_v.n * sizeof(sched_let));
        if (l.let_v.n)   /* no lets: items is NULL, and memcpy from NULL is undefined */
            memcpy(s->lets, l.let_v.items, l.let_v.n * sizeof(sched_let));
    }

    if (l.have_ev)
        yaml_event_delete(&l.ev);
    yaml_parser_delete(&l.yp);
    for (int k = 0; k < SYM_KIND_COUNT; k++)
        hash_free(&l.syms[k]);
    for (int k = 0; k < CTX_COUNT_; k++)
        hash_free(&l.cache[k]);
    hash_free(&l.lets);
    ml_vec_free(&l.let_v);
    ml_vec_free(&l.buf_allocated);
    ml_vec_free(&l.scratch);
    if (rc != 0) {
        sched_free(s);
        return NULL;
    }
    return s;
}

sched *sched_load_file(const char *path, const sched_load_limits *limits, ml_diags *d) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ml_error(d, path, ((ml_mark){0, 0}), "cannot open file: %s", strerror(errno));
        return NULL;
    }
    /* read(2) in a loop rather than mmap: works for pipes and /dev/stdin too. A regular file's
     * size is known, so its buffer is allocated once. */
    struct stat st;
    size_t cap = 1 << 16, len = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        cap = (size_t)st.st_size + 1;
    char *buf = ml_xmalloc(cap);
    for (;;) {
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            ml_error(d, path, ((ml_mark){0, 0}), "cannot read file: %s", strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    close(fd);
    sched *s = sched_load_buffer(path, buf, len, limits, d);
    free(buf);
    return s;
}

void sched_free(sched *s) {
    if (!s)
        return;
    sched_box *box = (sched_box *)s;
    for (size_t k = 0; k < box->owned.n; k++)
        free(ML_VEC_AT(&box->owned, void *, k));
    ml_vec_free(&box->owned);
    for (int k = 0; k < SYM_KIND_COUNT; k++) {
        free(s->syms[k].names);
        free(s->syms[k].first_mark);
    }
    ml_arena_free(s->arena);
    free(box);
}
