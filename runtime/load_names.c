/* load_names.c — the loader's names: symbol interning (buffers, streams, events, regions), name
 * rules, lookups of ops and dtypes, and expressions with their name resolution and cache. */
#include "load_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- Names and symbols ------------------------------------------------------------------------ */

static bool name_char(char c, bool ident) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           (!ident && (c == '-' || c == '.'));
}

/* Names of buffers, streams, events, regions and plans: letters, digits, '_', '-', '.';
 * let names are identifiers (they appear in expressions). */
int ld_check_name(loader *l, const char *text, size_t len, ml_mark m, const char *kind, bool ident) {
    if (len == 0)
        return ld_fail(l, m, "empty %s name", kind);
    if (len > l->lim.max_name_len)
        return ld_fail(l, m, "%s name longer than %zu bytes", kind, l->lim.max_name_len);
    bool ok = !(ident && text[0] >= '0' && text[0] <= '9');
    for (size_t k = 0; ok && k < len; k++)
        ok = name_char(text[k], ident);
    if (!ok)
        return ld_fail(l, m, "invalid %s name '%.*s'", kind, (int)len, text);
    return 0;
}

const char *const ld_sym_kind_names[SYM_KIND_COUNT] = {"buffer", "stream", "event", "region",
                                                           "plan result"};

static void symtab_push(sched_symtab *t, const char *name, ml_mark m) {
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->names = realloc(t->names, t->cap * sizeof *t->names);
        t->first_mark = realloc(t->first_mark, t->cap * sizeof *t->first_mark);
        if (!t->names || !t->first_mark)
            abort();
    }
    t->names[t->n] = name;
    t->first_mark[t->n] = m;
    t->n++;
}

int ld_intern(loader *l, sched_sym_kind kind, const char *text, size_t len, ml_mark m, uint32_t *out) {
    uintptr_t v;
    if (ld_hash_find(&l->syms[kind], text, len, &v) != UINT32_MAX) {
        *out = (uint32_t)v;
        return 0;
    }
    if (ld_check_name(l, text, len, m, ld_sym_kind_names[kind], false))
        return -1;
    sched_symtab *t = &l->s->syms[kind];
    const char *name = ml_arena_strndup(l->a, text, len);
    *out = t->n;
    symtab_push(t, name, m);
    ld_hash_put(&l->syms[kind], name, len, *out);
    if (kind == SYM_BUFFER)
        ml_vec_push(&l->buf_allocated);
    return 0;
}

/* Buffers and regions come into being where they are first named. */
int ld_sym(loader *l, sched_sym_kind kind, const char *what, uint32_t *out) {
    if (ld_want_scalar(l, what))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    return ld_intern(l, kind, text, len, ld_mark(l), out);
}

/* Streams and events must be declared in the top-level `streams:` / `events:` lists. */
int ld_sym_declared(loader *l, sched_sym_kind kind, const char *what, uint32_t *out) {
    if (ld_want_scalar(l, what))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    uintptr_t v;
    if (ld_hash_find(&l->syms[kind], text, len, &v) == UINT32_MAX)
        return ld_fail(l, ld_mark(l), "unknown %s '%.*s'", ld_sym_kind_names[kind], len > 64 ? 64 : (int)len,
                       text);
    *out = (uint32_t)v;
    return 0;
}

/* A free-text name (schedule, check, expect_error): only its length is bounded. */
int ld_name(loader *l, const char *what, const char **out) {
    if (ld_want_scalar(l, what))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    if (len > l->lim.max_name_len)
        return ld_fail(l, ld_mark(l), "%s longer than %zu bytes", what, l->lim.max_name_len);
    *out = ml_arena_strndup(l->a, text, len);
    return 0;
}

int ld_redop(loader *l, ml_redop *out) {
    if (ld_want_scalar(l, "op"))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    int k = ml_redop_lookup(text, len);
    if (k < 0)
        return ld_fail(l, ld_mark(l), "unknown op '%.*s'", len > 64 ? 64 : (int)len, text);
    *out = (ml_redop)k;
    return 0;
}

int ld_dtype(loader *l, ml_dtype *out) {
    if (ld_want_scalar(l, "dtype"))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    int k = ml_dtype_lookup(text, len);
    if (k < 0)
        return ld_fail(l, ld_mark(l), "unknown dtype '%.*s'", len > 64 ? 64 : (int)len, text);
    *out = (ml_dtype)k;
    return 0;
}

int ld_own(loader *l, void *p) {
    *(void **)ml_vec_push(l->owned) = p;
    return 0;
}

/* ---- Expressions ------------------------------------------------------------------------------ */

typedef struct {
    loader *l;
    ld_ctx ctx;
} resolve_ctx;

static int resolve(void *vctx, const char *name, size_t len) {
    const resolve_ctx *rc = vctx;
    if (rc->ctx == CTX_CONST)
        return -1;
    if (ld_key_is("world", name, len))
        return EXPR_SLOT_WORLD;
    if (ld_key_is("rank", name, len))
        return EXPR_SLOT_RANK;
    if (ld_key_is("i", name, len))
        return rc->ctx == CTX_INDEX ? EXPR_SLOT_INDEX : -1;
    uintptr_t v;
    if (ld_hash_find(&rc->l->lets, name, len, &v) != UINT32_MAX)
        return EXPR_SLOT_FIRST_LET + (int)v;
    return -1;
}

/* Identical short expressions ("M", "M/world", "rank == 0") recur on most steps of a big
 * schedule: parse each once per context and share the (immutable) tree. */
#define EXPR_CACHE_MAX_LEN 64

int ld_expr_at(loader *l, ld_ctx ctx, const char *text, size_t len, ml_mark at, expr **out) {
    bool cache = ctx != CTX_LET && len <= EXPR_CACHE_MAX_LEN;
    uintptr_t v;
    if (cache && ld_hash_find(&l->cache[ctx], text, len, &v) != UINT32_MAX) {
        *out = (expr *)v;
        return 0;
    }
    resolve_ctx rc = {l, ctx};
    expr_error err = {0};
    expr *e = expr_parse(l->a, text, len, resolve, &rc, &err);
    if (!e) {
        at.col += (uint32_t)err.offset;
        return ld_fail(l, at, "%s", err.msg);
    }
    if (cache)
        ld_hash_put(&l->cache[ctx], expr_text(e), len, (uintptr_t)e);
    *out = e;
    return 0;
}

/* Where the text of the current scalar starts: a quoted scalar's mark is its opening quote. */
ml_mark ld_text_mark(const loader *l) {
    ml_mark m = ld_mark(l);
    yaml_scalar_style_t st = l->ev.data.scalar.style;
    if (st == YAML_SINGLE_QUOTED_SCALAR_STYLE || st == YAML_DOUBLE_QUOTED_SCALAR_STYLE)
        m.col++;
    return m;
}

int ld_expr(loader *l, ld_ctx ctx, const char *what, expr **out) {
    if (ld_want_scalar(l, what))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    return ld_expr_at(l, ctx, text, len, ld_text_mark(l), out);
}
