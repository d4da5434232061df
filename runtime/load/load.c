/* SPDX-License-Identifier: MIT */
/* load.c — the top of the loader: the top-level keys of a schedule (lets, declarations, plans,
 * sweep), the final checks and the entry points. Below it: steps (load_steps.c), views, data
 * patterns, operands and expectations (load_data.c), names and expressions (load_names.c), the
 * event cursor (cursor.c); each file calls only the ones below it. */
#include "load/load_int.h"
#include "base/input.h"
#include "ir/comms.h"

#include <errno.h>
#include <fcntl.h>
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

static bool ends_with_break(const char *data, size_t len) {
    const uint8_t *p = (const uint8_t *)data;
    if (len >= 1 && (p[len - 1] == '\n' || p[len - 1] == '\r'))
        return true;
    if (len >= 2 && p[len - 2] == 0xC2 && p[len - 1] == 0x85)
        return true;
    return len >= 3 && p[len - 3] == 0xE2 && p[len - 2] == 0x80 && (p[len - 1] == 0xA8 || p[len - 1] == 0xA9);
}

/* ---- Top level -------------------------------------------------------------------------------- */

enum { TOP_NAME, TOP_ABOUT, TOP_WORLD, TOP_DTYPE, TOP_LET, TOP_STREAMS, TOP_EVENTS, TOP_EXPECT,
       TOP_STEPS, TOP_PLANS, TOP_SWEEP, TOP_REQUIRES, TOP_TORCH, TOP_LINK, TOP_MESH, TOP_COMMS };
static const char *const top_keys[] = {"name", "about", "world", "dtype", "let", "streams",
                                       "events", "expect", "steps", "plans", "sweep", "requires",
                                       "torch", "link", "mesh", "comms"};
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
    ld_hash_free(&names);
    return rc;
}

static int parse_world(loader *l) {
    expr *e;
    l->s->world_mark = ld_mark(l);
    if (ld_expr(l, CTX_CONST, "world", &e))
        return -1;
    int64_t v = 0;
    expr_const_value(e, &v);
    if (v < 1 || v > SCHED_WORLD_MAX)
        return ld_fail(l, l->s->world_mark, "'world' must be between 1 and %d", SCHED_WORLD_MAX);
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
    bool defines = key == TOP_LET || key == TOP_STREAMS || key == TOP_EVENTS || key == TOP_DTYPE ||
                   key == TOP_MESH || key == TOP_COMMS;
    bool uses = key == TOP_EXPECT || key == TOP_STEPS || key == TOP_PLANS || key == TOP_SWEEP ||
                key == TOP_REQUIRES || key == TOP_TORCH || key == TOP_LINK;
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
    case TOP_DTYPE: {
        ml_dtype dt;
        if (ld_dtype(l, &dt))
            return -1;
        if (!l->lim.dtype)   /* --dtype wins over the file's default */
            s->dtype = dt;
        return 0;
    }
    case TOP_LET: return parse_lets(l);
    case TOP_STREAMS: return parse_decls(l, SYM_STREAM, "streams");
    case TOP_EVENTS: return parse_decls(l, SYM_EVENT, "events");
    case TOP_EXPECT: return ld_expects(l, &s->expects, &s->n_expects);
    case TOP_SWEEP: return parse_sweep(l);
    case TOP_REQUIRES: return parse_requires(l);
    case TOP_TORCH: return ld_torch(l, t->k->key[key]);   /* load_torch.c */
    case TOP_LINK: return parse_link(l);
    case TOP_MESH:
        if (LD_HAS(t->k, TOP_COMMS))
            return ld_fail(l, t->k->key[key], "'mesh' must come before 'comms'");
        return ld_mesh(l);   /* load_comms.c */
    case TOP_COMMS: return ld_comms(l);
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

static int (*default_conf_check)(const char *, size_t *, char *, size_t);

void sched_load_set_torch_conf_check(int (*check)(const char *, size_t *, char *, size_t)) {
    default_conf_check = check;
}

static void default_limits(const sched_load_limits *in, sched_load_limits *out) {
    *out = (sched_load_limits){64, 128, 20000000, default_conf_check, 0};
    if (in && in->dtype > 0 && in->dtype <= DT_COUNT)
        out->dtype = in->dtype;
    if (in && in->max_depth)
        out->max_depth = in->max_depth;
    if (in && in->max_name_len)
        out->max_name_len = in->max_name_len;
    if (in && in->max_steps)
        out->max_steps = in->max_steps;
    if (in && in->torch_conf_check)
        out->torch_conf_check = in->torch_conf_check;
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
                .diags_at = ml_diags_mark_now(d), .owned = &box->owned};
    default_limits(limits, &l.lim);
    if (l.lim.dtype)
        s->dtype = (ml_dtype)(l.lim.dtype - 1);
    /* Only a file that does not end in a line break has marks past its last line (libyaml adds
     * the break at the stream end); sparing the others the scan keeps big loads one pass. */
    l.end = ends_with_break(data, len) ? (ml_mark){UINT32_MAX, UINT32_MAX} : ld_offset_mark(&l, len);
    /* Every step level costs three YAML levels (list, step, body); room for the top and the
     * deepest step body (a check's operand pattern is five levels below its step). */
    l.yaml_max_depth = 3 * l.lim.max_depth + 16;
    ml_vec_init(&l.let_v, sizeof(sched_let));
    ml_vec_init(&l.buf_allocated, 1);
    ml_vec_init(&l.scratch, sizeof(ld_named));
    ml_vec_init(&l.views, sizeof(sched_view));
    ml_vec_init(&l.indices, sizeof(ld_index));
    ml_vec_init(&l.ats, sizeof(sched_at));
    ml_vec_init(&l.times, sizeof(sched_time));
    ml_vec_init(&l.mesh_v, sizeof(sched_mesh_dim));
    ml_vec_init(&l.comm_v, sizeof(sched_comm));
    uint32_t dflt;
    ld_intern(&l, SYM_STREAM, "default", 7, (ml_mark){0, 0}, &dflt);

    yaml_parser_initialize(&l.yp);
    yaml_parser_set_input_string(&l.yp, (const unsigned char *)data, len);
    int rc = parse_stream(&l);
    if (rc != 0)
        ld_flow_syntax_error(&l);
    if (rc == 0)
        rc = check_buffers(&l);
    if (rc == 0) {
        ld_comms_finish(&l);
        s->comms_cache = sched_comms_cache_new();
        if (!s->name)
            s->name = default_name(s->arena, name);
        s->n_lets = (uint32_t)l.let_v.n;
        s->lets = ml_arena_alloc(s->arena, l.let_v.n * sizeof(sched_let));
        if (l.let_v.n)   /* no lets: items is NULL, and memcpy from NULL is undefined */
            memcpy(s->lets, l.let_v.items, l.let_v.n * sizeof(sched_let));
        s->ats = l.ats.items;   /* the schedule owns the array as it is: no copy */
        s->n_ats = l.ats.n;
        if (l.ats.items)
            ld_own(&l, l.ats.items);
        else
            ml_vec_free(&l.ats);
        s->times = l.times.items;
        s->n_times = l.times.n;
        if (l.times.items)
            ld_own(&l, l.times.items);
        else
            ml_vec_free(&l.times);
    } else {
        ml_vec_free(&l.ats);
        ml_vec_free(&l.times);
    }

    ld_release_event(&l);
    yaml_parser_delete(&l.yp);
    for (int k = 0; k < SYM_KIND_COUNT; k++)
        ld_hash_free(&l.syms[k]);
    for (int k = 0; k < CTX_COUNT_; k++)
        ld_hash_free(&l.cache[k]);
    ld_hash_free(&l.lets);
    ld_hash_free(&l.mesh_dims);
    ld_hash_free(&l.comms);
    ml_vec_free(&l.mesh_v);
    ml_vec_free(&l.comm_v);
    ml_vec_free(&l.let_v);
    ml_vec_free(&l.buf_allocated);
    ml_vec_free(&l.scratch);
    ml_vec_free(&l.views);
    ml_vec_free(&l.indices);
    if (rc != 0) {
        sched_free(s);
        return NULL;
    }
    return s;
}

sched *sched_load_file(const char *path, const sched_load_limits *limits, ml_diags *d) {
    /* Bounded, regular files or standard input only (base/input.h). */
    ml_input in;
    char err[512];
    if (ml_input_read(path, &in, err, sizeof err) != 0) {
        ml_error(d, path, ((ml_mark){0, 0}), "%s", err);
        return NULL;
    }
    sched *s = sched_load_buffer(path, in.data, in.len, limits, d);
    ml_input_free(&in);
    return s;
}

void sched_free(sched *s) {
    if (!s)
        return;
    sched_box *box = (sched_box *)s;
    sched_comms_cache_free(s->comms_cache);
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
